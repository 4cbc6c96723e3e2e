internal import AttacheBase
internal import AttacheFetch
internal import AttacheMedia
internal import AttacheSeal
internal import AttacheStore
import AttacheWork
internal import Crypto

// One attachment through the stages, in order: fetch → validate → transform → store, then
// its entry for the attach stage. Each stage has its home in its own target; this file only
// hands one stage's output to the next, under the payload's deadline.

/// The byte budgets one payload's attachments share.
struct PayloadBudgets: Sendable {
    /// Bytes all fetches may read together.
    let fetch: ByteBudget
    /// Bytes all attachments may add to the store.
    let store: ByteBudget
}

/// One stored piece of an attachment (its rendition, or its small rendition): the bytes to
/// store — the plaintext, or for a sealed payload the segmented ciphertext — and how to open them.
struct Piece: Sendable {
    var plain: MediaBytes
    var kind: MediaKind
    var width: Int?
    var height: Int?
    var sealed: [UInt8]? = nil
    var seal: AttachmentDescriptor.SealedObject? = nil

    /// Seals the piece under a fresh random key.
    mutating func encrypt() throws(AttacheError) {
        let key = SymmetricKey(size: .bits256)
        do throws(any Error) {
            sealed = try SegmentEncryptor.seal(plain.buffer, key: key)
        } catch {
            throw AttacheError(.internalError, "the attachment could not be sealed: \(error)")
        }
        let hash = AttachmentID(bytes: Array(SHA256.hash(data: UnsafeRawBufferPointer(plain.buffer))))!.hex
        seal = .init(key: key.withUnsafeBytes { Array($0) }, sha256: hash)
    }

    var storedCount: Int { sealed?.count ?? plain.count }
}

/// What the transform stage made: the media, and its pieces to store.
struct MadePieces: Sendable {
    var media: TransformedMedia
    var main: Piece
    var small: Piece?

    /// The bytes storing it all takes: the rendition, its small one, the receivers' pictures.
    var storedBytes: Int64 {
        let pictures = media.targets.compactMap { try? $0.result.get() }
        return Int64(main.storedCount + (small?.storedCount ?? 0) + pictures.reduce(0) { $0 + $1.data.count })
    }
}

/// The store stage's entries: the rendition's (with its small rendition's) and the targets'.
/// One attachment's work for one payload: the source to fetch, by when, charged to which of the
/// payload's budgets, for whom (its cores' share), sealed or not, and the receivers' pictures
/// made beside the rendition, cropped around `focus` when given.
struct AttachmentJob: Sendable {
    let source: AttachmentSource
    let deadline: ContinuousClock.Instant
    let budgets: PayloadBudgets
    let sealed: Bool
    let group: WorkGroup
    /// Not for a sealed payload (its objects are sealed under keys of their own).
    var targets: [TargetSpec] = []
    var focus: FocalPoint? = nil
}

struct StoredPieces: Sendable {
    var entry: AttachmentDescriptor
    var small: AttachmentDescriptor.SmallRendition?
    var targets: [TargetEntry]
    /// When the rendition's object was first stored (Unix seconds).
    var created: Int64
}

/// The keys one attachment's pieces are stored under: the rendition's, its small rendition's
/// and each target picture's.
struct PieceKeys: Sendable {
    let rendition: String
    let small: String?
    let targets: [String]
}

