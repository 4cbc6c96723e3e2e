import ArgumentParser
import AttacheBase
import AttacheMedia
import Foundation

/// `attache video poster|fit`: the video stage by hand, on files.
struct VideoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "video",
        abstract: "Posters and encodes of video, audio and animated GIF or WebP files.",
        subcommands: [Poster.self, Fit.self]
    )

    /// One line per file: what was written, or the error.
    static func report(_ path: String, _ started: ContinuousClock.Instant, _ body: () throws(AttacheError) -> String) {
        let line: String
        do throws(AttacheError) {
            line = try body()
        } catch {
            line = "error \(error.code.rawValue): \(error.message)"
        }
        print("\(shown(path)): \(line) in \(String(format: "%.1f", (ContinuousClock.now - started).milliseconds)) ms")
    }

    static func write(_ bytes: [UInt8], to path: String) throws(AttacheError) {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw AttacheError(.ioError, "cannot write \(path)")
        }
    }

    static func read(_ path: String) throws(AttacheError) -> MediaBytes {
        do { return try MediaBytes(contentsOfFile: path) } catch let error as AttacheError { throw error } catch {
            throw AttacheError(.ioError, "cannot read \(path)")
        }
    }

    struct Poster: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write each video's poster (the frame at a time) as DIR/<name>.jpg.")

        @Option(help: "Seconds into the video (default: the first frame).")
        var at: Double?

        @Option(help: "The poster fits N x N (0: the video's own size).")
        var side = 320

        @Option(help: "JPEG quality, 1-100.")
        var quality = 85

        @Option(help: "Output directory (created if missing).")
        var out: String

        @Argument(help: "Video files.")
        var files: [String]

        func validate() throws {
            try Ranges.check(side, 0...8192, "--side")
            try Ranges.check(quality, 1...100, "--quality")
            if let at, !(at >= 0 && at.isFinite) { throw ValidationError("--at must be 0 or more seconds") }
        }

        func run() throws {
            try OptionChecks.directory(out, "--out")
            for path in files {
                let started = ContinuousClock.now
                VideoCommand.report(path, started) { () throws(AttacheError) in
                    let poster = try MediaPoster.jpeg(
                        try VideoCommand.read(path), at: at, maxSide: side, quality: quality)
                    let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
                    try VideoCommand.write(poster.bytes, to: out + "/" + name + ".jpg")
                    return "\(poster.width)x\(poster.height) at \(poster.shown) s, \(poster.bytes.count) bytes"
                }
            }
        }
    }

    struct Fit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Re-encode each file to fit a cap: an animated GIF or WebP to an H.264 MP4, video to H.264/AAC MP4, audio to AAC M4A.",
            discussion: """
                Without --force, as the pipeline does: only what an iPhone cannot play or what is over \
                the cap is re-encoded (and a GIF or animated WebP only as an MP4). Writes DIR/<name>.<mp4|m4a>.
                """
        )

        @Option(help: "libx264's preset (ultrafast ... veryslow).")
        var preset = VideoEncoding().preset

        @Option(help: "libx264's constant quality.")
        var crf = VideoEncoding().crf

        @Option(help: "Longest side of the video.")
        var maxSide = VideoEncoding().maxSide

        @Option(help: "Largest output in bytes (default: Apple's cap for the kind).")
        var cap: Int64?

        @Flag(help: "Re-encode even what plays and fits.")
        var force = false

        @Option(help: "Output directory (created if missing).")
        var out: String

        @Argument(help: "Video, audio or animated GIF or WebP files.")
        var files: [String]

        func validate() throws {
            if !VideoEncoding.presets.contains(preset) {
                throw ValidationError(
                    "--preset '\(preset)' is not one of \(VideoEncoding.presets.joined(separator: ", "))")
            }
            try Ranges.check(crf, 1...51, "--crf")
            try Ranges.check(maxSide, 16...8192, "--max-side")
            if let cap { try Ranges.check(cap, 1_000...(1 << 32), "--cap") }
        }

        func run() throws {
            try OptionChecks.directory(out, "--out")
            guard MediaEncoder.isAvailable else {
                throw ValidationError("this build or FFmpeg has no H.264 encoder (libx264)")
            }
            var spec = RenditionSpec()
            spec.video.preset = preset
            spec.video.crf = crf
            spec.video.maxSide = maxSide
            spec.maxSide = maxSide
            for path in files {
                let started = ContinuousClock.now
                VideoCommand.report(path, started) { () throws(AttacheError) in
                    let bytes = try VideoCommand.read(path)
                    let kind = try Sniffer.kind(of: Array(bytes.buffer.prefix(Sniffer.prefixLength)))
                    let animation = kind == .gif || kind == .webp
                    let limit = cap ?? MediaLimits().maxBytes(for: animation ? .mp4 : kind)
                    let output: MediaEncoder.Output
                    if animation {
                        output = try MediaEncoder.video(
                            fromAnimation: bytes, kind: kind, spec: spec, limits: .default, cap: limit)
                    } else {
                        let info = try MediaContainer.check(bytes, kind: kind, allowUnplayable: true)
                        guard force || info.unplayable != nil || Int64(bytes.count) > limit else {
                            return "plays and fits: left as it is"
                        }
                        output = try MediaEncoder.transcode(
                            bytes, info: info, video: kind.category == .video, spec: spec, limits: .default, cap: limit)
                    }
                    let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
                    try VideoCommand.write(output.bytes, to: out + "/" + name + "." + output.kind.fileExtension)
                    let size = output.width.map { "\($0)x\(output.height ?? 0), " } ?? ""
                    return "\(output.kind.rawValue) \(size)\(output.bytes.count) bytes"
                }
            }
        }
    }
}
