public import AttacheBase
public import AttacheWork
internal import CAttacheAV

/// How video and audio are re-encoded when they must be: H.264 (libx264, High profile,
/// yuv420p) and AAC in an MP4 with its index first, or AAC in an M4A.
public struct VideoEncoding: Hashable, Sendable {
    /// Re-encode at all (default on where FFmpeg has libx264): animated GIFs the GIF budgets
    /// would clip become MP4, videos over the cap or in what an iPhone cannot play become
    /// H.264/AAC MP4, audio over the cap or in Ogg/FLAC/Opus becomes AAC M4A. Off: such media
    /// are refused as before (`too_large`, `unsupported_variant`).
    public var enabled = true
    /// libx264's preset (default `veryfast`: a service's deadline; batch runs may take `medium`).
    public var preset = "veryfast"
    /// libx264's constant quality (default 23), capped by the rate that fits the byte cap.
    public var crf = 23
    /// The video's longest side (default 1920); lower rates shrink it further.
    public var maxSide = 1920
    /// AAC bits a second (default 128,000; less when the cap asks for it).
    public var audioBitRate = 128_000
    /// The share of the time left that a video's transcode may take (default 0.9); the rest
    /// stays for storing its poster instead when the transcode cannot finish. Not in the cache
    /// key: it changes only whether an encode finishes.
    public var encodeShare = 0.9

    public init() {}

    /// libx264's presets, fastest first.
    public static let presets = [
        "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow",
    ]

    /// What the cache key says of it (empty for the defaults, so keys made before stay valid).
    var cacheKey: String {
        var plain = self
        plain.encodeShare = VideoEncoding().encodeShare
        return plain == VideoEncoding()
            ? "" : ",video=\(enabled ? 1 : 0):\(preset):\(crf):\(maxSide):\(audioBitRate)"
    }
}

/// The encodes: GIF frames into an MP4, and transcodes of a container libavformat opened.
/// Everything runs on the calling thread (libx264's and the decoders' thread pools off), stops
/// at the deadline, and writes only into memory, never past the byte cap.
public enum MediaEncoder {
    /// Whether this FFmpeg can encode H.264 (libx264) and AAC. Without it (a build of FFmpeg
    /// without GPL parts, or `ATTACHE_NO_X264=1` at build time) posters and checks still work.
    public static let isAvailable: Bool = att_av_can_encode() != 0

    /// What an encode made.
    public struct Output: Sendable {
        public var bytes: [UInt8]
        public var kind: MediaKind
        public var width: Int?
        public var height: Int?
        public var frames: Int?
        /// Seconds.
        public var duration: Double?
    }

    /// What a video's or audio's work costs, from its container: the poster (the decoder's
    /// frames, a GOP's worth of decoding) and the transcode (every frame decoded and encoded;
    /// libx264's lookahead and reference frames at the output size, the output buffer).
    static func workEstimate(
        _ info: ContainerInfo, video: Bool, poster: Bool, transcode: Bool, spec: RenditionSpec, cap: Int64
    ) -> WorkEstimate {
        let pixels = (info.width ?? 0) * (info.height ?? 0)
        let decoder = max(info.decoderBytes, pixels * 3)
        let seconds = info.duration ?? 10
        let frames = seconds * (info.frameRate ?? 30)
        var estimate = WorkEstimate(seconds: 0, memory: 0)
        if video && poster {
            estimate =
                estimate
                + WorkEstimate(
                    seconds: 60 * Double(pixels) * WorkEstimate.PerPixel.videoDecode / 1e9, memory: decoder + (4 << 20))
        }
        if transcode {
            let out =
                video ? evenFit(width: info.width ?? 2, height: info.height ?? 2, side: spec.video.maxSide) : (0, 0)
            let outPixels = out.0 * out.1
            let nanoseconds =
                frames
                * (Double(pixels) * WorkEstimate.PerPixel.videoDecode + Double(outPixels)
                    * WorkEstimate.PerPixel.videoEncode) + seconds * 48_000 * 50
            let memory = (video ? decoder : 0) + encoderBytes(outputPixels: outPixels, cap: cap)
            estimate = WorkEstimate(seconds: estimate.seconds + nanoseconds / 1e9, memory: max(estimate.memory, memory))
        }
        return estimate
    }

    /// What libx264 (veryfast) holds for output frames of `outputPixels`: about 30 of them
    /// (lookahead, references, frames in flight).
    static func encoderFrameBytes(outputPixels: Int) -> Int { outputPixels * 3 / 2 * 30 }

