import Synchronization

/// At most `slots` payloads in the pipeline at once and at most `queue` waiting for a slot;
/// anyone beyond is turned away at once (the service answers 503 with `Retry-After`). A
/// waiter whose request is cancelled (the client went away) leaves the queue.
final class Admission: Sendable {
    private struct State {
        var running = 0
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextID: UInt64 = 0
    }

    let slots: Int
    let queue: Int
    private let state = Mutex(State())
    /// Called with (running, waiting) after every change, for gauges.
    private let observe: @Sendable (Int, Int) -> Void

    init(slots: Int, queue: Int, observe: @escaping @Sendable (Int, Int) -> Void = { _, _ in }) {
        self.slots = max(1, slots)
        self.queue = max(0, queue)
        self.observe = observe
    }

    /// Payloads in the pipeline and payloads waiting.
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    /// Takes a slot, waiting in the queue if there is room there. False: turned away (queue
    /// full) or cancelled while waiting; no slot is held then.
    func enter() async -> Bool {
        enum Decision {
            case admitted, refused
            case wait(UInt64)
        }
        let decision: Decision = state.withLock {
            if $0.running < slots {
                $0.running += 1
                return .admitted
            }
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
                        $0.waiting.append((id, continuation))
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

    /// Gives a slot back: to the first waiter, or to the pool.
    func leave() {
        let next: CheckedContinuation<Bool, Never>? = state.withLock {
            if !$0.waiting.isEmpty {
                // The slot passes straight to the waiter: `running` stays.
                return $0.waiting.removeFirst().continuation
            }
            $0.running -= 1
            return nil
        }
        next?.resume(returning: true)
        report()
    }

    private func report() {
        let (running, waiting) = counts
        observe(running, waiting)
    }
}
