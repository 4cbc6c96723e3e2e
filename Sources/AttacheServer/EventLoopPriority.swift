internal import CAttacheShim
import NIOCore

/// The event loops' nice value. They answer what must not wait — a 503 beyond the queue, a health
/// check, a download — while the threads beside them (the concurrency pool's payload handlers,
/// the catalog, the decodes at `workerNice`) keep the cores busy. Run above them, a loop that
/// wakes takes a core at once instead of waiting out another thread's turn
/// (docs/benchmarks.md: the first burst's 503s at 64 clients).
enum EventLoopPriority {
    /// One loop's thread and what setting its nice value gave: 0, or the error number of the
    /// refusal (a value below 0 needs CAP_SYS_NICE, or a nice limit that allows it: systemd's
    /// `LimitNICE=`).
    struct Outcome: Sendable, Equatable {
        var thread: Int32
        var error: Int32
    }

    /// Sets `nice` on the thread of every loop of `group`, from that thread.
    static func apply(_ nice: Int32, to group: any EventLoopGroup) async -> [Outcome] {
        var outcomes: [Outcome] = []
        for loop in group.makeIterator() {
            let outcome = try? await loop.submit { Outcome(thread: att_thread_id(), error: att_thread_nice(nice)) }
                .get()
            if let outcome { outcomes.append(outcome) }
        }
        return outcomes
    }
}
