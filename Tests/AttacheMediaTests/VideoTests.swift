import AttacheBase
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheMedia

/// Posters, GIFs made MP4 and transcodes, checked against the ffmpeg CLI and ffprobe (installed
/// by scripts/deps.sh) on the fixtures of `Tests/Fixtures/video`.
@Suite("Video: posters, GIF to MP4, transcodes")
struct VideoTests {
    static let directory = Fixtures.root + "/video"

    static func bytes(_ name: String) throws -> MediaBytes {
        try MediaBytes(contentsOfFile: directory + "/" + name)
    }

    /// Runs a tool and returns its standard output (its errors in the thrown message).
    static func run(_ tool: String, _ arguments: [String]) throws -> [UInt8] {
        let result = try runChild("/usr/bin/" + tool, arguments)
        guard result.status == 0 else { throw AttacheError(.internalError, "\(tool) failed: \(result.errorText)") }
        return result.output
    }

    /// The frame ffmpeg shows at `time` (accurate seek), as RGB24, autorotated.
    static func ffmpegFrame(_ path: String, at time: Double, width: Int, height: Int) throws -> PixelImage {
        let pixels = try run(
            "ffmpeg",
            [
                "-v", "error", "-ss", String(time), "-i", path, "-frames:v", "1", "-s", "\(width)x\(height)",
                "-sws_flags", "bicubic+accurate_rnd+full_chroma_int", "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
            ])
        return PixelImage(width: width, height: height, channels: 3, pixels: pixels)
    }

