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
    let leases: [LeaseSlot]
    let nextLease = Atomic<Int>(0)
    let keys: Mutex<SharedKeyRing>
    /// Local copies of the objects this process stores and serves.
    let cache: BlobCache?
    /// Rows read for downloads in the last second (with a copy at hand, a download within that
    /// second needs no query): a revocation or collection elsewhere is seen within a second,
    /// as a key retirement is.
    let recent = Mutex<[String: (row: ObjectRow, read: ContinuousClock.Instant)]>([:])
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
        "id, kind, ext, bytes, width, height, frames, created, expires, revoked_before, poster_time, tenant, placeholder, clip"
    static let objectColumnCount = objectColumns.split(separator: ",").count

    static func migrate(_ connection: PostgresConnection) throws(AttacheError) {
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
            "ALTER TABLE attache_source ADD COLUMN IF NOT EXISTS note text",
            "CREATE INDEX IF NOT EXISTS attache_source_object ON attache_source (object_id)",
            """
            CREATE TABLE IF NOT EXISTS attache_totals (
                one integer PRIMARY KEY CHECK (one = 1), objects bigint NOT NULL, bytes bigint NOT NULL)
            """,
            "INSERT INTO attache_totals VALUES (1, 0, 0) ON CONFLICT DO NOTHING",
            "ALTER TABLE attache_object ADD COLUMN IF NOT EXISTS tenant text",
            "ALTER TABLE attache_object ADD COLUMN IF NOT EXISTS placeholder text",
            "ALTER TABLE attache_object ADD COLUMN IF NOT EXISTS clip text",
            """
            CREATE TABLE IF NOT EXISTS attache_tenant_totals (
                tenant text PRIMARY KEY, objects bigint NOT NULL, bytes bigint NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS attache_object_holder (
                object_id text NOT NULL REFERENCES attache_object (id) ON DELETE CASCADE, tenant text NOT NULL,
                PRIMARY KEY (object_id, tenant))
            """,
            "CREATE INDEX IF NOT EXISTS attache_object_holder_tenant ON attache_object_holder (tenant)",
            "CREATE INDEX IF NOT EXISTS attache_object_by_tenant ON attache_object (tenant)",
            """
            CREATE TABLE IF NOT EXISTS attache_verify (
                prefix text PRIMARY KEY, objects bigint NOT NULL, hashed bigint NOT NULL, corrupt bigint NOT NULL,
                orphans bigint NOT NULL, missing bigint NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS attache_keyring (
                one integer PRIMARY KEY CHECK (one = 1), version bigint NOT NULL, sealed text NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS attache_tenant_rows (
                one integer PRIMARY KEY CHECK (one = 1), version bigint NOT NULL)
            """,
            "INSERT INTO attache_tenant_rows VALUES (1, 0) ON CONFLICT DO NOTHING",
            "CREATE TABLE IF NOT EXISTS attache_tenant (position integer PRIMARY KEY, row text NOT NULL)",
        ]
        for statement in statements + CampaignSchema.statements {
            try connection.query(statement)
        }
    }

    // MARK: Rows

    static func row(_ values: [String?]) throws(AttacheError) -> ObjectRow {
        guard values.count >= 14, let id = values[0], let kind = values[1], let ext = values[2],
            let bytes = values[3].flatMap({ Int64($0) }), let created = values[7].flatMap({ Int64($0) }),
            let expires = values[8].flatMap({ Int64($0) }), let revoked = values[9].flatMap({ Int64($0) })
        else { throw AttacheError(.storeCorrupt, "catalog: an object row is incomplete") }
        return ObjectRow(
            id: id, kind: kind, ext: ext, bytes: bytes, width: values[4].flatMap { Int($0) },
            height: values[5].flatMap { Int($0) }, frames: values[6].flatMap { Int($0) }, created: created,
            expires: expires, revokedBefore: revoked, posterTime: values[10].flatMap { Double($0) }, tenant: values[11],
            placeholder: values[12], clip: values[13])
    }

    static func parameters(_ row: ObjectRow) -> [String?] {
        [
            row.id, row.kind, row.ext, String(row.bytes), row.width.map(String.init), row.height.map(String.init),
            row.frames.map(String.init), String(row.created), String(row.expires), String(row.revokedBefore),
            row.posterTime.map { String($0) }, row.tenant, row.placeholder, row.clip,
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
}

extension AttachmentStore {
    /// Opens (creating when missing) the store `configuration` describes: shared (PostgreSQL
    /// catalog + S3 bytes) when ``StoreConfiguration/shared`` is set, else the directory store.
    public static func open(_ configuration: StoreConfiguration) throws(AttacheError) -> AttachmentStore {
        guard let shared = configuration.shared else { return try AttachmentStore(configuration) }
        return AttachmentStore(configuration, backend: try SharedBackend(configuration, shared: shared))
    }
}
