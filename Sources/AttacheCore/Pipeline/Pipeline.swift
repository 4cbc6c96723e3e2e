public import AttacheBase
public import AttacheFetch
public import AttacheMedia
public import AttacheSeal
public import AttacheStore
import AttacheWork

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
    /// What the payload was read as: an APNs payload or a sender's send body.
    public var shape: PayloadShape = .apns
    /// What the payload said that was not used, and why (a body that also carried another
    /// sender's marks, an `attache-focus` that is not a point).
    public var notes: [String] = []
}

/// Payload in, mutated payload out: the server's Notification Service Extension.
///
/// Every attachment source is fetched, validated, transformed and stored concurrently under
/// one deadline. When the deadline passes, whatever finished is attached and the rest is
/// reported `timed_out` — the answer never waits for a straggler, just as
/// `serviceExtensionTimeWillExpire` delivers the best attempt.
public final class Pipeline: Sendable {
    /// How payloads are treated.
    public let configuration: PipelineConfiguration
    let fetcher: Fetcher
    /// Where attachments are kept (a preview reads its renditions back from it).
    public let store: AttachmentStore
    /// Attachments under way, shared with every pipeline made from this one.
    let flights: AttachmentFlights

    /// A pipeline that fetches with `fetcher` (its policy: addresses, timeouts, redirects) and
    /// keeps attachments in `store`. The byte caps come from `configuration.mediaLimits`.
    public convenience init(configuration: PipelineConfiguration, fetcher: Fetcher, store: AttachmentStore) {
        self.init(configuration: configuration, fetcher: fetcher, store: store, flights: AttachmentFlights())
    }

