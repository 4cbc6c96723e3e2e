import Foundation
import Synchronization

/// Where the service's log lines go: appended to a buffer by whoever logs (an event-loop
/// thread answering a request must not wait on a `write(2)`), and written to standard error by
/// a thread of its own every 20 ms (sooner when 64 KiB wait), every line gathered since its
/// last write in one syscall. Lines are
/// whole and in order. The buffer is bounded: past ``limit`` bytes waiting, lines are counted
/// and dropped, and the next write says how many were (a log that cannot keep up is said to be
/// so, never cut silently). ``flush()`` waits until every line handed in so far is written.
public final class LogWriter: Sendable {
    public static let shared = LogWriter(descriptor: STDERR_FILENO)

    /// Most bytes waiting to be written before lines are dropped.
    public let limit: Int
    /// The longest a line waits before it is written.
    static let interval = DispatchTimeInterval.milliseconds(20)
    /// Bytes waiting that wake the writer before its interval is up.
    static let batch = 64 << 10
    private let descriptor: Int32
    private let state = Mutex(State())
    /// Signalled when there is something to write (or a flush to answer).
    private let pending = DispatchSemaphore(value: 0)

    private struct State {
        var buffer: [UInt8] = []
        var dropped = 0
        /// Lines handed in, and lines written (or dropped), for ``flush()``.
        var handed = 0
        var done = 0
    }

    public init(descriptor: Int32, limit: Int = 8 << 20) {
        self.descriptor = descriptor
        self.limit = limit
    }

    /// Hands one whole line (ending in a newline) to the writer.
    public func append(_ line: UnsafeRawBufferPointer) {
        // The writer wakes on its own every ``interval``; a line wakes it early only when the
        // buffer passes ``batch`` bytes, or is the first it has to drop: a busy service's lines
        // then cost one syscall per interval, not one wake-up each.
        let wake: Bool = state.withLock { state in
            state.handed += 1
            if state.buffer.count + line.count > limit {
                state.dropped += 1
                state.done += 1
                return state.dropped == 1
            }
            let before = state.buffer.count
            state.buffer.append(contentsOf: line)
            return before < Self.batch && state.buffer.count >= Self.batch
        }
        startIfNeeded()
        if wake { pending.signal() }
    }

    /// Waits (at most `limit`) until every line handed in before the call is written.
    public func flush(within limit: Duration = .seconds(2)) {
        let target = state.withLock { $0.handed }
        let end = ContinuousClock.now + limit
        pending.signal()
        while state.withLock({ $0.done }) < target, ContinuousClock.now < end {
            usleep(1_000)
        }
    }

    /// The last second formatted, and which it was.
    private static let second = Mutex<(seconds: Int, text: [UInt8])>((-1, []))

    /// `2026-11-26T10:30:00+0000` for now.
    public static func appendTimestamp(to line: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let seconds = Int(now.tv_sec)
        if let cached = second.withLock({ $0.seconds == seconds ? $0.text : nil }) {
            line += cached
            return
        }
        var parts = tm()
        var time = now.tv_sec
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text = Array(
            ("\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))+0000").utf8)
        second.withLock { $0 = (seconds, text) }
        line += text
    }

    private let thread = Mutex<Thread?>(nil)

    private func startIfNeeded() {
        thread.withLock { thread in
            guard thread == nil else { return }
            let started = Thread { [self] in run() }
            started.name = "attache.log"
            started.start()
            thread = started
        }
    }

    private func run() {
        var batch: [UInt8] = []
        while true {
            _ = pending.wait(timeout: .now() + Self.interval)
            // Every line handed in and not dropped is in the batch taken here.
            let (dropped, lines): (Int, Int) = state.withLock { state in
                swap(&batch, &state.buffer)
                defer { state.dropped = 0 }
                return (state.dropped, state.handed - state.done)
            }
            if dropped > 0 {
                Self.appendTimestamp(to: &batch)
                batch += Array(
                    " warning attache.log: [attache] \(dropped) log lines dropped: the log could not keep up\n".utf8)
            }
            if !batch.isEmpty { write(batch) }
            batch.removeAll(keepingCapacity: true)
            state.withLock { $0.done += lines }
        }
    }

    private func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
