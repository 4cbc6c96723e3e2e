public import AttacheBase

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
    /// The pixels were converted from the file's embedded ICC profile to sRGB.
    public var colourConverted = false
    /// Why an embedded ICC profile was not used (the pixels were taken as sRGB), if one was not.
    public var colourWarning: String? = nil
    /// A JPEG: the IJG quality its quantisation tables are nearest (the ceiling of a re-encode
    /// at about its size: more would spend bytes on its own artefacts).
    public var jpegQuality: Int? = nil

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

extension ImageInfo {
    /// An animation's header. `plays` as WebP and JPEG XL count them (0 = forever) is kept as
    /// GIF's NETSCAPE2.0 loop count (repeats; nil = once).
    static func animation(
        _ kind: MediaKind, width: Int, height: Int, frames: Int, plays: Int, duration: Int
    ) -> ImageInfo {
        ImageInfo(
            kind: kind, width: width, height: height, frames: frames, orientation: .up, isProgressive: false,
            loopCount: plays == 0 ? 0 : (plays > 1 ? plays - 1 : nil), duration: duration)
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
    /// The source's own bytes were kept, its metadata removed (it was within every limit and
    /// a re-encoded rendition would not have been smaller).
    public var keptSource = false
    /// GIF: the poster frame and its start time in seconds (for the thumbnail time option).
    public var posterFrame: Int? = nil
    public var posterTime: Double? = nil
    /// What frame and byte budgets made the encoder do.
    public var actions: [String] = []
    /// A JPEG or WebP re-encode: the quality written, the score reached, the encodes spent.
    public var quality: QualityChoice? = nil
    /// A smaller rendition of the same pixels, when one was asked for.
    public var small: SmallRendition? = nil
    /// The picture's ThumbHash (``ThumbHash``), for a still.
    public var placeholder: [UInt8]? = nil
    /// The square a collapsed notification shows of a still that is not square (x, y, width,
    /// height in 0…1), when it is not the centre square (``ImageProcessor/clip(_:focus:)``).
    public var clip: [Double]? = nil
    /// The pixels the rendition was encoded from (an animation's: its poster frame), upright,
    /// for the renditions other receivers get (``TargetRendition``).
    var pixels: PixelImage? = nil
    /// The source JPEG's quality, when ``pixels`` are at about its size: how high the other
    /// receivers' pictures may go (``QualityHint``).
    var pixelsCeiling: Int? = nil
    /// The tables the rendition's quality scaled, for the other receivers' pictures.
    var pixelsTables: JPEGTables = .automatic
    /// And how their JPEGs' coefficients are chosen.
    var pixelsEncoder: JPEGEncoder = .fast
}

extension Rendition {
    /// The pixels the rendition was encoded from, as a PNG (nil when they were not kept): the
    /// reference a perceptual score of the rendition is measured against.
    public func referencePNG() throws(AttacheError) -> [UInt8]? {
        guard var image = pixels else { return nil }
        // Kept larger for other receivers' pictures: resampled as the rendition was.
        if image.width != width || image.height != height {
            image = try ImageProcessor.resample(image, target: (width, height))
        }
        return try Encoders.png(image.droppingOpaqueAlpha(), level: 1)
    }
}

/// A small rendition made beside a rendition: same kind, fewer pixels.
public struct SmallRendition: Sendable {
    public var width: Int
    public var height: Int
    public var data: [UInt8]
}
