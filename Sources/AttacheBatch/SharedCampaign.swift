public import AttacheBase
import AttacheCore
import AttacheStore
public import AttacheStoreShared
import AttacheWork
import Foundation
import Glibc

/// A campaign shared by batch workers on any number of machines: its items in the shared
/// store's job table (``CampaignQueue``), claimed a few at a time, recorded as they finish.
public enum SharedCampaign {
    /// Puts `input`'s items in the table, 500 at a time (every worker may do this: the items
    /// already there stay as they are). Returns the item count.
    @discardableResult
    public static func enqueue(_ input: BatchInput, into queue: CampaignQueue) throws(AttacheError) -> Int {
        let total = try input.count()
        var items = try input.items()
        var chunk: [QueuedJob] = []
        var enqueued = 0
        func flush() throws(AttacheError) {
            if chunk.isEmpty { return }
            try queue.enqueue(chunk, total: total)
            enqueued += chunk.count
            chunk.removeAll(keepingCapacity: true)
        }
        while let item = items.next() {
            chunk.append(
                QueuedJob(
                    seq: item.index, reference: item.reference, url: item.url, outputName: item.outputName,
                    payload: item.payload, readError: item.readError.map { "\($0.code.rawValue)\t\($0.message)" }))
            if chunk.count == 500 { try flush() }
        }
        try flush()
        if enqueued == 0 { try queue.enqueue([], total: 0) }
        return total
    }

    /// The batch item a claimed job stands for.
    static func item(_ job: QueuedJob) -> BatchItem {
        let readError = job.readError.map { text -> AttacheError in
            let parts = text.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            return AttacheError(
                AttacheError.Code(rawValue: String(parts[0])), parts.count > 1 ? String(parts[1]) : "unreadable")
        }
        return BatchItem(
            index: job.seq, reference: job.reference, payload: job.payload, url: job.url, readError: readError,
            outputName: job.outputName)
    }

    /// Writes what the table records: the manifest (one line per item, in input order), and
    /// the mutated payloads to `output` when given. Memory stays bounded (500 rows at a time).
    public static func export(_ queue: CampaignQueue, manifest: String, output: String?) throws(AttacheError) {
        let temp = manifest + ".part"
        let fd = try AtomicFile.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { Glibc.close(fd) }
        let out = try output.map { path throws(AttacheError) in try BatchOutput(path: path, recordedEnd: nil) }
        try queue.finished { (job) throws(AttacheError) in
            let line = Array((job.record + "\n").utf8)
            let written: Result<Void, AttacheError> = line.withUnsafeBytes { bytes in
                Result { () throws(AttacheError) in try AtomicFile.writeAll(fd, bytes, path: temp) }
            }
            try written.get()
            if let out, let payload = job.output { try out.write(payload, name: job.outputName) }
        }
        try out?.sync()
        try AtomicFile.sync(fd, temp)
        try AtomicFile.rename(temp, manifest)
    }
}

extension BatchRunner {
    /// How long a campaign worker keeps trying a catalog statement while the catalog cannot be
    /// reached (a PostgreSQL restart or failover) before it gives up.
    public static let catalogPatience = Duration.seconds(120)

    /// Runs a catalog statement on the catalog's threads, trying again (after 0.25 s, doubling
    /// up to 5 s) while it fails `store_unavailable`, for up to ``catalogPatience``.
    static func catalog<T: Sendable>(
        _ body: @escaping @Sendable () throws(AttacheError) -> T
    ) async throws(AttacheError) -> T {
        let giveUp = ContinuousClock.now + catalogPatience
        var wait = Duration.milliseconds(250)
        while true {
            do {
                return try await onCatalogThread(body)
            } catch {
                guard error.code == .storeUnavailable, ContinuousClock.now + wait < giveUp else { throw error }
                try? await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(5))
            }
        }
    }

    /// Works on a shared campaign until every item in it is recorded (by this worker or
    /// another): claims items while it has free slots, renews its leases while it works,
    /// records each item as it finishes, and, once nothing is left to claim, waits for the
    /// items other workers hold (taking them over if their leases run out).
    public func run(
        queue: CampaignQueue, progress: (Progress) -> Void = { _ in }
    ) async throws(AttacheError) -> Progress {
        // Every statement here is a round trip to the catalog: on its threads, never on the
        // cooperative pool the items' fetches and deadlines run on.
        let start = try await Self.catalog { () throws(AttacheError) in try queue.status() }
        var state = Progress(total: start.total, skipped: start.done, done: 0, failed: 0, started: .now)
        let renewal = Task {
            let interval = Duration.milliseconds(max(200, queue.lease * 1000 / 3))
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                _ = try? await onCatalogThread { () throws(AttacheError) in try queue.renew() }
            }
        }
        defer { renewal.cancel() }
        let pipeline = self.pipeline
        let jobs = self.jobs
        let trace = BatchTrace("campaign.worker")
        let failure: AttacheError? = await withTaskGroup(of: (QueuedJob, BatchItem, PipelineResult?).self) { group in
            var running = 0
            while true {
                do throws(AttacheError) {
                    if running < jobs {
                        let limit = jobs - running
                        for job in try await Self.catalog({ () throws(AttacheError) in try queue.claim(limit: limit) })
                        {
                            running += 1
                            let item = SharedCampaign.item(job)
                            group.addTask {
                                let result = await trace.item(item) {
                                    item.readError != nil ? nil : await pipeline.process(item.payload)
                                }
                                return (job, item, result)
                            }
                        }
                    }
                    if running == 0 {
                        let status = try await Self.catalog { () throws(AttacheError) in try queue.status() }
                        if status.pending == 0 && status.running == 0 { return nil }
                        // Other workers hold the rest: wait until one records an item (a NOTIFY)
                        // or the soonest of their leases runs out, whichever comes first; a lost
                        // notification costs at most a few seconds.
                        let wait = min(status.untilNextLeaseEnds ?? .zero, .seconds(5))
                        _ = try await Self.catalog { () throws(AttacheError) in
                            queue.waitForCompletion(timeout: wait)
                        }
                        continue
                    }
                } catch {
                    group.cancelAll()
                    return error
                }
                guard let (job, item, result) = await group.next() else { return nil }
                running -= 1
                do throws(AttacheError) {
                    let line = BatchRecord.line(
                        item: item, result: result, payloadOut: result?.payload.count, outputEnd: nil)
                    let output = result?.payload
                    // Tried again while the catalog is away: a record that was committed before its
                    // answer was lost is not recorded twice (it is no longer running, so the
                    // second try changes nothing and says so).
                    if try await Self.catalog({ () throws(AttacheError) in
                        try queue.finish(job.seq, record: line.text, failed: line.failed, output: output)
                    }) {
                        state.done += 1
                        if line.failed { state.failed += 1 }
                        progress(state)
                    }
                } catch {
                    group.cancelAll()
                    return error
                }
            }
        }
        return try trace.finish(state, failure: failure, progress: progress)
    }
}
