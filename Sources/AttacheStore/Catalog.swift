internal import AttacheBase
import GRDB

/// One row per stored object.
package struct ObjectRow: Codable, Hashable {
    package var id: String
    package var kind: String
    package var ext: String
    package var bytes: Int64
    package var width: Int?
    package var height: Int?
    package var frames: Int?
    package var created: Int64
    package var expires: Int64
    package var revokedBefore: Int64
    package var posterTime: Double? = nil
    /// Whom it was first stored for (a tenant's id; nil: no tenant).
    package var tenant: String? = nil
    /// A still's ThumbHash, base64.
    package var placeholder: String? = nil
    /// The square a collapsed notification shows: `x,y,width,height` in 0…1.
    package var clip: String? = nil

    package init(
        id: String, kind: String, ext: String, bytes: Int64, width: Int?, height: Int?, frames: Int?, created: Int64,
        expires: Int64, revokedBefore: Int64, posterTime: Double? = nil, tenant: String? = nil,
        placeholder: String? = nil, clip: String? = nil
    ) {
        (self.id, self.kind, self.ext, self.bytes) = (id, kind, ext, bytes)
        (self.width, self.height, self.frames) = (width, height, frames)
        (self.created, self.expires, self.revokedBefore, self.posterTime) = (
            created, expires, revokedBefore, posterTime
        )
        self.tenant = tenant
        self.placeholder = placeholder
        self.clip = clip
    }

    package enum CodingKeys: String, CodingKey {
        case id, kind, ext, bytes, width, height, frames, created, expires
        case revokedBefore = "revoked_before"
        case posterTime = "poster_time"
        case tenant, placeholder, clip
    }
}

/// Where an object came from: one row per (source URL, rendition spec).
package struct SourceRow: Codable, Hashable {
    package var url: String
    package var spec: String
    package var objectID: String
    package var etag: String?
    package var lastModified: String?
    package var fetched: Int64
    /// What the maker said of the rendition (``SourceReference/note``).
    package var note: String?

    package init(
        url: String, spec: String, objectID: String, etag: String?, lastModified: String?, fetched: Int64,
        note: String? = nil
    ) {
        (self.url, self.spec, self.objectID) = (url, spec, objectID)
        (self.etag, self.lastModified, self.fetched, self.note) = (etag, lastModified, fetched, note)
    }

    package enum CodingKeys: String, CodingKey {
        case url, spec, etag, fetched, note
        case objectID = "object_id"
        case lastModified = "last_modified"
    }
}

extension ObjectRow: FetchableRecord, PersistableRecord {
    static let databaseTableName = "object"
}

extension SourceRow: FetchableRecord, PersistableRecord {
    static let databaseTableName = "source"
}

/// The store's metadata in SQLite (WAL, through GRDB). Every process that opens the store
/// shares it; writers wait up to 10 s for each other. Reads run side by side on GRDB's pool of
/// reader connections, except the one every download makes (an object by id), which has
/// connections of its own (`ObjectReaders`).
final class Catalog: Sendable {
    private let database: DatabasePool
    private let readers: ObjectReaders