    private init(
        configuration: PipelineConfiguration, fetcher: Fetcher, store: AttachmentStore, flights: AttachmentFlights
    ) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.store = store
        self.flights = flights
    }

    /// This pipeline with another configuration: same fetcher, same store, same attachments under way.
    private func with(_ configuration: PipelineConfiguration) -> Pipeline {
        Pipeline(configuration: configuration, fetcher: fetcher, store: store, flights: flights)
    }

    /// This pipeline with its attachments served from `baseURL`: same fetcher, same store.
    public func serving(at baseURL: String) -> Pipeline {
        var configuration = self.configuration
        configuration.baseURL = baseURL
        return with(configuration)
    }

    /// This pipeline writing still renditions as `format`: same fetcher, same store (a rendition
    /// stored for another format is not reused: the format is in its spec's key).
    public func writing(_ format: RenditionSpec.OutputFormat) -> Pipeline {
        guard format != configuration.rendition.outputFormat else { return self }
        var configuration = self.configuration
        configuration.rendition.outputFormat = format
        return with(configuration)
    }

    /// This pipeline encoding its JPEG and WebP renditions and pictures at `quality`, everything
    /// else alike.
    public func encoding(_ quality: Quality) -> Pipeline {
        guard
            quality != configuration.rendition.quality
                || configuration.targets.values.contains(where: { $0.quality != quality })
        else { return self }
        var configuration = self.configuration
        configuration.rendition.quality = quality
        for kind in configuration.targets.keys { configuration.targets[kind]?.quality = quality }
        return with(configuration)
    }

    /// This pipeline making the other receivers' pictures to `targets` (a sender's own caps,
    /// shape or faces), everything else alike.
    public func making(_ targets: [TargetSpec.Target: TargetSpec]) -> Pipeline {
        guard targets != configuration.targets else { return self }
        var configuration = self.configuration
        configuration.targets = targets
        return with(configuration)
    }

    /// This pipeline with `configuration` (a tenant's settings and a request's terms over the
    /// service's): same fetcher, same store, same attachments under way.
    public func configured(_ configuration: PipelineConfiguration) -> Pipeline { with(configuration) }

    /// This pipeline fetching only from the hosts `sources` permits (a tenant's media hosts),
    /// everything else alike.
    public func fetching(from sources: SourceRules?) -> Pipeline {
        let sources = sources?.isEmpty == true ? nil : sources
        guard sources != configuration.mediaHosts else { return self }
        var configuration = self.configuration
        configuration.mediaHosts = sources
        return with(configuration)
    }

    /// Processes one payload before `deadline` (default: now + the configured deadline).
    ///
    /// With `sealTo` (or an `attache-seal` member in the payload naming a key), the payload is
    /// sealed to that device: its alert, the members its media were named in, the members
    /// ``PipelineConfiguration/sealMembers`` names and the attachment block go into
    /// `encrypted-content`, every attachment is stored encrypted under a key of its own, and
    /// the placeholder alert is what shows until the device opens the seal.
    public func process(
        _ payload: [UInt8], deadline: ContinuousClock.Instant? = nil, sealTo recipient: SealRecipient? = nil,
        tenant: String = ""
    ) async -> PipelineResult {
        await process(payload, deadline: deadline, seal: recipient.map { .success($0) }, tenant: tenant)
    }

    /// ``process(_:deadline:sealTo:tenant:)`` with a seal the caller asked for and could not name
    /// a key for (`failure`): the placeholder goes out alone, as for a bad `attache-seal`.
    ///
    /// `tenant` names whom the payload is for (a service's API key): the workers' cores are
    /// shared between tenants first, then between their payloads (``AttacheMedia/WorkScheduler``).
    ///
    /// `focus` places the crops of a send body's pictures, over the body's own
    /// `attache-focus`.
    public func process(
        _ payload: [UInt8], deadline: ContinuousClock.Instant? = nil, seal: Result<SealRecipient, AttacheError>?,
        tenant: String = "", focus: FocalPoint? = nil
    ) async -> PipelineResult {
        let start = ContinuousClock.now
        let deadline = deadline ?? start + configuration.deadline
        let content: NotificationContent
        do throws(AttacheError) {
            content = try NotificationContent(bytes: payload)
        } catch {
            return PipelineResult(
                payload: payload, outcomes: [], bestAttempt: false, passedThrough: true, payloadError: error,
                trimmed: [], elapsed: .now - start)
        }
        // A body for every platform (FCM v1, OneSignal, …): each receiver's picture.
        let reading = content.shapeReading
        var result =
            reading.shape == .apns
            ? await processAPNs(content, deadline: deadline, seal: seal, tenant: tenant, start: start)
            : await processReceivers(content, deadline: deadline, tenant: tenant, start: start, focus: focus)
        result.shape = reading.shape
        if let note = reading.note { result.notes.insert(note, at: 0) }
        return result
    }

    /// An APNs payload: its media found by the source rules, attached in its block (sealed when
    /// asked), under the APNs size.
    func processAPNs(
        _ content: NotificationContent, deadline: ContinuousClock.Instant,
        seal: Result<SealRecipient, AttacheError>?, tenant: String, start: ContinuousClock.Instant
    ) async -> PipelineResult {
        let payload = content.bytes
        func unchanged() -> PipelineResult {
            PipelineResult(
                payload: payload, outcomes: [], bestAttempt: false, passedThrough: true, payloadError: nil,
                trimmed: [], elapsed: .now - start)
        }
        let key = configuration.attachmentsKey
        let found = content.isMutable ? content.sources(using: configuration.sources) : []
        // The members the media were named in go into a seal with the alert.
        let moved = found.compactMap(\.member)
        var shape = OutputShape(key: key, categories: configuration.categories)
        do throws(AttacheError) {
            shape.seal = try sealShape(content, asked: seal)
        } catch {
            // A seal asked for and impossible: the placeholder goes out, nothing it would hide.
            let withheld = PayloadFrame.withheld(
                content, key: key, placeholder: configuration.sealPlaceholder,
                members: moved + configuration.sealMembers)
            return PipelineResult(
                payload: withheld, outcomes: [], bestAttempt: false, passedThrough: false, payloadError: error,
                trimmed: [], elapsed: .now - start)
        }
        func written(_ outcomes: [AttachmentOutcome], unfinished: Bool = false) -> PipelineResult {
            var outcomes = outcomes
            let written = AttachmentBlock.write(
                &outcomes, into: content, shape: shape, moved: moved, maxBytes: configuration.maxPayloadBytes)
            return PipelineResult(
                payload: written.payload ?? payload, outcomes: outcomes, bestAttempt: unfinished,
                passedThrough: written.payload == nil, payloadError: written.sealError, trimmed: written.trimmed,
                elapsed: .now - start)
        }
        guard content.isMutable || shape.seal != nil else { return unchanged() }
        guard !found.isEmpty else { return written([]) }
        // A payload that leaves no room for even the smallest entry gets none: nothing is
        // fetched for it (say, a payload already over 4096 bytes).
        if roomless(content, shape: shape, moved: moved) {
            return written(
                found.map { source in
                    var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
                    outcome.error = AttacheError(
                        .payloadTooLarge,
                        "the payload leaves no room for an attachment under \(configuration.maxPayloadBytes) bytes; "
                            + "nothing was fetched", limit: .maxPayloadBytes)
                    return outcome
                })
        }
        // The first sources are considered; the others are reported, never fetched.
        let sources = Array(found.prefix(max(0, configuration.maxSources)))
        let skipped = notFetched(found.dropFirst(sources.count))
        let budgets = payloadBudgets()

        let sealed = shape.seal != nil
        let (outcomes, unfinished) = await runAll(sources, deadline: deadline) { [self] source in
            await run(
                AttachmentJob(
                    source: source, deadline: deadline, budgets: budgets, sealed: sealed,
                    group: WorkGroup.payload(
                        of: tenant, weight: configuration.coreShare, memory: configuration.decodeMemory)))
        }
        return written(outcomes + skipped, unfinished: unfinished)
    }
}

