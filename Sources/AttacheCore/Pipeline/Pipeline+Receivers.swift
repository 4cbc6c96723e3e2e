internal import AttacheBase
internal import AttacheFetch
internal import AttacheMedia
import AttacheWork

/// A multi-platform send body (FCM v1, OneSignal, Braze, Airship, CleverTap): one fetch and
/// one decode per distinct picture URL, and from it every receiver's picture — the iOS rendition (with the attachment block inside
/// the message's APNs payload when that is mutable), Android's and the web's 2:1 crops, a
/// large icon — each field rewritten to its own picture's URL; every other byte kept.
extension Pipeline {
    func processReceivers(
        _ content: NotificationContent, deadline: ContinuousClock.Instant, tenant: String,
        start: ContinuousClock.Instant, focus given: FocalPoint? = nil
    ) async -> PipelineResult {
        let shape = content.shape
        // The APNs payload an FCM message carries: a mutable one gets the attachment block of
        // the iOS picture (its own field's, else the one every platform shares).
        let apnsPath = content.apnsPath
        let inner = apnsPath.flatMap { content.valueBytes(at: $0) }.flatMap { try? NotificationContent(bytes: $0) }
        let mutableInner = inner?.isMutable == true ? inner : nil
        let fields = Self.fields(of: content, withIOS: mutableInner != nil)
        let focus = given ?? content.focus
        // The body's own member goes whatever it held (never sent on); one that is not a point
        // is said in the report.
        let named = content.root[NotificationContent.focusMember] != nil
        let notes = given == nil && named && content.focus == nil ? [NotificationContent.focusNote] : []
        func unchanged(_ outcomes: [AttachmentOutcome], unfinished: Bool = false) -> PipelineResult {
            let payload = named ? content.replacing([], removing: [NotificationContent.focusMember]) : content.bytes
            return PipelineResult(
                payload: payload, outcomes: outcomes, bestAttempt: unfinished, passedThrough: !named,
                payloadError: nil, trimmed: [], elapsed: .now - start, notes: notes)
        }
        let (found, wanted) = Self.sources(fields, shape: shape)
        guard !found.isEmpty else { return unchanged([]) }
        let sources = Array(found.prefix(max(0, configuration.maxSources)))
        let skipped = notFetched(found.dropFirst(sources.count))
        let budgets = payloadBudgets()
        let specs = configuration.targets
        let targetsFor: [String: [TargetSpec]] = wanted.mapValues { receivers in
            Receiver.allCases.filter { receivers.contains($0) }.compactMap { $0.target.flatMap { specs[$0] } }
        }
        let (ran, unfinished) = await runAll(sources, deadline: deadline) { [self] source in
            await run(
                AttachmentJob(
                    source: source, deadline: deadline, budgets: budgets, sealed: false,
                    group: WorkGroup.payload(
                        of: tenant, weight: configuration.coreShare, memory: configuration.decodeMemory),
                    targets: targetsFor[source.url] ?? [], focus: focus))
        }

        var byURL = Dictionary(ran.map { ($0.url, $0) }, uniquingKeysWith: { a, _ in a })
        let (fieldEdits, unnamed) = Self.fieldEdits(fields, byURL)
        var edits = fieldEdits
        // A rendition its sender has no word for is not attached: the field keeps its URL, and
        // the outcome says so.
        for (url, error) in unnamed {
            byURL[url]?.attachment = nil
            byURL[url]?.error = error
        }
        let outcomes = ran.map { byURL[$0.url] ?? $0 }
        var iosOutcomes: [AttachmentOutcome] = []
        var trimmed: [String] = []
        if let mutableInner, let apnsPath, let iosField = fields.first(where: { $0.receiver == .ios }),
            let outcome = byURL[iosField.url]
        {
            iosOutcomes = [outcome]
            let written = attachmentBlock(&iosOutcomes, into: mutableInner)
            trimmed = written.trimmed
            if let payload = written.payload {
                edits.append((apnsPath, .raw(String(decoding: payload, as: UTF8.self))))
            }
        }
        guard !edits.isEmpty else { return unchanged(outcomes + skipped, unfinished: unfinished) }
        let edited = content.replacing(edits, removing: named ? [NotificationContent.focusMember] : [])
        let payload = withPlaceholders(
            edited, shape: shape, hashes: Self.placeholders(fields, byURL), trimmed: &trimmed)
        // The iOS attachment trimmed away (over the APNs size) is said on its outcome.
        let reported = outcomes.map { outcome in
            guard let trimmedOne = iosOutcomes.first(where: { $0.url == outcome.url && $0.attachment == nil }),
                outcome.attachment != nil
            else { return outcome }
            var changed = outcome
            changed.error = trimmedOne.error
            return changed
        }
        return PipelineResult(
            payload: payload, outcomes: reported + skipped, bestAttempt: unfinished, passedThrough: false,
            payloadError: nil, trimmed: trimmed, elapsed: .now - start, notes: notes)
    }