    /// The encoder's frames and the output itself, written into memory up to `cap`.
    static func encoderBytes(outputPixels: Int, cap: Int64) -> Int {
        encoderFrameBytes(outputPixels: outputPixels) + Int(min(cap, 64 << 20)) + (8 << 20)
    }

    /// `width` × `height` fit inside `side` with both even (H.264 4:2:0 needs it), at least 2.
    static func evenFit(width: Int, height: Int, side: Int) -> (width: Int, height: Int) {
        let fitted = RenditionSpec.fit(width: width, height: height, into: side)
        return (max(2, fitted.width & ~1), max(2, fitted.height & ~1))
    }

    static func output(preset: String) -> att_av_output {
        var output = att_av_output()
        withUnsafeMutableBytes(of: &output.preset) { buffer in
            for (i, byte) in preset.utf8.prefix(buffer.count - 1).enumerated() { buffer[i] = byte }
        }
        return output
    }

    /// An animation (a GIF, or an animated WebP) as an H.264 MP4: every frame kept with its
    /// delay (the total duration kept), composed on its canvas as a browser shows it, scaled to
    /// fit the rendition's side (even). One path for every animation: the frames, their
    /// canvas and the checks before it is allocated come from its ``AnimationSource``.
    public static func video(
        fromAnimation bytes: MediaBytes, kind: MediaKind, spec: RenditionSpec, limits: DecodeLimits, cap: Int64,
        deadline: WorkDeadline = .none
    ) throws(AttacheError) -> Output {
        guard let animation = ImageProcessor.animation(kind, bytes) else {
            throw AttacheError(.unsupportedVariant, "\(kind.rawValue): not an animation")
        }
        let source = try ImageProcessor.openAnimation(animation, bytes, limits: limits, deadline: deadline)
        let (width, height) = source.canvas
        let (count, duration) = (source.info.frames, source.info.duration ?? 0)
        let size = evenFit(width: width, height: height, side: spec.maxSide(forWidth: width, height: height))
        // Every frame composes the whole canvas (RGBA, with a second one for disposal) and hands
        // it to the scaler: checked before the canvas is allocated or a frame decoded. An
        // animation over either is left to the GIF rendition, whose frames are dropped to fit.
        let screen = width * height
        let (shown, overflow) = count.multipliedReportingOverflow(by: screen)
        guard !overflow, shown <= limits.maxTotalFramePixels else {
            throw AttacheError(
                .tooLarge,
                "\(kind.rawValue): \(count) frames of a \(width)x\(height) canvas compose more than "
                    + "\(limits.maxTotalFramePixels) pixels as video",
                limit: .maxTotalFramePixels)
        }
        let outputPixels = size.width * size.height
        try limits.checkDecoderMemory(
            screen * 4 * 2 + encoderFrameBytes(outputPixels: outputPixels),
            what: "the \(kind.rawValue) canvas composed for video")
        try deadline.expect(
            WorkEstimate(
                seconds: (source.decodeNanoseconds + Double(shown)
                    * (WorkEstimate.PerPixel.composite + WorkEstimate.PerPixel.shrink) + Double(count)
                    * Double(outputPixels) * WorkEstimate.PerPixel.videoEncode) / 1e9,
                memory: screen * 4 * 2 + encoderBytes(outputPixels: outputPixels, cap: cap)))
        var settings = output(preset: spec.video.preset)
        (settings.width, settings.height) = (Int32(size.width), Int32(size.height))
        (settings.time_base_num, settings.time_base_den) = (1, 100)
        settings.frame_rate = duration > 0 ? Double(count) * 100 / Double(duration) : 10
        settings.crf = Int32(spec.video.crf)
        settings.max_bytes = cap
        // No B-frames: an animation's delays run to seconds, and reordering across them would
        // start the track seconds before zero (an edit list some players mishandle).
        settings.no_b_frames = 1
        settings.color_primaries = 1  // BT.709 (sRGB's primaries)
        settings.color_trc = 1
        settings.colorspace = 1
        var error = att_error()
        guard let writer = att_av_writer_open(&settings, deadline.pointer, &error) else {
            throw AttacheError(encode: error, cap: cap)
        }
        defer { att_av_writer_close(writer) }
        var time = 0
        var written = 0
        try source.forEachFrame { (canvas, delay) throws(AttacheError) in
            try deadline.check()
            let status = att_av_writer_rgba(
                writer, canvas, Int32(width), Int32(height), Int32(width * 4), Int64(time), Int64(delay), &error)
            guard status == Int32(ATT_OK.rawValue) else { throw AttacheError(encode: error, cap: cap) }
            time += delay
            written += 1
            return true
        }
        let data = try finish(writer, cap: cap)
        return Output(
            bytes: data, kind: .mp4, width: size.width, height: size.height, frames: written,
            duration: Double(time) / 100)
    }