extension Pipeline {
    /// With `targets`, the pictures for other receivers are made from the same decode and
    /// stored beside the rendition (not for a sealed payload), cropped around `focus` if given.
    ///
    /// Payloads that name the same URL for the same pieces at the same time share one run
    /// (``AttachmentFlights``); each is charged its budgets for it. A sealed payload's run is
    /// its own (its objects are sealed under keys of their own).
    func run(_ job: AttachmentJob) async -> AttachmentOutcome {
        let (source, deadline, budgets) = (job.source, job.deadline, job.budgets)
        let alone: @Sendable () async -> AttachmentOutcome = { [self] in await runAlone(job) }
        // A host the sender may not fetch from is refused before a stored rendition or another
        // payload's run could answer for it.
        if let hosts = configuration.mediaHosts, let refusal = fetcher.refusal(for: source.url, sources: hosts),
            refusal.code == .sourceNotAllowed
        {
            var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
            (outcome.error, outcome.failedStage) = (refusal, "fetch")
            return outcome
        }
        guard !job.sealed else { return await alone() }
        let keys = pieceKeys(job)
        let key = AttachmentFlights.Key(
            url: source.url, rendition: keys.rendition, small: keys.small, targets: keys.targets,
            options: source.options, mediaHosts: configuration.mediaHosts)
        let (shared, joined) = await flights.run(key, alone)
        guard joined else { return shared }
        // Another payload's run ended for lack of its time, with time left for this one.
        if let code = shared.error?.code, code == .timedOut || code == .cancelled, !Task.isCancelled,
            ContinuousClock.now < deadline
        {
            return await alone()
        }
        var outcome = shared
        outcome.convention = source.convention
        let trace = AttachmentTrace(url: source.url, convention: source.convention)
        trace.shared()
        defer { trace.end(outcome) }
        // This payload is charged for what the run read and stored, as if it had done it.
        do throws(AttacheError) {
            if outcome.fetchedBytes > 0 { try budgets.fetch.take(outcome.fetchedBytes) }
            let stored =
                (outcome.attachment.map { $0.bytes + ($0.small?.bytes ?? 0) } ?? 0)
                + outcome.targets.reduce(0) { $0 + $1.bytes }
            if stored > 0, !outcome.cached { try budgets.store.take(stored) }
        } catch {
            (outcome.attachment, outcome.targets, outcome.error) = (nil, [], error)
        }
        return outcome
    }

    /// One attachment through the stages, for this payload alone.
    func runAlone(_ job: AttachmentJob) async -> AttachmentOutcome {
        var job = job
        if job.sealed { job.targets = [] }
        let (source, deadline, budgets, sealed) = (job.source, job.deadline, job.budgets, job.sealed)
        var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
        var trace = AttachmentTrace(url: source.url, convention: source.convention)
        defer { trace.end(outcome) }
        let keys = pieceKeys(job)
        // The time of the stage under way goes to its field, whether it ends well or not.
        var stage: WritableKeyPath<StageTimings, Double> = \.fetch
        var started = ContinuousClock.now
        func next(_ following: WritableKeyPath<StageTimings, Double>?) {
            let now = ContinuousClock.now
            outcome.timings[keyPath: stage] = (now - started).milliseconds
            guard let following else { return }
            stage = following
            started = now
            trace.enter(Self.stageName(following))
        }
        do throws(AttacheError) {
            // A rendition already stored for this URL and spec skips every stage (not for a
            // sealed payload: its objects are sealed under keys of their own).
            if !sealed, let entry = try await cached(source, targets: job.targets, keys: keys) {
                outcome.cached = true
                (outcome.attachment, outcome.targets) = entry
                return outcome
            }
            // A store found full a moment ago refuses before the fetch and the transform (the
            // store stage's refusal, with no time spent in the others).
            do throws(AttacheError) {
                try store.checkRoom()
            } catch {
                stage = \.store
                throw error
            }
            trace.enter("fetch")
            // Video, audio and GIFs may be read past their attachment caps when they can be
            // re-encoded under them.
            let readLimits = configuration.sourceLimits
            let media = try await fetcher.fetch(
                source.url, deadline: deadline, limits: readLimits, budget: budgets.fetch,
                sources: configuration.mediaHosts)
            outcome.fetchedBytes = Int64(media.bytes.count)
            trace.fetched(media)
            next(\.validate)

            // The kind the fetch found in the first bytes travels on; the URL and Content-Type
            // only warn.
            let validated = try MediaValidator.validate(
                media.bytes, sniffedKind: media.kind, limits: readLimits)
            outcome.sourceKind = validated.kind.rawValue
            outcome.warnings = MediaValidator.mismatches(
                kind: validated.kind, contentType: media.contentType, url: media.finalURL)
            trace.validated(validated.kind)
            next(\.transform)

            let made = try await transform(validated, job)
            outcome.record(made.media)
            trace.transformed(made.media, from: validated)
            next(\.store)
            try Task.checkCancellation(or: .timedOut)
            try budgets.store.take(made.storedBytes)
            let before = store.now
            let stored = try await store(made, source: source, media: media, keys: keys)
            (outcome.attachment, outcome.targets) = (stored.entry, stored.targets)
            // An object first stored during this write is new (content-addressed: the same bytes
            // stored earlier are not written again).
            trace.stored(backend: store.backendName, bytes: made.main.storedCount, new: stored.created >= before)
            next(nil)
        } catch {
            outcome.failedStage = Self.stageName(stage)
            next(nil)
            if stage == \.fetch { outcome.fetchedBytes = error.fetchedBytes }
            outcome.error = error
        }
        return outcome
    }

