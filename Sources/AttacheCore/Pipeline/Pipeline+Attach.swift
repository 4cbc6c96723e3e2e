import Foundation

/// The per-attachment stages: fetch → validate → transform → store.
extension Pipeline {
    func attach(_ source: AttachmentSource, deadline: ContinuousClock.Instant) async -> AttachmentOutcome {
        var outcome = AttachmentOutcome(url: source.url, convention: source.convention)
        let specKey =
            configuration.specKey(configuration.rendition)
            + (configuration.decodedMemoryBudget.map { ",budget=\($0)" } ?? "")
        do throws(AttacheError) {
            // A rendition already stored for this URL and spec skips fetch and transform.
            if let (stored, _) = try store.lookup(url: source.url, spec: specKey) {
                outcome.cached = true
                outcome.attachment = try describe(stored, source: source)
                return outcome
            }

            var clock = ContinuousClock.now
            func lap() -> Double {
                let now = ContinuousClock.now
                defer { clock = now }
                return (now - clock).milliseconds
            }
            let media = try await fetcher.fetch(source.url, deadline: deadline)
            outcome.timings.fetch = lap()

            // Validate: the kind comes from the bytes; the URL and Content-Type only warn.
            let kind = try Sniffer.kind(of: media.bytes.prefix(Sniffer.prefixLength))
            try configuration.mediaLimits.check(kind, bytes: Int64(media.bytes.count))
            outcome.warnings = Self.mismatches(kind: kind, media: media)
            outcome.timings.validate = lap()

            let configuration = self.configuration
            let remaining = deadline - .now
            let prepared = await OffPool.run { () -> Result<Prepared, AttacheError> in
                Result { () throws(AttacheError) in
                    try Self.transform(media.bytes, kind: kind, configuration, remaining)
                }
            }
            let rendition = try prepared.get()
            outcome.timings.transform = lap()
            try Task.checkCancellation(or: .timedOut)

            let store = self.store
            let reference = SourceReference(
                url: source.url, spec: specKey, etag: media.etag, lastModified: media.lastModified)
            let stored = try await OffPool.run { () -> Result<StoredAttachment, AttacheError> in
                Result { () throws(AttacheError) in
                    try store.put(
                        rendition.bytes, metadata: rendition.metadata, source: reference, ttl: configuration.storeTTL)
                }
            }.get()
            outcome.attachment = try describe(stored, source: source)
            outcome.timings.store = lap()
        } catch {
            outcome.error = error
        }
        return outcome
    }

    /// Bytes to store and what they are.
    struct Prepared: Sendable {
        var bytes: [UInt8]
        var metadata: ObjectMetadata
        /// GIF: when the poster frame starts (the thumbnail time).
        var posterTime: Double?
    }

    /// Images are downscaled and re-encoded (metadata stripped, orientation applied); GIF,
    /// audio and video are stored as validated.
    static func transform(
        _ bytes: MediaBytes, kind: MediaKind, _ configuration: PipelineConfiguration, _ budget: Duration
    ) throws(AttacheError) -> Prepared {
        switch kind {
        case .jpeg, .png:
            let info = try ImageProcessor.probe(bytes, limits: configuration.imageLimits)
            let spec = configuration.spec(forWidth: info.displayWidth, height: info.displayHeight)
            let rendition = try ImageProcessor.render(
                bytes, spec: spec, limits: configuration.imageLimits, timeBudget: budget)
            return Prepared(
                bytes: rendition.data,
                metadata: ObjectMetadata(
                    kind: rendition.kind, width: rendition.width, height: rendition.height, frames: 1))
        case .gif:
            let info = try ImageProcessor.probe(bytes, limits: configuration.imageLimits)
            var spec = configuration.spec(forWidth: info.width, height: info.height)
            spec.gifMaxBytes = Int(configuration.mediaLimits.imageBytes)
            let rendition = try ImageProcessor.render(bytes, spec: spec, limits: configuration.imageLimits)
            return Prepared(
                bytes: rendition.data,
                metadata: ObjectMetadata(
                    kind: .gif, width: rendition.width, height: rendition.height, frames: rendition.frames,
                    posterTime: rendition.frames > 1 ? rendition.posterTime : nil),
                posterTime: rendition.frames > 1 ? rendition.posterTime : nil)
        default:
            return Prepared(bytes: Array(bytes.buffer), metadata: ObjectMetadata(kind: kind))
        }
    }

    func describe(_ stored: StoredAttachment, source: AttachmentSource) throws(AttacheError) -> AttachmentDescriptor {
        let token = try store.issueToken(for: stored.id, ttl: configuration.tokenTTL)
        let base =
            configuration.baseURL.hasSuffix("/") ? String(configuration.baseURL.dropLast()) : configuration.baseURL
        var thumbnail = source.options
        if thumbnail.time == nil { thumbnail.time = stored.posterTime }
        return AttachmentDescriptor(
            id: stored.id.hex, url: "\(base)/\(token)/\(stored.id.hex).\(stored.kind.fileExtension)",
            type: stored.kind.uti, bytes: stored.bytes, width: stored.width, height: stored.height,
            frames: stored.frames, thumbnail: thumbnail)
    }

    /// Disagreements between the bytes and what the URL or `Content-Type` claimed.
    static func mismatches(kind: MediaKind, media: FetchedMedia) -> [String] {
        var warnings: [String] = []
        let aliases: [MediaKind: Set<String>] = [
            .jpeg: ["image/jpg", "image/pjpeg"], .png: ["image/x-png"], .mp3: ["audio/mp3", "audio/mpeg3"],
            .wav: ["audio/x-wav", "audio/wave", "audio/vnd.wave"], .aiff: ["audio/x-aiff"], .aifc: ["audio/x-aiff"],
            .m4a: ["audio/m4a", "audio/x-m4a"], .mp4: ["application/mp4"], .m4v: ["video/mp4"],
            .avi: ["video/avi", "video/msvideo"], .mpeg: ["video/mpg"], .mpeg2: ["video/mpg"],
        ]
        if let type = media.contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased(),
            !type.isEmpty, type != kind.mimeType, !(aliases[kind]?.contains(type) ?? false),
            !["application/octet-stream", "binary/octet-stream"].contains(type)
        {
            warnings.append("Content-Type \(type) but the bytes are \(kind.rawValue)")
        }
        let extensions: [MediaKind: Set<String>] = [
            .jpeg: ["jpg", "jpeg", "jpe"], .mpeg: ["mpg", "mpeg"], .mpeg2: ["mpg", "mpeg", "m2v", "vob"],
            .aiff: ["aif", "aiff"], .aifc: ["aif", "aifc"],
        ]
        let path = media.finalURL.split(separator: "?").first.map(String.init) ?? media.finalURL
        if let slash = path.lastIndex(of: "/"), let dot = path[slash...].lastIndex(of: ".") {
            let ext = path[path.index(after: dot)...].lowercased()
            let same = extensions[kind] ?? [kind.fileExtension]
            if !ext.isEmpty, ext.count <= 5, !same.contains(ext) {
                warnings.append("the URL says .\(ext) but the bytes are \(kind.rawValue)")
            }
        }
        return warnings
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws a typed error when the current task was cancelled.
    static func checkCancellation(or code: AttacheError.Code) throws(AttacheError) {
        if Task.isCancelled { throw AttacheError(code, "cancelled at the deadline") }
    }
}
