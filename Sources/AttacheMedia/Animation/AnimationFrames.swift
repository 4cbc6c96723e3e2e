internal import AttacheBase
internal import CAttacheCodecs

/// An animation's frames composed on its canvas, one after another: a GIF's (decoded by giflib,
/// composed here as a browser shows it) or an animated WebP's (composed by libwebpdemux). What
/// the video path reads (``MediaEncoder/video(fromAnimation:kind:spec:limits:cap:deadline:)``):
/// one rule for every animation.
struct AnimationFrames {
    let width: Int
    let height: Int
    /// Frames in the file.
    let count: Int
    /// The whole animation, in centiseconds.
    let duration: Int
    /// The CPU time decoding the frames costs (before they are composed), in nanoseconds.
    let decodeNanoseconds: Double
    private let bytes: MediaBytes
    private let kind: MediaKind
    private let limits: ImageLimits
    private let deadline: WorkDeadline

    /// The animation's header read (a GIF's frames scanned) and checked against `limits`.
    init(_ bytes: MediaBytes, kind: MediaKind, limits: ImageLimits, deadline: WorkDeadline) throws(AttacheError) {
        (self.bytes, self.kind, self.limits, self.deadline) = (bytes, kind, limits, deadline)
        switch kind {
        case .gif:
            let info = try ImageProcessor.scanGIF(bytes, limits: limits, deadline: deadline)
            (width, height, count, duration) = (info.width, info.height, info.frames, info.duration)
            decodeNanoseconds = Double(info.framePixels) * WorkEstimate.PerPixel.gifDecode
        case .webp:
            let header = try WebPAnimation.header(bytes, limits: limits)
            (width, height, count) = (Int(header.width), Int(header.height), Int(header.frames))
            duration = Int((header.duration_ms + 5) / 10)
            decodeNanoseconds = Double(count) * Double(width * height) * WorkEstimate.PerPixel.webpDecode
        default:
            throw AttacheError(.unsupportedVariant, "\(kind.rawValue): not an animation")
        }
    }

    /// Calls `body` with each frame's canvas (RGBA, `width` × 4 bytes a row, valid during the
    /// call) and how long it shows, in centiseconds.
    func forEach(_ body: (UnsafePointer<UInt8>, Int) throws(AttacheError) -> Void) throws(AttacheError) {
        if kind == .gif {
            let decoder = try GIFDecoder(bytes: bytes, limits: limits, deadline: deadline)
            var compositor = GIFCompositor(width: decoder.width, height: decoder.height)
            while let frame = try decoder.next() {
                compositor.draw(frame)
                try compositor.canvas.withUnsafeBufferPointer { (canvas) throws(AttacheError) in
                    try body(canvas.baseAddress!, frame.delay)
                }
            }
            return
        }
        let (handle, _) = try WebPAnimation.open(bytes, limits: limits)
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
            try body(rgba, max(0, end - endedAt))
            endedAt = end
        }
    }
}
