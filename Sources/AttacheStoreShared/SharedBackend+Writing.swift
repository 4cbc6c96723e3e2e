import AttacheBase
import AttacheStore
import ExtrasBase64
import Synchronization

/// Writes: an object uploaded before its row is committed, under a shared advisory lock.
extension SharedBackend {
    func publish(
        _ bytes: UnsafeRawBufferPointer, row: ObjectRow, source: SourceRow?, owner: StoreOwner?
    ) throws(AttacheError) -> ObjectRow {
        if let stored = try pool.with({ (connection) throws(AttacheError) in try extend(row, source, on: connection) })
        {
            cache?.keep(bytes, row: stored)
            return stored
        }
        // Before uploading: collect when the quota would be passed, refuse when it still would.
        let quota = Quota(configuration)
        func ownerPassed() throws(AttacheError) -> AttacheError.Limit? {
            guard let owner, owner.maxBytes != nil || owner.maxObjects != nil else { return nil }
            return owner.passed(try totals(tenant: owner.id), adding: row.bytes)
        }
        let storePassed = quota.passed(try totals(at: row.created), adding: row.bytes) != nil
        let owned = try ownerPassed()
        if storePassed || owned != nil {
            // Expired objects only: the orphan sweep lists the whole bucket, not a publish's work.
            _ = try collect(CollectionOptions(sweepOrphans: false), now: row.created)
            if let limit = quota.passed(try totals(at: row.created), adding: row.bytes) {
                throw quota.full(bytes: row.bytes, limit: limit)
            }
            if let owner, let limit = try ownerPassed() { throw owner.full(bytes: row.bytes, limit: limit) }
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
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                    ON CONFLICT (id) DO UPDATE SET expires = GREATEST(attache_object.expires, EXCLUDED.expires)
                    RETURNING (xmax = 0), \(Self.objectColumns)
                    """, Self.parameters(row))
                guard let values = inserted.first else { throw AttacheError(.storeCorrupt, "catalog: insert lost") }
                if values[0] != "t" { try Self.hold(row.id, tenant: row.tenant, on: connection) }
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
                    if let owner { try Self.charge(owner, bytes: row.bytes, on: connection) }
                }
                if let source { try Self.upsert(source, on: connection) }
                return try Self.row(Array(values.dropFirst()))
            }
        }
        cache?.keep(bytes, row: stored)
        return stored
    }

    /// Counts a new object against its owner within the owner's quota, in the transaction that
    /// records it: two replicas writing for one tenant at once can never pass it together (the
    /// row's update is conditional, and a refusal rolls the whole record back).
    static func charge(_ owner: StoreOwner, bytes: Int64, on connection: PostgresConnection) throws(AttacheError) {
        if let limit = owner.passed((0, 0), adding: bytes) { throw owner.full(bytes: bytes, limit: limit) }
        let counted = try connection.query(
            """
            INSERT INTO attache_tenant_totals AS t (tenant, objects, bytes) VALUES ($1, 1, $2)
            ON CONFLICT (tenant) DO UPDATE SET objects = t.objects + 1, bytes = t.bytes + $2
            WHERE t.objects + 1 <= $3 AND t.bytes + $2 <= $4
            """,
            [
                owner.id, String(bytes), String(owner.maxObjects ?? Int.max),
                String(owner.maxBytes ?? Int64.max),
            ])
        if counted.affected == 0 {
            let held = try totals(tenant: owner.id, on: connection)
            throw owner.full(bytes: bytes, limit: owner.passed(held, adding: bytes) ?? .tenantStoreBytes)
        }
    }

    /// Extends the expiry of the object when it is recorded, and records `source`; nil when
    /// there is no such object (then it must be uploaded).
    func extend(
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
            if values[11] != row.tenant { try Self.hold(row.id, tenant: row.tenant, on: connection) }
            if let source { try Self.upsert(source, on: connection) }
            return try Self.row(values)
        }
    }

    /// Records that `tenant` (nil: a caller with no tenant) holds the object, when it was first
    /// stored for another.
    static func hold(_ id: String, tenant: String?, on connection: PostgresConnection) throws(AttacheError) {
        try connection.query(
            """
            INSERT INTO attache_object_holder (object_id, tenant)
            SELECT id, $2 FROM attache_object WHERE id = $1 AND COALESCE(tenant, '') <> $2 ON CONFLICT DO NOTHING
            """, [id, tenant ?? ""])
    }

    func hold(_ ids: [String], tenant: String?) throws(AttacheError) {
        try pool.transaction { (connection) throws(AttacheError) in
            for id in ids { try Self.hold(id, tenant: tenant, on: connection) }
        }
    }

    /// One transaction: the objects another holds too are handed to it (the first by name,
    /// else a caller with no tenant) with their count and bytes in the tenants' totals; the
    /// rest expire at `now`, for collection to remove (its totals fall as they go).
    func purge(tenant: String, now: Int64) throws(AttacheError) -> PurgeCounts {
        let (counts, expiredIDs) = try pool.transaction {
            (connection) throws(AttacheError) -> (PurgeCounts, [String]) in
            let handed = try connection.query(
                """
                UPDATE attache_object o SET tenant = h.heir
                FROM (SELECT r.object_id, MIN(NULLIF(r.tenant, '')) AS heir
                      FROM attache_object_holder r JOIN attache_object x ON x.id = r.object_id
                      WHERE x.tenant = $1 AND r.tenant <> $1 GROUP BY r.object_id) h
                WHERE o.id = h.object_id
                RETURNING h.heir, o.bytes
                """, [tenant]
            ).rows
            var moved: [String?: (objects: Int, bytes: Int64)] = [:]
            for values in handed {
                let bytes = Int64(values[1] ?? "0") ?? 0
                moved[values[0], default: (0, 0)].objects += 1
                moved[values[0], default: (0, 0)].bytes += bytes
            }
            let total = moved.values.reduce((objects: 0, bytes: Int64(0))) {
                ($0.objects + $1.objects, $0.bytes + $1.bytes)
            }
            if total.objects > 0 {
                try connection.query(
                    "UPDATE attache_tenant_totals SET objects = objects - $2, bytes = bytes - $3 WHERE tenant = $1",
                    [tenant, String(total.objects), String(total.bytes)])
            }
            for (heir, held) in moved {
                guard let heir else { continue }
                try connection.query(
                    """
                    INSERT INTO attache_tenant_totals AS t (tenant, objects, bytes) VALUES ($1, $2, $3)
                    ON CONFLICT (tenant) DO UPDATE SET objects = t.objects + $2, bytes = t.bytes + $3
                    """, [heir, String(held.objects), String(held.bytes)])
            }
            try connection.query(
                """
                DELETE FROM attache_object_holder r USING attache_object o
                WHERE r.object_id = o.id AND r.tenant = COALESCE(o.tenant, '')
                """)
            let expired = try connection.query(
                "UPDATE attache_object SET expires = $2 WHERE tenant = $1 AND expires > $2 RETURNING id, bytes",
                [tenant, String(now)]
            ).rows
            try connection.query("DELETE FROM attache_object_holder WHERE tenant = $1", [tenant])
            let bytes = expired.reduce(Int64(0)) { $0 + (Int64($1[1] ?? "0") ?? 0) }
            return (
                PurgeCounts(expired: expired.count, expiredBytes: bytes, handedOver: handed.count),
                expired.compactMap { $0[0] }
            )
        }
        // This process answers from the catalog again at once; another replica within its
        // second of row memory (as for a revocation).
        for id in expiredIDs { forgetRow(id) }
        return counts
    }

    static func upsert(_ source: SourceRow, on connection: PostgresConnection) throws(AttacheError) {
        try connection.query(
            """
            INSERT INTO attache_source (url, spec, object_id, etag, last_modified, fetched, note)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (url, spec) DO UPDATE SET object_id = EXCLUDED.object_id, etag = EXCLUDED.etag,
                last_modified = EXCLUDED.last_modified, fetched = EXCLUDED.fetched, note = EXCLUDED.note
            """,
            [
                source.url, source.spec, source.objectID, source.etag, source.lastModified, String(source.fetched),
                source.note,
            ])
    }
}