    static func stageName(_ stage: WritableKeyPath<StageTimings, Double>) -> String {
        switch stage {
        case \.fetch: "fetch"
        case \.validate: "validate"
        case \.transform: "transform"
        default: "store"
        }
    }

    /// The keys of the rendition (the spec's), of the small rendition (the rendition's and its
    /// side; a video's small rendition is its poster, taken at the sender's thumbnail time) and of
    /// each target's picture (the rendition's, the target's, the focus, and the thumbnail time a
    /// video's frame is taken at). A time is named only when given, so keys without one stay.
    func pieceKeys(_ job: AttachmentJob) -> PieceKeys {
        let (source, focus) = (job.source, job.focus)
        let rendition = configuration.effectiveRendition.cacheKey
        let smallSide = configuration.smallSide > 0 ? configuration.smallSide : nil
        return PieceKeys(
            rendition: rendition,
            small: smallSide.map { side in
                rendition + ",small=\(side)" + (source.options.time.map { ",at=\($0)" } ?? "")
            },
            targets: job.targets.map { target in
                rendition + "|" + target.cacheKey + (focus.map { ",focus=\($0.x),\($0.y)" } ?? "")
                    + (source.options.time.map { ",at=\($0)" } ?? "")
            })
    }

    /// The entries of a rendition already stored for this URL and spec, with every target's
    /// picture and the small rendition if stored; nil when any piece is missing (the whole path
    /// runs again: one decode).
    func cached(
        _ source: AttachmentSource, targets: [TargetSpec], keys: PieceKeys
    ) async throws(AttacheError) -> (AttachmentDescriptor, [TargetEntry])? {
        try await catalog {
            [self] () throws(AttacheError) -> (AttachmentDescriptor, [TargetEntry])? in
            guard let (stored, _) = try self.store.lookup(url: source.url, spec: keys.rendition),
                case .media(let kind) = stored.kind
            else { return nil }
            var found: [TargetEntry] = []
            var sent = [stored]
            for (target, key) in zip(targets, keys.targets) {
                guard let (picture, reference) = try self.store.lookup(url: source.url, spec: key) else { return nil }
                var entry = try describeTarget(picture, target: target.target)
                entry.cached = true
                entry.read(note: reference.note)
                found.append(entry)
                sent.append(picture)
            }
            var entry = try describe(stored, kind: kind, source: source)
            if let smallKey = keys.small, let (small, _) = try self.store.lookup(url: source.url, spec: smallKey) {
                entry.small = try describeSmall(small, seal: nil, of: kind)
                sent.append(small)
            }
            // Copies another tenant stored first are this one's too from now: a purge of that
            // tenant keeps them.
            try self.store.hold(sent, for: configuration.storeOwner?.id)
            return (entry, found)
        }
    }

    /// The transform stage on the blocking pool: the rendition, its small rendition made from
    /// it, the targets' pictures, and for a sealed payload the pieces sealed there too.
    ///
    /// Work on the pool cannot be interrupted from here: it checks this deadline, which the
    /// payload's end (cancellation) moves to now.
    func transform(_ validated: ValidatedMedia, _ job: AttachmentJob) async throws(AttacheError) -> MadePieces {
        let (sealed, work) = (job.sealed, WorkDeadline(job.deadline))
        let configuration = self.configuration
        let request = TransformRequest(
            spec: configuration.effectiveRendition, limits: configuration.imageLimits, deadline: work,
            smallSide: configuration.smallSide > 0 ? configuration.smallSide : nil, caps: configuration.mediaLimits,
            posterTime: job.source.options.time, targets: job.targets, focus: job.focus)
        return try await withTaskCancellationHandler {
            await OffPool.run(group: job.group, estimate: .unread(bytes: validated.bytes.count), deadline: work) {
                () -> Result<MadePieces, AttacheError> in
                Result { () throws(AttacheError) in
                    let transformed = try MediaTransform.apply(validated, request)
                    var main = Piece(
                        plain: transformed.bytes, kind: transformed.kind, width: transformed.width,
                        height: transformed.height)
                    var small = transformed.small.map {
                        Piece(plain: $0.bytes, kind: $0.kind, width: $0.width, height: $0.height)
                    }
                    if sealed {
                        try main.encrypt()
                        try small?.encrypt()
                    }
                    return MadePieces(media: transformed, main: main, small: small)
                }
            }
        } onCancel: {
            work.cancel()
        }.get()
    }

