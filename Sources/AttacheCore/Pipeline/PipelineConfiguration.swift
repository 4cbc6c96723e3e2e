/// How `attache process` and ``Pipeline`` treat a payload.
public struct PipelineConfiguration: Sendable {
    /// Time allowed per payload (default 25 s, a service extension's ~30 s minus a margin).
    public var deadline: Duration = .seconds(25)
    /// Where stored attachments are served: descriptors get `<baseURL>/<token>/<id>.<ext>`
    /// (the token is URL-safe, and the URL ends in the kind's extension).
    public var baseURL = "http://127.0.0.1:8080/attachments"
    /// The rendition images get (longest side 1024 by default).
    public var rendition = RenditionSpec()
    /// Decoded-memory budget of the device in bytes (width × height × 4); images whose
    /// rendition would pass it are made smaller. `nil`: no budget beyond `rendition.maxSide`.
    public var decodedMemoryBudget: Int?
    /// Image decoding limits.
    public var imageLimits = ImageLimits.default
    /// Byte caps per kind.
    public var mediaLimits = MediaLimits()
    /// Where the payload names its media.
    public var sources = SourceRule.defaults
    /// The top-level member the attachment block is written to.
    public var attachmentsKey = "attachments"
    /// Largest mutated payload (APNs: 4096 bytes).
    public var maxPayloadBytes = 4096
    /// How long the store keeps an attachment (default 7 days).
    public var storeTTL: Int64 = 7 * 86_400
    /// How long an attachment's token opens it (default 7 days, as long as the object lives).
    public var tokenTTL: Int64 = 7 * 86_400

    /// The defaults.
    public init() {}

    /// The rendition spec after the decoded-memory budget.
    func spec(forWidth width: Int, height: Int) -> RenditionSpec {
        var spec = rendition
        if let budget = decodedMemoryBudget, width > 0, height > 0 {
            let fitted = spec.outputSize(width: width, height: height)
            let bytes = fitted.width * fitted.height * 4
            if bytes > budget {
                let scale = (Double(budget) / Double(bytes)).squareRoot()
                spec.maxSide = max(1, Int(Double(max(fitted.width, fitted.height)) * scale))
            }
        }
        return spec
    }

    /// The stable description of a rendition recorded with stored sources.
    func specKey(_ spec: RenditionSpec) -> String {
        "max-side=\(spec.maxSide),q=\(spec.jpegQuality),png=\(spec.pngCompressionLevel)"
    }
}
