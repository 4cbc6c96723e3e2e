internal import AttacheBase
internal import CAttacheCodecs

/// One still-image output format's encoder, behind one shape as ``StillDecoder`` is for the
/// decoders: what each format writes is here, and nowhere else is a format chosen by a branch.
/// A new output format is one conforming type and its row in ``StillEncoders/all``.
protocol StillEncoder {
    /// The format it writes.
    static var kind: MediaKind { get }
    /// `image` encoded at `quality` (a lossless encoder ignores it) with `options`.
    static func encode(_ image: PixelImage, quality: Int, options: EncodeOptions) throws(AttacheError) -> [UInt8]
}

/// A lossy encoder: a quality number drives it (so `auto` searches it), and its encodes are read
/// back to be scored against the pixels they came from.
protocol LossyEncoder: StillEncoder {
    /// `image` encoded as ``StillEncoder/encode(_:quality:options:)`` does, with what its
    /// read-back can be made from without reading the file (nil: the file is read back).
    static func encodeHeld(
        _ image: PixelImage, quality: Int, options: EncodeOptions
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?)
    /// The channels a read-back of an encode of `image` has.
    static func readBackChannels(of image: PixelImage) -> Int
    /// Decodes `data`, an encode of a `width` × `height` picture, into `output` (`channels` a
    /// pixel, rows `stride` bytes apart); the shim's status.
    static func readBack(
        _ data: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int,
        into output: UnsafeMutablePointer<UInt8>, stride: Int, error: inout att_error
    ) -> Int32
}

extension LossyEncoder {
    /// The file alone: its read-back reads it.
    static func encodeHeld(
        _ image: PixelImage, quality: Int, options: EncodeOptions
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?) {
        (try encode(image, quality: quality, options: options), nil)
    }
}

/// A JPEG encode's quantised coefficients, held by the shim after writing its progressive file:
/// its read-back made from them (the file's pixels to the byte) without reading the file's scans
/// (jpeg_held.c). Freed with the object.
final class HeldCoefficients {
    private let held: OpaquePointer

    init(_ held: OpaquePointer) { self.held = held }

    deinit { att_jpeg_held_free(held) }

    /// ``LossyEncoder/readBack(_:width:height:channels:into:stride:error:)`` of the file.
    func readBack(
        width: Int, height: Int, channels: Int, into output: UnsafeMutablePointer<UInt8>, stride: Int,
        error: inout att_error
    ) -> Int32 {
        att_jpeg_held_decode(held, UInt32(width), UInt32(height), Int32(channels), output, stride, &error)
    }
}

/// How an encode is made beyond its quality: JPEG's tables, chroma and trellis; PNG's zlib level.
struct EncodeOptions {
    var tables: JPEGTables = .ijg
    var fullChroma = false
    var trellis = false
    /// JPEG: progressive scans from the fast encoder (the thorough one chooses for itself).
    var progressive = false
    var pngLevel = 6
}

/// The output formats' encoders.
enum StillEncoders {
    static var all: [any StillEncoder.Type] { [JPEGOutput.self, WebPOutput.self, PNGOutput.self] }

    /// The encoder writing `kind`, when Attache writes it.
    static func of(_ kind: MediaKind) -> (any StillEncoder.Type)? { all.first { $0.kind == kind } }

    /// The lossy encoder writing `kind` (JPEG, WebP), nil for any other.
    static func lossy(_ kind: MediaKind) -> (any LossyEncoder.Type)? { of(kind) as? any LossyEncoder.Type }
}

/// JPEG (``Encoders/jpeg(_:quality:tables:fullChroma:trellis:progressive:)``); an alpha channel
/// opaque everywhere is dropped first.
enum JPEGOutput: LossyEncoder {
    static let kind = MediaKind.jpeg

    static func encode(_ image: PixelImage, quality: Int, options: EncodeOptions) throws(AttacheError) -> [UInt8] {
        try Encoders.jpeg(
            image.droppingOpaqueAlpha(), quality: quality, tables: options.tables, fullChroma: options.fullChroma,
            trellis: options.trellis, progressive: options.progressive)
    }

    static func encodeHeld(
        _ image: PixelImage, quality: Int, options: EncodeOptions
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?) {
        try Encoders.jpegHeld(
            image.droppingOpaqueAlpha(), quality: quality, tables: options.tables, fullChroma: options.fullChroma,
            trellis: options.trellis, progressive: options.progressive)
    }

    static func readBackChannels(of image: PixelImage) -> Int { image.channels == 1 ? 1 : 3 }

    static func readBack(
        _ data: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int,
        into output: UnsafeMutablePointer<UInt8>, stride: Int, error: inout att_error
    ) -> Int32 {
        att_jpeg_decode_into(
            data.baseAddress, data.count, UInt32(width), UInt32(height), Int32(channels), output, stride, &error)
    }
}

/// Lossy WebP, alpha kept (``Encoders/webp(_:quality:)``).
enum WebPOutput: LossyEncoder {
    static let kind = MediaKind.webp

    static func encode(_ image: PixelImage, quality: Int, options: EncodeOptions) throws(AttacheError) -> [UInt8] {
        try Encoders.webp(image, quality: quality)
    }

    static func readBackChannels(of image: PixelImage) -> Int { image.channels == 4 ? 4 : 3 }

    static func readBack(
        _ data: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int,
        into output: UnsafeMutablePointer<UInt8>, stride: Int, error: inout att_error
    ) -> Int32 {
        att_webp_decode(
            data.baseAddress, data.count, Int32(width), Int32(height), Int32(channels), output, stride, &error)
    }
}

/// PNG at the options' zlib level (``Encoders/png(_:level:)``); an alpha channel opaque
/// everywhere is dropped first.
enum PNGOutput: StillEncoder {
    static let kind = MediaKind.png

    static func encode(_ image: PixelImage, quality: Int, options: EncodeOptions) throws(AttacheError) -> [UInt8] {
        try Encoders.png(image.droppingOpaqueAlpha(), level: options.pngLevel)
    }
}