    /// The store stage: every piece written (on the store's threads) and its entry described,
    /// with a token for each.
    func store(
        _ made: MadePieces, source: AttachmentSource, media: FetchedMedia, keys: PieceKeys
    ) async throws(AttacheError) -> StoredPieces {
        let store = self.store
        let transformed = made.media
        let (main, small) = (made.main, made.small)
        let reference = SourceReference(
            url: source.url, spec: keys.rendition, etag: media.etag, lastModified: media.lastModified)
        let metadata = {
            var metadata = ObjectMetadata(
                kind: transformed.kind, width: transformed.width, height: transformed.height,
                frames: transformed.frames, posterTime: transformed.posterTime)
            metadata.placeholder = transformed.placeholder.map(ThumbHash.text)
            metadata.clip = transformed.clip
            return metadata
        }()
        let smallReference = keys.small.map {
            SourceReference(url: source.url, spec: $0, etag: media.etag, lastModified: media.lastModified)
        }
        let ttl = configuration.storeTTL
        // The entries' tokens are issued there too: issuing one reads the catalog.
        let kind = transformed.kind
        var stored = try await OffPool.write {
            [self] () -> Result<StoredPieces, AttacheError> in
            Result { () throws(AttacheError) in
                func put(
                    _ piece: Piece, _ metadata: ObjectMetadata, _ reference: SourceReference?
                ) throws(AttacheError) -> StoredAttachment {
                    let owner = configuration.storeOwner
                    if let sealed = piece.sealed {
                        return try store.put(sealed, metadata: .sealed, ttl: ttl, owner: owner)
                    }
                    return try store.put(
                        UnsafeRawBufferPointer(piece.plain.buffer), metadata: metadata, source: reference, ttl: ttl,
                        owner: owner)
                }
                let stored = try put(main, metadata, reference)
                var smallMetadata = metadata
                (smallMetadata.width, smallMetadata.height, smallMetadata.frames) = (small?.width, small?.height, 1)
                smallMetadata.kind = .media(small?.kind ?? kind)
                smallMetadata.posterTime = nil
                smallMetadata.placeholder = nil
                smallMetadata.clip = nil
                let storedSmall = try small.map { piece throws(AttacheError) in
                    try put(piece, smallMetadata, smallReference)
                }
                let entries = try storeTargets(transformed.targets, keys: keys.targets, source: source, media: media)
                return StoredPieces(
                    entry: try describe(stored, kind: kind, source: source),
                    small: try storedSmall.map { stored throws(AttacheError) in
                        try describeSmall(stored, seal: small?.seal, of: kind)
                    },
                    targets: entries, created: stored.created)
            }
        }.get()
        if let seal = main.seal {
            stored.entry.seal = seal
            (stored.entry.bytes, stored.entry.width, stored.entry.height) =
                (Int64(main.plain.count), main.width, main.height)
            stored.entry.frames = transformed.frames
            if stored.entry.thumbnail.time == nil { stored.entry.thumbnail.time = transformed.posterTime }
            // A sealed object's metadata says nothing of it; its entry, inside the seal, does:
            // the placeholder and the collapsed square travel there, hidden as the picture is.
            stored.entry.placeholder = metadata.placeholder
            if stored.entry.thumbnail.clippingRect == nil { stored.entry.thumbnail.clippingRect = metadata.clip }
        }
        if var smallEntry = stored.small, let small {
            // A sealed object does not say its kind: the piece does (a video's poster).
            if small.kind != kind { smallEntry.type = small.kind.uti }
            if small.seal != nil {
                (smallEntry.bytes, smallEntry.width, smallEntry.height) =
                    (Int64(small.plain.count), small.width, small.height)
            }
            stored.entry.small = smallEntry
        }
        return stored
    }