    static func psnr(_ a: PixelImage, _ b: PixelImage) -> Double {
        precondition(a.pixels.count == b.pixels.count)
        var sum = 0.0
        for i in 0..<a.pixels.count {
            let d = Double(a.pixels[i]) - Double(b.pixels[i])
            sum += d * d
        }
        let mse = sum / Double(a.pixels.count)
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    /// ffprobe's answer for `entries` of the first stream of `type`, as key=value lines.
    static func probe(_ bytes: [UInt8], stream: String, entries: String) throws -> [String: String] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = try run(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", stream, "-show_entries", entries, "-of",
                "default=noprint_wrappers=1", path,
            ])
        var values: [String: String] = [:]
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }

    @Test(
        "a poster is the frame at the asked time (±1 frame), as ffmpeg shows it (PSNR ≥ 40 dB)",
        arguments: [0.0, 0.52, 1.0, 1.5, 1.96])
    func posterAtTime(time: Double) throws {
        let path = Self.directory + "/h264.mp4"
        let (image, shown) = try MediaPoster.frame(try Self.bytes("h264.mp4"), at: time, maxSide: 0)
        #expect(image.width == 160 && image.height == 120)
        #expect(abs(shown - time) <= 0.04 + 1e-6, "shown at \(shown) for \(time)")
        let reference = try Self.ffmpegFrame(path, at: time, width: 160, height: 120)
        let quality = Self.psnr(image, reference)
        #expect(quality >= 40, "PSNR \(quality) dB at \(time) s")
        // The clock in the pattern moves: a frame a second away is far from it.
        if time >= 1 {
            let early = try Self.ffmpegFrame(path, at: 0, width: 160, height: 120)
            #expect(Self.psnr(image, early) < 30)
        }
    }

    @Test("a poster is scaled to fit, turned upright by the display matrix, and the last frame past the end")
    func posterShapes() throws {
        let (small, _) = try MediaPoster.frame(try Self.bytes("h264.mp4"), at: 1, maxSide: 80)
        #expect(small.width == 80 && small.height == 60)
        let (turned, _) = try MediaPoster.frame(try Self.bytes("rotated.mp4"), at: 0.5, maxSide: 0)
        #expect(turned.width == 120 && turned.height == 160)
        let upright = try Self.ffmpegFrame(Self.directory + "/rotated.mp4", at: 0.5, width: 120, height: 160)
        #expect(Self.psnr(turned, upright) >= 40)
        let (last, shown) = try MediaPoster.frame(try Self.bytes("h264.mp4"), at: 60, maxSide: 0)
        #expect(last.width == 160 && shown > 1.9 && shown < 2.0)
        let jpeg = try MediaPoster.jpeg(try Self.bytes("clip.webm"), at: 1, maxSide: 100)
        #expect(jpeg.bytes.starts(with: [0xFF, 0xD8, 0xFF]) && jpeg.width == 100 && jpeg.height == 75)
    }

    @Test(
        "a GIF whose frames would compose more than max_total_frame_pixels as video stays a GIF, cut to fit"
    )
    func amplifyingGIFStaysGIF() throws {
        guard MediaEncoder.isAvailable else { return }
        // A 7000×7000 screen and 999 frames of one pixel each: tiny to fetch and decode, but as
        // video every frame is the whole screen (49 G pixels).
        let frames = (0..<999).map { i in
            GIFTestFrame(
                left: i % 7000, top: i / 7000, width: 1, height: 1, indices: [UInt8(i % 2)], delay: 2, disposal: 1,
                transparent: -1)
        }
        let gif = try writeGIF(width: 7000, height: 7000, palette: [0, 0, 0, 255, 255, 255], frames: frames)
        #expect(gif.count < 64 << 10)
        let media = try MediaValidator.validate(MediaBytes(gif), limits: MediaLimits().forSources)
        #expect {
            try MediaEncoder.video(
                fromAnimation: MediaBytes(gif), kind: .gif, spec: RenditionSpec(), limits: .default, cap: 10 << 20)
        } throws: {
            let error = $0 as? AttacheError
            return error?.code == .tooLarge && error?.limit == .maxTotalFramePixels
        }
        let out = try MediaTransform.apply(media, TransformRequest())
        #expect(out.kind == .gif && (out.frames ?? 0) >= 1 && (out.frames ?? 0) <= 10, "\(out.actions)")
        // A screen the decoder memory cap cannot hold twice over as RGBA is refused the same way.
        var small = DecodeLimits.default
        small.maxDecoderMemory = 64 << 20
        let few = try writeGIF(
            width: 7000, height: 7000, palette: [0, 0, 0, 255, 255, 255], frames: Array(frames[0..<3]))
        #expect {
            try MediaEncoder.video(
                fromAnimation: MediaBytes(few), kind: .gif, spec: RenditionSpec(), limits: small, cap: 10 << 20)
        } throws: { ($0 as? AttacheError)?.code == .decoderMemoryExceeded }
    }

    @Test("an animated GIF over the frame budget becomes an H.264 MP4: every frame and the timing kept")
    func gifBecomesVideo() throws {
        guard MediaEncoder.isAvailable else { return }
        let gif = try Self.bytes("long.gif")
        let media = try MediaValidator.validate(gif, limits: MediaLimits().forSources)
        let out = try MediaTransform.apply(
            media, TransformRequest(smallSide: 64))
        #expect(out.kind == .mp4, "\(out.actions)")
        #expect(out.bytes.count * 5 <= gif.count, "\(out.bytes.count) of \(gif.count)")
        let video = try Self.probe(
            Array(out.bytes.buffer), stream: "v:0",
            entries: "stream=codec_name,profile,pix_fmt,width,height,nb_read_frames:format=duration")
        let source = try Self.probe(
            Array(gif.buffer), stream: "v:0", entries: "stream=nb_read_frames:format=duration")
        #expect(video["codec_name"] == "h264" && video["pix_fmt"] == "yuv420p")
        #expect(["High", "Main"].contains(video["profile"] ?? ""), "\(video)")
        #expect(video["nb_read_frames"] == source["nb_read_frames"] && video["nb_read_frames"] == "300")
        let durations = (Double(video["duration"] ?? "") ?? 0, Double(source["duration"] ?? "") ?? -1)
        #expect(abs(durations.0 - durations.1) < 0.011, "\(durations)")
        let info = try MediaContainer.check(out.bytes, kind: .mp4)
        #expect(info.indexFirst)
        #expect(out.small?.kind == .jpeg && out.small?.width == 64)
        // Off, it stays a GIF, clipped to the budget.
        var spec = RenditionSpec()
        spec.video.enabled = false
        let clipped = try MediaTransform.apply(media, TransformRequest(spec: spec))
        #expect(clipped.kind == .gif && clipped.frames == 200)
    }

    @Test("an animated WebP the GIF budgets would clip becomes an MP4 by the GIF rule: every frame, its timing")
    func animatedWebPBecomesVideo() throws {
        guard MediaEncoder.isAvailable else { return }
        let webp = try Self.bytes("animated.webp")
        let animation = try ImageProcessor.probe(webp)
        let (count, duration) = (animation.frames, animation.duration ?? 0)
        #expect(count == 48 && duration > 290, "\(count), \(duration) cs")
        let media = try MediaValidator.validate(webp, limits: MediaLimits().forSources)
        var spec = RenditionSpec()
        spec.gifMaxFrames = 20  // the GIF would drop frames: as video, none is dropped
        let out = try MediaTransform.apply(media, TransformRequest(spec: spec, smallSide: 32))
        #expect(out.kind == .mp4 && out.actions.contains { $0.contains("made an H.264 MP4") }, "\(out.actions)")
        #expect(out.small?.kind == .jpeg, "the poster from the video is its small rendition")
        let video = try Self.probe(
            Array(out.bytes.buffer), stream: "v:0",
            entries: "stream=codec_name,width,height,nb_read_frames:format=duration")
        #expect(video["codec_name"] == "h264" && video["width"] == "80" && video["height"] == "60", "\(video)")
        #expect(video["nb_read_frames"] == "\(count)", "\(video)")
        let seconds = Double(video["duration"] ?? "") ?? 0
        #expect(abs(seconds - Double(duration) / 100) < 0.15, "\(seconds) s")
        // Without video, the same budgets give a GIF of 20 frames, as they give a GIF.
        spec.video.enabled = false
        let clipped = try MediaTransform.apply(media, TransformRequest(spec: spec))
        #expect(clipped.kind == .gif && clipped.frames == 20, "\(clipped.actions)")
    }

    @Test(
        "what an iPhone cannot play is transcoded: H.264 High/AAC MP4 or AAC M4A, index first",
        arguments: [
            ("clip.webm", MediaKind.mp4), ("clip.mov", .mp4), ("vp9.mp4", .mp4), ("tone.ogg", .m4a),
            ("tone.flac", .m4a), ("opus.m4a", .m4a),
        ])
    func transcodes(name: String, expected: MediaKind) throws {
        guard MediaEncoder.isAvailable else { return }
        let media = try MediaValidator.validate(try Self.bytes(name), limits: MediaLimits().forSources)
        let out = try MediaTransform.apply(
            media, TransformRequest(smallSide: 64))
        #expect(out.kind == expected, "\(name): \(out.actions)")
        #expect((try? Sniffer.kind(of: Array(out.bytes.buffer.prefix(64)))) == expected)
        let info = try MediaContainer.check(out.bytes, kind: expected)
        #expect(info.indexFirst && info.unplayable == nil)
        #expect(info.audioCodec == (name == "vp9.mp4" ? nil : "aac"), "\(info)")
        if expected == .mp4 {
            let video = try Self.probe(
                Array(out.bytes.buffer), stream: "v:0", entries: "stream=codec_name,profile,pix_fmt")
            #expect(video["codec_name"] == "h264" && video["profile"] == "High" && video["pix_fmt"] == "yuv420p")
            #expect(abs((info.duration ?? 0) - (name == "vp9.mp4" ? 1 : 2)) < 0.1, "\(info)")
            #expect(out.small?.kind == .jpeg)
        }
        // Off, it is refused as before.
        var spec = RenditionSpec()
        spec.video.enabled = false
        #expect(throws: AttacheError.self) {
            try MediaTransform.apply(media, TransformRequest(spec: spec))
        }
    }

    @Test("a video over its cap is re-encoded under it, smaller; one that cannot fit is refused")
    func overTheCap() throws {
        guard MediaEncoder.isAvailable else { return }
        let source = try Self.bytes("dense.mp4")
        let media = try MediaValidator.validate(source, limits: MediaLimits().forSources)
        var caps = MediaLimits()
        caps.videoBytes = Int64(source.count / 2)
        let out = try MediaTransform.apply(media, TransformRequest(caps: caps))
        #expect(out.kind == .mp4 && out.bytes.count <= source.count / 2, "\(out.bytes.count) of \(source.count)")
        let info = try MediaContainer.check(out.bytes, kind: .mp4)
        #expect(info.videoCodec == "h264" && info.indexFirst && abs((info.duration ?? 0) - 6) < 0.1)
        caps.videoBytes = 20_000
        #expect(throws: AttacheError.self) {
            try MediaTransform.apply(media, TransformRequest(caps: caps))
        }
        // Passed as it came when it fits.
        let kept = try MediaTransform.apply(media, TransformRequest())
        #expect(kept.bytes.count == source.count && kept.kind == .mp4)
    }

    @Test("the decoders' frames count against the job's decoder memory cap: over it, decoder_memory_exceeded")
    func decoderFramesAreCapped() throws {
        var small = DecodeLimits.default
        small.maxDecoderMemory = 16 << 10  // under one 160×120 frame's planes
        let clip = try Self.bytes("h264.mp4")
        #expect {
            try MediaPoster.frame(clip, at: 1, maxSide: 64, limits: small)
        } throws: {
            let error = $0 as? AttacheError
            return error?.code == .decoderMemoryExceeded && error?.limit == .maxDecoderMemory
                && error?.message.contains("\(16 << 10) bytes") == true
        }
        // A cap a few frames wide is enough: the decoder holds its references, not the clip.
        small.maxDecoderMemory = 1 << 20
        let poster = try MediaPoster.frame(clip, at: 1.5, maxSide: 64, limits: small)
        #expect(poster.image.width == 64 && abs(poster.shown - 1.5) < 0.05)
        guard MediaEncoder.isAvailable else { return }
        let media = try MediaValidator.validate(try Self.bytes("clip.webm"), limits: MediaLimits().forSources)
        small.maxDecoderMemory = 16 << 10
        #expect {
            try MediaTransform.apply(media, TransformRequest(limits: small))
        } throws: { ($0 as? AttacheError)?.code == .decoderMemoryExceeded }
        small.maxDecoderMemory = 4 << 20
        let out = try MediaTransform.apply(media, TransformRequest(limits: small))
        #expect(out.kind == .mp4 && out.bytes.count > 0)
    }

    @Test("a transcode stops at its deadline with timed_out")
    func transcodeDeadline() throws {
        guard MediaEncoder.isAvailable else { return }
        let media = try MediaValidator.validate(try Self.bytes("clip.webm"), limits: MediaLimits().forSources)
        let deadline = WorkDeadline.none
        deadline.cancel()
        #expect {
            try MediaTransform.apply(media, TransformRequest(deadline: deadline))
        } throws: { ($0 as? AttacheError)?.code == .timedOut }
    }

    @Test("a video transcode that runs out of its share of the time leaves the poster as the best attempt")
    func posterIsTheBestAttempt() throws {
        guard MediaEncoder.isAvailable else { return }
        let media = try MediaValidator.validate(try Self.bytes("clip.webm"), limits: MediaLimits().forSources)
        var spec = RenditionSpec()
        // No time at all for the encode; the payload's own deadline is far.
        spec.video.encodeShare = 0
        let deadline = WorkDeadline(budget: .seconds(600))
        let out = try MediaTransform.apply(
            media, TransformRequest(spec: spec, deadline: deadline, smallSide: 100, posterTime: 1))
        #expect(out.kind == .jpeg && out.width == 100 && out.height == 75)
        #expect(out.bytes.buffer.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(out.warnings.contains { $0.contains("the poster is attached instead") }, "\(out.warnings)")
        // Without a poster to fall back to, the encode has the whole deadline.
        let whole = try MediaTransform.apply(media, TransformRequest(spec: spec, deadline: deadline))
        #expect(whole.kind == .mp4)
    }

    @Test("playlists naming files are never opened: refused by the allow-lists")
    func playlists() throws {
        for name in ["playlist.m3u8", "list.ffconcat"] {
            let bytes = try Self.bytes(name)
            #expect(throws: AttacheError.self) { try MediaContainer.check(bytes, kind: .mp4) }
            #expect(throws: AttacheError.self) { try MediaPoster.frame(bytes, maxSide: 64) }
        }
    }
}
