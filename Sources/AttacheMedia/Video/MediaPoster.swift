public import AttacheBase
public import AttacheWork
internal import CAttacheAV

/// A video's poster: the frame shown at a time, decoded by libavcodec from the keyframe before
/// it (at most ``frameBudget`` frames), scaled by swscale straight from the decoder's planes to
/// fit a side, and turned upright by the track's display matrix.
public enum MediaPoster {
    /// Frames decoded at most from the keyframe before the asked time (a 60 fps clip with a
    /// keyframe every 10 s is 600).
    public static let frameBudget = 600

    /// When no time is asked for: the first frame (what the device shows for a video
    /// attachment without `UNNotificationAttachmentOptionsThumbnailTimeKey`).
    public static let defaultTime = 0.0

    /// The frame shown at `time` seconds (the last frame when the video is shorter), fitting
    /// `maxSide` × `maxSide` (0: as stored), upright. `shown` is the frame's own time.
    public static func frame(
        _ bytes: MediaBytes, at time: Double? = nil, maxSide: Int, limits: DecodeLimits = .default,
        deadline: WorkDeadline = .none
    ) throws(AttacheError) -> (image: PixelImage, shown: Double) {
        let (handle, _) = try MediaContainer.open(bytes, limits: limits, deadline: deadline)
        defer { att_av_close(handle) }
        var rgb: UnsafeMutablePointer<UInt8>?
        var (width, height) = (Int32(0), Int32(0))
        var shown = 0.0
        var error = att_error()
        // The side is asked of the stored frame; a turned track swaps it after.
        let status = att_av_poster(
            handle, max(0, time ?? defaultTime).isFinite ? max(0, time ?? defaultTime) : 0, Int32(frameBudget),
            Int64(limits.maxVideoPixels), Int64(limits.maxDecoderMemory), Int32(clamping: maxSide), &rgb, &width,
            &height, &shown, &error)
        guard status == Int32(ATT_OK.rawValue), let rgb else { throw AttacheError(shim: error, format: "container") }
        defer { att_av_free(rgb) }
        let pixels = Array(UnsafeBufferPointer(start: rgb, count: Int(width) * Int(height) * 3))
        let image = PixelImage(width: Int(width), height: Int(height), channels: 3, pixels: pixels)
        let orientation: Orientation =
            switch att_av_rotation(handle) {
            case 90: .right
            case 180: .down
            case 270: .left
            default: .up
            }
        return (orientation.apply(to: image), shown)
    }

    /// The poster as a JPEG at `quality`.
    public static func jpeg(
        _ bytes: MediaBytes, at time: Double? = nil, maxSide: Int, quality: Int = 85, limits: DecodeLimits = .default,
        deadline: WorkDeadline = .none
    ) throws(AttacheError) -> (bytes: [UInt8], width: Int, height: Int, shown: Double) {
        let (image, shown) = try frame(bytes, at: time, maxSide: maxSide, limits: limits, deadline: deadline)
        try deadline.check()
        return (try Encoders.jpeg(image, quality: quality), image.width, image.height, shown)
    }
}
