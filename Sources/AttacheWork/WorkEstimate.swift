/// What one transform is expected to cost, read from its header before any pixel is decoded:
/// the CPU time of one core and the memory it holds at its peak. The scheduler orders work by
/// the first and admits it by the second (``WorkScheduler``); the same figures are the ones
/// the limits are checked against, so what decides the order is what is checked first.
public struct WorkEstimate: Hashable, Sendable {
    /// Expected CPU time on one core, in seconds.
    public var seconds: Double
    /// Memory held at the job's peak, in bytes (decoded rows, whole-image buffers, frames,
    /// the output and its encoding).
    public var memory: Int

    /// An estimate of `seconds` of CPU holding `memory` bytes.
    public init(seconds: Double, memory: Int) {
        self.seconds = max(0, seconds)
        self.memory = max(0, memory)
    }

    /// Before a header has been read: a megabyte and a few milliseconds (the bytes as fetched
    /// are held whatever the order: they are bounded where they are fetched). A job says what it
    /// really costs as soon as it knows (``WorkDeadline/expect(_:)``).
    public static func unread(bytes: Int) -> WorkEstimate {
        WorkEstimate(seconds: 0.002, memory: 1 << 20)
    }

    /// Both figures added.
    public static func + (a: WorkEstimate, b: WorkEstimate) -> WorkEstimate {
        WorkEstimate(seconds: a.seconds + b.seconds, memory: a.memory + b.memory)
    }
}
