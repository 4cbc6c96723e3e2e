internal import AttacheBase
internal import AttacheFetch
internal import AttacheMedia
internal import AttacheStore

/// One attachment through the stages, in order: fetch → validate → transform → store, then
/// its entry for the attach stage. Each stage has its home in its own target; this file only
/// hands one stage's output to the next, under the payload's deadline.
/// The byte budgets one payload's attachments share.
struct PayloadBudgets: Sendable {
    /// Bytes all fetches may read together.
    let fetch: ByteBudget
    /// Bytes all attachments may add to the store.
    let store: ByteBudget
}

extension Pipeline {
    func run(
        _ source: AttachmentSource, deadline: ContinuousClock.Instant, budgets: PayloadBudgets
    ) async -> AttachmentOutcome {
        var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
        let configuration = self.configuration
        let spec = configuration.effectiveRendition
        let cacheKey = spec.cacheKey
        // The time of the stage under way goes to its field, whether it ends well or not.
        var stage: WritableKeyPath<StageTimings, Double> = \.fetch
        var started = ContinuousClock.now
        func next(_ following: WritableKeyPath<StageTimings, Double>) {
            let now = ContinuousClock.now
            outcome.timings[keyPath: stage] = (now - started).milliseconds
            stage = following
            started = now
        }
        do throws(AttacheError) {
            // A rendition already stored for this URL and spec skips every stage.
            if let (stored, _) = try store.lookup(url: source.url, spec: cacheKey) {
                outcome.cached = true
                outcome.attachment = try describe(stored, source: source)
                return outcome
            }

            let media = try await fetcher.fetch(
                source.url, deadline: deadline, limits: configuration.mediaLimits, budget: budgets.fetch)
            outcome.fetchedBytes = Int64(media.bytes.count)
            next(\.validate)

            // The kind the fetch found in the first bytes travels on; the URL and Content-Type
            // only warn.
            let validated = try MediaValidator.validate(
                media.bytes, sniffedKind: media.kind, limits: configuration.mediaLimits)
            outcome.sourceKind = validated.kind.rawValue
            outcome.warnings = MediaValidator.mismatches(
                kind: validated.kind, contentType: media.contentType, url: media.finalURL)
            next(\.transform)

            // Work on the blocking pool cannot be interrupted from here: it checks this
            // deadline, which the payload's end (cancellation) moves to now.
            let work = WorkDeadline(deadline)
            let transformed = try await withTaskCancellationHandler {
                await OffPool.run { () -> Result<TransformedMedia, AttacheError> in
                    Result { () throws(AttacheError) in
                        try MediaTransform.apply(
                            validated, spec: spec, limits: configuration.imageLimits, deadline: work)
                    }
                }
            } onCancel: {
                work.cancel()
            }.get()
            (outcome.sourceWidth, outcome.sourceHeight) = (transformed.sourceWidth, transformed.sourceHeight)
            next(\.store)
            try Task.checkCancellation(or: .timedOut)
            try budgets.store.take(Int64(transformed.bytes.count))

            let store = self.store
            let reference = SourceReference(
                url: source.url, spec: cacheKey, etag: media.etag, lastModified: media.lastModified)
            let metadata = ObjectMetadata(
                kind: transformed.kind, width: transformed.width, height: transformed.height,
                frames: transformed.frames, posterTime: transformed.posterTime)
            let stored = try await OffPool.run { () -> Result<StoredAttachment, AttacheError> in
                Result { () throws(AttacheError) in
                    try store.put(
                        UnsafeRawBufferPointer(transformed.bytes.buffer), metadata: metadata, source: reference,
                        ttl: configuration.storeTTL)
                }
            }.get()
            outcome.attachment = try describe(stored, source: source)
            next(\.store)
        } catch {
            outcome.failedStage =
                switch stage {
                case \.fetch: "fetch"
                case \.validate: "validate"
                case \.transform: "transform"
                default: "store"
                }
            next(stage)
            outcome.error = error
        }
        return outcome
    }

    /// The block entry for a stored attachment, with a token that opens only it.
    func describe(_ stored: StoredAttachment, source: AttachmentSource) throws(AttacheError) -> AttachmentDescriptor {
        let token = try store.issueToken(for: stored.id, ttl: configuration.tokenTTL)
        return AttachmentDescriptor(stored, token: token, baseURL: configuration.baseURL, thumbnail: source.options)
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws a typed error when the current task was cancelled.
    static func checkCancellation(or code: AttacheError.Code) throws(AttacheError) {
        if Task.isCancelled { throw AttacheError(code, "cancelled at the deadline") }
    }
}
