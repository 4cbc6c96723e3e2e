internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// A JPEG XL still decoded by libjxl (an animation is a ``JXLAnimation``), rows streamed into the
/// resampler as libjxl finishes them.
///
/// The header's size is checked against the limits before anything is decoded, and libjxl's
/// own buffers (it holds the frame while decoding: about 18 bytes a pixel, measured) against
/// ``DecodeLimits/maxDecoderMemory``. Pixels come out in the image's own colour space (a lossy
/// XYB image's original one when it has a name) and are converted to sRGB with lcms2. The codestream's orientation
/// is applied after the downscale. The deadline is checked between 256 KiB slices of input.
final class JXLDecoder: StillDecoder {
    private let handle: OpaquePointer
    /// Kept alive: libjxl reads from its memory until closed.
    private let bytes: MediaBytes
    let deadline: WorkDeadline
    let width: Int
    let height: Int
    let hasAlpha: Bool
    let orientation: Orientation
    let colour: ColourProfile?
    /// A lossy image from an original without a named colour space, turned into sRGB by libjxl.
    private let convertedByDecoder: Bool

    /// Bytes per pixel a JPEG XL decode holds at its peak (libjxl 0.7's frame buffers, in
    /// floats, and the row ring): 17.5 to 17.8 measured as peak RSS (`/usr/bin/time`) of
    /// `attache resize` on 9.4 and 10.7 MP photos (Benchmarks/modern.sh).
    static let bytesPerPixel = 18

    init(bytes: MediaBytes, kind: MediaKind = .jxl, limits: DecodeLimits, deadline: WorkDeadline) throws(AttacheError) {
        var header = att_jxl_header()
        var error = att_error()
        guard let handle = att_jxl_open(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error)
        else { throw AttacheError(shim: error, format: "jxl") }
        self.handle = handle
        self.bytes = bytes
        self.deadline = deadline
        width = Int(header.width)
        height = Int(header.height)
        hasAlpha = header.has_alpha != 0
        orientation = Orientation(rawValue: Int(header.orientation)) ?? .up
        colour = ColourProfile.make(profile: header.icc, length: header.icc_length, channels: hasAlpha ? 4 : 3)
        convertedByDecoder = header.converted_by_decoder != 0
        try limits.check(width: width, height: height)
        try limits.checkDecoderMemory(width * height * Self.bytesPerPixel, what: "JPEG XL frame")
    }

    deinit { att_jxl_close(handle) }

    /// Whether `bytes` hold an animation (from the basic info; nothing decoded).
    static func isAnimated(_ bytes: MediaBytes) -> Bool {
        var header = att_jxl_header()
        var error = att_error()
        guard let handle = att_jxl_open(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error)
        else { return false }
        att_jxl_close(handle)
        return header.animated != 0
    }

    func heldBytes(for target: (width: Int, height: Int)) -> Int { width * height * Self.bytesPerPixel }
    static var decodeCost: Double { WorkEstimate.PerPixel.jxlDecode }

    var channels: Int { hasAlpha ? 4 : 3 }

    /// Decodes the first frame, pushing each row into `sink` as it is finished.
    func decodeRows(into sink: inout some RowSink) throws(AttacheError) {
        var error = att_error()
        let status = withUnsafeMutablePointer(to: &sink) { pointer in
            let forward = RowForwarder { pointer.pointee.push($0) }
            return withExtendedLifetime(forward) {
                att_jxl_decode(
                    handle, Int32(channels),
                    { context, row in
                        guard let context, let row else { return }
                        Unmanaged<RowForwarder>.fromOpaque(context).takeUnretainedValue().push(row)
                    }, Unmanaged.passUnretained(forward).toOpaque(), deadline.pointer, &error)
            }
        }
        guard status == 0 else { throw AttacheError(shim: error, format: "jxl") }
    }
}

/// Hands rows from a C callback to a sink.
private final class RowForwarder {
    let push: (UnsafePointer<UInt8>) -> Void
    init(_ push: @escaping (UnsafePointer<UInt8>) -> Void) { self.push = push }
}

extension JXLDecoder: RowSource {
    var rowWidth: Int { width }
    var rowCount: Int { height }
    var size: (width: Int, height: Int) { (width, height) }
    func prepare(target: (width: Int, height: Int), spec: RenditionSpec) throws(AttacheError) -> Double { 1.5 }
}

extension JXLDecoder {
    var info: ImageInfo {
        var info = ImageInfo(
            kind: .jxl, width: width, height: height, frames: 1, orientation: orientation, isProgressive: false)
        (info.colourConverted, info.colourWarning) = (convertedByDecoder || colour?.converts == true, colour?.ignored)
        return info
    }
}
