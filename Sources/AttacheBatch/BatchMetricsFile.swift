public import AttacheBase
import Foundation

/// A run's progress as Prometheus metrics in a file (`attache batch --metrics-file`), for
/// node_exporter's textfile collector or any scraper that reads a file: a batch job has no
/// port to scrape, so it leaves its gauges where one reads them. The file is replaced whole
/// (written beside it, then renamed) at most once a second and when the run ends, so a reader
/// never sees half of it. docs/operations/attache-rules.yml alerts on it (`AttacheCampaignStalled`).
public final class BatchMetricsFile: @unchecked Sendable {
    private let path: String
    private let run: String
    private let worker: String
    private var written: ContinuousClock.Instant?
    private var lastProgress: Double
    private var lastDone = -1
    private var last: BatchRunner.Progress?
    private var warm: (outcome: EdgeWarmup.Outcome, finished: Bool)?

    /// `run` names the batch (the campaign, or the input's file name); `worker` this process.
    public init(path: String, run: String, worker: String) {
        self.path = path
        self.run = run
        self.worker = worker
        lastProgress = Date().timeIntervalSince1970
    }

    /// Records `progress`; the file is written when a second has passed since the last write,
    /// and at the end of the run.
    public func update(_ progress: BatchRunner.Progress) throws(AttacheError) {
        let now = ContinuousClock.now
        if progress.done != lastDone {
            lastDone = progress.done
            lastProgress = Date().timeIntervalSince1970
        }
        last = progress
        if !progress.finished, let written, now - written < .seconds(1) { return }
        written = now
        try AtomicFile.write(Array(text(progress).utf8), to: path)
    }

    /// Records the edge warm-up after the run (`--warm`), written as ``update(_:)`` is.
    public func update(warm outcome: EdgeWarmup.Outcome, finished: Bool) throws(AttacheError) {
        warm = (outcome, finished)
        guard let last else { return }
        let now = ContinuousClock.now
        if !finished, let written, now - written < .seconds(1) { return }
        written = now
        try AtomicFile.write(Array(text(last).utf8), to: path)
    }

    /// The exposition text (Prometheus text format 0.0.4).
    func text(_ progress: BatchRunner.Progress) -> String {
        let labels = "run=\"\(Self.escaped(run))\",worker=\"\(Self.escaped(worker))\""
        let remaining = max(0, progress.total - progress.skipped - progress.done)
        var lines = [
            "# HELP attache_batch_items Items of the run's input by state (done and failed: in this run).",
            "# TYPE attache_batch_items gauge",
        ]
        for (state, count) in [
            ("total", progress.total), ("skipped", progress.skipped), ("done", progress.done),
            ("failed", progress.failed), ("remaining", remaining),
        ] {
            lines.append("attache_batch_items{\(labels),state=\"\(state)\"} \(count)")
        }
        lines += [
            "# HELP attache_batch_items_per_second Items finished per second in this run.",
            "# TYPE attache_batch_items_per_second gauge",
            "attache_batch_items_per_second{\(labels)} \(progress.rate)",
            "# HELP attache_batch_last_progress_seconds When an item last finished (or the run started), Unix time.",
            "# TYPE attache_batch_last_progress_seconds gauge",
            "attache_batch_last_progress_seconds{\(labels)} \(lastProgress)",
            "# HELP attache_batch_finished 1 once the run has finished.",
            "# TYPE attache_batch_finished gauge",
            "attache_batch_finished{\(labels)} \(progress.finished ? 1 : 0)",
        ]
        if let (outcome, finished) = warm {
            lines += [
                "# HELP attache_batch_warm_requests Requests of the edge warm-up (--warm) by state.",
                "# TYPE attache_batch_warm_requests gauge",
            ]
            let planned = outcome.urls * outcome.edges
            for (state, count) in [
                ("total", planned), ("ok", outcome.ok), ("failed", outcome.failed),
                ("remaining", max(0, planned - outcome.requests)),
            ] {
                lines.append("attache_batch_warm_requests{\(labels),state=\"\(state)\"} \(count)")
            }
            lines += [
                "# HELP attache_batch_warm_finished 1 once the edge warm-up has finished.",
                "# TYPE attache_batch_warm_finished gauge",
                "attache_batch_warm_finished{\(labels)} \(finished ? 1 : 0)",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A label value as the text format writes it: backslash, quote and line feed escaped.
    static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
