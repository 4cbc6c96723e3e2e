import ArgumentParser
import AttacheBase
import AttacheBatch
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheServer
import AttacheStore
import AttacheStoreShared
import AttacheWork
import Foundation

struct BatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Prepare a campaign's media ahead of the send, with progress, resume and a report.",
        usage: "attache batch [<options>] [<settings>] <input>",
        discussion: """
            INPUT is a directory of payload .json files, a .jsonl file of payloads (one per line), \
            or any other file as a list of media URLs (one per line, # starts a comment; each URL \
            is processed as {"aps":{"mutable-content":1},"media-url":URL}). Items are read as they \
            are needed. Each finished item gets one line in the manifest (default: beside --out, \
            named after it: --out out.jsonl → out.manifest.jsonl, --out DIR → DIR.manifest.jsonl; \
            without --out, batch.manifest.jsonl); running the same command again \
            skips the items the manifest records, so a killed batch resumes where it stopped. \
            --out DIR writes each mutated payload to DIR/<name> (directory input: the file's name; \
            otherwise <line>.json); --out FILE.jsonl writes them as one file, one payload per line \
            in the order they finish.

            --campaign NAME shares the batch between workers on any machines: with a shared \
            store (--store postgres://… --blobs s3://…) the items go into the store's job table \
            (every worker may enqueue the same INPUT; the first one's items stand), each worker \
            claims items under a lease it renews (--lease), and a worker that dies loses nothing: \
            its items are taken again once its leases run out. Each worker stops when every item is \
            recorded, then writes the manifest, --out and --report from the table.

            """ + PipelineOptions<BatchRows>.settingsHelp
    )

    @OptionGroup var options: PipelineOptions<BatchRows>

    @Option(help: "Mutated payloads: a directory, or a file ending in .jsonl.")
    var out: String?

    @Option(
        help:
            "The manifest (JSONL, one line per item). Default: out.manifest.jsonl for --out out.jsonl, DIR.manifest.jsonl for --out DIR, else batch.manifest.jsonl."
    )
    var manifest: String?

    @Option(help: "Write a self-contained HTML report of the whole batch to this file.")
    var report: String?

    @Option(
        help: "Write one preview page per item (each platform's view: see attache preview) into this directory.")
    var previews: String?

    @Option(
        help: ArgumentHelp(
            "Work for this tenant: what the batch stores is its own (its store quota, store stats --tenant).",
            discussion: "With --tenants FILE, its row's settings, media hosts and quota apply too, as in the service."))
    var tenant: String?

    @Option(
        help:
            "The service's tenants file (catalog: those a shared store keeps), for --tenant's settings, media hosts and store quota."
    )
    var tenants: String?

    @Option(help: "Items in flight at once (their fetches overlap). Default: 8 per worker.")
    var jobs: Int?

    @Option(help: "Threads for decoding and encoding. Default: one per core.")
    var workers: Int?

    @Option(
        help: """
            Memory (MiB) the decodes may hold together: one waits, before it allocates, until what \
            it needs fits. Default: 64 per worker, at most a quarter of the machine's.
            """)
    var workMemory: Int?

    @Option(help: "Time between progress lines when standard error is not a terminal.")
    var progressInterval = DurationArgument(.seconds(5))

    @Flag(help: "List what would be done (items not yet in the manifest), and do nothing.")
    var dryRun = false

    @Option(
        help: ArgumentHelp(
            "Keep the run's progress as Prometheus gauges in this file (node_exporter's textfile collector).",
            discussion: "Replaced whole at most once a second and at the end; see docs/operations.md."))
    var metricsFile: String?

    @Option(
        help: ArgumentHelp(
            "Once prepared, request each attachment URL of the payloads once through this edge (http://host[:port]; repeat for several).",
            discussion: "Needs --out (the URLs are read from the payloads). See docs/operations/edge.md."))
    var warm: [String] = []

    @Option(help: "Warm-up requests in flight at once per edge.")
    var warmConcurrency: Int = 16

    @Option(help: "Time the whole warm-up may take (what is not done by then is reported failed).")
    var warmTimeout = DurationArgument(.seconds(600))

    @Option(help: "Share the batch with other workers under this campaign name (needs a shared store).")
    var campaign: String?

    @Option(help: "How long a claimed item stays this worker's without renewal (campaigns).")
    var lease = Seconds(30)

    /// A directory of .json payloads, a .jsonl file of payloads, or a file of URLs: the one
    /// argument after the flags.
    var input: String { options.inputs.first ?? "" }

    func validate() throws {
        guard options.inputs.count == 1 else {
            throw ValidationError(
                options.inputs.isEmpty
                    ? "missing INPUT: a directory of .json payloads, a .jsonl file of payloads, or a file of URLs"
                    : "one INPUT, not \(options.inputs.count): \(options.inputs.joined(separator: " "))")
        }
        if let jobs { try Ranges.check(jobs, 1...4_096, "--jobs") }
        if let workers { try Ranges.check(workers, 1...256, "--workers") }
        if let workMemory { try Ranges.check(workMemory, 16...1_048_576, "--work-memory") }
        try Ranges.check(lease.value, 1...86_400, "--lease (seconds)")
        try Ranges.check(warmConcurrency, 1...1_024, "--warm-concurrency")
        guard warmTimeout.value >= .seconds(1), warmTimeout.value <= .seconds(86_400) else {
            throw ValidationError("--warm-timeout \(DurationText.format(warmTimeout.value)) is not from 1s to 1d")
        }
        if !warm.isEmpty {
            guard out != nil else { throw ValidationError("--warm reads the URLs from the payloads: it needs --out") }
            do { _ = try EdgeWarmup(edges: warm) } catch { throw ValidationError(error.message) }
        }
        guard progressInterval.value > .zero, progressInterval.value <= .seconds(3600) else {
            throw ValidationError("--progress-interval must be more than 0s and at most 1h")
        }
        // Checked before anything runs, not found out after a long batch.
        if let report { try OptionChecks.writableFile(report, "--report") }
        if let previews { try OptionChecks.directory(previews, "--previews") }
        if tenants != nil, tenant == nil { throw ValidationError("--tenants is read for --tenant: give both") }
        if let tenant {
            do { _ = try TenantPipeline.configuration(for: tenant, file: tenants, over: BatchRows.base) } catch {
                throw ValidationError(error.message)
            }
        }
        if let metricsFile { try OptionChecks.writableFile(metricsFile, "--metrics-file") }
        try OptionChecks.writableFile(manifestPath, manifest != nil ? "--manifest" : "the manifest (named after --out)")
        if let out, out.hasSuffix(".jsonl") { try OptionChecks.writableFile(out, "--out") }
        if let campaign, campaign.isEmpty || campaign.utf8.count > 200 {
            throw ValidationError("--campaign is a name of 1 to 200 bytes")
        }
    }

    var manifestPath: String {
        if let manifest { return manifest }
        if let out {
            let base = out.hasSuffix("/") ? String(out.dropLast()) : out
            return (base.hasSuffix(".jsonl") ? String(base.dropLast(6)) : base) + ".manifest.jsonl"
        }
        return "batch.manifest.jsonl"
    }

    func run() async throws {
        try await TraceExport.around("batch") { try await runBatch() }
    }

    private func runBatch() async throws {
        let input = try BatchInput(path: self.input)
        if let campaign { return try await runCampaign(campaign, input: input) }
        if dryRun { return try listPending(input) }
        let jobs = startWorkers()
        // Every option is turned into its part before the manifest is locked, so a refused
        // value never holds the lock another batch in this directory is waiting for.
        let store = try options.storeOptions.open()
        let runner = BatchRunner(
            pipeline: try tenantPipeline(store: store), jobs: jobs, previews: previews.map(BatchPreviews.init))
        let manifest = try BatchManifest(path: manifestPath)
        if manifest.cut > 0 {
            FileHandle.standardError.write(Data("batch: the manifest's last line was torn; its item is redone\n".utf8))
        }
        let output = try out.map { path throws(AttacheError) in
            try BatchOutput(path: path, recordedEnd: manifest.outputEnd)
        }
        let display = ProgressDisplay(interval: progressInterval.seconds)
        let metrics = metricsFile(run: (input.path as NSString).lastPathComponent)
        let progress = try await runner.run(input, manifest: manifest, output: output) {
            display.show($0)
            metrics?.update($0)
        }
        let warmed = try await warmEdges(base: (try options.settings.configuration()).baseURL, metrics: metrics)
        try await conclude(progress, title: input.path, store: store, warmed: warmed)
    }

    /// The pipeline the options ask for, as `--tenant` gets it (its row of `--tenants` over it).
    private func tenantPipeline(store: AttachmentStore) throws -> Pipeline {
        let pipeline = try options.pipeline(store: store)
        guard let tenant else { return pipeline }
        let (configuration, sources) = try TenantPipeline.configuration(
            for: tenant, file: tenants, store: store, over: pipeline.configuration)
        return pipeline.configured(configuration).fetching(from: sources)
    }

    /// Sets the transforms' workers up as the options ask (before the first job) and returns
    /// how many items go at once (the scheduler set for a batch: ``PipelineRuntime/batch(workers:memory:)``).
    private func startWorkers() -> Int {
        PipelineRuntime.batch(workers: workers, memory: workMemory.map { $0 << 20 }).apply()
        return jobs ?? 8 * (workers ?? PipelineWorkers.count)
    }

    /// One worker of a shared campaign: enqueue, work until every item is recorded, then the
    /// manifest, output, report and summary from the table.
    func runCampaign(_ name: String, input: BatchInput) async throws {
        let store = try options.storeOptions.open()
        let queue = try CampaignQueue(store: store, campaign: name, lease: lease.value)
        try SharedCampaign.enqueue(input, into: queue)
        if dryRun {
            let status = try queue.status()
            FileHandle.standardError.write(
                Data(
                    ("batch (dry run): campaign \(name): \(status.total) items, \(status.done) done, "
                        + "\(status.running) running, \(status.pending) waiting\n").utf8))
            return
        }
        let jobs = startWorkers()
        let runner = BatchRunner(
            pipeline: try tenantPipeline(store: store), jobs: jobs, previews: previews.map(BatchPreviews.init))
        let display = ProgressDisplay(interval: progressInterval.seconds)
        let metrics = metricsFile(run: name)
        let progress = try await runner.run(queue: queue) {
            display.show($0)
            metrics?.update($0)
        }
        try SharedCampaign.export(queue, manifest: manifestPath, output: out)
        let warmed = try await warmEdges(base: (try options.settings.configuration()).baseURL, metrics: metrics)
        try await conclude(progress, title: "\(name) (\(input.path))", store: store, warmed: warmed)
    }

    /// What records progress in `--metrics-file`, if given.
    private func metricsFile(run: String) -> MetricsRecorder? {
        guard let metricsFile else { return nil }
        let host = ProcessInfo.processInfo.hostName
        return MetricsRecorder(file: BatchMetricsFile(path: metricsFile, run: run, worker: "\(host):\(getpid())"))
    }

    /// With `--warm`: every attachment URL of the payloads in `--out` requested once through
    /// each edge; the outcome, its first failures on standard error.
    private func warmEdges(base: String, metrics: MetricsRecorder?) async throws -> EdgeWarmup.Outcome? {
        guard !warm.isEmpty, let out else { return nil }
        let warmup = try EdgeWarmup(edges: warm, concurrency: warmConcurrency)
        let urls = try EdgeWarmup.urls(inOutput: out, base: base)
        FileHandle.standardError.write(
            Data("batch: warming \(urls.count) URLs through \(warm.count) edge(s)\n".utf8))
        // The edges are the operator's own (often on a private network): no address policy.
        var policy = FetchPolicy()
        policy.allowLoopback = true
        policy.allowPrivate = true
        policy.maxBytes = 64 << 20
        policy.totalTimeout = .seconds(60)
        let limit = warmTimeout.value
        let outcome = await warmup.run(urls, fetcher: Fetcher(policy: policy), limit: limit) {
            metrics?.update(warm: $0, finished: false)
        }
        metrics?.update(warm: outcome, finished: true)
        for failure in outcome.failures {
            FileHandle.standardError.write(
                Data("batch: warm \(failure.edge): \(failure.url): \(failure.code): \(failure.message)\n".utf8))
        }
        return outcome
    }

    /// After a run: the report page (with `--report`), then the summary from the manifest.
    func conclude(
        _ progress: BatchRunner.Progress, title: String, store: AttachmentStore, warmed: EdgeWarmup.Outcome? = nil
    ) async throws {
        if let report {
            var page = BatchReport(title: title)
            page.previews = previews.map {
                BatchPreviews.link(to: $0, from: (report as NSString).deletingLastPathComponent)
            }
            let text = try await page.render(manifest: manifestPath, store: store, fetcher: options.fetcher())
            try AtomicFile.write(Array(text.utf8), to: report)
        }
        var summary = try BatchSummary(manifest: manifestPath, run: progress)
        summary.warm = warmed
        if options.storeOptions.json {
            print(summary.json)
        } else {
            FileHandle.standardError.write(Data(("\n" + summary.table).utf8))
        }
    }

    /// Prints the items a run would process, one reference per line, and a count.
    func listPending(_ input: BatchInput) throws {
        var done: Set<String> = []
        try BatchManifest.scan(manifestPath) { record, _ in if let record { done.insert(record.reference) } }
        var items = try input.items()
        var pending = 0
        var skipped = 0
        while let item = items.next() {
            if done.contains(item.reference) {
                skipped += 1
                continue
            }
            pending += 1
            print(item.url.map { "\(item.reference)\t\($0)" } ?? item.reference)
        }
        FileHandle.standardError.write(
            Data("batch (dry run): \(pending) items to do, \(skipped) already in \(manifestPath)\n".utf8))
    }
}

