import AttacheBase
import AttacheMedia
import AttacheSeal
import Foundation

/// One setting of how payloads are treated. `attache serve` reads it as a flag, an `ATTACHE_`
/// variable and a file key (lifted into its configuration), `attache process` and `attache
/// batch` as a flag, a tenant as its settings' key, and a request as its query term where it has
/// one; each surface takes its name, parser, range, default and help from the row in
/// ``PipelineSettings/all`` and from nowhere else.
public typealias PipelineSetting = SettingRow<PipelineConfiguration>

/// The settings every surface that runs the pipeline shares, in the order `--help` lists them.
public enum PipelineSettings {
    public static let all: [PipelineSetting] = [
        row(
            "deadline", "Time allowed per payload (800ms, 2s).",
            .duration(\.deadline, .milliseconds(1)...(.seconds(3600))), term: "deadline"),
        row(
            "baseUrl", "Public base URL of the attachments (their path is where the service serves them).",
            .text(\.baseURL, accepted: "an http(s) URL with a host and without query or fragment", baseURL)),
        row("maxSide", "Longest side of image renditions.", .integer(\.rendition.maxSide, RenditionSpec.maxSideRange)),
        quality, qualityTarget,
        row(
            "format", "Still renditions as auto (Apple-safe), jpeg (JPEG unless transparent) or webp.",
            .choice(\.rendition.outputFormat, RenditionSpec.OutputFormat.allCases.map { ($0.rawValue, $0) }),
            term: "format"),
        row(
            "jpegTables",
            "JPEG quantisation tables: auto (jpegli's with quality auto, the IJG's with a fixed quality), ijg, "
                + "robidoux or jpegli.", .choice(\.rendition.jpegTables, JPEGTables.allCases.map { ($0.rawValue, $0) })),
        row(
            "jpegEncoder",
            "How JPEG coefficients are chosen: fast (rounded) or thorough (trellis quantisation and progressive "
                + "scans: with quality auto 6-9% fewer bytes at the picture's score, about 8x the encode time; "
                + "attache batch's default).",
            .choice(\.rendition.jpegEncoder, JPEGEncoder.allCases.map { ($0.rawValue, $0) })),
        row(
            "decodedMemoryBudget", "Device budget for a decoded image in bytes (width x height x 4; none: no budget).",
            .optionalInteger(\.rendition.decodedMemoryBudget, 4...(1 << 40))),
        row(
            "transcode",
            "Re-encode what does not fit: GIFs the budgets would clip to MP4, video over 50 MB or unplayable to "
                + "H.264/AAC MP4, audio to AAC M4A.", .flag(\.rendition.video.enabled)),
        row(
            "videoPreset", "libx264's preset for those encodes (ultrafast ... veryslow).",
            .choice(\.rendition.video.preset, VideoEncoding.presets.map { ($0, $0) })),
        row("maxVideoSide", "Longest side of a re-encoded video.", .integer(\.rendition.video.maxSide, 16...8192)),
        row(
            "gifMaxFrames", "Frames an animated GIF rendition keeps at most (dropped evenly, its duration kept).",
            .integer(\.rendition.gifMaxFrames, 1...100_000)),
        row(
            "maxSources", "Media sources considered per payload; the rest are reported too_many_sources.",
            .integer(\.maxSources, 1...1000)),
        row(
            "smallSide", "Longest side of the small rendition beside each image (the device's fallback; 0: none).",
            .integer(\.smallSide, 0...32_767)),
        row(
            "maxPayloadBytes", "Largest mutated payload in bytes.", .integer(\.maxPayloadBytes, 1...JSONParser.maxBytes)
        ),
        row(
            "maxPayloadFetchBytes", "Bytes all of a payload's fetches may read together.",
            .integer(\.maxPayloadFetchBytes, 1...(1 << 40))),
        row(
            "maxPayloadStoreBytes", "Bytes a payload may add to the store.",
            .integer(\.maxPayloadStoreBytes, 1...(1 << 40))),
        row("storeTtl", "How long stored attachments live.", .seconds(\.storeTTL, .seconds(1)...maxTTL)),
        row("tokenTtl", "How long an attachment URL's token opens it.", .seconds(\.tokenTTL, .seconds(1)...maxTTL)),
        row(
            "androidMaxBytes",
            "Largest Android picture of a send body in bytes (FCM: 1 MB; some senders ask for 40 KB).",
            .integer(\.[target: .android].maxBytes, TargetSpec.maxBytesRange),
            term: "android_max_bytes"),
        row(
            "webMaxBytes", "Largest web push picture of a send body in bytes.",
            .integer(\.[target: .web].maxBytes, TargetSpec.maxBytesRange),
            term: "web_max_bytes"),
        row(
            "webFormat", "The web push picture as jpeg or webp (Chrome shows both).",
            .choice(\.[target: .web].format, [("jpeg", .jpeg), ("webp", .webp)])),
        androidAspect, targetWidth, faces,
        row(
            "sealPlaceholder", "The alert a sealed payload shows until the device opens it.",
            .text(\.sealPlaceholder, accepted: "an alert of at most 1000 bytes") { $0.utf8.count <= 1000 ? $0 : nil }),
        categories,
    ]

