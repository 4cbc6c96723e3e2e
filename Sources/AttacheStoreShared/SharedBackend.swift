public import AttacheBase
public import AttacheStore
import Crypto
import ExtrasBase64
import Synchronization

/// The shared backend: the catalog in PostgreSQL, the object bytes in an S3 bucket, for
/// several processes on several machines at once.
///
/// The guarantees of the directory store, by other means:
/// - **Atomic**: bytes are uploaded first (an S3 PUT is all or nothing), the catalog row is
///   committed after; readers find objects only through committed rows.
/// - **One object per content**: the key is the SHA-256; concurrent puts of the same bytes
///   upload the same key and meet in one row (`INSERT … ON CONFLICT`).
/// - **Collection never takes an object in use**: every writer holds a shared PostgreSQL
///   advisory lock on the object's id from before its upload until after its commit, and every
///   open download holds one too; collection deletes only under an exclusive one it could take
///   without waiting. A process that dies loses its session and with it its locks, so an
///   upload cut off by a crash becomes an orphan the next collection removes.
/// - **Quotas** are a counter row updated in the transaction that adds or removes an object.
final class SharedBackend: StoreBackend {
    let configuration: StoreConfiguration
    let shared: SharedStoreConfiguration
    let pool: PostgresPool
    /// The catalog's connection string (for connections of their own, as a listener's).
    let postgresURL: String
    let blobs: S3Client
    private let leases: [LeaseSlot]
    private let nextLease = Atomic<Int>(0)
    private let keys: Mutex<SharedKeyRing>
    /// Local copies of the objects this process stores and serves.
    let cache: BlobCache?
    /// Rows read for downloads in the last second (with a copy at hand, a download within that
    /// second needs no query): a revocation or collection elsewhere is seen within a second,
    /// as a key retirement is.
    private let recent = Mutex<[String: (row: ObjectRow, read: ContinuousClock.Instant)]>([:])
    static let rowMemory = Duration.seconds(1)
    /// Told the id of each object uploaded, before its row is committed (tests cut the
    /// catalog session there).
    static let uploaded = Mutex<(@Sendable (String) -> Void)?>(nil)

    init(_ configuration: StoreConfiguration, shared: SharedStoreConfiguration) throws(AttacheError) {
        self.configuration = configuration
        self.shared = shared
        pool = PostgresPool(url: shared.postgres, size: shared.connections, timeout: shared.catalogTimeout)
        postgresURL = shared.postgres
        blobs = S3Client(shared.blobs)
        try pool.with { connection throws(AttacheError) in try Self.migrate(connection) }
        do {
            try blobs.checkBucket()
        } catch  where error.code == .storeUnavailable && error.message.hasPrefix("object store: no bucket") {
            try blobs.createBucket()
        }
        cache = try shared.cacheDirectory.map { (directory) throws(AttacheError) in
            try BlobCache(
                directory: directory, maxBytes: shared.cacheBytes, maxObjectBytes: shared.cacheObjectBytes)
        }
        var slots: [LeaseSlot] = []
        for _ in 0..<max(1, shared.leaseConnections) {
            slots.append(
                LeaseSlot(
                    try PostgresConnection(url: shared.postgres, timeout: shared.catalogTimeout), breaker: pool.breaker)
            )
        }
        leases = slots
        let sealer = KeyRingSealer(key: shared.keyRingKey)
        let (ring, version) = try pool.with { connection throws(AttacheError) in
            try Self.loadOrCreateKeyRing(connection, sealer: sealer)
        }
        keys = Mutex(SharedKeyRing(ring: ring, version: version, sealer: sealer))
    }

    // MARK: Schema

    /// The lock every process takes while creating the schema.
    private static let schemaLock = "4702111234474983745"

    static let objectColumns =
        "id, kind, ext, bytes, width, height, frames, created, expires, revoked_before, poster_time"