/// Keeps `--metrics-file` up to date; a file that cannot be written is said once on standard
/// error and the run goes on.
final class MetricsRecorder: @unchecked Sendable {  // used by one task at a time
    private let file: BatchMetricsFile
    private var said = false

    init(file: BatchMetricsFile) { self.file = file }

    func update(_ progress: BatchRunner.Progress) { record { () throws(AttacheError) in try file.update(progress) } }

    func update(warm: EdgeWarmup.Outcome, finished: Bool) {
        record { () throws(AttacheError) in try file.update(warm: warm, finished: finished) }
    }

    private func record(_ write: () throws(AttacheError) -> Void) {
        do throws(AttacheError) {
            try write()
        } catch {
            if !said { FileHandle.standardError.write(Data("batch: --metrics-file: \(error.message)\n".utf8)) }
            said = true
        }
    }
}

/// Progress on standard error: a bar redrawn in place on a terminal (at most 10 times a
/// second), a plain line every `interval` seconds otherwise; a last line at the end either way.
final class ProgressDisplay: @unchecked Sendable {
    private let terminal = isatty(STDERR_FILENO) == 1
    private let interval: Duration
    private var last: ContinuousClock.Instant?
    private var shown = -1

    init(interval: Double) {
        self.interval = terminal ? .milliseconds(100) : .milliseconds(Int64(interval * 1000))
    }

    func show(_ progress: BatchRunner.Progress) {
        let now = ContinuousClock.now
        if !progress.finished, let last, now - last < interval { return }
        if !progress.finished, last == nil, !terminal {
            // The first log line comes after one interval, not with the first item.
            last = now
            return
        }
        last = now
        // The last line is not printed twice.
        if progress.finished, !terminal, shown == progress.done { return }
        shown = progress.done
        let text: String
        if terminal {
            text = "\r\u{1B}[2K" + ProgressLine.bar(progress, width: Self.columns) + (progress.finished ? "\n" : "")
        } else {
            text = ProgressLine.log(progress) + "\n"
        }
        FileHandle.standardError.write(Data(text.utf8))
    }

    static var columns: Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
