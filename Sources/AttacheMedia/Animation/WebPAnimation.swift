internal import AttacheBase
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
        var info = ImageInfo(
            kind: .webp, width: width, height: height, frames: frames, orientation: .up, isProgressive: false)
        // WebP counts plays (0 = forever); GIF's NETSCAPE2.0 counts repeats, absent = once.
        info.loopCount = header.loop_count == 0 ? 0 : (header.loop_count > 1 ? Int(header.loop_count) - 1 : nil)
        info.duration = Int((header.duration_ms + 5) / 10)
        self.info = info
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
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        do throws(AttacheError) {
            try limits.check(width: width, height: height)
            guard frames >= 1 else { throw AttacheError(.corruptData, "webp: the animation has no frames") }
            guard frames <= limits.maxFrames else {
                throw AttacheError(.tooManyFrames, "webp: more than \(limits.maxFrames) frames", limit: .maxFrames)
            }
            guard frames * width * height <= limits.maxTotalFramePixels else {
                throw AttacheError(
                    .tooManyPixels, "webp: frames add up to more than \(limits.maxTotalFramePixels) pixels",
                    limit: .maxTotalFramePixels)
            }
            try limits.checkDecoderMemory(width * height * 8, what: "animated WebP canvases")
        } catch {
            att_webp_anim_close(handle)
            throw error
        }
        return (handle, header)
    }
}
