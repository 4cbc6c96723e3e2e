internal import AttacheBase
internal import CAttacheCodecs

/// A still WebP (lossy, lossless, with or without alpha) decoded by libwebp, scaled to its
/// output size as it decodes, with the limits checked from the header first.
///
/// Memory is the output image, and for a lossless file libwebp's own whole-image buffer (four
/// bytes a pixel), checked against ``ImageLimits/maxDecoderMemory`` before decoding. libwebp
/// decodes a still image in one call: the deadline is checked before and after it. Animated
/// WebP goes to ``WebPAnimation`` (this type refuses it as `unsupported_variant`).
struct WebPDecoder {
    private let bytes: MediaBytes
    let width: Int
    let height: Int
    let hasAlpha: Bool

    init(bytes: MediaBytes, limits: ImageLimits) throws(AttacheError) {
        var header = att_webp_header()
        var error = att_error()
        guard att_webp_probe(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error) == 0
        else { throw AttacheError(shim: error, format: "webp") }
        guard header.has_animation == 0 else {
            throw AttacheError(.unsupportedVariant, "webp: an animated WebP is not converted (only still images)")
        }
        self.bytes = bytes
        width = Int(header.width)
        height = Int(header.height)
        hasAlpha = header.has_alpha != 0
        try limits.check(width: width, height: height)
        if header.lossless != 0 {
            try limits.checkDecoderMemory(width * height * 4, what: "lossless WebP")
        }
    }

    /// Whether `bytes` hold an animation (from the RIFF chunks; nothing decoded).
    static func isAnimated(_ bytes: MediaBytes) -> Bool {
        var header = att_webp_header()
        var error = att_error()
        return att_webp_probe(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error) == 0
            && header.has_animation != 0
    }

    /// Decodes at `target` size (never larger than stored), RGBA when the file has alpha.
    func decode(target: (width: Int, height: Int), deadline: WorkDeadline) throws(AttacheError) -> PixelImage {
        try deadline.check()
        let channels = hasAlpha ? 4 : 3
        let (w, h) = (min(target.width, width), min(target.height, height))
        var pixels = [UInt8](repeating: 0, count: w * h * channels)
        var error = att_error()
        let status = pixels.withUnsafeMutableBufferPointer { out in
            att_webp_decode(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, Int32(w), Int32(h), Int32(channels),
                out.baseAddress, w * channels, &error)
        }
        guard status == 0 else { throw AttacheError(shim: error, format: "webp") }
        try deadline.check()
        return PixelImage(width: w, height: h, channels: channels, pixels: pixels)
    }

    var info: ImageInfo {
        ImageInfo(kind: .webp, width: width, height: height, frames: 1, orientation: .up, isProgressive: false)
    }
}
