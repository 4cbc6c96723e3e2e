internal import AttacheBase

/// What one decode may cost, checked from the header before any large allocation: of a still
/// image, an animation, and an audio or video container (``MediaContainer``). The caps on the
/// fetched and stored bytes by kind are ``MediaLimits`` (Apple's attachment sizes).
public struct DecodeLimits: Hashable, Sendable {
    // MARK: Images

    /// Largest width × height accepted (default 50,000,000).
    public var maxPixels: Int
    /// Largest width or height accepted (default 32,767).
    public var maxDimension: Int
    /// Most progressive JPEG scans accepted (default 100).
    public var maxScans: Int
    /// Cap on whole-image decoder buffers: progressive or multi-scan JPEG coefficients and
    /// interlaced PNG rows; and on the frames a video job's decoders hold at once (default
    /// 256 MiB).
    public var maxDecoderMemory: Int
    /// Most tiles a HEIF/AVIF grid may hold (default 4,096: a 48 MP iPhone photo has 192); the
    /// items a file may hold are twice that and 64 more (each tile's alpha, metadata).
    public var maxTiles: Int = 4_096

    // MARK: Animations

    /// Most frames an animation (GIF, animated WebP) may hold (default 1,000).
    public var maxFrames: Int
    /// Most pixels summed over every frame's rectangle (default 500,000,000, e.g. 1,000
    /// frames of 0.5 MP).
    public var maxTotalFramePixels: Int

    // MARK: Audio and video

    /// Longest video or audio, in seconds, from its container (default 600).
    public var maxMediaSeconds: Double = 600
    /// Largest video frame, width × height (default 8192 × 4320).
    public var maxVideoPixels: Int = 8192 * 4320
    /// Most streams a video or audio container may hold (default 16).
    public var maxStreams: Int = 16

    /// Creates limits; every argument has the documented default.
    public init(
        maxPixels: Int = 50_000_000,
        maxDimension: Int = 32_767,
        maxScans: Int = 100,
        maxDecoderMemory: Int = 256 << 20,
        maxFrames: Int = 1_000,
        maxTotalFramePixels: Int = 500_000_000
    ) {
        self.maxPixels = maxPixels
        self.maxDimension = maxDimension
        self.maxScans = maxScans
        self.maxDecoderMemory = maxDecoderMemory
        self.maxFrames = maxFrames
        self.maxTotalFramePixels = maxTotalFramePixels
    }

    /// The defaults.
    public static let `default` = DecodeLimits()

    /// Throws when a header's dimensions break a limit.
    func check(width: Int, height: Int) throws(AttacheError) {
        guard width > 0, height > 0 else {
            throw AttacheError(.corruptData, "image has zero width or height (\(width)x\(height))")
        }
        guard width <= maxDimension, height <= maxDimension else {
            throw AttacheError(
                .dimensionsTooLarge,
                "\(width)x\(height) exceeds the dimension limit of \(maxDimension)",
                limit: .maxDimension)
        }
        let pixels = width.multipliedReportingOverflow(by: height)
        guard !pixels.overflow, pixels.partialValue <= maxPixels else {
            throw AttacheError(
                .tooManyPixels,
                "\(width)x\(height) exceeds the pixel limit of \(maxPixels)",
                limit: .maxPixels)
        }
    }

    /// Throws when an animation's header breaks a limit: its canvas, its frame count, the
    /// pixels its frames add up to (each composes the whole canvas), and `canvasBytes` of
    /// whole-canvas buffers against the decoder-memory cap.
    func checkAnimation(
        width: Int, height: Int, frames: Int, canvasBytes: Int, format: String
    ) throws(AttacheError) {
        try check(width: width, height: height)
        guard frames >= 1 else { throw AttacheError(.corruptData, "\(format): the animation has no frames") }
        guard frames <= maxFrames else {
            throw AttacheError(.tooManyFrames, "\(format): more than \(maxFrames) frames", limit: .maxFrames)
        }
        let (total, overflow) = frames.multipliedReportingOverflow(by: width * height)
        guard !overflow, total <= maxTotalFramePixels else {
            throw AttacheError(
                .tooManyPixels, "\(format): frames add up to more than \(maxTotalFramePixels) pixels",
                limit: .maxTotalFramePixels)
        }
        try checkDecoderMemory(canvasBytes, what: "\(format) animation canvases")
    }

    /// Throws when a whole-image buffer would pass the decoder-memory cap.
    func checkDecoderMemory(_ bytes: Int, what: String) throws(AttacheError) {
        guard bytes <= maxDecoderMemory else {
            throw AttacheError(
                .decoderMemoryExceeded,
                "\(what) needs \(bytes) bytes, over the decoder memory cap of \(maxDecoderMemory)",
                limit: .maxDecoderMemory)
        }
    }
}
