/// What a full decode of an image found.
public struct ImageInfo: Hashable, Sendable {
    /// The kind, from the magic bytes.
    public var kind: MediaKind
    /// Stored width, before orientation.
    public var width: Int
    /// Stored height, before orientation.
    public var height: Int
    /// Frames (1 for JPEG and PNG; an APNG decodes as its default image).
    public var frames: Int
    /// EXIF orientation.
    public var orientation: Orientation
    /// Progressive JPEG or interlaced PNG.
    public var isProgressive: Bool
    /// GIF: NETSCAPE2.0 loop count (0 = forever), nil when absent or not a GIF.
    public var loopCount: Int? = nil
    /// GIF: total duration in centiseconds (delays as browsers play them).
    public var duration: Int? = nil

    /// Width as displayed, after orientation.
    public var displayWidth: Int { orientation.swapsDimensions ? height : width }
    /// Height as displayed, after orientation.
    public var displayHeight: Int { orientation.swapsDimensions ? width : height }
}

extension ImageInfo {
    init(_ gif: GIFInfo) {
        self.init(
            kind: .gif, width: gif.width, height: gif.height, frames: gif.frames, orientation: .up,
            isProgressive: false,
            loopCount: gif.loopCount, duration: gif.duration)
    }
}

/// How an image is turned into an attachment rendition.
public struct RenditionSpec: Hashable, Sendable {
    /// The output fits `maxSide` × `maxSide` (aspect kept, never enlarged). Default 1024.
    public var maxSide: Int
    /// JPEG quality 1–100 (default 85).
    public var jpegQuality: Int
    /// zlib level for PNG output, 0–9 (default 1: with libpng's adaptive filters this is about
    /// 2x faster to encode than level 6 and still smaller than vipsthumbnail's level-6 output).
    public var pngCompressionLevel: Int
    /// How much larger than the target the DCT-scaled JPEG decode must stay, so the
    /// resampler does the last, real reduction step (default 1.0: libjpeg-turbo's
    /// 1/2, 1/4 and 1/8 scaled IDCTs are used, never a scale below the target).
    public var jpegShrinkHeadroom: Double
    /// libjpeg's smooth chroma upsampling (true) or its faster merged upsampling (false).
    public var jpegFancyUpsampling: Bool = true
    /// GIF: frames kept at most (dropped evenly beyond, total duration kept). Default 200.
    public var gifMaxFrames = 200
    /// GIF: largest output in bytes (frames dropped, then size shrunk, to fit). Default 10 MB.
    public var gifMaxBytes = 10_000_000
    /// GIF: Floyd–Steinberg dithering onto the palette (default off).
    public var gifDither = false

    /// Creates a spec; every argument has the documented default.
    public init(
        maxSide: Int = 1024, jpegQuality: Int = 85, pngCompressionLevel: Int = 1, jpegShrinkHeadroom: Double = 1.0
    ) {
        self.maxSide = maxSide
        self.jpegQuality = jpegQuality
        self.pngCompressionLevel = pngCompressionLevel
        self.jpegShrinkHeadroom = jpegShrinkHeadroom
    }

    /// Output size for a stored `width` × `height`: fits `maxSide` square, at least 1 × 1.
    public func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        let longest = max(width, height)
        guard longest > maxSide else { return (width, height) }
        let scale = Double(maxSide) / Double(longest)
        return (
            max(1, min(maxSide, Int((Double(width) * scale).rounded()))),
            max(1, min(maxSide, Int((Double(height) * scale).rounded())))
        )
    }
}

/// An encoded, upright, metadata-free image ready to store.
public struct Rendition: Sendable {
    /// Output kind.
    public var kind: MediaKind
    /// Output width (upright).
    public var width: Int
    /// Output height (upright).
    public var height: Int
    /// The encoded file.
    public var data: [UInt8]
    /// What the source was.
    public var source: ImageInfo
    /// Frames written (GIF).
    public var frames: Int = 1
    /// GIF: the poster frame and its start time in seconds (for the thumbnail time option).
    public var posterFrame: Int? = nil
    public var posterTime: Double? = nil
    /// What frame and byte budgets made the encoder do.
    public var actions: [String] = []
}