    init(path: String) throws(AttacheError) {
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        // Half a megabyte of pages per connection (SQLite's default is 2 MB each, and the pool
        // keeps a writer and several readers): a service's resident size stays put as its store
        // grows, where the caches filled by 2 MB from its first thousand payloads to its ten
        // thousandth.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -512") }
        let database = try Self.run { try DatabasePool(path: path, configuration: configuration) }
        try Self.run { try Self.migrator.migrate(database) }
        self.database = database
        readers = ObjectReaders(path: path)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "object") { t in
                t.primaryKey("id", .text)
                t.column("kind", .text).notNull()
                t.column("ext", .text).notNull()
                t.column("bytes", .integer).notNull()
                t.column("width", .integer)
                t.column("height", .integer)
                t.column("frames", .integer)
                t.column("created", .integer).notNull()
                t.column("expires", .integer).notNull().indexed()
                t.column("revoked_before", .integer).notNull().defaults(to: 0)
            }
            try db.create(table: "source") { t in
                t.column("url", .text).notNull()
                t.column("spec", .text).notNull()
                t.column("object_id", .text).notNull().indexed()
                    .references("object", onDelete: .cascade)
                t.column("etag", .text)
                t.column("last_modified", .text)
                t.column("fetched", .integer).notNull()
                t.primaryKey(["url", "spec"])
            }
        }
        migrator.registerMigration("v2: poster time") { db in
            try db.alter(table: "object") { t in t.add(column: "poster_time", .double) }
        }
        migrator.registerMigration("v3: source note") { db in
            try db.alter(table: "source") { t in t.add(column: "note", .text) }
        }
        migrator.registerMigration("v4: tenant") { db in
            try db.alter(table: "object") { t in t.add(column: "tenant", .text) }
            try db.create(index: "object_tenant", on: "object", columns: ["tenant"])
        }
        migrator.registerMigration("v5: placeholder") { db in
            try db.alter(table: "object") { t in t.add(column: "placeholder", .text) }
        }
        migrator.registerMigration("v6: clip") { db in
            try db.alter(table: "object") { t in t.add(column: "clip", .text) }
        }
        // The tenants that stored or were sent an object after the one it was first stored for
        // (`object.tenant`); '' stands for callers with no tenant. What a purge keeps.
        migrator.registerMigration("v7: object tenants") { db in
            try db.create(table: "object_holder") { t in
                t.column("object_id", .text).notNull().references("object", onDelete: .cascade)
                t.column("tenant", .text).notNull().indexed()
                t.primaryKey(["object_id", "tenant"])
            }
        }
        return migrator
    }

    func object(_ id: String) throws(AttacheError) -> ObjectRow? {
        try readers.object(id)
    }

    /// Inserts the object, or extends the expiry of the one already there (and records that
    /// `row.tenant` holds it too, when it was first stored for another).
    func record(_ row: ObjectRow, source: SourceRow?) throws(AttacheError) -> ObjectRow {
        try write { db in
            var stored = row
            if let existing = try ObjectRow.fetchOne(db, key: row.id) {
                stored = existing
                stored.expires = max(existing.expires, row.expires)
                try stored.update(db)
                try Self.hold(db, row.id, tenant: row.tenant)
            } else {
                try row.insert(db)
            }
            if let source { try source.upsert(db) }
            return stored
        }
    }

    /// Records that `tenant` (nil: a caller with no tenant) holds each object of `ids` first
    /// stored for another.
    func hold(_ ids: [String], tenant: String?) throws(AttacheError) {
        try write { db in for id in ids { try Self.hold(db, id, tenant: tenant) } }
    }

    private static func hold(_ db: Database, _ id: String, tenant: String?) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO object_holder (object_id, tenant)
                SELECT id, ?2 FROM object WHERE id = ?1 AND IFNULL(tenant, '') <> ?2
                """, arguments: [id, tenant ?? ""])
    }

    /// Takes `tenant` off every object: one another tenant holds too is handed to it (the
    /// first by name; a caller with no tenant only when no tenant does), the rest expire at
    /// `now`, for collection to remove. What it did.
    func purge(tenant: String, now: Int64) throws(AttacheError) -> PurgeCounts {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE object SET tenant = (
                        SELECT MIN(NULLIF(r.tenant, '')) FROM object_holder r WHERE r.object_id = object.id AND r.tenant <> ?1)
                    WHERE tenant = ?1 AND EXISTS (
                        SELECT 1 FROM object_holder r WHERE r.object_id = object.id AND r.tenant <> ?1)
                    """, arguments: [tenant])
            let handed = db.changesCount
            try db.execute(
                sql:
                    "DELETE FROM object_holder WHERE tenant = IFNULL((SELECT tenant FROM object WHERE id = object_id), '')"
            )
            let row = try Row.fetchOne(
                db,
                sql: "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM object WHERE tenant = ?1 AND expires > ?2",
                arguments: [tenant, now])!
            try db.execute(
                sql: "UPDATE object SET expires = ?2 WHERE tenant = ?1 AND expires > ?2", arguments: [tenant, now])
            try db.execute(sql: "DELETE FROM object_holder WHERE tenant = ?", arguments: [tenant])
            return PurgeCounts(expired: row[0], expiredBytes: row[1], handedOver: handed)
        }
    }

    func source(url: String, spec: String) throws(AttacheError) -> (SourceRow, ObjectRow)? {
        try read { db in
            guard let source = try SourceRow.fetchOne(db, key: ["url": url, "spec": spec]),
                let object = try ObjectRow.fetchOne(db, key: source.objectID)
            else { return nil }
            return (source, object)
        }
    }

    func expired(at now: Int64) throws(AttacheError) -> [ObjectRow] {
        try read { try ObjectRow.filter(Column("expires") <= now).order(Column("expires")).fetchAll($0) }
    }

    /// Rows whose id is above `after` and below `below`, in id order, at most `limit`.
    func objects(after: String, below: String, limit: Int) throws(AttacheError) -> [ObjectRow] {
        try read {
            try ObjectRow.filter(Column("id") > after && Column("id") < below).order(Column("id")).limit(limit)
                .fetchAll($0)
        }
    }

    func delete(_ id: String) throws(AttacheError) {
        _ = try write { try ObjectRow.deleteOne($0, key: id) }
    }

    func revoke(_ id: String, before time: Int64) throws(AttacheError) -> Bool {
        try write { db in
            guard var row = try ObjectRow.fetchOne(db, key: id) else { return false }
            row.revokedBefore = max(row.revokedBefore, time)
            try row.update(db)
            return true
        }
    }

    /// Object count, bytes and expired count.
    func totals(at now: Int64) throws(AttacheError) -> (objects: Int, bytes: Int64, expired: Int) {
        try read { db in
            let row = try Row.fetchOne(
                db,
                sql: "SELECT COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(expires <= ?), 0) FROM object",
                arguments: [now])!
            return (row[0], row[1], row[2])
        }
    }

    /// What one tenant's objects hold (expired ones too, until they are collected).
    func totals(tenant: String) throws(AttacheError) -> (objects: Int, bytes: Int64) {
        try read { db in
            let row = try Row.fetchOne(
                db, sql: "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM object WHERE tenant = ?", arguments: [tenant])!
            return (row[0], row[1])
        }
    }

    func holders(_ id: String) throws(AttacheError) -> Set<String> {
        try read { db in
            Set(
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT IFNULL(tenant, '') FROM object WHERE id = ?1
                        UNION SELECT tenant FROM object_holder WHERE object_id = ?1
                        """, arguments: [id]))
        }
    }

    func sourceCount() throws(AttacheError) -> Int {
        try read { try SourceRow.fetchCount($0) }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(AttacheError) -> T {
        try Self.run { try database.read(body) }
    }

    private func write<T>(_ body: (Database) throws -> T) throws(AttacheError) -> T {
        try Self.run { try database.write(body) }
    }

    private static func run<T>(_ body: () throws -> T) throws(AttacheError) -> T {
        do {
            return try body()
        } catch {
            throw AttacheError(.storeCorrupt, "catalog: \(error)")
        }
    }
}
