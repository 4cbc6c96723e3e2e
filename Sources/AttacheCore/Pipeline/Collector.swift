import Dispatch
import Synchronization

/// Gathers outcomes by index and releases the waiter when all are in or the deadline passes.
/// The deadline is kept by a dispatch timer, not a task, so it fires on time however busy
/// Swift's cooperative pool is; the timer is cancelled as soon as the wait is over, so a
/// finished payload leaves nothing behind until its deadline (a service answering thousands
/// of payloads a second under a 25 s deadline would otherwise hold every one of them).
final class Collector: Sendable {
    private struct State {
        var outcomes: [AttachmentOutcome?]
        var remaining: Int
        var waiter: CheckedContinuation<[AttachmentOutcome?], Never>?
        var done = false
        /// Released before anyone waited: the wait returns at once.
        var expired = false
        /// The deadline's timer while someone waits.
        var timer: TimerHandle?
    }

    /// A dispatch timer, cancelled from whichever thread ends the wait (dispatch sources are
    /// thread-safe).
    private struct TimerHandle: @unchecked Sendable {
        let timer: any DispatchSourceTimer
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(outcomes: Array(repeating: nil, count: count), remaining: count))
    }

    func finish(_ index: Int, _ outcome: AttachmentOutcome) {
        let release: (CheckedContinuation<[AttachmentOutcome?], Never>, [AttachmentOutcome?])? = state.withLock {
            guard !$0.done else { return nil }
            $0.outcomes[index] = outcome
            $0.remaining -= 1
            guard $0.remaining == 0, let waiter = $0.waiter else { return nil }
            $0.done = true
            $0.waiter = nil
            return (waiter, $0.outcomes)
        }
        if let (waiter, outcomes) = release { waiter.resume(returning: outcomes) }
    }

    func wait(until deadline: ContinuousClock.Instant) async -> [AttachmentOutcome?] {
        let outcomes = await withCheckedContinuation { continuation in
            let ready: [AttachmentOutcome?]? = state.withLock {
                if $0.remaining == 0 || $0.expired {
                    $0.done = true
                    return $0.outcomes
                }
                $0.waiter = continuation
                return nil
            }
            if let ready {
                continuation.resume(returning: ready)
                return
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            let nanoseconds = max(
                0, remaining.components.seconds * 1_000_000_000 + remaining.components.attoseconds / 1_000_000_000)
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)))
            timer.setEventHandler { [weak self] in self?.expire() }
            let handle = TimerHandle(timer: timer)
            state.withLock { $0.timer = handle }
            timer.resume()
        }
        // Whoever released the wait, the timer has nothing left to do.
        state.withLock { state in
            defer { state.timer = nil }
            return state.timer
        }?.timer.cancel()
        return outcomes
    }

    /// Releases the waiter now with what has finished (the deadline, or the caller gone).
    func expire() {
        let release: (CheckedContinuation<[AttachmentOutcome?], Never>, [AttachmentOutcome?])? = state.withLock {
            guard !$0.done else { return nil }
            $0.expired = true
            guard let waiter = $0.waiter else { return nil }
            $0.done = true
            $0.waiter = nil
            return (waiter, $0.outcomes)
        }
        if let (waiter, outcomes) = release { waiter.resume(returning: outcomes) }
    }
}
