public import AttacheBase
public import AttacheMedia

/// What happened to one attachment source: attached, or failed with a stable reason.
public struct AttachmentOutcome: Sendable {
    /// The URL from the payload.
    public var url: String
    /// The convention that found it.
    public var convention: String
    /// The attachment block entry, when attached.
    public var attachment: AttachmentDescriptor?
    /// The failure, when not attached (`timed_out` when the deadline passed first).
    public var error: AttacheError?
    /// True when the stored rendition was reused (no fetch, no transform).
    public var cached = false
    /// Non-fatal findings, e.g. a `Content-Type` or URL extension that disagrees with the bytes.
    public var warnings: [String] = []
    /// What the transform did beyond a plain downscale: GIF frames dropped or shrunk, an
    /// animation made MP4, a video or audio file transcoded.
    public var actions: [String] = []
    /// Milliseconds spent per stage.
    public var timings = StageTimings()
    /// Body bytes the fetch read (0 when nothing was fetched).
    public var fetchedBytes: Int64 = 0
    /// The fetched media's kind, when validation told it.
    public var sourceKind: String?
    /// Images: the source's own bytes were stored, metadata removed, because a re-encoded
    /// rendition would not have been smaller (nil: no image was transformed).
    public var keptSource: Bool?
    /// A rendition re-encoded as JPEG or WebP: the quality written, the SSIMULACRA2 score it
    /// reached (``Quality/auto(target:)``) and the encodes spent (nil when reused or kept).
    public var quality: QualityChoice?
    /// The fetched image's width and height, when it was an image that was decoded.
    public var sourceWidth: Int?
    public var sourceHeight: Int?
    /// The stage that failed (`fetch`, `validate`, `transform`, `store`), when one did.
    public var failedStage: String?
    /// The pictures made for other receivers (Android, web push, a large icon), each stored
    /// with a token of its own, or why one could not be made.
    public var targets: [TargetEntry] = []

    /// `attached`, or the error code.
    public var reason: String { attachment != nil ? "attached" : error?.code.rawValue ?? "unknown" }

    /// The URL as a report shows it: without a `user:password@` (refused, but a secret all the
    /// same), as the logs and traces leave it out.
    public var shownURL: String { Self.withoutUserinfo(url) }

    /// `url` without the userinfo of its authority, if it has one.
    static func withoutUserinfo(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + "***" + String(rest[at...])
    }
}

/// Milliseconds per stage for one attachment; a stage that ran and failed reports the time it
/// took, a stage that did not run reports 0.
public struct StageTimings: Hashable, Sendable {
    /// Fetching the body (retries included).
    public var fetch: Double = 0
    /// Deciding the kind and checking its byte cap.
    public var validate: Double = 0
    /// Decoding, resizing and encoding (images); nothing for audio and video.
    public var transform: Double = 0
    /// Writing the object and issuing its token.
    public var store: Double = 0

    public init(fetch: Double = 0, validate: Double = 0, transform: Double = 0, store: Double = 0) {
        (self.fetch, self.validate, self.transform, self.store) = (fetch, validate, transform, store)
    }
}

/// A picture for another receiver, stored: its URL (a token for it alone), what it is, and how
/// its crop was placed; or the error that left the receiver without one.
public struct TargetEntry: Sendable {
    public var target: TargetSpec.Target
    public var url: String?
    public var id: String?
    public var type: String?
    public var bytes: Int64 = 0
    public var width: Int?
    public var height: Int?
    /// The crop in the pixels the iOS rendition was made from: x, y, width, height.
    public var crop: [Int] = []
    /// `focus` (the sender's point) or `attention`.
    public var placement: String?
    /// Encodes it took to reach its quality and pass under the cap, the quality kept, and the
    /// SSIMULACRA2 score it reached.
    public var encodes: Int?
    public var quality: Int?
    public var score: Double?
    /// Why `auto` did not reach its target (``QualityChoice/missed``).
    public var missed: String?
    /// The picture's ThumbHash (base64 without padding): the report's, and the send body's
    /// where its sender has a data member for it (``SendShape/placeholderMaps``).
    public var placeholder: String?
    public var error: AttacheError?
    /// Reused from the store (made for this URL and spec before).
    public var cached = false

    /// How the picture was made, as kept beside it in the store: `crop=x,y,w,h;placement=…;
    /// encodes=…;quality=…`.
    var note: String {
        var parts: [String] = []
        if crop.count == 4 { parts.append("crop=" + crop.map(String.init).joined(separator: ",")) }
        if let placement { parts.append("placement=" + placement) }
        if let encodes { parts.append("encodes=\(encodes)") }
        if let quality { parts.append("quality=\(quality)") }
        if let score { parts.append("score=\((score * 100).rounded() / 100)") }
        if let missed { parts.append("missed=" + missed) }
        if let placeholder { parts.append("thumbhash=" + placeholder) }
        return parts.joined(separator: ";")
    }

    /// Takes back what ``note`` kept (a picture stored before notes were kept has none).
    mutating func read(note: String?) {
        for part in (note ?? "").split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "crop":
                let values = pair[1].split(separator: ",").compactMap { Int($0) }
                if values.count == 4 { crop = values }
            case "placement": placement = pair[1]
            case "encodes": encodes = Int(pair[1])
            case "quality": quality = Int(pair[1])
            case "score": score = Double(pair[1])
            case "missed": missed = pair[1]
            case "thumbhash": placeholder = pair[1]
            default: continue
            }
        }
    }
}

extension AttachmentOutcome {
    /// What the transform stage says of the source and of what it did.
    mutating func record(_ transformed: TransformedMedia) {
        (sourceWidth, sourceHeight) = (transformed.sourceWidth, transformed.sourceHeight)
        warnings += transformed.warnings
        keptSource = transformed.keptSource
        quality = transformed.quality
        actions += transformed.actions
    }
}
