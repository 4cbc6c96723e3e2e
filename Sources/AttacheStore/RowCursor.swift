package import AttacheBase
import Dispatch
import Foundation
import Glibc
import Synchronization

/// The catalog rows of one id prefix in id order, read a page at a time (keyset pagination),
/// so a pass over millions of objects holds one page of rows.
package struct RowCursor {
    package static let pageSize = 1000

    private let prefix: String
    private let below: String
    private let page: (_ after: String, _ below: String) throws(AttacheError) -> [ObjectRow]
    private var rows: [ObjectRow] = []
    private var index = 0
    private var last: String
    private var finished = false

    /// `page(after, below)` answers at most ``pageSize`` rows with `after < id < below`, in id order.
    package init(prefix: String, page: @escaping (_ after: String, _ below: String) throws(AttacheError) -> [ObjectRow])
    {
        self.prefix = prefix
        self.below = ObjectLayout.upperBound(of: prefix)
        self.page = page
        last = prefix
    }

    /// The next row, or nil when the prefix has no more.
    package mutating func peek() throws(AttacheError) -> ObjectRow? {
        if index < rows.count { return rows[index] }
        guard !finished else { return nil }
        rows = try page(last, below)
        index = 0
        if rows.count < Self.pageSize { finished = true }
        if let end = rows.last { last = end.id }
        return rows.first
    }

    package mutating func advance() { index += 1 }

    /// Matches a listed object with the rows: every row before `id` (nil: every row left) is
    /// counted and told as missing; returns the row for `id`, stepped past, or nil when there is
    /// none (the object is an orphan).
    package mutating func match(
        _ id: String?, counts: inout VerifyCounts, problem: (VerifyProblem) -> Void
    ) throws(AttacheError) -> ObjectRow? {
        while let row = try peek(), id.map({ row.id < $0 }) ?? true {
            counts.missing += 1
            problem(VerifyProblem(kind: .missing, id: row.id, location: row.id))
            advance()
        }
        guard let id, let row = try peek(), row.id == id else { return nil }
        advance()
        return row
    }
}

/// Deletions at most so many a second, shared by every thread of a pass: each waits its turn.
package final class DeletionPace: Sendable {
    private let interval: Double?
    private let next = Mutex<Double>(0)

    package init(perSecond: Double?) {
        interval = perSecond.flatMap { $0 > 0 ? 1 / $0 : nil }
    }

    package func wait() {
        guard let interval else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        // Each caller takes the next free slot, then sleeps until it comes.
        let slot = next.withLock { next -> Double in
            let slot = Swift.max(next, seconds)
            next = slot + interval
            return slot
        }
        let pause = slot - seconds
        guard pause > 0 else { return }
        var request = timespec(tv_sec: Int(pause), tv_nsec: Int((pause - Double(Int(pause))) * 1e9))
        nanosleep(&request, nil)
    }
}

/// Runs `body` for every item on `workers` threads (items taken in order); the first error
/// stops the others from starting more and is thrown.
package func forEachConcurrently<T: Sendable>(
    _ items: [T], workers: Int, _ body: @escaping @Sendable (T) throws(AttacheError) -> Void
) throws(AttacheError) {
    let state = Mutex<(next: Int, failure: AttacheError?)>((0, nil))
    let work: @Sendable () -> Void = {
        while true {
            let index: Int? = state.withLock { state in
                guard state.failure == nil, state.next < items.count else { return nil }
                defer { state.next += 1 }
                return state.next
            }
            guard let index else { return }
            do throws(AttacheError) {
                try body(items[index])
            } catch {
                state.withLock { if $0.failure == nil { $0.failure = error } }
            }
        }
    }
    let count = Swift.max(1, Swift.min(workers, items.count))
    if count == 1 {
        work()
    } else {
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            Thread.detachNewThread {
                work()
                group.leave()
            }
        }
        group.wait()
    }
    if let failure = state.withLock({ $0.failure }) { throw failure }
}
