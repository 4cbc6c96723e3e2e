import Dispatch
import Synchronization

/// The result of processing one payload.
public struct PipelineResult: Sendable {
    /// The payload to deliver: mutated, or the original bytes when nothing was attached.
    public var payload: [UInt8]
    /// One outcome per attachment source, in payload order.
    public var outcomes: [AttachmentOutcome]
    /// True when the deadline passed with work unfinished and what was done was delivered.
    public var bestAttempt: Bool
    /// True when the payload was returned unchanged (not mutable, no sources, unreadable).
    public var passedThrough: Bool
    /// Why the payload could not be read, when it could not.
    public var payloadError: AttacheError?
    /// What was left out to fit ``PipelineConfiguration/maxPayloadBytes``, in the order dropped.
    public var trimmed: [String]
    /// Wall time.
    public var elapsed: Duration
}

/// Payload in, mutated payload out: the server's Notification Service Extension.
///
/// Every attachment source is fetched, validated, transformed and stored concurrently under
/// one deadline. When the deadline passes, whatever finished is attached and the rest is
/// reported `timed_out` — the answer never waits for a straggler, just as
/// `serviceExtensionTimeWillExpire` delivers the best attempt.
public final class Pipeline: Sendable {
    public let configuration: PipelineConfiguration
    let fetcher: Fetcher
    let store: AttachmentStore

    public init(configuration: PipelineConfiguration, fetcher: Fetcher, store: AttachmentStore) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.store = store
    }

    /// Processes one payload before `deadline` (default: now + the configured deadline).
    public func process(_ payload: [UInt8], deadline: ContinuousClock.Instant? = nil) async -> PipelineResult {
        let start = ContinuousClock.now
        let deadline = deadline ?? start + configuration.deadline
        func unchanged(_ error: AttacheError? = nil, outcomes: [AttachmentOutcome] = []) -> PipelineResult {
            PipelineResult(
                payload: payload, outcomes: outcomes, bestAttempt: false, passedThrough: true, payloadError: error,
                trimmed: [], elapsed: .now - start)
        }
        let content: NotificationContent
        do throws(AttacheError) {
            content = try NotificationContent(bytes: payload)
        } catch {
            return unchanged(error)
        }
        guard content.isMutable else { return unchanged() }
        let sources = content.sources(using: configuration.sources)
        guard !sources.isEmpty else { return unchanged() }

        // Each source runs in its own task; the collector hands back what finished by the deadline.
        let collector = Collector(count: sources.count)
        var tasks: [Task<Void, Never>] = []
        for (index, source) in sources.enumerated() {
            tasks.append(
                Task { [self] in
                    let outcome = await attach(source, deadline: deadline)
                    collector.finish(index, outcome)
                })
        }
        let finished = await collector.wait(until: deadline)
        for task in tasks { task.cancel() }

        var outcomes: [AttachmentOutcome] = []
        var unfinished = false
        for (index, source) in sources.enumerated() {
            if let outcome = finished[index] {
                outcomes.append(outcome)
            } else {
                unfinished = true
                var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
                outcome.error = AttacheError(
                    .timedOut, "the payload's deadline passed before this attachment was ready")
                outcomes.append(outcome)
            }
        }
        let (mutated, trimmed) = block(for: &outcomes, content: content)
        return PipelineResult(
            payload: mutated ?? payload, outcomes: outcomes, bestAttempt: unfinished, passedThrough: mutated == nil,
            payloadError: nil, trimmed: trimmed, elapsed: .now - start)
    }

    /// Writes the attachment block, trimming to the payload limit: first the optional fields of
    /// every entry (sizes, options), then entries from the last one back.
    private func block(for outcomes: inout [AttachmentOutcome], content: NotificationContent) -> ([UInt8]?, [String]) {
        let attached = outcomes.indices.filter { outcomes[$0].attachment != nil }
        guard !attached.isEmpty else { return (nil, []) }
        var trimmed: [String] = []
        var kept = attached
        var full = true
        while !kept.isEmpty {
            let entries = kept.map { outcomes[$0].attachment!.json(full: full) }
            let bytes = content.setting(configuration.attachmentsKey, to: .array(entries))
            if bytes.count <= configuration.maxPayloadBytes { return (bytes, trimmed) }
            if full {
                full = false
                trimmed.append("optional fields (bytes, width, height, frames, options)")
            } else {
                let dropped = kept.removeLast()
                trimmed.append("attachment \(outcomes[dropped].url)")
                outcomes[dropped].attachment = nil
                outcomes[dropped].error = AttacheError(
                    .payloadTooLarge,
                    "the payload would pass \(configuration.maxPayloadBytes) bytes with this attachment",
                    limit: "max_payload_bytes")
            }
        }
        return (nil, trimmed)
    }
}

/// Gathers outcomes by index and releases the waiter when all are in or the deadline passes.
/// The deadline is kept by a dispatch timer, not a task, so it fires on time however busy
/// Swift's cooperative pool is.
final class Collector: Sendable {
    private struct State {
        var outcomes: [AttachmentOutcome?]
        var remaining: Int
        var waiter: CheckedContinuation<[AttachmentOutcome?], Never>?
        var done = false
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
        await withCheckedContinuation { continuation in
            let ready: [AttachmentOutcome?]? = state.withLock {
                if $0.remaining == 0 {
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
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in expire() }
        }
    }

    private func expire() {
        let release: (CheckedContinuation<[AttachmentOutcome?], Never>, [AttachmentOutcome?])? = state.withLock {
            guard !$0.done, let waiter = $0.waiter else { return nil }
            $0.done = true
            $0.waiter = nil
            return (waiter, $0.outcomes)
        }
        if let (waiter, outcomes) = release { waiter.resume(returning: outcomes) }
    }
}