extension Pipeline {
    /// The seal a payload goes out under: the caller's, else the payload's own `attache-seal`,
    /// else the configured one; nil for none.
    func sealShape(
        _ content: NotificationContent, asked: Result<SealRecipient, AttacheError>?
    ) throws(AttacheError) -> OutputShape.Seal? {
        var recipient = try asked?.get()
        if recipient == nil { recipient = try content.sealRequest() }
        if recipient == nil { recipient = configuration.sealTo }
        guard let recipient else { return nil }
        return .init(
            recipient: recipient, placeholder: configuration.sealPlaceholder, members: configuration.sealMembers)
    }

    /// Whether the payload leaves no room for even the smallest entry, in every frame its
    /// kinds could have (a kind changes the frame only through its category).
    func roomless(_ content: NotificationContent, shape: OutputShape, moved: [String]) -> Bool {
        let smallest = AttachmentDescriptor.smallestEntrySize(baseURL: configuration.baseURL, sealed: shape.seal != nil)
        let kinds = Dictionary(
            ["image", "audio", "video"].map { (shape.categories?.category(for: $0), $0) },
            uniquingKeysWith: { a, _ in a })
        return kinds.values.allSatisfy { kind in
            PayloadFrame(content: content, shape: shape, kind: kind, actions: false, moved: moved).size(smallest)
                > configuration.maxPayloadBytes
        }
    }
}

extension NotificationContent {
    /// The key a payload asks to be sealed to: `"attache-seal": {"key": "<base64 or PEM>",
    /// "kid": "<key id>"}`; nil when it asks for none.
    func sealRequest() throws(AttacheError) -> SealRecipient? {
        guard let request = root[OutputShape.sealRequestMember] else { return nil }
        guard let key = request["key"]?.stringValue, let keyID = request["kid"]?.stringValue else {
            throw AttacheError(.sealFailed, "attache-seal needs a key and a kid")
        }
        do throws(SealError) {
            return try SealRecipient(encoded: Array(key.utf8), keyID: keyID)
        } catch {
            throw AttacheError(.sealFailed, "attache-seal: \(error)")
        }
    }
}

extension Pipeline {
    /// Sources past ``PipelineConfiguration/maxSources``: reported `too_many_sources`, never fetched.
    func notFetched(_ sources: some Sequence<AttachmentSource>) -> [AttachmentOutcome] {
        sources.map { source in
            var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
            outcome.error = AttacheError(
                .tooManySources, "the payload names more than \(configuration.maxSources) media; not fetched",
                limit: .maxSources)
            return outcome
        }
    }

    /// What all of one payload's fetches may read, and what it may add to the store.
    func payloadBudgets() -> PayloadBudgets {
        PayloadBudgets(
            fetch: ByteBudget(bytes: configuration.maxPayloadFetchBytes, limit: .maxPayloadFetchBytes),
            store: ByteBudget(bytes: configuration.maxPayloadStoreBytes, limit: .maxPayloadStoreBytes))
    }

    /// Runs `work` for each source in a task of its own and hands back what finished by the
    /// deadline (or when the caller went away), each unfinished source reported `timed_out`
    /// (or `cancelled`), in source order; `unfinished` when any was.
    func runAll(
        _ sources: [AttachmentSource], deadline: ContinuousClock.Instant,
        _ work: @escaping @Sendable (AttachmentSource) async -> AttachmentOutcome
    ) async -> (outcomes: [AttachmentOutcome], unfinished: Bool) {
        let collector = Collector(count: sources.count)
        var tasks: [Task<Void, Never>] = []
        for (index, source) in sources.enumerated() {
            tasks.append(
                Task {
                    let outcome = await work(source)
                    collector.finish(index, outcome)
                })
        }
        // A caller that goes away (a service client hanging up) ends the wait at once.
        let finished = await withTaskCancellationHandler {
            await collector.wait(until: deadline)
        } onCancel: {
            collector.expire()
        }
        let cancelled = Task.isCancelled
        for task in tasks { task.cancel() }

        var outcomes: [AttachmentOutcome] = []
        var unfinished = false
        let late = ContinuousClock.now >= deadline
        for (index, source) in sources.enumerated() {
            if let outcome = finished[index] {
                // Work that stopped because the deadline passed is unfinished too, even when it
                // said so a moment before the wait ended.
                if late, outcome.error?.code == .timedOut { unfinished = true }
                outcomes.append(outcome)
            } else {
                unfinished = true
                var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
                outcome.error =
                    cancelled
                    ? AttacheError(.cancelled, "the request was cancelled before this attachment was ready")
                    : AttacheError(.timedOut, "the payload's deadline passed before this attachment was ready")
                outcomes.append(outcome)
            }
        }
        return (outcomes, unfinished)
    }
}
