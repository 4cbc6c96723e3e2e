internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// An animated WebP as an ``AnimationSource``: libwebpdemux composes each frame on its canvas
/// (two RGBA canvases, checked against ``DecodeLimits/maxDecoderMemory`` from the header, as
/// are the frame count and the frames' pixels).
final class WebPAnimation: AnimationSource {
    let info: ImageInfo
    let deadline: WorkDeadline
    let decodeNanoseconds: Double
    private let bytes: MediaBytes
    private let limits: DecodeLimits

    init(bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, allowPartial: Bool) throws(AttacheError) {
        (self.bytes, self.limits, self.deadline) = (bytes, limits, deadline)
        let (handle, header) = try Self.open(bytes, limits: limits)
        att_webp_anim_close(handle)
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        info = .animation(
            .webp, width: width, height: height, frames: frames, plays: Int(header.loop_count),
            duration: Int((header.duration_ms + 5) / 10))
        decodeNanoseconds = Double(frames) * Double(width * height) * WorkEstimate.PerPixel.webpDecode
    }

    func forEachFrame(_ body: (UnsafePointer<UInt8>, Int) throws(AttacheError) -> Bool) throws(AttacheError) {
        let (handle, _) = try Self.open(bytes, limits: limits)
        defer { att_webp_anim_close(handle) }
        var error = att_error()
        guard att_webp_anim_start(handle, &error) == 0 else { throw AttacheError(shim: error, format: "webp") }
        var endedAt = 0  // centiseconds, from the end times so rounding never adds up
        while true {
            var rgba: UnsafePointer<UInt8>? = nil
            var timestamp: Int32 = 0
            guard att_webp_anim_next(handle, &rgba, &timestamp, &error) == 0 else {
                throw AttacheError(shim: error, format: "webp")
            }
            guard let rgba else { return }
            let end = (Int(timestamp) + 5) / 10
            guard try body(rgba, max(0, end - endedAt)) else { return }
            endedAt = end
        }
    }

    /// Opens the animation and checks its header against `limits`.
    private static func open(
        _ bytes: MediaBytes, limits: DecodeLimits
    ) throws(AttacheError) -> (
        handle: OpaquePointer, header: att_webp_anim_header
    ) {
        var header = att_webp_anim_header()
        var error = att_error()
        guard
            let handle = att_webp_anim_open(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error)
        else { throw AttacheError(shim: error, format: "webp") }
        let (width, height) = (Int(header.width), Int(header.height))
        do throws(AttacheError) {
            // Two RGBA canvases: the one composed, and the one kept for the next frame.
            try limits.checkAnimation(
                width: width, height: height, frames: Int(header.frames), canvasBytes: width * height * 8,
                format: "webp")
        } catch {
            att_webp_anim_close(handle)
            throw error
        }
        return (handle, header)
    }
}
