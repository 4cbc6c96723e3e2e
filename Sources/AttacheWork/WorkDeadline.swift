public import AttacheBase
internal import CAttacheShim
internal import Synchronization

/// When a transform must stop: a point on the monotonic clock, which another thread may move
/// to now (``cancel()``) so work for a payload that is already answered stops at once.
///
/// Decoders check it between row bands, the GIF renderer between frames, and libjpeg's
/// progress monitor during progressive scans (through the same memory cell), so a transform
/// whose deadline passes stops within one band or frame and throws `timed_out`. It carries the
/// work's ``WorkTurn`` (its handle on the scheduler), so each of those checks is also a point
/// where the work may give its core to another.
public final class WorkDeadline: Sendable {
    /// The cell: CLOCK_MONOTONIC nanoseconds, 0 = none. Read and written atomically in C.
    private nonisolated(unsafe) let cell: UnsafeMutablePointer<UInt64>
    /// Deadlines made from this one (``leaving(_:)``): cancelled with it.
    private let children = Mutex<[WorkDeadline]>([])
    /// The work's handle on the scheduler that runs it (admission and yield).
    public let turn: WorkTurn

    /// No deadline (but ``cancel()`` still stops the work).
    public static var none: WorkDeadline { WorkDeadline(nanoseconds: 0) }

    /// A deadline `budget` from now; nil means none.
    public convenience init(budget: Duration?) {
        guard let budget else {
            self.init(nanoseconds: 0)
            return
        }
        self.init(nanoseconds: att_monotonic_ns() &+ Self.nanoseconds(budget))
    }

    /// A deadline at `instant`.
    public convenience init(_ instant: ContinuousClock.Instant) {
        self.init(budget: ContinuousClock.now.duration(to: instant))
    }

    private init(nanoseconds: UInt64, turn: WorkTurn = WorkTurn()) {
        self.turn = turn
        cell = .allocate(capacity: 1)
        cell.initialize(to: nanoseconds)
    }

    deinit { cell.deallocate() }

    /// Moves the deadline to the past: every later check fails with `timed_out`.
    public func cancel() {
        att_deadline_store(cell, 1)
        for child in children.withLock({ $0 }) { child.cancel() }
        turn.interrupt()
    }

    /// The turn's admission (``WorkTurn/expect(_:)``), then the deadline's check: the work
    /// goes on once its memory is admitted and only while there is time.
    public func expect(_ estimate: WorkEstimate) throws(AttacheError) {
        turn.expect(estimate)
        try check()
    }

    /// A deadline `share` of the time left before this one (all of it when there is none),
    /// cancelled with this one: for work that must leave time for a fallback after it.
    public func leaving(share: Double) -> WorkDeadline {
        let end = att_deadline_load(cell)
        let now = att_monotonic_ns()
        let child = WorkDeadline(
            nanoseconds: end == 0 ? 0 : end <= now ? 1 : now + UInt64(Double(end - now) * min(max(share, 0), 1)),
            turn: turn.split())
        children.withLock { $0.append(child) }
        if hasExpired { child.cancel() }
        return child
    }

    /// The deadline in CLOCK_MONOTONIC nanoseconds (`UInt64.max` when there is none).
    var nanoseconds: UInt64 {
        let end = att_deadline_load(cell)
        return end == 0 ? .max : end
    }

    /// Whether the deadline has passed (or the work was cancelled).
    public var hasExpired: Bool { att_deadline_passed(cell) != 0 }

    /// Throws `timed_out` once the deadline has passed.
    public func check() throws(AttacheError) {
        checkpoint()
        if att_deadline_passed(cell) != 0 { throw AttacheError(.timedOut, "the transform's deadline passed") }
    }

    /// The turn's yield point without the deadline's check: C code that checks the cell itself
    /// calls it through ``checkpointFunction`` (libjpeg's progress monitor, while it reads a
    /// multi-scan file's scans before the first row comes out).
    package func checkpoint() { turn.checkpoint() }

    /// ``checkpoint()`` for C, its context ``checkpointContext``.
    package static let checkpointFunction: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
        guard let context else { return }
        Unmanaged<WorkDeadline>.fromOpaque(context).takeUnretainedValue().turn.checkpoint()
    }

    /// This deadline, unretained: whoever passes it to C holds the deadline for as long.
    package var checkpointContext: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The cell libjpeg's progress monitor reads.
    package var pointer: UnsafePointer<UInt64> { UnsafePointer(cell) }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        // A budget already spent (less than a second ago too: then the seconds are 0 and the
        // attoseconds negative) is a deadline in the past.
        guard duration > .zero else { return 1 }
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max / 2 : max(1, product &+ UInt64(attoseconds / 1_000_000_000))
    }
}