    /// Re-encodes video (to an H.264/AAC MP4) or audio (to an AAC M4A) so it plays on an
    /// iPhone and fits `cap` bytes: a constant quality capped at the rate that fits the cap over
    /// the duration (libx264's VBV), the picture made smaller when that rate is low.
    public static func transcode(
        _ bytes: MediaBytes, info: ContainerInfo, video: Bool, spec: RenditionSpec, limits: DecodeLimits,
        cap: Int64, deadline: WorkDeadline = .none
    ) throws(AttacheError) -> Output {
        let seconds = max(info.duration ?? 0, 0.1)
        // 92% of the cap for the media: the index and the rate control's slack take the rest.
        let budget = Double(cap) * 8 * 0.92 / seconds
        var settings = output(preset: spec.video.preset)
        settings.max_bytes = cap
        settings.max_frames = Int64(limits.maxMediaSeconds * 240)
        settings.max_decoder_bytes = Int64(limits.maxDecoderMemory)
        let hasAudio = info.audioCodec != nil
        if hasAudio {
            let rate = min(Double(spec.video.audioBitRate), video ? budget / 8 : budget)
            guard rate >= 24_000 else {
                throw AttacheError(
                    .tooLarge, "\(Int(seconds)) s of audio cannot fit \(cap) bytes at 24 kbit/s",
                    limit: .maxBytes(of: video ? .video : .audio))
            }
            settings.audio_bit_rate = Int32(rate)
            settings.sample_rate = info.sampleRate == 48_000 ? 48_000 : 44_100
            settings.channels = info.channels == 1 ? 1 : 2
        }
        var size: (width: Int, height: Int)?
        if video {
            guard let width = info.width, let height = info.height, width > 0, height > 0 else {
                throw AttacheError(.unsupportedVariant, "video: no picture size to encode")
            }
            let rate = budget - Double(settings.audio_bit_rate)
            guard rate >= 100_000 else {
                throw AttacheError(
                    .tooLarge, "\(Int(seconds)) s of video cannot fit \(cap) bytes at 100 kbit/s",
                    limit: .maxBytes(of: .video))
            }
            // Fewer pixels where the rate is low (about 0.1 bit a pixel a frame at 30 fps).
            let side =
                rate < 400_000 ? 640 : rate < 900_000 ? 854 : rate < 2_000_000 ? 1280 : spec.video.maxSide
            size = evenFit(width: width, height: height, side: min(side, spec.video.maxSide))
            (settings.width, settings.height) = (Int32(size!.width), Int32(size!.height))
            settings.crf = Int32(spec.video.crf)
            settings.max_rate = Int64(rate)
        } else if !hasAudio {
            throw AttacheError(.unsupportedVariant, "audio: no audio stream to encode")
        }
        let (handle, _) = try MediaContainer.open(bytes, limits: limits, deadline: deadline)
        defer { att_av_close(handle) }
        var data: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = att_av_transcode(handle, &settings, &data, &length, &error)
        guard status == Int32(ATT_OK.rawValue), let data else { throw AttacheError(encode: error, cap: cap) }
        defer { att_av_free(data) }
        return Output(
            bytes: Array(UnsafeBufferPointer(start: data, count: length)), kind: video ? .mp4 : .m4a,
            width: size?.width, height: size?.height, frames: nil, duration: info.duration)
    }

    private static func finish(_ writer: OpaquePointer, cap: Int64) throws(AttacheError) -> [UInt8] {
        var data: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = att_av_writer_finish(writer, &data, &length, &error)
        guard status == Int32(ATT_OK.rawValue), let data else { throw AttacheError(encode: error, cap: cap) }
        defer { att_av_free(data) }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }
}

extension AttacheError {
    /// Maps an encode's failure to a typed error.
    init(encode error: att_error, cap: Int64) {
        let message = Self.line(error.message)
        let text = "encode: \(message.isEmpty ? "failed" : message)"
        switch error.status {
        case Int32(ATT_ERR_MEMORY_LIMIT.rawValue) where message.contains("byte cap"):
            self.init(.tooLarge, "\(text) (\(cap) bytes)", limit: .maxBytes(of: .video))
        case Int32(ATT_ERR_MEMORY_LIMIT.rawValue) where message.contains("frames"):
            self.init(.tooLarge, text, limit: .maxMediaSeconds)
        default:
            self.init(shim: error, format: "container")
        }
    }
}
