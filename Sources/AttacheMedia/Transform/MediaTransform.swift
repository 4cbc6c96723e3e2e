public import AttacheBase

/// What the transform made of validated media: the bytes to store and what they are.
public struct TransformedMedia: Sendable {
    /// The output's kind (the input's: JPEG stays JPEG, PNG stays PNG, GIF stays GIF).
    public var kind: MediaKind
    /// The bytes to store: a new rendition for images, the validated bytes for audio and video.
    public var bytes: MediaBytes
    /// Pixel width and height, for images.
    public var width: Int?
    public var height: Int?
    /// Frames written, for images.
    public var frames: Int?
    /// Animated GIF: when its poster frame starts, in seconds (the thumbnail time).
    public var posterTime: Double?
    /// What frame and byte budgets made the GIF encoder do.
    public var actions: [String] = []
    /// The source image's stored width and height (before orientation), for images.
    public var sourceWidth: Int? = nil
    public var sourceHeight: Int? = nil
    /// Images: whether the source's own bytes were kept, metadata removed, instead of a
    /// re-encoded rendition (nil for audio and video, which always pass as they came).
    public var keptSource: Bool? = nil
    /// The small rendition, when one was asked for and the image is larger.
    public var small: (bytes: MediaBytes, width: Int, height: Int)? = nil
    /// What the transform noticed and worked around (an embedded ICC profile it could not use).
    public var warnings: [String] = []
    /// Video and audio: what the container holds (codecs, size, duration).
    public var container: ContainerInfo? = nil
}

/// The transform stage: one entry point for every kind. Images are decoded once (the header
/// opened once, its size deciding the decode scale), downscaled, turned upright and re-encoded
/// without metadata; audio and video pass through as validated, once their container has been
/// checked (``MediaContainer``).
public enum MediaTransform {
    /// Transforms `media` into what the store keeps.
    /// - Parameters:
    ///   - spec: the rendition (sizes, quality, GIF budgets).
    ///   - limits: the decoding limits, checked from the header before pixels are allocated.
    ///   - deadline: checked between row bands and frames; once it passes (or is cancelled)
    ///     the transform stops within one band or frame and throws `timed_out`.
    ///   - smallSide: also make a small rendition of an image larger than this, from the pixels
    ///     already decoded (an animated GIF's: its poster frame, a still GIF), for
    ///     ``TransformedMedia/small``.
    public static func apply(
        _ media: ValidatedMedia, spec: RenditionSpec, limits: ImageLimits, deadline: WorkDeadline,
        smallSide: Int? = nil
    ) throws(AttacheError) -> TransformedMedia {
        try deadline.check()
        switch media.kind.category {
        case .image:
            let rendition = try ImageProcessor.render(
                media.bytes, kind: media.kind, spec: spec, limits: limits, deadline: deadline, smallSide: smallSide)
            let animated = rendition.frames > 1
            var transformed = TransformedMedia(
                kind: rendition.kind, bytes: MediaBytes(rendition.data), width: rendition.width,
                height: rendition.height, frames: rendition.frames,
                posterTime: animated ? rendition.posterTime : nil, actions: rendition.actions,
                sourceWidth: rendition.source.width, sourceHeight: rendition.source.height)
            transformed.keptSource = rendition.keptSource
            if let warning = rendition.source.colourWarning { transformed.warnings.append(warning) }
            if let small = rendition.small { transformed.small = (MediaBytes(small.data), small.width, small.height) }
            return transformed
        case .audio, .video:
            // Read by libavformat before anything is stored: a cut file, a codec an iPhone does
            // not play in this container, or one over the limits is refused here.
            let container = try MediaContainer.check(media.bytes, kind: media.kind, limits: limits, deadline: deadline)
            var transformed = TransformedMedia(kind: media.kind, bytes: media.bytes)
            transformed.container = container
            if [.mp4, .m4v, .m4a].contains(media.kind) && !container.indexFirst {
                transformed.warnings.append(
                    "the index (moov) is at the end of the file: a device downloads all of it before playing")
            }
            return transformed
        }
    }
}