    private static func migrate(_ connection: PostgresConnection) throws(AttacheError) {
        try connection.query("SELECT pg_advisory_lock(\(schemaLock))")
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(schemaLock))") }
        let statements = [
            """
            CREATE TABLE IF NOT EXISTS attache_object (
                id text PRIMARY KEY, kind text NOT NULL, ext text NOT NULL, bytes bigint NOT NULL,
                width integer, height integer, frames integer, created bigint NOT NULL,
                expires bigint NOT NULL, revoked_before bigint NOT NULL DEFAULT 0,
                poster_time double precision)
            """,
            "CREATE INDEX IF NOT EXISTS attache_object_expires ON attache_object (expires)",
            """
            CREATE TABLE IF NOT EXISTS attache_source (
                url text NOT NULL, spec text NOT NULL,
                object_id text NOT NULL REFERENCES attache_object (id) ON DELETE CASCADE,
                etag text, last_modified text, fetched bigint NOT NULL, PRIMARY KEY (url, spec))
            """,
            "CREATE INDEX IF NOT EXISTS attache_source_object ON attache_source (object_id)",
            """
            CREATE TABLE IF NOT EXISTS attache_totals (
                one integer PRIMARY KEY CHECK (one = 1), objects bigint NOT NULL, bytes bigint NOT NULL)
            """,
            "INSERT INTO attache_totals VALUES (1, 0, 0) ON CONFLICT DO NOTHING",
            """
            CREATE TABLE IF NOT EXISTS attache_verify (
                prefix text PRIMARY KEY, objects bigint NOT NULL, hashed bigint NOT NULL, corrupt bigint NOT NULL,
                orphans bigint NOT NULL, missing bigint NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS attache_keyring (
                one integer PRIMARY KEY CHECK (one = 1), version bigint NOT NULL, sealed text NOT NULL)
            """,
        ]
        for statement in statements + BatchJobSchema.statements {
            try connection.query(statement)
        }
    }

    // MARK: Rows

    static func row(_ values: [String?]) throws(AttacheError) -> ObjectRow {
        guard values.count >= 11, let id = values[0], let kind = values[1], let ext = values[2],
            let bytes = values[3].flatMap({ Int64($0) }), let created = values[7].flatMap({ Int64($0) }),
            let expires = values[8].flatMap({ Int64($0) }), let revoked = values[9].flatMap({ Int64($0) })
        else { throw AttacheError(.storeCorrupt, "catalog: an object row is incomplete") }
        return ObjectRow(
            id: id, kind: kind, ext: ext, bytes: bytes, width: values[4].flatMap { Int($0) },
            height: values[5].flatMap { Int($0) }, frames: values[6].flatMap { Int($0) }, created: created,
            expires: expires, revokedBefore: revoked, posterTime: values[10].flatMap { Double($0) })
    }

    private static func parameters(_ row: ObjectRow) -> [String?] {
        [
            row.id, row.kind, row.ext, String(row.bytes), row.width.map(String.init), row.height.map(String.init),
            row.frames.map(String.init), String(row.created), String(row.expires), String(row.revokedBefore),
            row.posterTime.map { String($0) },
        ]
    }

    /// The advisory lock key of an object: its id's first 64 bits.
    static func lockKey(_ id: String) -> String {
        String(Int64(bitPattern: UInt64(id.prefix(16), radix: 16) ?? 0))
    }

    static func objectKey(_ id: String, _ ext: String) -> String {
        ObjectLayout.relativePath(id: id, fileExtension: ext)
    }

    func location(id: String, fileExtension: String) -> String {
        url(ofKey: Self.objectKey(id, fileExtension))
    }

    /// `s3://bucket/prefix/key`.
    func url(ofKey key: String) -> String {
        "s3://\(shared.blobs.bucket)/\(shared.blobs.prefix)\(key)"
    }

    // MARK: Reading

    func object(_ id: String) throws(AttacheError) -> ObjectRow? {
        let rows = try pool.query("SELECT \(Self.objectColumns) FROM attache_object WHERE id = $1", [id])
        return try rows.first.map { (values) throws(AttacheError) in try Self.row(values) }
    }

    func source(url: String, spec: String) throws(AttacheError) -> (SourceRow, ObjectRow)? {
        let columns = Self.objectColumns.split(separator: ",").map { "o." + $0.trimmingPrefix(" ") }.joined(
            separator: ", ")
        let rows = try pool.query(
            """
            SELECT \(columns), s.etag, s.last_modified, s.fetched FROM attache_source s
            JOIN attache_object o ON o.id = s.object_id WHERE s.url = $1 AND s.spec = $2
            """, [url, spec])
        guard let values = rows.first else { return nil }
        let object = try Self.row(values)
        let source = SourceRow(
            url: url, spec: spec, objectID: object.id, etag: values[11], lastModified: values[12],
            fetched: values[13].flatMap { Int64($0) } ?? 0)
        return (source, object)
    }

    func sourceCount() throws(AttacheError) -> Int {
        Int(try pool.query("SELECT count(*) FROM attache_source").first?[0] ?? "0") ?? 0
    }

    func totals(at now: Int64) throws(AttacheError) -> (objects: Int, bytes: Int64, expired: Int) {
        let rows = try pool.query(
            """
            SELECT t.objects, t.bytes, (SELECT count(*) FROM attache_object WHERE expires <= $1)
            FROM attache_totals t WHERE one = 1
            """, [String(now)])
        guard let values = rows.first else { throw AttacheError(.storeCorrupt, "catalog: no totals row") }
        return (
            Int(values[0] ?? "0") ?? 0, Int64(values[1] ?? "0") ?? 0, Int(values[2] ?? "0") ?? 0
        )
    }

    func revoke(_ id: String, before time: Int64) throws(AttacheError) -> Bool {
        forgetRow(id)
        return try pool.query(
            "UPDATE attache_object SET revoked_before = GREATEST(revoked_before, $2) WHERE id = $1",
            [id, String(time)]
        ).affected == 1
    }

    func open(_ id: String) throws(AttacheError) -> (ObjectRow, any ObjectHandle)? {
        guard id.utf8.count == 64, id.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
            return nil
        }
        guard let cache else {
            do {
                guard let (row, handle) = try openInBucket(id) else { return nil }
                remember(row)
                return (row, handle)
            } catch {
                return try openDuringOutage(id, error)
            }
        }
        // The catalog decides (one query, unless the row was read within the last second); a
        // local copy, if there is one, spares the GET.
        var found = recentRow(id)
        if found == nil {
            do {
                // Remembered from this read on (a hit does not make a row younger).
                found = try object(id)
                if let row = found { remember(row) }
            } catch {
                return try openDuringOutage(id, error)
            }
        }
        guard let row = found else {
            cache.forget(id)
            return nil
        }
        if let copy = cache.open(row) { return (row, copy) }
        guard let (held, remote) = try openInBucket(id) else { return nil }
        guard held.bytes <= cache.maxObjectBytes else { return (held, remote) }
        // Copied under the lease, so collection cannot take the bytes mid-copy.
        let copied = Result { () throws(AttacheError) in
            try cache.fetch(held, key: Self.objectKey(id, held.ext), from: blobs)
        }
        if case .success = copied, let copy = cache.open(held) {
            remote.close()
            return (held, copy)
        }
        return (held, remote)
    }

    /// The catalog is away (`error`): a row read within the grace is still served to valid
    /// tokens (a revocation meanwhile is honoured when the catalog is back), from a copy here
    /// or else from the bucket without a lease. A lease keeps collection from removing bytes
    /// mid-download; collection removes only expired objects and needs the catalog, and an
    /// expired row is refused by the store before a byte is read.
    private func openDuringOutage(
        _ id: String, _ error: AttacheError
    ) throws(AttacheError) -> (
        ObjectRow, any ObjectHandle
    ) {
        guard error.code == .storeUnavailable, let row = recentRow(id, within: shared.catalogOutageGrace) else {
            throw error
        }
        if let copy = cache?.open(row) { return (row, copy) }
        return (row, RemoteObject(blobs: blobs, key: Self.objectKey(row.id, row.ext), lease: nil))
    }

    func openImmediately(_ id: String) throws(AttacheError) -> ImmediateOpen {
        guard let cache, let row = recentRow(id), let copy = cache.open(row) else { return .wouldWait }
        return .opened(row, copy)
    }

    private func recentRow(_ id: String, within memory: Duration = rowMemory) -> ObjectRow? {
        let now = ContinuousClock.now
        return recent.withLock { rows in
            guard let entry = rows[id], now - entry.read < memory else { return nil }
            return entry.row
        }
    }

    private func remember(_ row: ObjectRow) {
        let now = ContinuousClock.now
        recent.withLock { rows in
            if rows.count >= 50_000 { rows.removeAll(keepingCapacity: true) }
            rows[row.id] = (row, now)
        }
    }

    private func forgetRow(_ id: String) {
        _ = recent.withLock { $0.removeValue(forKey: id) }
    }

    var keyRingNow: KeyRing { keys.withLock { $0.ring } }

    func answeringSince(_ id: String) -> ContinuousClock.Instant {
        let ring = keys.withLock { $0.lastLook }
        let row = recent.withLock { $0[id]?.read } ?? .now
        return min(ring, row)
    }

    /// Opens the object in the bucket, held by a shared advisory lock.
    private func openInBucket(_ id: String) throws(AttacheError) -> (ObjectRow, any ObjectHandle)? {
        let key = Self.lockKey(id)
        let slot = leases[nextLease.add(1, ordering: .relaxed).newValue % leases.count]
        // The lock first, then the row, in one round trip: the row is read after the lock is
        // held, so collection cannot remove it between the two.
        let (results, session) = try slot.batch(
            "SELECT pg_try_advisory_lock_shared(\(key)); SELECT \(Self.objectColumns) FROM attache_object WHERE id = '\(id)'"
        )
        guard results.count == 2, results[0].first?[0] == "t" else {
            // Collection holds it: it is being removed.
            return nil
        }
        guard let values = results[1].first else {
            slot.unlock(key, session: session)
            return nil
        }
        let row = try Self.row(values)
        return (
            row,
            RemoteObject(
                blobs: blobs, key: Self.objectKey(row.id, row.ext),
                lease: RemoteObject.Lease(slot: slot, lockKey: key, session: session))
        )
    }

    func checkWritable() throws(AttacheError) {
        for name in dependencies { try check(dependency: name) }
    }

    var dependencies: [String] { ["catalog", "bucket"] }

    func check(dependency name: String) throws(AttacheError) {
        if name == "catalog" { try pool.query("SELECT 1") } else { try blobs.checkBucket() }
    }

    // MARK: Writing

    func publish(_ bytes: UnsafeRawBufferPointer, row: ObjectRow, source: SourceRow?) throws(AttacheError) -> ObjectRow
    {
        if let stored = try pool.with({ (connection) throws(AttacheError) in try extend(row, source, on: connection) })
        {
            cache?.keep(bytes, row: stored)
            return stored
        }
        // Before uploading: collect when the quota would be passed, refuse when it still would.
        let quota = Quota(configuration)
        if quota.passed(try totals(at: row.created), adding: row.bytes) != nil {
            // Expired objects only: the orphan sweep lists the whole bucket, not a publish's work.
            _ = try collect(CollectionOptions(sweepOrphans: false), now: row.created)
            if let limit = quota.passed(try totals(at: row.created), adding: row.bytes) {
                throw quota.full(bytes: row.bytes, limit: limit)
            }
        }
        let key = Self.lockKey(row.id)
        let objectKey = Self.objectKey(row.id, row.ext)
        let stored = try pool.with { (connection) throws(AttacheError) -> ObjectRow in
            // Held from before the upload until after the commit: collection leaves the bytes alone.
            try connection.query("SELECT pg_advisory_lock_shared(\(key))")
            let session = connection.session
            defer {
                if connection.session == session {
                    _ = try? connection.query("SELECT pg_advisory_unlock_shared(\(key))")
                }
            }
            if let stored = try extend(row, source, on: connection) { return stored }
            try blobs.put(key: objectKey, bytes: bytes)
            Self.uploaded.withLock { $0 }?(row.id)
            return try connection.transaction { (connection) throws(AttacheError) -> ObjectRow in
                // A session that ended took the lock with it: collection may have removed the
                // bytes as an orphan since, so no row may point at them.
                guard connection.session == session else {
                    throw AttacheError(
                        .storeUnavailable, "catalog: the session holding the upload's lock ended; nothing was recorded")
                }
                let inserted = try connection.query(
                    """
                    INSERT INTO attache_object (\(Self.objectColumns))
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    ON CONFLICT (id) DO UPDATE SET expires = GREATEST(attache_object.expires, EXCLUDED.expires)
                    RETURNING (xmax = 0), \(Self.objectColumns)
                    """, Self.parameters(row))
                guard let values = inserted.first else { throw AttacheError(.storeCorrupt, "catalog: insert lost") }
                if values[0] == "t" {
                    let counted = try connection.query(
                        """
                        UPDATE attache_totals SET objects = objects + 1, bytes = bytes + $1
                        WHERE one = 1 AND objects + 1 <= $2 AND bytes + $1 <= $3
                        """, [String(row.bytes), String(configuration.maxObjects), String(configuration.maxBytes)])
                    if counted.affected == 0 {
                        // Another writer took the room since the check; the upload stays an
                        // orphan for collection (another writer may be committing the same key).
                        throw quota.full(bytes: row.bytes, limit: .maxStoreBytes)
                    }
                }
                if let source { try Self.upsert(source, on: connection) }
                return try Self.row(Array(values.dropFirst()))
            }
        }
        cache?.keep(bytes, row: stored)
        return stored
    }

    /// Extends the expiry of the object when it is recorded, and records `source`; nil when
    /// there is no such object (then it must be uploaded).
    private func extend(
        _ row: ObjectRow, _ source: SourceRow?, on connection: PostgresConnection
    ) throws(AttacheError)
        -> ObjectRow?
    {
        try connection.transaction { (connection) throws(AttacheError) -> ObjectRow? in
            let updated = try connection.query(
                """
                UPDATE attache_object SET expires = GREATEST(expires, $2) WHERE id = $1
                RETURNING \(Self.objectColumns)
                """, [row.id, String(row.expires)])
            guard let values = updated.first else { return nil }
            if let source { try Self.upsert(source, on: connection) }
            return try Self.row(values)
        }
    }

    private static func upsert(_ source: SourceRow, on connection: PostgresConnection) throws(AttacheError) {
        try connection.query(
            """
            INSERT INTO attache_source (url, spec, object_id, etag, last_modified, fetched)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (url, spec) DO UPDATE SET object_id = EXCLUDED.object_id, etag = EXCLUDED.etag,
                last_modified = EXCLUDED.last_modified, fetched = EXCLUDED.fetched
            """,
            [
                source.url, source.spec, source.objectID, source.etag, source.lastModified, String(source.fetched),
            ])
    }

    // MARK: Maintenance

    func collect(_ options: CollectionOptions, now: Int64) throws(AttacheError) -> CollectionReport {
        let dryRun = options.dryRun
        var report = CollectionReport(dryRun: dryRun)
        let pace = DeletionPace(perSecond: options.maxDeletesPerSecond)
        try pool.with { (connection) throws(AttacheError) in
            // Expired rows a page at a time, in (expires, id) order; leased ones are passed over.
            var after = (expires: Int64.min, id: "")
            while true {
                let page = try connection.query(
                    "SELECT id, ext, bytes, expires FROM attache_object WHERE expires <= $1 AND (expires, id) > ($2, $3) "
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
        // Bytes without a row: uploads cut off before their commit (their writer's lock is gone
        // with its session), or rows removed by hand. Each prefix's listing and rows are read side
        // by side in id order, a page of each at a time, several prefixes at once (each on a
        // connection of its own: the locks are the session's). An object younger than the minimum
        // age (by the object store's clock) is left: its upload may be about to commit.
        guard options.sweepOrphans else { return report }
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
        report.orphans = orphans.load(ordering: .relaxed)
        return report
    }

    /// The rows of one prefix in id order, a page at a time, on `connection` (or the pool).
    private func cursor(prefix: String, connection: PostgresConnection? = nil) -> RowCursor {
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

    private func hashMatches(key: String, id: String) throws(AttacheError) -> Bool {
        var hash = SHA256()
        try blobs.get(key: key) { chunk in
            hash.update(bufferPointer: chunk)
            return true
        }
        return AttachmentID(bytes: Array(hash.finalize()))?.hex == id
    }

    // MARK: Keys

    func keyRing(within interval: Duration) -> KeyRing {
        let (ring, due) = keys.withLock { state in (state.ring, state.due(interval)) }
        guard due else { return ring }
        // Another process may have rotated: compare versions (one small query), read on change.
        guard let found = try? pool.query("SELECT version FROM attache_keyring WHERE one = 1").first,
            let text = found[0], let number = Int64(text)
        else { return ring }
        if number == keys.withLock({ $0.version }) { return ring }
        guard
            let (loaded, seen) = try? pool.with({ (connection) throws(AttacheError) in
                try Self.loadOrCreateKeyRing(connection, sealer: keys.withLock { $0.sealer })
            })
        else { return ring }
        return keys.withLock { state in
            if seen > state.version { (state.ring, state.version) = (loaded, seen) }
            return state.ring
        }
    }

    func updateKeys(_ change: (KeyRing) throws(AttacheError) -> KeyRing) throws(AttacheError) -> KeyRing {
        let sealer = keys.withLock { $0.sealer }
        let (updated, version) = try pool.transaction { (connection) throws(AttacheError) -> (KeyRing, Int64) in
            let rows = try connection.query("SELECT version, sealed FROM attache_keyring WHERE one = 1 FOR UPDATE")
            guard let values = rows.first, let version = Int64(values[0] ?? ""), let sealed = values[1] else {
                throw AttacheError(.storeCorrupt, "catalog: the key ring row is missing")
            }
            let updated = try change(try sealer.open(sealed))
            try connection.query(
                "UPDATE attache_keyring SET version = $1, sealed = $2 WHERE one = 1",
                [String(version + 1), try sealer.seal(updated)])
            return (updated, version + 1)
        }
        keys.withLock { state in
            if version > state.version { (state.ring, state.version) = (updated, version) }
        }
        return updated
    }

    private static func loadOrCreateKeyRing(
        _ connection: PostgresConnection, sealer: KeyRingSealer
    ) throws(AttacheError) -> (KeyRing, Int64) {
        let select = "SELECT version, sealed FROM attache_keyring WHERE one = 1"
        if try connection.query(select).rows.isEmpty {
            try connection.query(
                "INSERT INTO attache_keyring VALUES (1, 1, $1) ON CONFLICT DO NOTHING", [try sealer.seal(.generate())])
        }
        guard let values = try connection.query(select).first, let version = Int64(values[0] ?? ""),
            let sealed = values[1]
        else { throw AttacheError(.storeCorrupt, "catalog: the key ring row is missing") }
        return (try sealer.open(sealed), version)
    }
}

/// The key ring as this process last read it from the catalog.
struct SharedKeyRing {
    var ring: KeyRing
    var version: Int64
    let sealer: KeyRingSealer
    private var checked = ContinuousClock.now
    /// When the catalog's version was last compared: the ring is as of then.
    var lastLook: ContinuousClock.Instant { checked }

    init(ring: KeyRing, version: Int64, sealer: KeyRingSealer) {
        self.ring = ring
        self.version = version
        self.sealer = sealer
    }

    /// Whether the last look is older than `interval` (and, if so, counts this one as a look).
    mutating func due(_ interval: Duration) -> Bool {
        let now = ContinuousClock.now
        guard now - checked >= interval else { return false }
        checked = now
        return true
    }
}

/// Encrypts the key ring for the catalog: AES-256-GCM under the key from the environment,
/// bound to what it is; base64 of nonce, ciphertext and tag.
struct KeyRingSealer: Sendable {
    private let key: SymmetricKey
    private static let context = Array("attache key ring v1".utf8)

    init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    func seal(_ ring: KeyRing) throws(AttacheError) -> String {
        guard let box = try? AES.GCM.seal(try ring.encoded(), using: key, authenticating: Self.context),
            let combined = box.combined
        else { throw AttacheError(.internalError, "cannot encrypt the key ring") }
        return Base64.encodeToString(bytes: combined)
    }

    func open(_ text: String) throws(AttacheError) -> KeyRing {
        guard let bytes = try? Base64.decode(string: text), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.context)
        else {
            throw AttacheError(
                .storeCorrupt,
                "the shared key ring does not open with this ATTACHE_KEYRING_KEY (another key, or damaged)")
        }
        return try KeyRing.decode(Array(plain), from: "the shared key ring")
    }
}

/// A catalog connection that holds the advisory locks of open downloads.
final class LeaseSlot: Sendable {
    private let connection: Mutex<PostgresConnection>
    private let breaker: CatalogBreaker

    init(_ connection: PostgresConnection, breaker: CatalogBreaker) {
        self.connection = Mutex(connection)
        self.breaker = breaker
    }

    /// The batch's results and the session it ran in (the one holding the locks it took).
    func batch(_ sql: String) throws(AttacheError) -> ([PostgresRows], session: Int) {
        try breaker.guarding { () throws(CatalogBreaker.Failure) in
            let result: Result<([PostgresRows], Int), CatalogBreaker.Failure> = connection.withLock { connection in
                do throws(AttacheError) {
                    return .success((try connection.batch(sql), connection.session))
                } catch {
                    return .failure(connection.isUsable ? .statement(error) : .connection(error))
                }
            }
            return try result.get()
        }
    }

    /// Gives back a shared lock taken in `session`. When that session has ended, its locks
    /// went with it, and an unlock in the new one could give back a lock another download
    /// took there: nothing is sent.
    func unlock(_ key: String, session: Int) {
        connection.withLock { connection in
            guard connection.session == session else { return }
            _ = try? connection.query("SELECT pg_advisory_unlock_shared(\(key))")
        }
    }
}

/// An object in the bucket, held against collection by a shared advisory lock; reads are
/// ranged GETs.
final class RemoteObject: ObjectHandle {
    /// The advisory lock held on the object while it is read (nil: read without one, while the
    /// catalog is away).
    struct Lease {
        let slot: LeaseSlot
        let lockKey: String
        let session: Int
    }

    private let blobs: S3Client
    private let key: String
    private let lease: Lease?
    private let open = Atomic<Bool>(true)

    init(blobs: S3Client, key: String, lease: Lease?) {
        self.blobs = blobs
        self.key = key
        self.lease = lease
    }

    deinit { close() }

    var descriptor: Int32 { -1 }
    var isOpen: Bool { open.load(ordering: .relaxed) }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int {
        guard isOpen else { throw AttacheError(.ioError, "lease already closed") }
        return try blobs.read(key: key, into: buffer, at: offset)
    }

    func close() {
        guard open.exchange(false, ordering: .relaxed) else { return }
        if let lease { lease.slot.unlock(lease.lockKey, session: lease.session) }
    }
}

extension AttachmentStore {
    /// Opens (creating when missing) the store `configuration` describes: shared (PostgreSQL
    /// catalog + S3 bytes) when ``StoreConfiguration/shared`` is set, else the directory store.
    public static func open(_ configuration: StoreConfiguration) throws(AttacheError) -> AttachmentStore {
        guard let shared = configuration.shared else { return try AttachmentStore(configuration) }
        return AttachmentStore(configuration, backend: try SharedBackend(configuration, shared: shared))
    }
}
