public import AttacheBase
public import AttacheStore
import Foundation
import Synchronization

/// One item of a campaign in the shared job table.
public struct QueuedJob: Sendable, Hashable {
    /// Position in the input, from 0 (the job's key in its campaign).
    public var seq: Int
    /// How the manifest names it.
    public var reference: String
    /// For URL lists, the URL.
    public var url: String?
    /// The file name its mutated payload gets in an output directory.
    public var outputName: String
    /// The payload bytes.
    public var payload: [UInt8]
    /// Why the item could not be read (`code`, then a tab, then the message), if it could not.
    public var readError: String?

    /// Creates a job.
    public init(seq: Int, reference: String, url: String?, outputName: String, payload: [UInt8], readError: String?) {
        self.seq = seq
        self.reference = reference
        self.url = url
        self.outputName = outputName
        self.payload = payload
        self.readError = readError
    }
}

/// Where a campaign stands, read from the job table.
public struct CampaignStatus: Sendable, Hashable {
    /// Items enqueued.
    public var total: Int
    /// Items recorded done, and how many of those failed.
    public var done: Int
    public var failed: Int
    /// Items claimed under a live lease.
    public var running: Int
    /// Items waiting (never claimed, or whose lease ran out).
    public var pending: Int
    /// Claims made in all (more than `done` when a worker died with items in hand).
    public var attempts: Int
    /// Completions recorded in all: `done` when every item was recorded once.
    public var completions: Int

    /// When the soonest live lease runs out (store clock, seconds), if any item is running,
    /// and the store clock's reading these counts are from.
    public var nextLeaseEnd: Int64?
    public var asOf: Int64 = 0

    /// How long until a running item may be taken over, if none is recorded first.
    public var untilNextLeaseEnds: Duration? {
        nextLeaseEnd.map { .seconds(max(0, $0 + 1 - asOf)) }
    }

    /// Every item is recorded.
    public var complete: Bool { total > 0 && done == total }
}

/// A finished job as recorded: its manifest line and mutated payload.
public struct FinishedJob: Sendable {
    public var seq: Int
    public var outputName: String
    public var record: String
    public var output: [UInt8]?
}

/// A campaign's items in PostgreSQL, shared by batch workers on any machine.
///
/// Workers claim items with `FOR UPDATE SKIP LOCKED` (no two claim the same item, none waits
/// for another) under a lease they renew while they work. A worker that dies stops renewing;
/// once its leases run out its items are claimed again. An item is recorded done once: the
/// completion applies only while the finisher still holds the item's lease, so a worker that
/// lost its lease (it was presumed dead) cannot record the item a second time.
public final class CampaignQueue: Sendable {
    /// The campaign's name.
    public let campaign: String
    /// This worker's name in the table (host, process, random).
    public let owner: String
    /// How long a claim lasts without renewal (seconds).
    public let lease: Int64
    private let backend: SharedBackend
    private let clock: @Sendable () -> Int64
    /// Opened by the first wait: a connection that hears every worker's completions.
    private let listener = Mutex<PostgresListener?>(nil)
    /// The channel completions are announced on (the payload names the campaign).
    static let channel = "attache_job"

    /// The queue of `campaign` in `store`'s catalog (which must be shared).
    public init(store: AttachmentStore, campaign: String, lease: Int64 = 30) throws(AttacheError) {
        guard let backend = store.backend as? SharedBackend else {
            throw AttacheError(
                .invalidInput,
                "--campaign shares a batch between workers through a shared store: give --store postgres://… --blobs s3://…"
            )
        }
        guard !campaign.isEmpty, campaign.utf8.count <= 200, !campaign.contains("\u{0}") else {
            throw AttacheError(.invalidInput, "a campaign name is 1 to 200 bytes without NUL")
        }
        self.backend = backend
        self.campaign = campaign
        self.lease = max(1, lease)
        clock = store.configuration.clock
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        owner =
            "\(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)):\(getpid()):\(String(UInt32.random(in: 0 ... .max), radix: 36))"
    }

    private var now: Int64 { clock() }

    /// Adds the items (idempotent: items already there, by position, are left as they are).
    /// Every worker may enqueue the same input; the first one's items stand.
    public func enqueue(_ jobs: [QueuedJob], total: Int) throws(AttacheError) {
        try backend.pool.query(
            "INSERT INTO attache_campaign (name, created, items) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
            [campaign, String(now), String(total)])
        var index = 0
        while index < jobs.count {
            let slice = jobs[index..<min(jobs.count, index + 200)]
            var values: [String] = []
            var parameters: [String?] = [campaign]
            for job in slice {
                let base = parameters.count
                values.append(
                    "($1, $\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4), $\(base + 5)::bytea, $\(base + 6))")
                parameters += [
                    String(job.seq), job.reference, job.url, job.outputName, Self.hex(job.payload), job.readError,
                ]
            }
            try backend.pool.query(
                """
                INSERT INTO attache_job (campaign, seq, reference, url, output_name, payload, read_error)
                VALUES \(values.joined(separator: ", ")) ON CONFLICT (campaign, seq) DO NOTHING
                """, parameters)
            index += slice.count
        }
    }

