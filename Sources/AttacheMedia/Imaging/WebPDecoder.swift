internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// A still WebP (lossy, lossless, with or without alpha) decoded by libwebp, scaled to its
/// output size as it decodes, with the limits checked from the header first.
///
/// Memory is the output image, and for a lossless file libwebp's own whole-image buffer (four
/// bytes a pixel), checked against ``DecodeLimits/maxDecoderMemory`` before decoding. libwebp
/// decodes a still image in one call: the deadline is checked before and after it. Animated
/// WebP goes to ``WebPAnimation`` (this type refuses it as `unsupported_variant`).
final class WebPDecoder: StillDecoder {
    private let bytes: MediaBytes
    let deadline: WorkDeadline
    let width: Int
    let height: Int
    let hasAlpha: Bool
    /// The size libwebp decodes at (set by ``prepare(target:spec:)``; the stored size before).
    private var target: (width: Int, height: Int)
    private let lossless: Bool

    init(
        bytes: MediaBytes, kind: MediaKind = .webp, limits: DecodeLimits, deadline: WorkDeadline
    )
        throws(AttacheError)
    {
        var header = att_webp_header()
        var error = att_error()
        guard att_webp_probe(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error) == 0
        else { throw AttacheError(shim: error, format: "webp") }
        guard header.has_animation == 0 else {
            throw AttacheError(.unsupportedVariant, "webp: an animation is not a still image")
        }
        self.bytes = bytes
        self.deadline = deadline
        width = Int(header.width)
        height = Int(header.height)
        hasAlpha = header.has_alpha != 0
        lossless = header.lossless != 0
        target = (width, height)
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

    var channels: Int { hasAlpha ? 4 : 3 }
    var size: (width: Int, height: Int) { (width, height) }
    /// libwebp decodes into one buffer: the stored size for lossless, the scaled one for lossy.
    func heldBytes(for target: (width: Int, height: Int)) -> Int {
        lossless ? width * height * 4 : min(width, target.width) * min(height, target.height) * 4
    }
    static var decodeCost: Double { WorkEstimate.PerPixel.webpDecode }
    var rowWidth: Int { target.width }
    var rowCount: Int { target.height }
    var orientation: Orientation { .up }
    var colour: ColourProfile? { nil }

    /// libwebp scales as it decodes: the rows come at `target` (never larger than stored).
    func prepare(target: (width: Int, height: Int), spec: RenditionSpec) throws(AttacheError) -> Double {
        self.target = (min(target.width, width), min(target.height, height))
        return 1
    }

    /// Decodes at the prepared size (RGBA when the file has alpha) and hands the rows on.
    func decodeRows(into sink: inout some RowSink) throws(AttacheError) {
        try deadline.check()
        let (w, h) = target
        let rowBytes = w * channels
        var pixels = [UInt8](repeating: 0, count: rowBytes * h)
        var error = att_error()
        let status = pixels.withUnsafeMutableBufferPointer { out in
            att_webp_decode(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, Int32(w), Int32(h), Int32(channels),
                out.baseAddress, rowBytes, &error)
        }
        guard status == 0 else { throw AttacheError(shim: error, format: "webp") }
        try deadline.check()
        pixels.withUnsafeBufferPointer { p in
            for y in 0..<h { sink.push(p.baseAddress! + y * rowBytes) }
        }
    }

    var info: ImageInfo {
        ImageInfo(kind: .webp, width: width, height: height, frames: 1, orientation: .up, isProgressive: false)
    }
}
