import Glibc
import Synchronization

/// A Unix-seconds clock the tests move by hand (stores take it as their clock).
public final class TestClock: Sendable {
    private let seconds: Atomic<Int64>

    /// Starts at the wall clock's current second.
    public init() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        seconds = Atomic(Int64(now.tv_sec))
    }

    /// The current time in Unix seconds.
    public var now: Int64 { seconds.load(ordering: .relaxed) }

    /// Moves the clock by `delta` seconds.
    public func advance(_ delta: Int64) { seconds.add(delta, ordering: .relaxed) }
}
