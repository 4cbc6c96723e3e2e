import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (codecs, fsync) on dispatch threads instead of Swift's cooperative pool,
/// so deadlines, timers and fetch completions never wait behind a decode. At most one job per
/// core runs at a time; the rest wait their turn off the pool too.
///
/// Work handed over here cannot be interrupted from outside: each job is given a
/// ``AttacheMedia/WorkDeadline`` that the pipeline cancels when its payload is answered, and
/// the job checks it between bands and frames.
enum OffPool {
    static let queue = DispatchQueue(label: "attache.blocking", qos: .userInitiated, attributes: .concurrent)
    static let slots = DispatchSemaphore(value: max(1, ProcessInfo.processInfo.activeProcessorCount))
    /// Every job submitted and not yet finished (queued or running).
    private static let work = DispatchGroup()
    private static let pending = Atomic<Int>(0)
    private static let last = Mutex<JobRecord?>(nil)

    /// What one finished job cost.
    struct JobRecord: Sendable {
        /// When it got its slot and when it finished.
        var started: ContinuousClock.Instant
        var finished: ContinuousClock.Instant
        /// CPU time its thread spent on it (does not grow while the thread waits for a core).
        var cpu: Duration
    }

    /// Jobs submitted and not yet finished.
    static var inFlight: Int { pending.load(ordering: .relaxed) }

    /// The most recently finished job.
    static var lastJob: JobRecord? { last.withLock { $0 } }

    /// Waits until no job is queued or running; false when `timeout` passed first.
    static func waitUntilIdle(timeout: Duration) -> Bool {
        let nanoseconds =
            Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        return work.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        pending.add(1, ordering: .relaxed)
        work.enter()
        return await withCheckedContinuation { continuation in
            queue.async {
                slots.wait()
                let started = ContinuousClock.now
                let cpuStart = threadCPUTime()
                let value = body()
                let record = JobRecord(started: started, finished: .now, cpu: threadCPUTime() - cpuStart)
                slots.signal()
                last.withLock { $0 = record }
                pending.subtract(1, ordering: .relaxed)
                work.leave()
                continuation.resume(returning: value)
            }
        }
    }

    private static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }
}
