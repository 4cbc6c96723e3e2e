import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import Foundation

/// How payloads go through the pipeline: `attache process` and `attache batch`.
struct PipelineOptions: ParsableArguments {
    @Option(help: "Time allowed per payload (e.g. 25s, 800ms).")
    var deadline: Milliseconds = Milliseconds(25_000)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Public base URL the stored attachments are served from.")
    var baseURL = PipelineConfiguration().baseURL

    @OptionGroup var address: AddressOptions

    @Option(help: "Longest side of image renditions.")
    var maxSide = RenditionSpec().maxSide

    @OptionGroup var quality: QualityOptions

    @Option(help: "Device budget for a decoded image, in bytes (width x height x 4).")
    var decodedMemoryBudget: Int?

    @Option(help: "Still renditions as: auto (Apple-safe), jpeg (JPEG unless transparent), webp (for Android).")
    var format = FormatOption(.auto)

    @Flag(
        inversion: .prefixedNo,
        help:
            "Re-encode what does not fit: GIFs the budgets would clip to H.264 MP4, video over the cap or unplayable to H.264/AAC MP4, audio to AAC M4A."
    )
    var transcode = true

    @Option(help: "libx264's preset for those encodes (ultrafast ... veryslow; batch runs may take medium).")
    var videoPreset = VideoEncoding().preset

    @Option(help: "Longest side of a transcoded video.")
    var maxVideoSide = VideoEncoding().maxSide

    @Option(help: "Largest mutated payload in bytes.")
    var maxPayloadBytes = PipelineConfiguration().maxPayloadBytes

    @Option(help: "Media sources considered per payload; the rest are reported too_many_sources.")
    var maxSources = PipelineConfiguration().maxSources

    @Option(help: "Bytes all of a payload's fetches may read together.")
    var maxPayloadFetchBytes = PipelineConfiguration().maxPayloadFetchBytes

    @Option(help: "Bytes a payload may add to the store.")
    var maxPayloadStoreBytes = PipelineConfiguration().maxPayloadStoreBytes

    @Option(name: .customLong("source"), help: "Extra source rule name=key/key/... (repeatable; * = every member).")
    var extraSources: [String] = []

    @Option(help: "Longest side of the small rendition stored beside each image (the device's fallback; 0: none).")
    var smallSide = PipelineConfiguration().smallSide

    @Option(
        help:
            "Seal every payload to this device public key (PEM, DER, X9.63 or raw P-256; raw or DER X25519; or their base64)."
    )
    var sealKey: String?

    @Option(help: "The key id written beside the seal (with --seal-key).")
    var sealKid: String?

    @Option(help: "The alert a sealed payload shows until the device opens it.")
    var sealPlaceholder = PipelineConfiguration().sealPlaceholder

    @Option(name: .customLong("seal-member"), help: "A top-level member a seal also takes (repeatable).")
    var sealMembers: [String] = []

    @Option(help: "Categories by kind: a JSON file of rules and actions (see docs/sealed-notifications.md).")
    var categories: String?

    @OptionGroup var targets: TargetOptions

    func validate() throws {
        try Ranges.check(smallSide, 0...32_767, "--small-side")
        if (sealKey == nil) != (sealKid == nil) { throw ValidationError("--seal-key and --seal-kid go together") }
        try Ranges.check(deadline.value, 1...Ranges.maxDeadlineMilliseconds, "--deadline (milliseconds)")
        try Ranges.check(maxSide, RenditionSpec.maxSideRange, "--max-side")
        try Ranges.check(maxVideoSide, 16...8192, "--max-video-side")
        if !VideoEncoding.presets.contains(videoPreset) {
            throw ValidationError(
                "--video-preset '\(videoPreset)' is not one of \(VideoEncoding.presets.joined(separator: ", "))")
        }
        if let decodedMemoryBudget { try Ranges.check(decodedMemoryBudget, 4...(1 << 40), "--decoded-memory-budget") }
        try Ranges.check(maxPayloadBytes, 1...JSONParser.maxBytes, "--max-payload-bytes")
        try Ranges.check(maxSources, 1...1_000, "--max-sources")
        try Ranges.check(maxPayloadFetchBytes, 1...(1 << 40), "--max-payload-fetch-bytes")
        try Ranges.check(maxPayloadStoreBytes, 1...(1 << 40), "--max-payload-store-bytes")
        try OptionChecks.baseURL(baseURL, "--base-url")
        if sealPlaceholder.utf8.count > 1000 {
            throw ValidationError(
                "--seal-placeholder is \(sealPlaceholder.utf8.count) bytes; the alert shown until the device opens the seal is at most 1000"
            )
        }
        for member in sealMembers where member.isEmpty || member == "aps" {
            throw ValidationError(
                "--seal-member '\(member)' is not a member a seal can take: name a top-level member other than aps")
        }
    }

