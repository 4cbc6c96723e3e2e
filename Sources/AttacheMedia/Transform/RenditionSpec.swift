/// How media are turned into an attachment rendition: JPEG, PNG and animated GIF alike.
///
/// Every default lives here. ``cacheKey`` is derived from every field, so a stored rendition is
/// reused only for the exact spec that produced it.
public struct RenditionSpec: Hashable, Sendable {
    /// The output fits `maxSide` × `maxSide` (aspect kept, never enlarged). Default 1024.
    public var maxSide: Int
    /// The longest sides a rendition may be asked for (JPEG's own limit is 65,535; a larger
    /// side than this is no attachment): every surface that takes one checks this range.
    public static let maxSideRange = 1...32_767
    /// How JPEG and WebP stills are encoded: ``Quality/auto(target:)`` (the default, at
    /// ``Quality/defaultTarget``) or a fixed number.
    public var quality: Quality
    /// zlib level for PNG output, 0–9 (default 1: with libpng's adaptive filters this is about
    /// 2x faster to encode than level 6 and still smaller than vipsthumbnail's level-6 output).
    public var pngCompressionLevel: Int
    /// How much larger than the target the DCT-scaled JPEG decode must stay, so the
    /// resampler does the last, real reduction step (default 1.0: libjpeg-turbo's
    /// 1/2, 1/4 and 1/8 scaled IDCTs are used, never a scale below the target).
    public var jpegShrinkHeadroom: Double
    /// libjpeg's smooth chroma upsampling (true, the default) or its faster merged upsampling.
    public var jpegFancyUpsampling = true
    /// The quantisation tables a JPEG's quality scales (``JPEGTables``: by default the
    /// perceptual one with `auto`, the IJG's with a fixed quality).
    public var jpegTables: JPEGTables = .automatic
    /// How a JPEG's coefficients are chosen (``JPEGEncoder``; default `fast`).
    public var jpegEncoder: JPEGEncoder = .fast
    /// The device's budget for a decoded image in bytes (width × height × 4): a rendition that
    /// would pass it is made smaller. nil (the default): no budget beyond ``maxSide``.
    public var decodedMemoryBudget: Int? = nil
    /// GIF: frames kept at most (dropped evenly beyond, total duration kept). Default 200.
    public var gifMaxFrames = 200
    /// GIF: largest output in bytes (frames dropped, then the size shrunk, to fit). Default
    /// 10,000,000, Apple's image cap.
    public var gifMaxBytes = 10_000_000
    /// GIF: Floyd–Steinberg dithering onto the palette (default off: smaller files, and photo
    /// GIFs usually carry their own dither already).
    public var gifDither = false
    /// GIF: keep the frames decoded before a truncation instead of failing with `truncated`
    /// (default off).
    public var gifAllowPartial = false
    /// Video and audio re-encoding, and GIFs made MP4 (``VideoEncoding``).
    public var video = VideoEncoding()
    /// What still images are written as (default ``OutputFormat/auto``: what every iOS device
    /// shows). Animations stay animated GIF whatever this says.
    public var outputFormat = OutputFormat.auto

    /// The file format of still renditions.
    public enum OutputFormat: String, Hashable, Sendable, CaseIterable {
        /// Apple-safe: a JPEG stays JPEG and a PNG stays PNG; WebP, HEIC, AVIF and JPEG XL
        /// become JPEG, or PNG where they have transparency.
        case auto
        /// The smallest Apple-safe: JPEG for every image without transparency (a PNG photo
        /// too), PNG where there is transparency.
        case jpeg
        /// WebP for every still (lossy at ``quality``, alpha kept): for receivers that show
        /// it (Android notifications), not for iOS attachments.
        case webp
    }

    /// Creates a spec; every argument has the documented default.
    public init(
        maxSide: Int = 1024, quality: Quality = .default, pngCompressionLevel: Int = 1,
        jpegShrinkHeadroom: Double = 1.0
    ) {
        self.maxSide = maxSide
        self.quality = quality
        self.pngCompressionLevel = pngCompressionLevel
        self.jpegShrinkHeadroom = jpegShrinkHeadroom
    }

    /// A stable text naming every field, recorded with stored renditions: a rendition is
    /// reused only for the same URL and the same key. A test checks that each field changes it.
    public var cacheKey: String {
        var key = "max-side=\(maxSide),q=\(quality),png=\(pngCompressionLevel)"
        key += ",headroom=\(jpegShrinkHeadroom),fancy=\(jpegFancyUpsampling ? 1 : 0)"
        key += ",budget=\(decodedMemoryBudget.map(String.init) ?? "none")"
        key += ",gif-frames=\(gifMaxFrames),gif-bytes=\(gifMaxBytes),gif-dither=\(gifDither ? 1 : 0)"
        // Named only when not the default, so renditions stored before the option stay valid.
        if outputFormat != .auto { key += ",format=\(outputFormat.rawValue)" }
        if jpegTables != .automatic { key += ",tables=\(jpegTables.rawValue)" }
        if jpegEncoder.trellis { key += ",encoder=thorough" }
        key += ",gif-partial=\(gifAllowPartial ? 1 : 0)"
        key += video.cacheKey
        return key
    }

    /// The longest side for a stored `width` × `height`: ``maxSide``, or less where the
    /// decoded-memory budget asks for it.
    public func maxSide(forWidth width: Int, height: Int) -> Int {
        guard let budget = decodedMemoryBudget, width > 0, height > 0 else { return maxSide }
        let fitted = Self.fit(width: width, height: height, into: maxSide)
        let bytes = fitted.width * fitted.height * 4
        guard bytes > budget else { return maxSide }
        let scale = (Double(budget) / Double(bytes)).squareRoot()
        return max(1, Int(Double(max(fitted.width, fitted.height)) * scale))
    }

    /// Output size for a stored `width` × `height`: fits the longest side (after the budget)
    /// square, at least 1 × 1, never enlarged.
    public func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        Self.fit(width: width, height: height, into: maxSide(forWidth: width, height: height))
    }

    /// `width` × `height` scaled to fit `side` × `side` (aspect kept, never enlarged, ≥ 1 × 1).
    static func fit(width: Int, height: Int, into side: Int) -> (width: Int, height: Int) {
        let longest = max(width, height)
        guard longest > side else { return (width, height) }
        let scale = Double(side) / Double(longest)
        return (
            max(1, min(side, Int((Double(width) * scale).rounded()))),
            max(1, min(side, Int((Double(height) * scale).rounded())))
        )
    }
}
