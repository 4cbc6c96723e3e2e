public import AttacheBase
public import AttacheCore
import Foundation

/// Runs a batch: every item of the input not yet in the manifest goes through the pipeline,
/// `jobs` at a time (their fetches overlap; the codecs run on the pipeline's workers, one per
/// core), and each finished item is written — payload to the output, then its manifest line.
///
/// Memory is bounded by `jobs`, not by the input: items are read as slots free up, and what
/// is kept per finished item is its line, written at once. An item that fails, hangs or is
/// hostile holds one slot until its own deadline and nothing else.
public final class BatchRunner: Sendable {
    public struct Progress: Sendable {
        /// Items in the input, and how many the manifest had before this run.
        public var total: Int
        public var skipped: Int
        /// Items finished in this run, and how many of those failed.
        public var done: Int
        public var failed: Int
        public var started: ContinuousClock.Instant
        public var finished: Bool = false

        /// Items per second in this run.
        public var rate: Double { rate(at: .now) }

        /// Items per second in this run, as of `now`.
        public func rate(at now: ContinuousClock.Instant) -> Double {
            let seconds = (now - started).milliseconds / 1000
            return seconds > 0 ? Double(done) / seconds : 0
        }
    }

    let pipeline: Pipeline
    let jobs: Int
    /// Where each item's preview page goes, when asked for.
    let previews: BatchPreviews?

    public init(pipeline: Pipeline, jobs: Int, previews: BatchPreviews? = nil) {
        self.pipeline = pipeline
        self.jobs = max(1, jobs)
        self.previews = previews
    }

    /// Processes `input`'s items that `manifest` does not record; `progress` hears of each
    /// finished item (and is called once more with `finished` set).
    public func run(
        _ input: BatchInput, manifest: BatchManifest, output: BatchOutput?,
        progress: (Progress) -> Void = { _ in }
    ) async throws(AttacheError) -> Progress {
        let total = try input.count()
        var state = Progress(total: total, skipped: 0, done: 0, failed: 0, started: .now)
        // Passes over the input: items never tried, then those an earlier run was killed with
        // in flight once, then those interrupted more often.
        var items = try input.items()
        var pass = 0
        let interrupted = manifest.interrupted
        func nextItem() throws(AttacheError) -> BatchItem? {
            while true {
                if let item = items.next() {
                    if manifest.done.contains(item.reference) {
                        if pass == 0 { state.skipped += 1 }
                        continue
                    }
                    if min(2, interrupted[item.reference] ?? 0) != pass { continue }
                    return item
                }
                pass += 1
                guard pass <= 2, interrupted.values.contains(where: { min(2, $0) >= pass }) else { return nil }
                items = try input.items()
            }
        }
        let pipeline = self.pipeline
        let previews = self.previews
        let trace = BatchTrace("batch")

        // Each finished item is committed before the next is looked at: its output made
        // durable, then its manifest line appended and made durable (an fdatasync each, about
        // 0.2 ms here). A kill at any moment leaves every recorded item whole, and at most the
        // items in flight to redo.
        func finish(_ item: BatchItem, _ result: PipelineResult?) throws(AttacheError) {
            var payloadOut: Int?
            if let output, item.readError == nil, let result {
                try output.write(result.payload, name: item.outputName)
                try output.sync()
                payloadOut = result.payload.count
            }
            let line = BatchRecord.line(item: item, result: result, payloadOut: payloadOut, outputEnd: output?.end)
            try manifest.append(line.text, reference: item.reference)
            try manifest.sync()
            state.done += 1
            if line.failed { state.failed += 1 }
            progress(state)
        }

        let failure: AttacheError? = await withTaskGroup(of: (BatchItem, PipelineResult?).self) { group in
            var running = 0
            while true {
                while running < jobs {
                    let item: BatchItem
                    do throws(AttacheError) {
                        guard let next = try nextItem() else { break }
                        item = next
                        try manifest.started(item.reference)
                    } catch {
                        group.cancelAll()
                        return error
                    }
                    running += 1
                    group.addTask {
                        let result = await trace.item(item) {
                            item.readError != nil ? nil : await pipeline.process(item.payload)
                        }
                        // Before the manifest line: a recorded item's page is there. A page that
                        // cannot be written costs the page, never the item.
                        if let previews, let result {
                            try? previews.write(result, reference: item.reference, pipeline: pipeline)
                        }
                        return (item, result)
                    }
                }
                guard running > 0, let (item, result) = await group.next() else { return nil }
                running -= 1
                do throws(AttacheError) {
                    try finish(item, result)
                } catch {
                    // The output or the manifest cannot be written: stop; what is recorded stays.
                    group.cancelAll()
                    return error
                }
            }
        }
        return try trace.finish(state, failure: failure, progress: progress)
    }
}

/// A manifest line for one finished item.
enum BatchRecord {
    static func line(
        item: BatchItem, result: PipelineResult?, payloadOut: Int?, outputEnd: Int64?
    ) -> (
        text: String, failed: Bool
    ) {
        var line = JSONLine()
        line.add("ref", item.reference)
        line.add("index", item.index)
        if let url = item.url { line.add("url", url) }
        let outcomes = result?.outcomes ?? []
        let attached = outcomes.filter { $0.attachment != nil }
        let outcome: String
        let code: String?
        let unreadable = item.readError ?? result?.payloadError
        if let unreadable, unreadable.code == .sealFailed {
            // A seal that could not be made: the placeholder was written, nothing it would hide.
            (outcome, code) = ("withheld", unreadable.code.rawValue)
        } else if let unreadable {
            (outcome, code) = ("unreadable", unreadable.code.rawValue)
        } else if outcomes.isEmpty {
            (outcome, code) = ("unchanged", nil)
        } else {
            outcome = attached.count == outcomes.count ? "attached" : attached.isEmpty ? "failed" : "partial"
            code = outcomes.first { $0.error != nil }?.error?.code.rawValue
        }
        line.add("outcome", outcome)
        line.add("code", code)
        line.addRaw(
            "attachments",
            "[" + attached.compactMap { $0.attachment.map { JSONLine.quote($0.id) } }.joined(separator: ",") + "]")
        line.add("bytes_in", Int(outcomes.reduce(Int64(0)) { $0 + $1.fetchedBytes }))
        line.add("bytes_out", Int(attached.reduce(Int64(0)) { $0 + ($1.attachment?.bytes ?? 0) }))
        line.add("payload_in", item.payload.count)
        line.add("payload_out", payloadOut)
        line.add("ms", ((result?.elapsed.milliseconds ?? 0) * 10).rounded() / 10)
        var stages = StageTimings()
        for outcome in outcomes { stages.add(outcome.timings) }
        line.add("stage_ms", object: stages.json)
        if let result {
            line.add("best_attempt", result.bestAttempt)
            line.add("trimmed", result.trimmed.count)
        }
        if let unreadable { line.add("error", object: JSONLine.error(unreadable)) }
        let entries = outcomes.map(\.json.text)
        line.addRaw("items", "[" + entries.joined(separator: ",") + "]")
        line.add("out_end", outputEnd.map { Int($0) })
        return (
            line.text, outcome == "failed" || outcome == "unreadable" || outcome == "partial" || outcome == "withheld"
        )
    }
}