    /// Each target's picture stored under its key, or the error that left its receiver without one.
    func storeTargets(
        _ made: [TargetOutcome], keys: [String], source: AttachmentSource, media: FetchedMedia
    ) throws(AttacheError) -> [TargetEntry] {
        var entries: [TargetEntry] = []
        for (outcome, key) in zip(made, keys) {
            switch outcome.result {
            case .success(let picture):
                let metadata = ObjectMetadata(
                    kind: picture.kind, width: picture.width, height: picture.height, frames: 1)
                var made = TargetEntry(target: outcome.spec.target)
                made.crop = [picture.crop.x, picture.crop.y, picture.crop.width, picture.crop.height]
                (made.placement, made.encodes, made.quality, made.score, made.missed) =
                    (picture.placement, picture.encodes, picture.quality, picture.score, picture.missed)
                made.placeholder = picture.placeholder.map(ThumbHash.text)
                // What the making said is kept beside the picture, so that a reuse reports it too.
                let reference = SourceReference(
                    url: source.url, spec: key, etag: media.etag, lastModified: media.lastModified, note: made.note)
                let bytes = MediaBytes(picture.data)
                let stored = try store.put(
                    UnsafeRawBufferPointer(bytes.buffer), metadata: metadata, source: reference,
                    ttl: configuration.storeTTL, owner: configuration.storeOwner)
                var entry = try describeTarget(stored, target: outcome.spec.target)
                (entry.crop, entry.placement, entry.encodes, entry.quality, entry.score, entry.missed) =
                    (made.crop, made.placement, made.encodes, made.quality, made.score, made.missed)
                entry.placeholder = made.placeholder
                entries.append(entry)
            case .failure(let error):
                entries.append(TargetEntry(target: outcome.spec.target, error: error))
            }
        }
        return entries
    }

    /// Catalog reads (lookups, token issues) where they may wait: a shared store's catalog is a
    /// network round trip, and a local one's a SQLite read that waits behind a commit's fsync
    /// when the disk is busy; a blocked cooperative thread would hold up every deadline and
    /// fetch completion in the process, so both run on the catalog's threads.
    func catalog<T: Sendable>(
        _ body: @escaping @Sendable () throws(AttacheError) -> T
    ) async throws(AttacheError) -> T {
        try await onCatalogThread(body)
    }

    /// The block entry for a stored attachment, with a token that opens only it.
    func describe(
        _ stored: StoredAttachment, kind: MediaKind, source: AttachmentSource
    ) throws(AttacheError) -> AttachmentDescriptor {
        let token = try store.issueToken(for: stored.id, ttl: configuration.tokenTTL)
        return AttachmentDescriptor(
            stored, kind: kind, token: token, baseURL: configuration.baseURL, thumbnail: source.options)
    }

    /// A stored target picture's entry, with a token that opens only it.
    func describeTarget(_ stored: StoredAttachment, target: TargetSpec.Target) throws(AttacheError) -> TargetEntry {
        let token = try store.issueToken(for: stored.id, ttl: configuration.tokenTTL)
        var entry = TargetEntry(target: target)
        entry.url = AttachmentDescriptor.url(stored, token: token, baseURL: configuration.baseURL)
        entry.id = stored.id.hex
        if case .media(let kind) = stored.kind { entry.type = kind.mimeType }
        (entry.bytes, entry.width, entry.height) = (stored.bytes, stored.width, stored.height)
        return entry
    }

    /// The entry's `small` member for a stored small rendition, with a token of its own.
    /// A small rendition of another kind than the attachment's (a video's poster) says its type.
    func describeSmall(
        _ stored: StoredAttachment, seal: AttachmentDescriptor.SealedObject?, of kind: MediaKind
    ) throws(AttacheError) -> AttachmentDescriptor.SmallRendition {
        let token = try store.issueToken(for: stored.id, ttl: configuration.tokenTTL)
        let smallKind: MediaKind? = if case .media(let own) = stored.kind, own != kind { own } else { nil }
        return .init(
            url: AttachmentDescriptor.url(stored, token: token, baseURL: configuration.baseURL), bytes: stored.bytes,
            width: stored.width, height: stored.height, seal: seal, type: smallKind?.uti)
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws a typed error when the current task was cancelled.
    static func checkCancellation(or code: AttacheError.Code) throws(AttacheError) {
        if Task.isCancelled { throw AttacheError(code, "cancelled at the deadline") }
    }
}
