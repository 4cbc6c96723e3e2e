import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import Foundation

struct Resize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Downscale images to fit a square, upright and without metadata.",
        usage: "attache resize [<options>] [<settings>] --out <out> <file> ...",
        discussion: """
            Writes DIR/<name>.<ext> for each file (JPEG stays JPEG, PNG stays PNG) and prints \
            the output width, height, bytes and milliseconds, or the error. Exits 0 even when \
            files are rejected. The output fits --max-side x --max-side, aspect kept, never \
            enlarged.


            Settings shared with attache process, batch and serve (flag, default):

            """ + SettingOptions<ResizeRows>.help
    )

    @Flag(help: "Also measure the SSIMULACRA2 score of a fixed-quality output (auto always does).")
    var score = false

    @Flag(
        help: ArgumentHelp(
            "Also write DIR/<name>.reference.png: the pixels the output was encoded from.", visibility: .hidden))
    var reference = false

    @Option(help: "zlib level for PNG output, 0-9.")
    var pngLevel: Int = 1

    @Option(help: ArgumentHelp("How much larger than the target a DCT-scaled JPEG decode stays.", visibility: .hidden))
    var jpegHeadroom: Double = RenditionSpec().jpegShrinkHeadroom

    @Option(help: ArgumentHelp("libjpeg fancy upsampling (1) or merged (0).", visibility: .hidden))
    var jpegFancy: Int = 1

    @Option(help: "GIF: frames kept at most (dropped evenly beyond, total duration kept).")
    var maxFrames = RenditionSpec().gifMaxFrames

    @Option(help: "GIF: largest output in bytes (frames dropped, then the size shrunk, to fit).")
    var maxBytes = RenditionSpec().gifMaxBytes

    @Flag(help: "GIF: Floyd-Steinberg dithering onto the palette.")
    var dither = false

    @Flag(help: "GIF: write the poster frame as a still (PNG with transparency, else JPEG).")
    var still = false

    @Option(help: "Output directory (created if missing).")
    var out: String

    @Flag(help: "Print one JSON object per file.")
    var json = false

    @OptionGroup var limits: LimitOptions

    @Option(
        help: ArgumentHelp(
            "Also write other receivers' pictures: android, web, icon (comma-separated).",
            discussion: "Each is written as DIR/<name>.<target>.<ext>, cropped around the subject."))
    var targets: String?

    @Option(help: "The subject's point for those crops: x,y from 0 to 1 (default: found by attention).")
    var focus: String?

    /// The settings resize shares with `process`, `batch` and `serve`, read by their rows.
    @OptionGroup var settings: SettingOptions<ResizeRows>

    /// The image files after the flags.
    var files: [String] { settings.positionals }

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("missing the image files") }
        try Ranges.check(pngLevel, 0...9, "--png-level")
        try Ranges.check(jpegHeadroom, 1...8, "--jpeg-headroom")
        try Ranges.check(jpegFancy, 0...1, "--jpeg-fancy")
        try Ranges.check(maxFrames, 1...100_000, "--max-frames")
        try Ranges.check(maxBytes, 1...Int(Int32.max), "--max-bytes")
        _ = try chosenTargets()
        _ = try focalPoint()
    }

    /// The `--targets` asked for, in their order.
    func chosenTargets() throws -> [TargetSpec] {
        guard let targets else { return [] }
        let specs = try settings.configuration().targets
        return try targets.split(separator: ",").map { name in
            guard let target = TargetSpec.Target(rawValue: String(name)), let spec = specs[target] else {
                throw ValidationError("--targets '\(name)' is not android, web or icon")
            }
            return spec
        }
    }

    func focalPoint() throws -> FocalPoint? {
        guard let focus else { return nil }
        let parts = focus.split(separator: ",", omittingEmptySubsequences: false).compactMap { DecimalText.number($0) }
        guard parts.count == 2, let point = FocalPoint(x: parts[0], y: parts[1]) else {
            throw ValidationError("--focus '\(focus)' is not x,y with both from 0 to 1")
        }
        return point
    }

    func run() throws {
        Attache.tuneAllocatorForBatch()
        try OptionChecks.directory(out, "--out")
        let asked = try settings.configuration().rendition
        let base = RenditionSpec(
            maxSide: asked.maxSide, quality: asked.quality, pngCompressionLevel: pngLevel,
            jpegShrinkHeadroom: jpegHeadroom)
        var spec = base
        spec.jpegFancyUpsampling = jpegFancy != 0
        spec.gifMaxFrames = maxFrames
        spec.gifMaxBytes = maxBytes
        spec.gifDither = dither
        spec.outputFormat = asked.outputFormat
        spec.jpegTables = asked.jpegTables
        spec.jpegEncoder = asked.jpegEncoder
        let limits = self.limits.imageLimits
        let clock = ContinuousClock()
        let targets = try chosenTargets()
        let focus = try focalPoint()
        for file in files {
            let started = clock.now
            let outcome = convert(file, spec: spec, limits: limits, targets: targets, focus: focus)
            let (result, outputPath) = (outcome.map(\.rendition), (try? outcome.get().path) ?? "")
            let pictures = (try? outcome.get().targets) ?? []
            let elapsed = clock.now - started
            print(line(file: file, output: outputPath, result, pictures: pictures, milliseconds: elapsed.milliseconds))
        }
    }

    /// One file made into a rendition and written to `--out`. (One typed-throws function: a
    /// do/catch mixing untyped and typed throws around a `Rendition` was miscompiled by the
    /// release optimizer here — an error path destroyed a rendition never made.)
    private func convert(
        _ file: String, spec: RenditionSpec, limits: DecodeLimits, targets: [TargetSpec], focus: FocalPoint?
    )
        -> Result<(rendition: Rendition, path: String, targets: [(TargetOutcome, String)]), AttacheError>
    {
        Result { () throws(AttacheError) -> (rendition: Rendition, path: String, targets: [(TargetOutcome, String)]) in
            let bytes: MediaBytes
            do { bytes = try MediaBytes(contentsOfFile: file) } catch {
                throw error as? AttacheError ?? AttacheError(.ioError, "cannot read \(file)")
            }
            let rendition =
                still
                ? try ImageProcessor.renderStill(bytes, spec: spec, limits: limits)
                : try ImageProcessor.render(
                    bytes, request: TransformRequest(spec: spec, limits: limits, targets: targets, measuresScore: score)
                )
            let stem = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
            let path = URL(fileURLWithPath: out).appendingPathComponent("\(stem).\(rendition.kind.fileExtension)").path
            guard FileManager.default.createFile(atPath: path, contents: Data(rendition.data)) else {
                throw AttacheError(.ioError, "cannot write \(path)")
            }
            if reference, let png = try rendition.referencePNG() {
                let copy = URL(fileURLWithPath: out).appendingPathComponent("\(stem).reference.png").path
                guard FileManager.default.createFile(atPath: copy, contents: Data(png)) else {
                    throw AttacheError(.ioError, "cannot write \(copy)")
                }
            }
            var pictures: [(TargetOutcome, String)] = []
            for outcome in try rendition.targets(targets, focus: focus) {
                guard case .success(let picture) = outcome.result else {
                    pictures.append((outcome, ""))
                    continue
                }
                let name = "\(stem).\(outcome.spec.target.rawValue).\(picture.kind.fileExtension)"
                let target = URL(fileURLWithPath: out).appendingPathComponent(name).path
                guard FileManager.default.createFile(atPath: target, contents: Data(picture.data)) else {
                    throw AttacheError(.ioError, "cannot write \(target)")
                }
                pictures.append((outcome, target))
            }
            return (rendition, path, pictures)
        }
    }

    private func line(
        file: String, output: String, _ result: Result<Rendition, AttacheError>, pictures: [(TargetOutcome, String)],
        milliseconds: Double
    )
        -> String
    {
        let ms = (milliseconds * 10).rounded() / 10
        if json {
            var line = JSONLine()
            line.add("file", file)
            switch result {
            case .success(let r):
                line.add("ok", true)
                line.add("output", output)
                line.add("kind", r.kind.rawValue)
                line.add("width", r.width)
                line.add("height", r.height)
                line.add("bytes", r.data.count)
                line.add("kept_source", r.keptSource)
                if let clip = r.clip {
                    line.addRaw("thumbnail_clip", "[" + clip.map { String($0) }.joined(separator: ",") + "]")
                }
                if let placeholder = r.placeholder {
                    line.add("thumbhash", ThumbHash.text(placeholder))
                }
                if let choice = r.quality {
                    line.add("quality", choice.quality)
                    if let score = choice.score { line.add("score", (score * 100).rounded() / 100) }
                    line.add("encodes", choice.encodes)
                    if let missed = choice.missed { line.add("target_missed", missed) }
                    if choice.fullChroma { line.add("chroma", "4:4:4") }
                    if let blocking = choice.blocking { line.add("blocking", (blocking * 100).rounded() / 100) }
                    if let features = choice.features {
                        line.addRaw(
                            "features", "[" + features.map { String(format: "%.4f", $0) }.joined(separator: ",") + "]")
                    }
                }
                if r.source.kind == .gif {
                    line.add("frames", r.frames)
                    line.add("poster_frame", r.posterFrame)
                    line.add("poster_time", r.posterTime ?? 0)
                    line.addRaw("actions", "[" + r.actions.map(JSONLine.quote).joined(separator: ",") + "]")
                }
                if !pictures.isEmpty {
                    line.addRaw(
                        "targets",
                        "[" + pictures.map { Self.json($0.0, output: $0.1).text }.joined(separator: ",") + "]")
                }
                line.add("ms", ms)
            case .failure(let error):
                line.add("ok", false)
                line.add("ms", ms)
                line.add("error", object: JSONLine.error(error))
            }
            return line.text
        }
        switch result {
        case .success(let r):
            let gif =
                r.source.kind == .gif
                ? "\tframes=\(r.frames) poster=\(r.posterFrame ?? 0)" + r.actions.map { "\t\($0)" }.joined() : ""
            let extra = pictures.map { outcome, path in
                switch outcome.result {
                case .success(let p): "\t\(shown(path)) \(p.width)x\(p.height) \(p.data.count) bytes"
                case .failure(let error): "\t\(outcome.spec.target.rawValue): \(error.code)"
                }
            }.joined()
            return
                "\(shown(file))\tok\t\(shown(output))\t\(r.width)x\(r.height)\t\(r.data.count) bytes\t\(ms) ms\(gif)\(extra)"
        case .failure(let error):
            return "\(shown(file))\terror\t\(error.code)\t\(error.message)\t\(ms) ms"
        }
    }

    /// One receiver's picture in `--json` output.
    static func json(_ outcome: TargetOutcome, output: String) -> JSONLine {
        var line = JSONLine()
        line.add("target", outcome.spec.target.rawValue)
        switch outcome.result {
        case .success(let picture):
            line.add("output", output)
            line.add("kind", picture.kind.rawValue)
            line.add("width", picture.width)
            line.add("height", picture.height)
            line.add("bytes", picture.data.count)
            line.add("encodes", picture.encodes)
            line.add("quality", picture.quality)
            if let score = picture.score { line.add("score", (score * 100).rounded() / 100) }
            if let missed = picture.missed { line.add("target_missed", missed) }
            line.add("placement", picture.placement)
            let crop = picture.crop
            line.addRaw("crop", "[\(crop.x),\(crop.y),\(crop.width),\(crop.height)]")
            if let placeholder = picture.placeholder { line.add("thumbhash", ThumbHash.text(placeholder)) }
        case .failure(let error):
            line.add("error", object: JSONLine.error(error))
        }
        return line
    }
}

/// The rows of ``PipelineSettings/all`` `resize` takes: the rendition's size, format and quality,
/// and the other receivers' pictures.
enum ResizeRows: SettingRows {
    static let keys: Set<String>? = [
        "maxSide", "format", "quality", "qualityTarget", "jpegTables", "jpegEncoder", "androidMaxBytes", "webMaxBytes",
        "webFormat",
        "androidAspect", "targetWidth", "faces",
    ]
    static var base: PipelineConfiguration { PipelineConfiguration() }
}