    /// The row of `key`.
    public static func named(_ key: String) -> PipelineSetting? { all.first { $0.key == key } }

    /// Reads every setting `given` has a value for (by key) into `configuration`, in the table's
    /// order; each value refused is returned with its row and left out.
    public static func read(
        _ given: (String) -> String?, into configuration: inout PipelineConfiguration
    ) -> [(setting: PipelineSetting, text: String, refusal: SettingRefusal)] {
        var refused: [(PipelineSetting, String, SettingRefusal)] = []
        for setting in all {
            guard let text = given(setting.key) else { continue }
            do throws(SettingRefusal) {
                try setting.read(text, into: &configuration, given: given)
            } catch {
                refused.append((setting, text, error))
            }
        }
        return refused
    }

    package static let maxTTL = Duration.seconds(100 * 365 * 86_400)

    // MARK: - Rows read together

    /// `auto` (the quality a typical photo needs for the target, each picture kept in the band
    /// around it) or a fixed 1 to 100, for the rendition
    /// and every receiver's picture; `auto` keeps the target given beside it, else the one in force.
    static let quality = row(
        "quality",
        "JPEG and WebP quality: auto (the quality a typical photo needs for the quality target, each picture "
            + "checked and kept within 10 below to 8 above it) or a "
            + "fixed \(Quality.fixedRange.lowerBound)-\(Quality.fixedRange.upperBound).",
        Reader(
            read: { text, configuration, given in
                var target = configuration.rendition.quality.target ?? Quality.defaultTarget
                if let asked = given("qualityTarget").flatMap(DecimalText.number), Quality.targetRange.contains(asked) {
                    target = asked
                }
                guard let quality = Quality(text.lowercased(), target: target) else {
                    throw SettingRefusal(accepted: Quality.accepted)
                }
                configuration.setQuality(quality)
            }, shown: { $0.rendition.quality.setting }), term: "quality")

    /// The score `auto` aims at; given without a quality it means `auto` at this target.
    static let qualityTarget = row(
        "qualityTarget",
        "With quality auto: the SSIMULACRA2 score a typical photo gets, none more than 10 under it "
            + "(\(Quality.trimmedRange); 90 visually lossless, 80 very high, 70 high).",
        Reader(
            read: { text, configuration, given in
                guard let target = DecimalText.number(text),
                    Quality.targetRange.contains(target)
                else { throw SettingRefusal(accepted: "a score from \(Quality.trimmedRange)") }
                // With a quality beside it, the quality's row reads both.
                if given("quality") == nil { configuration.setQuality(.auto(target: target)) }
            },
            shown: { configuration in
                let target = configuration.rendition.quality.target ?? Quality.defaultTarget
                return target == target.rounded() ? String(Int(target)) : String(target)
            }), term: "quality_target")

