import AttacheBase
import AttacheStore
import Crypto
import ExtrasBase64
import Synchronization

/// Maintenance: collection under exclusive advisory locks, verification, quotas.
extension SharedBackend {
    func collect(_ options: CollectionOptions, now: Int64) throws(AttacheError) -> CollectionReport {
        let dryRun = options.dryRun
        var report = CollectionReport(dryRun: dryRun)
        let pace = DeletionPace(perSecond: options.maxDeletesPerSecond)
        try collectExpired(now: now, dryRun: dryRun, pace: pace, into: &report)
        // Bytes without a row: uploads cut off before their commit (their writer's lock is gone
        // with its session), or rows removed by hand. Each prefix's listing and rows are read side
        // by side in id order, a page of each at a time, several prefixes at once (each on a
        // connection of its own: the locks are the session's). An object younger than the minimum
        // age (by the object store's clock) is left: its upload may be about to commit.
        guard options.sweepOrphans else { return report }
        report.orphans = try sweepOrphans(options, pace: pace)
        return report
    }

    /// Expired rows a page at a time, in (expires, id) order, each removed with its bytes under
    /// its exclusive lock; leased ones are passed over.
    private func collectExpired(
        now: Int64, dryRun: Bool, pace: DeletionPace, into report: inout CollectionReport
    ) throws(AttacheError) {
        try pool.with { (connection) throws(AttacheError) in
            var after = (expires: Int64.min, id: "")
            while true {
                let page = try connection.query(
                    "SELECT id, ext, bytes, expires, tenant FROM attache_object WHERE expires <= $1 AND (expires, id) > ($2, $3) "
                        + "ORDER BY expires, id LIMIT \(RowCursor.pageSize)",
                    [String(now), String(after.expires), after.id]
                ).rows
                for values in page {
                    guard let id = values[0], let ext = values[1], let attachment = AttachmentID(hex: id) else {
                        continue
                    }
                    let bytes = Int64(values[2] ?? "0") ?? 0
                    after = (Int64(values[3] ?? "0") ?? 0, id)
                    let removed = try Self.withExclusiveLock(id, on: connection) { () throws(AttacheError) -> Bool in
                        if dryRun { return true }
                        let deleted = try connection.transaction { (connection) throws(AttacheError) -> Bool in
                            let gone = try connection.query(
                                "DELETE FROM attache_object WHERE id = $1 AND expires <= $2", [id, String(now)])
                            guard gone.affected == 1 else { return false }
                            try connection.query(
                                "UPDATE attache_totals SET objects = objects - 1, bytes = bytes - $1 WHERE one = 1",
                                [String(bytes)])
                            if let tenant = values[4] {
                                try connection.query(
                                    "UPDATE attache_tenant_totals SET objects = objects - 1, bytes = bytes - $2 WHERE tenant = $1",
                                    [tenant, String(bytes)])
                            }
                            return true
                        }
                        // The row is gone and no one can start an upload of these bytes until the
                        // lock is released: the bytes can go.
                        if deleted {
                            pace.wait()
                            try blobs.delete(key: Self.objectKey(id, ext))
                        }
                        return deleted
                    }
                    switch removed {
                    case nil:
                        report.leased.append(attachment)
                    case true?:
                        forgetRow(id)
                        report.removed.append(attachment)
                        report.removedBytes += bytes
                    case false?:
                        break
                    }
                }
                if page.count < RowCursor.pageSize { break }
            }
        }
    }

    /// Bytes without a row older than the minimum age, removed; how many.
    private func sweepOrphans(_ options: CollectionOptions, pace: DeletionPace) throws(AttacheError) -> Int {
        let dryRun = options.dryRun
        let minimumAge = options.minOrphanAge.components.seconds
        let orphans = Atomic<Int>(0)
        try forEachConcurrently(ObjectLayout.prefixes, workers: verifyConcurrency) {
            [self] (prefix) throws(AttacheError) in
            try pool.with { (connection) throws(AttacheError) in
                var rows = cursor(prefix: prefix, connection: connection)
                try blobs.list(prefix: "objects/\(prefix)/") { (page) throws(AttacheError) -> Bool in
                    for object in page {
                        guard let id = Self.id(ofKey: object.key) else { continue }
                        while let row = try rows.peek(), row.id < id { rows.advance() }
                        if let row = try rows.peek(), row.id == id { continue }
                        guard let age = object.age, age >= minimumAge else { continue }
                        let removed = try Self.withExclusiveLock(id, on: connection) {
                            () throws(AttacheError) -> Bool in
                            let row = try connection.query("SELECT 1 FROM attache_object WHERE id = $1", [id])
                            guard row.rows.isEmpty else { return false }
                            if !dryRun {
                                pace.wait()
                                try blobs.delete(key: object.key)
                            }
                            return true
                        }
                        if removed == true { orphans.add(1, ordering: .relaxed) }
                    }
                    return true
                }
            }
        }
        return orphans.load(ordering: .relaxed)
    }

