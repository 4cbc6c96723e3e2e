import Dispatch
import Foundation

/// Runs blocking work (codecs, fsync) on dispatch threads instead of Swift's cooperative pool,
/// so deadlines, timers and fetch completions never wait behind a decode. At most one job per
/// core runs at a time; the rest wait their turn off the pool too.
enum OffPool {
    static let queue = DispatchQueue(label: "attache.blocking", qos: .userInitiated, attributes: .concurrent)
    static let slots = DispatchSemaphore(value: max(1, ProcessInfo.processInfo.activeProcessorCount))

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async {
                slots.wait()
                let value = body()
                slots.signal()
                continuation.resume(returning: value)
            }
        }
    }
}