    /// Width over height of the Android and web pictures.
    static let androidAspect = row(
        "androidAspect", "Width over height of the Android and web pictures (2 for 2:1).",
        Reader(
            read: { text, configuration, _ in
                let range = TargetSpec.aspectRange
                guard let aspect = DecimalText.number(text), range.contains(aspect) else {
                    throw SettingRefusal(accepted: "a number from \(range.lowerBound) to \(range.upperBound)")
                }
                for target in [TargetSpec.Target.android, .web] { configuration.targets[target]?.aspect = aspect }
            }, shown: { number($0.targets[.android]?.aspect ?? TargetSpec(.android).aspect) }),
        term: "android_aspect")

    /// Width of the Android and web pictures; a narrower crop is not enlarged past it.
    static let targetWidth = row(
        "targetWidth", "Width of the Android and web pictures (a narrower crop is not enlarged past it).",
        Reader(
            read: { text, configuration, _ in
                let range = 64...8192
                guard let width = DecimalText.integer(text, as: Int.self), range.contains(width) else {
                    throw SettingRefusal(accepted: "a whole number from \(range.lowerBound) to \(range.upperBound)")
                }
                for target in [TargetSpec.Target.android, .web] {
                    configuration.targets[target]?.width = width
                    configuration.targets[target]?.minWidth = min(TargetSpec(target).minWidth, width)
                }
            }, shown: { "\($0.targets[.android]?.width ?? TargetSpec(.android).width)" }))

    /// Faces for every receiver's crop; asked for where this build cannot find them, refused.
    static let faces = row(
        "faces",
        "Centre the Android, web and icon crops on the largest frontal face found (OpenCV; 10-50 ms a picture).",
        Reader(
            read: { text, configuration, _ in
                let faces = try SettingValue.switchValue(text)
                if faces, let why = ImageProcessor.facesUnavailable { throw SettingRefusal(message: why) }
                for target in TargetSpec.Target.allCases { configuration.targets[target]?.faces = faces }
            }, shown: { "\($0.targets[.android]?.faces ?? false)" }, boolean: true), term: "faces")

    /// Categories by kind, from a JSON file of at most 1 MiB (none: no categories).
    static let categories = row(
        "categories", "Categories by kind: a JSON file of rules and actions (none: no categories).",
        Reader(
            read: { path, configuration, _ in
                guard path != "none" else {
                    configuration.categories = nil
                    return
                }
                guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
                    throw SettingRefusal(message: "cannot read '\(path)' (or it is over 1 MiB)")
                }
                do {
                    configuration.categories = try CategorySet(json: data)
                } catch {
                    throw SettingRefusal(message: "'\(path)': \(error)")
                }
            }, shown: { $0.categories == nil ? "none" : "a file" }))

    // MARK: - Rows

    typealias Reader = PipelineSetting.Reader

    static func row(_ key: String, _ help: String, _ reader: Reader, term: String? = nil) -> PipelineSetting {
        PipelineSetting(key: key, help: help, term: term, reader: reader)
    }

    /// An http(s) URL with a host and no query or fragment, without a trailing slash.
    @Sendable static func baseURL(_ text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil
        else { return nil }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension PipelineConfiguration {
    /// The spec of one receiver's pictures (its default where none is set): a key path's step.
    subscript(target kind: TargetSpec.Target) -> TargetSpec {
        get { targets[kind] ?? TargetSpec(kind) }
        set { targets[kind] = newValue }
    }

    /// `quality` for the rendition and every receiver's picture.
    mutating func setQuality(_ quality: Quality) {
        rendition.quality = quality
        for kind in TargetSpec.Target.allCases { targets[kind]?.quality = quality }
    }
}
