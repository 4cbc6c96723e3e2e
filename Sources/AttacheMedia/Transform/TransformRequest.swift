public import AttacheBase
public import AttacheWork

/// What one transform is asked to make: the one value every step of the transform reads
/// (``MediaTransform/apply(_:_:)``, the image renderer, the video and poster steps). An option
/// of the transform is a field here, read where it is used; no signature in between changes.
public struct TransformRequest: Sendable {
    /// The rendition (sizes, quality, GIF budgets, video encoding).
    public var spec: RenditionSpec
    /// The decoding limits, checked from the header before pixels are allocated.
    public var limits: DecodeLimits
    /// Checked between row bands and frames; once it passes (or is cancelled) the transform
    /// stops within one band or frame and throws `timed_out`.
    public var deadline: WorkDeadline
    /// Also make a small rendition of an image larger than this, from the pixels already
    /// decoded (an animated GIF's: its poster frame, a still GIF), for
    /// ``TransformedMedia/small``; a video's small rendition is its poster.
    public var smallSide: Int?
    /// The attachment caps (Apple's): video, audio and animated GIFs over them (or in what an
    /// iPhone cannot play) are re-encoded to fit when ``RenditionSpec/video`` allows.
    public var caps: MediaLimits
    /// When a video's poster is taken (the sender's thumbnail time), else
    /// ``MediaPoster/defaultTime``.
    public var posterTime: Double?
    /// Pictures for other receivers, each cropped from the pixels the rendition was made from
    /// (an animation's poster frame, a video's poster), around ``focus`` when given, else the
    /// subject the attention map finds (``TargetRendition``).
    public var targets: [TargetSpec]
    /// The sender's focal point for the targets' crops.
    public var focus: FocalPoint?
    /// Measure the score of a rendition encoded at a fixed quality too (``Quality/auto(target:)``
    /// always measures it): for reports and benchmarks, at the cost of one decode and score.
    public var measuresScore = false

    /// Creates a request; every argument but the spec has the default of a plain rendition
    /// (default limits, no deadline, no small rendition, Apple's caps, no targets).
    public init(
        spec: RenditionSpec = RenditionSpec(), limits: DecodeLimits = .default, deadline: WorkDeadline = .none,
        smallSide: Int? = nil, caps: MediaLimits = MediaLimits(), posterTime: Double? = nil,
        targets: [TargetSpec] = [], focus: FocalPoint? = nil, measuresScore: Bool = false
    ) {
        self.spec = spec
        self.limits = limits
        self.deadline = deadline
        self.smallSide = smallSide
        self.caps = caps
        self.posterTime = posterTime
        self.targets = targets
        self.focus = focus
        self.measuresScore = measuresScore
    }

    /// Whether the pixels the targets are cut from must be kept past the rendition.
    var keepsPixels: Bool { !targets.isEmpty }
}
