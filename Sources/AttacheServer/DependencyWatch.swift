import AttacheBase
import AttacheStore
import Dispatch
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Watches what the store depends on (the disk; a shared store's catalog and bucket), as a
/// lifecycle service: each is checked every ``interval`` on a thread of its own, and only a
/// change is told — one warning when it stops answering (with the reason), one info when it
/// answers again (with how long it was away) — never a line per request. Gauges
/// `attache_dependency_up{dependency}` (1 or 0) and the counter
/// `attache_dependency_outages_total{dependency}` follow the same changes.
struct DependencyWatch: Service {
    let store: AttachmentStore
    let logger: Logger
    /// How often each dependency is checked.
    var interval: Duration = .seconds(1)
    /// How long a check may go unanswered before the dependency counts as away ("not
    /// answering"). Longer than ``interval``: one check slowed by a busy machine is not an outage
    /// (a dependency that answers with an error counts at once).
    var silentAfter: Duration = .seconds(3)

    /// One dependency's state.
    final class Watched: Sendable {
        let name: String
        /// Since when it has been away (nil: it answers).
        let awaySince = Mutex<ContinuousClock.Instant?>(nil)
        /// When the running check started (nil: none runs); a check that hangs is not started
        /// again.
        let checking = Mutex<ContinuousClock.Instant?>(nil)

        init(name: String) { self.name = name }
    }

    func run() async throws {
        let watched = store.dependencies.map(Watched.init)
        for dependency in watched {
            Gauge(label: "attache_dependency_up", dimensions: [("dependency", dependency.name)]).record(1)
        }
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    for dependency in watched { await check(dependency) }
                    try await Task.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// Checks `dependency` once, waiting at most ``interval`` for the answer; a check still
    /// running from before is waited for instead, and past ``silentAfter`` it is not answering.
    func check(_ dependency: Watched) async {
        let now = ContinuousClock.now
        let running = dependency.checking.withLock { started -> ContinuousClock.Instant? in
            if let started { return started }
            started = now
            return nil
        }
        if let running {
            if running.duration(to: now) >= silentAfter { changed(dependency, error: notAnswering(dependency)) }
            return
        }
        let store = self.store
        let answer = await withCheckedContinuation { (done: CheckedContinuation<AttacheError??, Never>) in
            let once = Atomic<Bool>(false)
            DispatchQueue.global(qos: .utility).async {
                let result = Result { () throws(AttacheError) in try store.check(dependency: dependency.name) }
                dependency.checking.withLock { $0 = nil }
                if !once.exchange(true, ordering: .acquiringAndReleasing) {
                    if case .failure(let error) = result {
                        done.resume(returning: .some(error))
                    } else {
                        done.resume(returning: .some(nil))
                    }
                }
            }
            DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + interval.seconds) {
                if !once.exchange(true, ordering: .acquiringAndReleasing) { done.resume(returning: .none) }
            }
        }
        switch answer {
        case .none:
            // Still running after an interval: away only once it has been silent long enough.
            if now.duration(to: .now) >= silentAfter { changed(dependency, error: notAnswering(dependency)) }
        case .some(let error): changed(dependency, error: error)
        }
    }

    private func notAnswering(_ dependency: Watched) -> AttacheError {
        AttacheError(.storeUnavailable, "\(dependency.name): not answering")
    }

    /// Records the outcome of a check: tells only a change.
    func changed(_ dependency: Watched, error: AttacheError?) {
        let now = ContinuousClock.now
        let transition = dependency.awaySince.withLock { since -> ContinuousClock.Instant?? in
            switch (since, error) {
            case (nil, .some):
                since = now
                return .some(nil)
            case (.some(let start), nil):
                since = nil
                return .some(start)
            default:
                return .none
            }
        }
        guard let transition else { return }
        let gauge = Gauge(label: "attache_dependency_up", dimensions: [("dependency", dependency.name)])
        if let start = transition {
            gauge.record(1)
            logger.info(
                "store dependency back",
                metadata: [
                    "dependency": "\(dependency.name)",
                    "away_s": "\(((now - start).milliseconds / 100).rounded() / 10)",
                ])
        } else {
            gauge.record(0)
            Counter(label: "attache_dependency_outages_total", dimensions: [("dependency", dependency.name)])
                .increment()
            logger.warning(
                "store dependency unreachable",
                metadata: [
                    "dependency": "\(dependency.name)", "code": "\(error?.code.rawValue ?? "")",
                    "message": "\(error?.message ?? "")",
                ])
        }
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
