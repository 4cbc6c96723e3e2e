internal import AttacheBase
internal import AttacheFetch
internal import AttacheMedia
internal import AttacheStore
internal import Tracing

/// One attachment's spans: `attachment`, child of whatever span is current (the service's
/// request, a batch item), and under it one span per stage as the stages run (`fetch`,
/// `validate`, `transform`, `store`). Through swift-distributed-tracing: with no tracer
/// bootstrapped (the default) every span is the no-op one.
///
/// What a span says never holds a secret: a URL goes without its query, user or password; no
/// token, key or alert text is written.
///
/// Nothing is built for a span that does not record (no tracer, or a trace not sampled): no
/// stage span is started under it and no attribute is made, so traces off cost one no-op span
/// an attachment.
struct AttachmentTrace {
    private let attachment: any Span
    private var stage: (any Span)?
    private let recording: Bool

    init(url: String, convention: String) {
        attachment = startSpan("attachment")
        recording = attachment.isRecording
        guard recording else { return }
        attachment.attributes["url.full"] = Self.shown(url)
        attachment.attributes["attache.source.member"] = convention
    }

    /// The attachment was another payload's run, shared (no stage of its own ran).
    func shared() {
        guard recording else { return }
        attachment.attributes["attache.shared"] = true
    }

    /// Ends the stage under way, if any, and starts `name`'s.
    mutating func enter(_ name: String) {
        guard recording else { return }
        stage?.end()
        stage = startSpan(name, context: attachment.context, ofKind: name == "fetch" ? .client : .internal)
    }

    /// What libcurl said of the transfer that brought the body.
    func fetched(_ media: FetchedMedia) {
        guard let stage else { return }
        stage.updateAttributes { attributes in
            attributes["http.request.method"] = "GET"
            attributes["url.full"] = Self.shown(media.finalURL)
            attributes["http.response.status_code"] = media.status
            attributes["network.peer.address"] = media.remoteAddress
            if media.remotePort > 0 { attributes["network.peer.port"] = media.remotePort }
            attributes["http.response.body.size"] = media.bytes.count
            attributes["attache.fetch.redirects"] = media.redirects
            attributes["attache.fetch.attempts"] = media.attempts
            attributes["attache.fetch.name_lookup_ms"] = Self.milliseconds(media.phases.nameLookup)
            attributes["attache.fetch.connect_ms"] = Self.milliseconds(media.phases.connect)
            attributes["attache.fetch.tls_ms"] = Self.milliseconds(media.phases.tls)
            attributes["attache.fetch.first_byte_ms"] = Self.milliseconds(media.phases.firstByte)
            attributes["attache.fetch.total_ms"] = Self.milliseconds(media.phases.total)
        }
    }

    /// The kind the bytes are.
    func validated(_ kind: MediaKind) {
        guard recording else { return }
        stage?.attributes["attache.media.kind"] = kind.rawValue
    }

    /// The decoder that read the source and the sizes in and out.
    func transformed(_ media: TransformedMedia, from source: ValidatedMedia) {
        guard let stage else { return }
        stage.updateAttributes { attributes in
            attributes["attache.transform.decoder"] = Self.decoder(of: source.kind)
            attributes["attache.transform.kind_in"] = source.kind.rawValue
            attributes["attache.transform.bytes_in"] = source.bytes.count
            if let width = media.sourceWidth, let height = media.sourceHeight {
                attributes["attache.transform.width_in"] = width
                attributes["attache.transform.height_in"] = height
            }
            attributes["attache.transform.kind_out"] = media.kind.rawValue
            attributes["attache.transform.bytes_out"] = media.bytes.count
            if let width = media.width, let height = media.height {
                attributes["attache.transform.width_out"] = width
                attributes["attache.transform.height_out"] = height
            }
            if let frames = media.frames { attributes["attache.transform.frames"] = frames }
            if !media.actions.isEmpty { attributes["attache.transform.actions"] = media.actions }
            if media.keptSource == true { attributes["attache.transform.kept_source"] = true }
            if let quality = media.quality {
                attributes["attache.transform.quality"] = quality.quality
                if let score = quality.score { attributes["attache.transform.score"] = (score * 100).rounded() / 100 }
                attributes["attache.transform.encodes"] = quality.encodes
            }
            if !media.targets.isEmpty { attributes["attache.transform.targets"] = media.targets.count }
        }
    }

    /// Where the object went, and whether this write made it (a content-addressed store already
    /// holding the bytes does not).
    func stored(backend: String, bytes: Int, new: Bool) {
        guard let stage else { return }
        stage.updateAttributes { attributes in
            attributes["attache.store.backend"] = backend
            attributes["attache.store.bytes"] = bytes
            attributes["attache.store.new"] = new
        }
    }

    /// Ends every span open, with the outcome on the attachment's: a failure sets the status
    /// of the stage it happened in and of the attachment, with the error's code.
    func end(_ outcome: AttachmentOutcome) {
        guard recording else { return attachment.end() }
        if let error = outcome.error {
            let status = SpanStatus(code: .error, message: error.code.rawValue)
            for span in [stage, attachment].compactMap({ $0 }) {
                span.attributes["error.type"] = error.code.rawValue
                span.setStatus(status)
            }
            if let stage = outcome.failedStage { attachment.attributes["attache.failed_stage"] = stage }
        }
        attachment.updateAttributes { attributes in
            if outcome.cached { attributes["attache.cached"] = true }
            if let kind = outcome.sourceKind { attributes["attache.media.kind"] = kind }
            if let entry = outcome.attachment {
                attributes["attache.attachment.id"] = entry.id
                attributes["attache.attachment.bytes"] = entry.bytes
            }
        }
        stage?.end()
        attachment.end()
    }

    /// The library that decodes `kind`.
    static func decoder(of kind: MediaKind) -> String {
        switch kind {
        case .jpeg: "libjpeg-turbo"
        case .png: "libpng"
        case .gif: "giflib"
        case .webp: "libwebp"
        case .heic, .avif: "libheif"
        case .jxl: "libjxl"
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: "libavformat"
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: "libavformat"
        }
    }

    /// `url` without its query, fragment, user or password (which may hold a signature or a key).
    static func shown(_ url: String) -> String {
        var shown = Substring(url)
        if let cut = shown.firstIndex(where: { $0 == "?" || $0 == "#" }) { shown = shown[..<cut] }
        if let scheme = shown.firstRange(of: "://") {
            let authorityEnd = shown[scheme.upperBound...].firstIndex(of: "/") ?? shown.endIndex
            if let at = shown[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
                shown = shown[..<scheme.upperBound] + shown[shown.index(after: at)...]
            }
        }
        return String(shown)
    }

    static func milliseconds(_ seconds: Double) -> Double { (seconds * 10_000).rounded() / 10 }
}
