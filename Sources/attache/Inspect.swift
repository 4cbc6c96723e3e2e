import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Fully decode each image and report its kind, size, frames and orientation; check each video or audio container.",
        discussion: "Exits 0 even when files are rejected; each rejection is reported on its line."
    )

    @Flag(help: "Print one JSON object per file.")
    var json = false

    @OptionGroup var limits: LimitOptions

    @Argument(help: "Image, video or audio files.")
    var files: [String]

    func run() throws {
        Attache.tuneAllocatorForBatch()
        let limits = self.limits.imageLimits
        for file in files {
            let bytes: MediaBytes
            do { bytes = try MediaBytes(contentsOfFile: file) } catch {
                let failure = error as? AttacheError ?? AttacheError(.ioError, "cannot read \(file)")
                print(
                    json ? Self.jsonLine(file: file, .failure(failure)) : Self.textLine(file: file, .failure(failure)))
                continue
            }
            if let kind = try? Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength)), kind.category != .image {
                let checked = Result { () throws(AttacheError) in
                    try MediaContainer.check(bytes, kind: kind, limits: limits)
                }
                print(
                    json
                        ? Self.jsonLine(file: file, kind: kind, checked)
                        : Self.textLine(file: file, kind: kind, checked))
                continue
            }
            let result = Result { () throws(AttacheError) in try ImageProcessor.inspect(bytes, limits: limits) }
            print(json ? Self.jsonLine(file: file, result) : Self.textLine(file: file, result))
        }
    }

    /// A video or audio file's line: kind, codecs, size, duration.
    static func textLine(file: String, kind: MediaKind, _ result: Result<ContainerInfo, AttacheError>) -> String {
        switch result {
        case .success(let info):
            let video = info.videoCodec.map { "\t\($0) \(info.width ?? 0)x\(info.height ?? 0)" } ?? ""
            let audio = info.audioCodec.map { "\t\($0) \(info.sampleRate ?? 0) Hz" } ?? ""
            let duration = info.duration.map { "\tduration=\((($0 * 1000).rounded() / 1000))s" } ?? ""
            return "\(shown(file))\tok\t\(kind.rawValue)\(video)\(audio)\(duration)\tstreams=\(info.streams)"
        case .failure(let error):
            return "\(shown(file))\terror\t\(error.code)\t\(error.message)"
        }
    }

    static func jsonLine(file: String, kind: MediaKind, _ result: Result<ContainerInfo, AttacheError>) -> String {
        var line = JSONLine()
        line.add("file", file)
        line.add("kind", kind.rawValue)
        switch result {
        case .success(let info):
            line.add("ok", true)
            line.add("format", info.format)
            line.add("duration_ms", info.duration.map { Int(($0 * 1000).rounded()) })
            line.add("streams", info.streams)
            line.add("video_codec", info.videoCodec)
            line.add("width", info.width)
            line.add("height", info.height)
            line.add("audio_codec", info.audioCodec)
            line.add("sample_rate", info.sampleRate)
            line.add("index_first", info.indexFirst)
            line.add("error", object: nil)
        case .failure(let error):
            line.add("ok", false)
            line.add("error", object: JSONLine.error(error))
        }
        return line.text
    }

    static func textLine(file: String, _ result: Result<ImageInfo, AttacheError>) -> String {
        switch result {
        case .success(let info):
            let gif =
                info.kind == .gif
                ? "\tloop=\(info.loopCount.map(String.init) ?? "none")\tduration=\(Double(info.duration ?? 0) / 100)s"
                : ""
            return "\(shown(file))\tok\t\(info.kind.rawValue)\t\(info.width)x\(info.height)\tframes=\(info.frames)"
                + "\torientation=\(info.orientation.rawValue)\(gif)"
        case .failure(let error):
            return "\(shown(file))\terror\t\(error.code)\t\(error.message)"
        }
    }

    static func jsonLine(file: String, _ result: Result<ImageInfo, AttacheError>) -> String {
        var line = JSONLine()
        line.add("file", file)
        switch result {
        case .success(let info):
            line.add("ok", true)
            line.add("kind", info.kind.rawValue)
            line.add("width", info.width)
            line.add("height", info.height)
            line.add("frames", info.frames)
            line.add("orientation", info.orientation.rawValue)
            if info.kind == .gif {
                line.add("loop_count", info.loopCount)
                line.add("duration_ms", (info.duration ?? 0) * 10)
            }
            line.add("error", object: nil)
        case .failure(let error):
            line.add("ok", false)
            line.add("kind", nil as String?)
            line.add("width", nil as Int?)
            line.add("height", nil as Int?)
            line.add("frames", nil as Int?)
            line.add("orientation", nil as Int?)
            line.add("error", object: JSONLine.error(error))
        }
        return line.text
    }
}

/// Options that set ``DecodeLimits``.
struct LimitOptions: ParsableArguments {
    @Option(help: "Largest width x height accepted.")
    var maxPixels: Int = DecodeLimits.default.maxPixels

    @Option(help: "Largest width or height accepted.")
    var maxDimension: Int = DecodeLimits.default.maxDimension

    @Option(help: "Most progressive JPEG scans accepted.")
    var maxScans: Int = DecodeLimits.default.maxScans

    @Option(
        help: ArgumentHelp(
            "Cap in bytes on whole-image decoder buffers (progressive JPEG, interlaced PNG, WebP, HEIC and "
                + "AVIF tiles, JPEG XL, animation canvases) and on a video job's decoded frames."))
    var maxDecoderMemory: Int = DecodeLimits.default.maxDecoderMemory

    func validate() throws {
        try Ranges.check(maxPixels, 1...(1 << 40), "--max-pixels")
        try Ranges.check(maxDimension, 1...65_535, "--max-dimension")
        try Ranges.check(maxScans, 1...10_000, "--max-scans")
        try Ranges.check(maxDecoderMemory, 1...(1 << 40), "--max-decoder-memory")
    }

    var imageLimits: DecodeLimits {
        DecodeLimits(
            maxPixels: maxPixels, maxDimension: maxDimension, maxScans: maxScans,
            maxDecoderMemory: maxDecoderMemory)
    }
}
