import Synchronization

/// At most `slots` payloads in the pipeline at once and at most `queue` waiting for a slot;
/// anyone beyond is turned away at once (the service answers 503 with `Retry-After`). A
/// waiter whose request is cancelled (the client went away) leaves the queue.
///
/// The slots are shared by tenant (``TenantShares``): each tenant's first few slots are kept
/// for it, so a tenant that fills the pipeline never leaves another waiting for one; a slot
/// given back goes to the first waiter whose tenant may take it.
final class Admission: Sendable {
    private struct Waiter {
        var id: UInt64
        var tenant: String
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var shares: TenantShares
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
    }

    let slots: Int
    let queue: Int
    private let state: Mutex<State>
    /// Called with (running, waiting) after every change, for gauges.
    private let observe: @Sendable (Int, Int) -> Void

    /// The tenants in `shares` share the slots, each with a reserve by its share (``TenantShares``).
    init(
        slots: Int, queue: Int, shares: [String: Int] = [:],
        observe: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) {
        self.slots = max(1, slots)
        self.queue = max(0, queue)
        self.state = Mutex(State(shares: TenantShares(total: max(1, slots), shares: shares)))
        self.observe = observe
    }

    /// Takes new shares (the tenants file read again); waiters a new reserve lets in go in.
    func share(_ shares: [String: Int]) {
        let next: [CheckedContinuation<Bool, Never>] = state.withLock { s in
            s.shares.share(shares)
            return Self.admitWaiters(&s)
        }
        for continuation in next { continuation.resume(returning: true) }
        report()
    }

    private static func admitWaiters(_ s: inout State) -> [CheckedContinuation<Bool, Never>] {
        var admitted: [CheckedContinuation<Bool, Never>] = []
        while let index = s.waiting.firstIndex(where: { s.shares.canTake($0.tenant) }) {
            let waiter = s.waiting.remove(at: index)
            _ = s.shares.take(waiter.tenant)
            admitted.append(waiter.continuation)
        }
        return admitted
    }

    /// Payloads in the pipeline and payloads waiting.
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.shares.sum, $0.waiting.count) } }

    /// Takes a slot for `tenant`, waiting in the queue if there is room there. False: turned
    /// away (queue full) or cancelled while waiting; no slot is held then.
    func enter(tenant: String = "") async -> Bool {
        enum Decision {
            case admitted, refused
            case wait(UInt64)
        }
        let decision: Decision = state.withLock {
            if $0.shares.take(tenant) { return .admitted }
            guard $0.waiting.count < queue else { return .refused }
            $0.nextID += 1
            return .wait($0.nextID)
        }
        switch decision {
        case .admitted:
            report()
            return true
        case .refused:
            return false
        case .wait(let id):
            let admitted = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let cancelledAlready: Bool = state.withLock {
                        if Task.isCancelled { return true }
                        $0.waiting.append(Waiter(id: id, tenant: tenant, continuation: continuation))
                        return false
                    }
                    if cancelledAlready { continuation.resume(returning: false) }
                    report()
                }
            } onCancel: {
                let removed = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                    guard let index = s.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiting.remove(at: index).continuation
                }
                removed?.resume(returning: false)
                report()
            }
            return admitted
        }
    }

    /// Gives `tenant`'s slot back: to the first waiter whose tenant may take it, or to the pool.
    func leave(tenant: String = "") {
        let next: [CheckedContinuation<Bool, Never>] = state.withLock { s in
            s.shares.give(tenant)
            return Self.admitWaiters(&s)
        }
        for continuation in next { continuation.resume(returning: true) }
        report()
    }

    private func report() {
        let (running, waiting) = counts
        observe(running, waiting)
    }
}
