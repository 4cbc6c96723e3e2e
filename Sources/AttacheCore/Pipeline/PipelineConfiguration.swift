public import AttacheBase
public import AttacheFetch
public import AttacheMedia
public import AttacheSeal
public import AttacheStore

/// How `attache process` and ``Pipeline`` treat a payload.
public struct PipelineConfiguration: Sendable {
    /// Time allowed per payload (default 25 s, a service extension's ~30 s minus a margin).
    public var deadline: Duration = .seconds(25)
    /// Where stored attachments are served: descriptors get `<baseURL>/<token>/<id>.<ext>`
    /// (the token is URL-safe, and the URL ends in the kind's extension).
    public var baseURL = "http://127.0.0.1:8080/attachments"
    /// The media hosts this payload's sender may fetch from (a tenant's), on top of the fetch
    /// policy, on the URL and every hop; nil: whatever the policy allows.
    public var mediaHosts: SourceRules? = nil
    /// The sender's weight in the cores' share between senders (a tenant's `share`, 1 to 64):
    /// the workers' scheduler gives busy senders the cores in proportion to theirs.
    public var coreShare = 1
    /// The memory the sender's transforms may hold at once (a tenant's `decodeMemory`, bytes;
    /// nil: the workers' budget alone).
    public var decodeMemory: Int? = nil
    /// Whom what this payload stores is charged to, within that tenant's own store quota (nil:
    /// the store's quota alone).
    public var storeOwner: StoreOwner? = nil
    /// The rendition images get (longest side 1024 by default, GIF budgets, device budget).
    public var rendition = RenditionSpec()
    /// Image decoding limits.
    public var imageLimits = DecodeLimits.default
    /// Byte caps per kind: applied by the fetch as soon as the first bytes tell the kind, by
    /// validation, and to GIF renditions.
    public var mediaLimits = MediaLimits()
    /// Where the payload names its media.
    public var sources = SourceRule.defaults
    /// The top-level member the attachment block is written to.
    public var attachmentsKey = "attachments"
    /// Largest mutated payload (APNs: 4096 bytes).
    public var maxPayloadBytes = 4096
    /// Media sources considered per payload, in payload order (default 8); the rest are
    /// reported `too_many_sources` and not fetched.
    public var maxSources = 8
    /// Bytes all of a payload's fetches may read together (default 100,000,000: two videos at
    /// Apple's cap), counted as they arrive; a fetch that would pass it stops with
    /// `budget_exceeded`. With ``maxSources`` it bounds a payload's memory.
    public var maxPayloadFetchBytes: Int64 = 100_000_000
    /// Bytes a payload may add to the store (default 100,000,000); an attachment that would
    /// pass it is not stored (`budget_exceeded`).
    public var maxPayloadStoreBytes: Int64 = 100_000_000
    /// How long the store keeps an attachment (default 7 days).
    public var storeTTL: Int64 = 7 * 86_400
    /// How long an attachment's token opens it (default 7 days, as long as the object lives).
    public var tokenTTL: Int64 = 7 * 86_400

    /// Longest side of the small rendition stored beside an image's rendition and named in its
    /// entry (`small`), the device's fallback when memory or time is short (default 320; 0
    /// makes none). Images already this small get none.
    public var smallSide = 320
    /// Categories by kind: `aps.category` from what was attached, and actions (nil: none).
    public var categories: CategorySet? = nil
    /// Seal every payload to this device key (a payload's own `attache-seal`, or the caller's
    /// key, takes precedence); nil: only payloads that ask are sealed.
    public var sealTo: SealRecipient? = nil
    /// The alert a sealed payload shows until the device opens its seal.
    public var sealPlaceholder = "New message"
    /// Top-level members a seal takes besides `aps.alert`, the attachment block and the
    /// members the media URLs were found in.
    public var sealMembers: [String] = []
    /// The pictures made for the other receivers of an FCM message or a OneSignal body:
    /// Android and web 2:1 JPEG 1024 wide under 1 MB, the large icon 1:1 256 px.
    public var targets: [TargetSpec.Target: TargetSpec] = Dictionary(
        uniqueKeysWithValues: TargetSpec.Target.allCases.map { ($0, TargetSpec($0)) })

    /// The defaults.
    public init() {}

    /// `attache batch`'s defaults: the service's, with the thorough JPEG encoder (trellis
    /// quantisation). A campaign's picture is prepared once and downloaded by many, so the batch
    /// spends the encode time a service's deadline cannot on fewer bytes at the same score
    /// (docs/quality.md, "The thorough encoder").
    public static var batch: PipelineConfiguration {
        var configuration = PipelineConfiguration()
        configuration.rendition.jpegEncoder = .thorough
        return configuration
    }

    /// What a fetch may read: ``mediaLimits``, or where re-encoding is on (``RenditionSpec/video``)
    /// the source caps, since video, audio and GIFs over their caps are made to fit them.
    public var sourceLimits: MediaLimits { rendition.video.enabled ? mediaLimits.forSources : mediaLimits }

    /// The spec the transform runs with: ``rendition`` with GIF output held under the image
    /// byte cap. Its cache key names the stored renditions.
    public var effectiveRendition: RenditionSpec {
        var spec = rendition
        spec.gifMaxBytes = min(spec.gifMaxBytes, Int(clamping: mediaLimits.imageBytes))
        return spec
    }
}
