import Foundation
import Synchronization

/// Measures how long this process goes without being run: a thread of its own asks to sleep
/// 2 ms again and again and records every wake-up that came late. A machine shared with other
/// work (CI runs beside other jobs on 2 cores) can stop the whole process for a while; such a
/// stall is seen by this thread as by every other, while work blocked inside the process (a
/// cooperative thread held by a blocking call) is not. A timing test excuses only what this
/// meter saw.
public final class StallMeter: Sendable {
    private struct Stall {
        var start: ContinuousClock.Instant
        var end: ContinuousClock.Instant
    }

    private let stalls = Mutex<[Stall]>([])
    private let running = Atomic<Bool>(true)
    private static let interval = Duration.milliseconds(2)
    /// A wake-up this much later than asked counts as a stall. Small: a shared virtual machine
    /// takes the process's cores away for a few milliseconds at a time, often, and over a run
    /// those add up to as much as one long stall.
    private static let threshold = Duration.milliseconds(2)

    /// Starts the meter's thread; ``stop()`` ends it.
    public init() {
        Thread.detachNewThread { [self] in
            var last = ContinuousClock.now
            while running.load(ordering: .relaxed) {
                usleep(2000)
                let now = ContinuousClock.now
                if now - last > Self.interval + Self.threshold {
                    stalls.withLock { $0.append(Stall(start: last + Self.interval, end: now)) }
                }
                last = now
            }
        }
    }

    /// Stops the meter's thread.
    public func stop() { running.store(false, ordering: .relaxed) }

    /// How long the process went unrun between `start` and `end`.
    public func stalled(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Duration {
        stalls.withLock { list in
            list.reduce(Duration.zero) { total, stall in
                let overlapStart = max(stall.start, start)
                let overlapEnd = min(stall.end, end)
                return overlapStart < overlapEnd ? total + (overlapEnd - overlapStart) : total
            }
        }
    }
}
