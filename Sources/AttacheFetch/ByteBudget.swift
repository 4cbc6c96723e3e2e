public import AttacheBase
internal import CAttacheFetch

/// Bytes that several transfers (a payload's) may read together, taken as bytes arrive on the
/// fetch thread; a transfer that would pass it stops with `budget_exceeded`.
public final class ByteBudget: Sendable {
    /// The cell the libcurl shim takes from, atomically.
    private nonisolated(unsafe) let cell: UnsafeMutablePointer<Int64>
    /// The budget it started with.
    public let total: Int64
    /// The limit named when it runs out.
    public let limit: AttacheError.Limit

    /// A budget of `bytes`, reported as `limit` when it runs out.
    public init(bytes: Int64, limit: AttacheError.Limit) {
        total = bytes
        self.limit = limit
        cell = .allocate(capacity: 1)
        cell.initialize(to: bytes)
    }

    deinit { cell.deallocate() }

    /// Bytes left.
    public var remaining: Int64 { att_budget_left(cell) }

    /// Takes `bytes`, or throws `budget_exceeded` (taking nothing) when fewer are left.
    public func take(_ bytes: Int64) throws(AttacheError) {
        guard att_budget_take(cell, bytes) == 1 else { throw exceeded }
    }

    /// The error a transfer or write that found the budget spent reports.
    public var exceeded: AttacheError {
        AttacheError(.budgetExceeded, "the payload's budget of \(total) bytes is spent", limit: limit)
    }

    var pointer: UnsafeMutablePointer<Int64> { cell }
}
