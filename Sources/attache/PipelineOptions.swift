import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore

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

    @Option(help: "Device budget for a decoded image, in bytes (width x height x 4).")
    var decodedMemoryBudget: Int?

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

    func validate() throws {
        try Ranges.check(deadline.value, 1...Ranges.maxDeadlineMilliseconds, "--deadline (milliseconds)")
        try Ranges.check(maxSide, 1...32_767, "--max-side")
        if let decodedMemoryBudget { try Ranges.check(decodedMemoryBudget, 4...(1 << 40), "--decoded-memory-budget") }
        try Ranges.check(maxPayloadBytes, 1...JSONParser.maxBytes, "--max-payload-bytes")
        try Ranges.check(maxSources, 1...1_000, "--max-sources")
        try Ranges.check(maxPayloadFetchBytes, 1...(1 << 40), "--max-payload-fetch-bytes")
        try Ranges.check(maxPayloadStoreBytes, 1...(1 << 40), "--max-payload-store-bytes")
    }

    /// The pipeline these options describe, over `store` (default: the store they name).
    func pipeline(store: AttachmentStore? = nil) throws -> Pipeline {
        var configuration = PipelineConfiguration()
        configuration.deadline = .milliseconds(deadline.value)
        configuration.baseURL = baseURL
        configuration.rendition.maxSide = maxSide
        configuration.rendition.decodedMemoryBudget = decodedMemoryBudget
        configuration.maxPayloadBytes = maxPayloadBytes
        configuration.maxSources = maxSources
        configuration.maxPayloadFetchBytes = maxPayloadFetchBytes
        configuration.maxPayloadStoreBytes = maxPayloadStoreBytes
        for text in extraSources {
            guard let rule = SourceRule(argument: text) else { throw ValidationError("bad --source '\(text)'") }
            configuration.sources.append(rule)
        }
        return Pipeline(configuration: configuration, fetcher: fetcher(), store: try store ?? storeOptions.open())
    }

    /// A fetcher with the address policy these options describe.
    func fetcher() -> Fetcher {
        var policy = FetchPolicy()
        address.apply(to: &policy)
        return Fetcher(policy: policy)

    }
}