    /// The pipeline these options describe, over `store` (default: the store they name).
    func pipeline(store: AttachmentStore? = nil) throws -> Pipeline {
        var configuration = PipelineConfiguration()
        configuration.deadline = .milliseconds(deadline.value)
        configuration.baseURL = baseURL
        configuration.rendition.maxSide = maxSide
        configuration.rendition.decodedMemoryBudget = decodedMemoryBudget
        configuration.rendition.outputFormat = format.value
        configuration.rendition.video.enabled = transcode
        configuration.rendition.video.preset = videoPreset
        configuration.rendition.video.maxSide = maxVideoSide
        configuration.maxPayloadBytes = maxPayloadBytes
        configuration.maxSources = maxSources
        configuration.maxPayloadFetchBytes = maxPayloadFetchBytes
        configuration.maxPayloadStoreBytes = maxPayloadStoreBytes
        configuration.smallSide = smallSide
        configuration.sealPlaceholder = sealPlaceholder
        configuration.sealMembers = sealMembers
        configuration.rendition.quality = quality.value
        configuration.targets = targets.specs(quality: quality.value)
        if let sealKey, let sealKid {
            let bytes = try BoundedInput.read(sealKey, limit: 64 * 1024)
            do {
                configuration.sealTo = try SealRecipient(encoded: bytes, keyID: sealKid)
            } catch SealError.badKey(let why) where why.hasPrefix("a key id") {
                throw ValidationError("--seal-kid '\(sealKid)': \(why)")
            } catch {
                throw ValidationError("--seal-key \(sealKey): \(error)")
            }
        }
        if let categories { configuration.categories = try Self.categorySet(categories) }
        for text in extraSources {
            guard let rule = SourceRule(argument: text) else {
                throw ValidationError(
                    "--source '\(text)' is not a rule: name=key/key (the keys to a URL, * for every member), "
                        + "e.g. cdn=data/media/url")
            }
            configuration.sources.append(rule)
        }
        return Pipeline(configuration: configuration, fetcher: fetcher(), store: try store ?? storeOptions.open())
    }

    /// Reads and checks a categories file.
    static func categorySet(_ path: String) throws -> CategorySet {
        let bytes = try BoundedInput.read(path, limit: 1 << 20)
        do {
            return try CategorySet(json: Data(bytes))
        } catch {
            throw ValidationError("--categories \(path): \(error)")
        }
    }

    /// A fetcher with the address policy these options describe.
    func fetcher() -> Fetcher {
        var policy = FetchPolicy()
        address.apply(to: &policy)
        return Fetcher(policy: policy)

    }
}

/// `--format auto|jpeg|webp`.
struct FormatOption: ExpressibleByArgument, Sendable {
    let value: RenditionSpec.OutputFormat

    init(_ value: RenditionSpec.OutputFormat) { self.value = value }

    init?(argument: String) {
        guard let value = RenditionSpec.OutputFormat(rawValue: argument) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String { value.rawValue }
    static var allValueStrings: [String] { RenditionSpec.OutputFormat.allCases.map(\.rawValue) }
}