    /// Claims up to `limit` items: waiting ones, and ones whose lease ran out.
    public func claim(limit: Int) throws(AttacheError) -> [QueuedJob] {
        guard limit > 0 else { return [] }
        let now = self.now
        let rows = try backend.pool.query(
            """
            UPDATE attache_job SET state = 'running', owner = $2, lease_until = $3, attempts = attempts + 1
            WHERE (campaign, seq) IN (
                SELECT campaign, seq FROM attache_job
                WHERE campaign = $1 AND (state = 'pending' OR (state = 'running' AND lease_until < $4))
                ORDER BY seq LIMIT $5 FOR UPDATE SKIP LOCKED)
            RETURNING seq, reference, url, output_name, payload, read_error
            """, [campaign, owner, String(now + lease), String(now), String(limit)])
        return rows.rows.compactMap { values in
            guard let seq = values[0].flatMap({ Int($0) }), let reference = values[1], let name = values[3],
                let payload = values[4].flatMap(Self.bytes)
            else { return nil }
            return QueuedJob(
                seq: seq, reference: reference, url: values[2], outputName: name, payload: payload,
                readError: values[5])
        }.sorted { $0.seq < $1.seq }
    }

    /// Extends the lease of every item this worker holds.
    public func renew() throws(AttacheError) {
        try backend.pool.query(
            "UPDATE attache_job SET lease_until = $3 WHERE campaign = $1 AND owner = $2 AND state = 'running'",
            [campaign, owner, String(now + lease)])
    }

    /// Records an item done with its manifest line and mutated payload; false when this worker
    /// no longer holds it (its lease ran out and another claimed it): nothing is recorded then.
    /// Workers waiting for others' items are told (`NOTIFY`, sent when the record commits).
    public func finish(_ seq: Int, record: String, failed: Bool, output: [UInt8]?) throws(AttacheError) -> Bool {
        try backend.pool.query(
            """
            WITH finished AS (
                UPDATE attache_job SET state = 'done', record = $4, failed = $5, output = $6::bytea, finished = $7,
                    completions = completions + 1, lease_until = NULL
                WHERE campaign = $1 AND seq = $2 AND owner = $3 AND state = 'running' RETURNING seq)
            SELECT pg_notify('\(Self.channel)', $1) FROM finished
            """,
            [
                campaign, String(seq), owner, record, failed ? "true" : "false", output.map(Self.hex),
                String(now),
            ]
        ).rows.count == 1
    }

    /// Waits until another worker records an item of this campaign, or `timeout` passes (true
    /// when one was recorded). What changed is read from the table afterwards: a wake-up only
    /// says when to look, so a missed one costs at most `timeout`.
    public func waitForCompletion(timeout: Duration) -> Bool {
        let listener = self.listener.withLock { listener -> PostgresListener? in
            if listener == nil { listener = try? PostgresListener(url: backend.postgresURL, channel: Self.channel) }
            return listener
        }
        guard let listener else {
            PostgresListener.sleep(for: timeout)
            return false
        }
        return listener.wait(for: campaign, timeout: timeout)
    }

    /// Counts by state.
    public func status() throws(AttacheError) -> CampaignStatus {
        let now = self.now
        let rows = try backend.pool.query(
            """
            SELECT count(*), count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'done' AND failed),
                count(*) FILTER (WHERE state = 'running' AND lease_until >= $2),
                count(*) FILTER (WHERE state = 'pending' OR (state = 'running' AND lease_until < $2)),
                COALESCE(sum(attempts), 0), COALESCE(sum(completions), 0),
                min(lease_until) FILTER (WHERE state = 'running' AND lease_until >= $2)
            FROM attache_job WHERE campaign = $1
            """, [campaign, String(now)])
        let values = rows.first ?? []
        func number(_ index: Int) -> Int { values.count > index ? Int(values[index] ?? "0") ?? 0 : 0 }
        return CampaignStatus(
            total: number(0), done: number(1), failed: number(2), running: number(3), pending: number(4),
            attempts: number(5), completions: number(6),
            nextLeaseEnd: values.count > 7 ? values[7].flatMap { Int64($0) } : nil, asOf: now)
    }

    /// Every recorded item, in input order, `batch` at a time (bounded memory).
    public func finished(batch: Int = 500, _ body: (FinishedJob) throws(AttacheError) -> Void) throws(AttacheError) {
        var after = -1
        while true {
            let rows = try backend.pool.query(
                """
                SELECT seq, output_name, record, output FROM attache_job
                WHERE campaign = $1 AND state = 'done' AND seq > $2 ORDER BY seq LIMIT $3
                """, [campaign, String(after), String(batch)])
            if rows.rows.isEmpty { return }
            for values in rows.rows {
                guard let seq = values[0].flatMap({ Int($0) }), let name = values[1], let record = values[2] else {
                    continue
                }
                try body(FinishedJob(seq: seq, outputName: name, record: record, output: values[3].flatMap(Self.bytes)))
                after = seq
            }
        }
    }

    // MARK: bytea

    static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8](repeating: 0, count: 2 + 2 * bytes.count)
        out[0] = UInt8(ascii: "\\")
        out[1] = UInt8(ascii: "x")
        for (index, byte) in bytes.enumerated() {
            out[2 + 2 * index] = digits[Int(byte >> 4)]
            out[3 + 2 * index] = digits[Int(byte & 15)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else {
            return nil
        }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
