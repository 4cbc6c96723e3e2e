internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// A JPEG XL animation as an ``AnimationSource``: libjxl composes each frame on the canvas
/// (coalescing) and turns it upright; the frames are counted from their headers when it is
/// opened (no pixel decoded), and the canvas and libjxl's frame buffers are checked against
/// ``DecodeLimits/maxDecoderMemory`` before any frame is. Colours not in sRGB are converted
/// with lcms2, frame by frame, as a still's are.
final class JXLAnimation: AnimationSource {
    let info: ImageInfo
    let deadline: WorkDeadline
    let decodeNanoseconds: Double
    private let bytes: MediaBytes

    init(bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, allowPartial: Bool) throws(AttacheError) {
        (self.bytes, self.deadline) = (bytes, deadline)
        var (handle, header) = try Self.open(bytes)
        defer { att_jxl_anim_close(handle) }
        var error = att_error()
        guard att_jxl_anim_count(handle, Int32(clamping: limits.maxFrames), &header, deadline.pointer, &error) == 0
        else {
            if error.status == Int32(ATT_ERR_SCAN_LIMIT.rawValue) {
                throw AttacheError(.tooManyFrames, "jxl: more than \(limits.maxFrames) frames", limit: .maxFrames)
            }
            throw AttacheError(shim: error, format: "jxl")
        }
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        // libjxl's frame buffers (as for a still) and the RGBA canvas it composes into.
        try limits.checkAnimation(
            width: width, height: height, frames: frames,
            canvasBytes: width * height * (JXLDecoder.bytesPerPixel + 4), format: "jxl")
        info = .animation(
            .jxl, width: width, height: height, frames: frames, plays: Int(header.loop_count),
            duration: Int(header.duration_cs))
        decodeNanoseconds = Double(frames) * Double(width * height) * WorkEstimate.PerPixel.jxlDecode
    }

    func forEachFrame(_ body: (UnsafePointer<UInt8>, Int) throws(AttacheError) -> Bool) throws(AttacheError) {
        // Checked when it was made: the frames are not counted again.
        let (handle, header) = try Self.open(bytes)
        defer { att_jxl_anim_close(handle) }
        let colour = ColourProfile.make(profile: header.icc, length: header.icc_length, channels: 4)
        let width = Int(header.width)
        var error = att_error()
        while true {
            var rgba: UnsafePointer<UInt8>? = nil
            var delay: Int32 = 0
            let status = att_jxl_anim_next(handle, &rgba, &delay, deadline.pointer, &error)
            guard status >= 0 else { throw AttacheError(shim: error, format: "jxl") }
            guard status == 1, let rgba else { return }
            // The canvas is the animation's own and libjxl writes every pixel of the next frame.
            if let colour {
                let canvas = UnsafeMutablePointer(mutating: rgba)
                for y in 0..<Int(header.height) { colour.convert(canvas + y * width * 4, width: width) }
            }
            guard try body(rgba, Int(delay)) else { return }
        }
    }

    /// Opens the animation: its header, no frame counted.
    private static func open(
        _ bytes: MediaBytes
    ) throws(AttacheError) -> (handle: OpaquePointer, header: att_jxl_anim_header) {
        var header = att_jxl_anim_header()
        var error = att_error()
        guard
            let handle = att_jxl_anim_open(bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error)
        else { throw AttacheError(shim: error, format: "jxl") }
        return (handle, header)
    }
}
