import AttacheBase
import AttacheStore
import ExtrasBase64
import Synchronization

/// Reads: rows and objects, for downloads (with the outage grace), listings and checks.
extension SharedBackend {
    func object(_ id: String) throws(AttacheError) -> ObjectRow? {
        let rows = try pool.query("SELECT \(Self.objectColumns) FROM attache_object WHERE id = $1", [id])
        return try rows.first.map { (values) throws(AttacheError) in try Self.row(values) }
    }

    func source(url: String, spec: String) throws(AttacheError) -> (SourceRow, ObjectRow)? {
        let columns = Self.objectColumns.split(separator: ",").map { "o." + $0.trimmingPrefix(" ") }.joined(
            separator: ", ")
        let rows = try pool.query(
            """
            SELECT \(columns), s.etag, s.last_modified, s.fetched, s.note FROM attache_source s
            JOIN attache_object o ON o.id = s.object_id WHERE s.url = $1 AND s.spec = $2
            """, [url, spec])
        guard let values = rows.first else { return nil }
        let object = try Self.row(values)
        // The source's fields follow the object's.
        let at = Self.objectColumnCount
        let source = SourceRow(
            url: url, spec: spec, objectID: object.id, etag: values[at], lastModified: values[at + 1],
            fetched: values[at + 2].flatMap { Int64($0) } ?? 0, note: values.count > at + 3 ? values[at + 3] : nil)
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

    /// What one tenant's objects hold (expired ones too, until they are collected).
    func holders(_ id: String) throws(AttacheError) -> Set<String> {
        let rows = try pool.query(
            """
            SELECT COALESCE(tenant, '') FROM attache_object WHERE id = $1
            UNION SELECT tenant FROM attache_object_holder WHERE object_id = $1
            """, [id]
        ).rows
        return Set(rows.compactMap { $0[0] })
    }

    func totals(tenant: String) throws(AttacheError) -> (objects: Int, bytes: Int64) {
        try pool.with { (connection) throws(AttacheError) in try Self.totals(tenant: tenant, on: connection) }
    }

    static func totals(
        tenant: String, on connection: PostgresConnection
    ) throws(AttacheError) -> (
        objects: Int, bytes: Int64
    ) {
        let rows = try connection.query(
            "SELECT objects, bytes FROM attache_tenant_totals WHERE tenant = $1", [tenant]
        ).rows
        guard let values = rows.first else { return (0, 0) }
        return (Int(values[0] ?? "0") ?? 0, Int64(values[1] ?? "0") ?? 0)
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
    func openDuringOutage(
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

    func recentRow(_ id: String, within memory: Duration = rowMemory) -> ObjectRow? {
        let now = ContinuousClock.now
        return recent.withLock { rows in
            guard let entry = rows[id], now - entry.read < memory else { return nil }
            return entry.row
        }
    }

    func remember(_ row: ObjectRow) {
        let now = ContinuousClock.now
        recent.withLock { rows in
            if rows.count >= 50_000 { rows.removeAll(keepingCapacity: true) }
            rows[row.id] = (row, now)
        }
    }

    func forgetRow(_ id: String) {
        _ = recent.withLock { $0.removeValue(forKey: id) }
    }

    var keyRingNow: KeyRing { keys.withLock { $0.ring } }

    func answeringSince(_ id: String) -> ContinuousClock.Instant {
        let ring = keys.withLock { $0.lastLook }
        let row = recent.withLock { $0[id]?.read } ?? .now
        return min(ring, row)
    }

    /// Opens the object in the bucket, held by a shared advisory lock.
    func openInBucket(_ id: String) throws(AttacheError) -> (ObjectRow, any ObjectHandle)? {
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
}