    /// The body's picture fields; with `withIOS` and no iOS field of its own, the picture every
    /// platform shares (`message.notification.image`) is the iOS one too.
    static func fields(of content: NotificationContent, withIOS: Bool) -> [ReceiverField] {
        var fields = content.receiverFields
        if withIOS, !fields.contains(where: { $0.receiver == .ios }),
            let shared = fields.first(where: { $0.path == ["message", "notification", "image"] })
        {
            fields.append(ReceiverField(path: [], receiver: .ios, url: shared.url))
        }
        return fields
    }

    /// The distinct picture URLs in the order the fields name them, each a source whose
    /// convention names the receivers that want it (with the thumbnail options a field of it
    /// gives: Airship's iOS `options`), and the receivers per URL.
    static func sources(
        _ fields: [ReceiverField], shape: PayloadShape
    ) -> (found: [AttachmentSource], wanted: [String: Set<Receiver>]) {
        var order: [String] = []
        var wanted: [String: Set<Receiver>] = [:]
        for field in fields {
            if wanted[field.url] == nil { order.append(field.url) }
            wanted[field.url, default: []].insert(field.receiver)
        }
        let options = Dictionary(
            fields.map { ($0.url, $0.options) }, uniquingKeysWith: { first, next in first == .init() ? next : first })
        let found = order.map { url in
            let receivers = Receiver.allCases.filter { wanted[url]!.contains($0) }.map(\.rawValue)
            return AttachmentSource(
                url: url, convention: shape.rawValue + ":" + receivers.joined(separator: "+"),
                options: options[url] ?? ThumbnailOptions())
        }
        return (found, wanted)
    }

    /// `payload` with the Android and web pictures' placeholders where their apps read them,
    /// or as it is when the body has no room for them (and `trimmed` says so).
    func withPlaceholders(
        _ payload: [UInt8], shape: PayloadShape, hashes: [Receiver: String], trimmed: inout [String]
    ) -> [UInt8] {
        // Read again only when a sender's map can take a hash (the edits moved every offset).
        guard !hashes.isEmpty, let send = SendShape.of(shape), !send.placeholderMaps.isEmpty,
            let edited = try? NotificationContent(bytes: payload)
        else { return payload }
        let added = BodyPlaceholders.insertions(hashes, shape: send, in: edited)
        guard !added.isEmpty else { return payload }
        guard
            let written = BodyPlaceholders.write(
                added, into: edited, shape: send, maxBytes: configuration.maxPayloadBytes)
        else {
            trimmed.append("send-body placeholders")
            return payload
        }
        return written
    }

    /// Each field to its receiver's picture; a field whose picture could not be made keeps the
    /// URL it had (the receiver fetches it as it would have without Attache). `unnamed`: the
    /// URLs whose rendition the field's sender has no word for (a Braze `asset_file_type` for
    /// a WebP), with the error their outcome reports.
    static func fieldEdits(
        _ fields: [ReceiverField], _ byURL: [String: AttachmentOutcome]
    ) -> (edits: [(path: [String], value: JSONValue)], unnamed: [(url: String, error: AttacheError)]) {
        var edits: [(path: [String], value: JSONValue)] = []
        var unnamed: [(url: String, error: AttacheError)] = []
        for field in fields where !field.path.isEmpty {
            guard let outcome = byURL[field.url] else { continue }
            switch field.receiver.target {
            case nil:
                guard let attachment = outcome.attachment else { continue }
                // A member naming the file's type says the type written, or the field stays.
                if let member = field.typeMember {
                    guard let word = member.word(for: attachment.kind) else {
                        let error = AttacheError(
                            .unsupportedVariant,
                            "\(member.path.joined(separator: ".")) has no word for \(attachment.kind.mimeType): "
                                + "\(field.path.joined(separator: ".")) keeps its URL")
                        unnamed.append((field.url, error))
                        continue
                    }
                    edits.append((member.path, .string(word)))
                }
                edits.append((field.path, .string(attachment.url)))
            case .some:
                if let url = outcome.targets.first(where: { Receiver($0.target) == field.receiver })?.url {
                    edits.append((field.path, .string(url)))
                }
            }
        }
        return (edits, unnamed)
    }

    /// Each picture receiver's placeholder: its first field's picture's ThumbHash.
    static func placeholders(_ fields: [ReceiverField], _ byURL: [String: AttachmentOutcome]) -> [Receiver: String] {
        var hashes: [Receiver: String] = [:]
        for field in fields where hashes[field.receiver] == nil {
            guard field.receiver.target != nil, let outcome = byURL[field.url],
                let hash = outcome.targets.first(where: { Receiver($0.target) == field.receiver })?.placeholder
            else { continue }
            hashes[field.receiver] = hash
        }
        return hashes
    }

    /// The iOS attachment block written into an FCM message's mutable APNs payload, under the
    /// APNs size (what does not fit is trimmed, as for an APNs payload).
    func attachmentBlock(
        _ outcomes: inout [AttachmentOutcome], into payload: NotificationContent
    ) -> (payload: [UInt8]?, trimmed: [String]) {
        let written = AttachmentBlock.write(
            &outcomes, into: payload,
            shape: OutputShape(key: configuration.attachmentsKey, categories: configuration.categories), moved: [],
            maxBytes: configuration.maxPayloadBytes)
        return (written.payload, written.trimmed)
    }
}