    /// The rows of one prefix in id order, a page at a time, on `connection` (or the pool).
    func cursor(prefix: String, connection: PostgresConnection? = nil) -> RowCursor {
        RowCursor(prefix: prefix) { [pool] (after, below) throws(AttacheError) in
            let sql =
                "SELECT \(Self.objectColumns) FROM attache_object WHERE id > $1 AND id < $2 ORDER BY id "
                + "LIMIT \(RowCursor.pageSize)"
            let rows: PostgresRows
            if let connection {
                rows = try connection.query(sql, [after, below])
            } else {
                rows = try pool.query(sql, [after, below])
            }
            var out: [ObjectRow] = []
            for values in rows.rows { out.append(try Self.row(values)) }
            return out
        }
    }

    /// Runs `body` holding the object's exclusive advisory lock, if it can be had without
    /// waiting (nil when a writer or a reader holds it).
    private static func withExclusiveLock<T>(
        _ id: String, on connection: PostgresConnection, _ body: () throws(AttacheError) -> T
    ) throws(AttacheError) -> T? {
        let key = lockKey(id)
        guard try connection.query("SELECT pg_try_advisory_lock(\(key))").first?[0] == "t" else { return nil }
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(key))") }
        return try body()
    }

    /// The id an object key spells (`objects/ab/cdef….ext`), or nil.
    static func id(ofKey key: String) -> String? {
        let parts = key.split(separator: "/")
        guard parts.count == 3, parts[0] == "objects", parts[1].count == 2 else { return nil }
        let stem = parts[2].split(separator: ".", maxSplits: 1).first ?? ""
        let id = parts[1] + stem
        return AttachmentID(hex: String(id)) != nil ? String(id) : nil
    }

    func verify(
        prefix: String, options: VerifyOptions, problem: (VerifyProblem) -> Void
    ) throws(AttacheError) -> VerifyCounts {
        var counts = VerifyCounts()
        var rows = cursor(prefix: prefix)
        try blobs.list(prefix: "objects/\(prefix)/") { (page) throws(AttacheError) -> Bool in
            for object in page {
                let name = url(ofKey: object.key)
                guard let id = Self.id(ofKey: object.key) else {
                    counts.orphans += 1
                    problem(VerifyProblem(kind: .orphan, id: nil, location: name))
                    continue
                }
                guard let row = try rows.match(id, counts: &counts, problem: problem) else {
                    counts.orphans += 1
                    problem(VerifyProblem(kind: .orphan, id: id, location: name))
                    continue
                }
                let hash = options.sampled(id)
                var whole = object.key == Self.objectKey(id, row.ext) && object.size == row.bytes
                if whole, hash { whole = try hashMatches(key: object.key, id: id) }
                if whole {
                    counts.objects += 1
                    if hash { counts.hashed += 1 }
                } else {
                    counts.corrupt += 1
                    problem(VerifyProblem(kind: .corrupt, id: id, location: name))
                }
            }
            return true
        }
        _ = try rows.match(nil, counts: &counts, problem: problem)
        return counts
    }

    func verifyProgress() throws(AttacheError) -> [String: VerifyCounts] {
        var done: [String: VerifyCounts] = [:]
        for values in try pool.query("SELECT prefix, objects, hashed, corrupt, orphans, missing FROM attache_verify")
            .rows
        {
            guard let prefix = values[0] else { continue }
            let numbers = values.dropFirst().map { Int($0 ?? "0") ?? 0 }
            var counts = VerifyCounts()
            (counts.objects, counts.hashed, counts.corrupt, counts.orphans, counts.missing) =
                (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
            done[prefix] = counts
        }
        return done
    }

    func recordVerifyProgress(prefix: String, counts: VerifyCounts) throws(AttacheError) {
        try pool.query(
            "INSERT INTO attache_verify VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (prefix) DO UPDATE SET "
                + "objects = $2, hashed = $3, corrupt = $4, orphans = $5, missing = $6",
            [prefix] + [counts.objects, counts.hashed, counts.corrupt, counts.orphans, counts.missing].map(String.init))
    }

    func resetVerifyProgress() throws(AttacheError) {
        try pool.query("DELETE FROM attache_verify")
    }

    /// Prefixes listed at once: a listing is a round trip to the object store per page (tens of
    /// milliseconds on radosgw even for an empty prefix), so waiting is spread over 16.
    var verifyConcurrency: Int { 16 }

    func temporaryFiles() -> Int { 0 }

    func hashMatches(key: String, id: String) throws(AttacheError) -> Bool {
        var hash = SHA256()
        try blobs.get(key: key) { chunk in
            hash.update(bufferPointer: chunk)
            return true
        }
        return AttachmentID(bytes: Array(hash.finalize()))?.hex == id
    }
}
