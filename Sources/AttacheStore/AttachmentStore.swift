public import AttacheBase
import Crypto
import Glibc
import Synchronization

/// The managed attachment directory: content-addressed objects written atomically, metadata in
/// SQLite, read only through scoped access tokens.
///
/// Layout under the root: `objects/ab/cdef….jpg` (named by SHA-256, extension from the sniffed
/// kind), `tmp/` (writes in progress), `catalog.sqlite` (metadata), `keys.json` (token keys,
/// mode 0600) and `store.lock` (serialises publishing and collection across processes).
public final class AttachmentStore: Sendable {
    /// The configuration the store was opened with.
    public let configuration: StoreConfiguration
    let catalog: Catalog
    private let keys: Mutex<LoadedKeyRing>

    /// Opens (creating when missing) the store at `configuration.root`.
    ///
    /// Several processes may open a new store at once: the catalog's schema and the key ring
    /// are created under the store lock, so they all get the same ones.
    public init(_ configuration: StoreConfiguration) throws(AttacheError) {
        self.configuration = configuration
        let root = configuration.root
        try AtomicFile.makeDirectory(root, mode: 0o700)
        try AtomicFile.makeDirectory(root + "/objects")
        try AtomicFile.makeDirectory(root + "/tmp")
        let keyFile = configuration.keyFile ?? root + "/keys.json"
        let (catalog, ring) = try Self.withStoreLock(root: root) { () throws(AttacheError) in
            (try Catalog(path: root + "/catalog.sqlite"), try KeyRing.loadOrCreate(at: keyFile))
        }
        self.catalog = catalog
        keys = Mutex(LoadedKeyRing(path: keyFile, ring: ring))
    }

    /// The key ring in use: the key file as another process (a `key rotate`, a replica) last
    /// left it, looked at again at most once a second.
    public var keyRing: KeyRing { keys.withLock { $0.current(within: .seconds(1)) } }

    var now: Int64 { configuration.clock() }

    /// Absolute path of an object.
    public func path(of attachment: StoredAttachment) -> String {
        configuration.root + "/" + attachment.relativePath
    }

    // MARK: Writing

    /// Stores `bytes` once: hashed, written to `tmp/`, fsynced, renamed into `objects/` and
    /// recorded. Storing bytes already present extends their expiry and adds the source.
    /// When the write would pass a quota, expired objects are collected first; if it still
    /// would, the write fails with ``AttacheError/Code/storeFull`` and nothing is left behind.
    public func put(
        _ bytes: UnsafeRawBufferPointer,
        metadata: ObjectMetadata,
        source: SourceReference? = nil,
        ttl: Int64? = nil
    ) throws(AttacheError) -> StoredAttachment {
        if let source, (source.url + source.spec + (source.etag ?? "") + (source.lastModified ?? "")).contains("\u{0}")
        {
            throw AttacheError(.invalidInput, "source fields must not contain NUL")
        }
        let id = AttachmentID(bytes: Array(SHA256.hash(data: bytes)))!
        let now = self.now
        let row = ObjectRow(
            id: id.hex, kind: metadata.kind.rawValue, ext: metadata.kind.fileExtension,
            bytes: Int64(bytes.count), width: metadata.width, height: metadata.height,
            frames: metadata.frames, created: now, expires: Self.adding(ttl ?? configuration.defaultTTL, to: now),
            revokedBefore: 0, posterTime: metadata.posterTime)
        let sourceRow = source.map {
            SourceRow(
                url: $0.url, spec: $0.spec, objectID: id.hex, etag: $0.etag,
                lastModified: $0.lastModified, fetched: now)
        }
        let relative = ObjectLayout.relativePath(id: id.hex, fileExtension: metadata.kind.fileExtension)
        let final = configuration.root + "/" + relative

        // Write outside the store lock; the temp file stays locked while it is being written so
        // collection never takes it.
        let temp = configuration.root + "/tmp/\(UInt64.random(in: 0...UInt64.max)).part"
        let fd = try AtomicFile.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
        var published = false
        defer {
            if !published { unlink(temp) }
            Glibc.close(fd)
        }
        _ = try AtomicFile.lock(fd, exclusive: true)
        try AtomicFile.writeAll(fd, bytes, path: temp)
        try AtomicFile.sync(fd, temp)

        let stored = try withStoreLock { () throws(AttacheError) -> ObjectRow in
            if try catalog.object(id.hex) != nil, AtomicFile.exists(final) {
                return try catalog.record(row, source: sourceRow)
            }
            try reserve(bytes: Int64(bytes.count), now: now)
            let directory = AtomicFile.directory(of: final)
            if !AtomicFile.exists(directory) {
                try AtomicFile.makeDirectory(directory)
                try AtomicFile.syncDirectory(configuration.root + "/objects")
            }
            try AtomicFile.rename(temp, final)
            published = true
            try AtomicFile.syncDirectory(directory)
            return try catalog.record(row, source: sourceRow)
        }
        return try StoredAttachment(row: stored)
    }

    /// ``put(_:metadata:source:ttl:)`` for an array.
    public func put(
        _ bytes: [UInt8], metadata: ObjectMetadata, source: SourceReference? = nil, ttl: Int64? = nil
    ) throws(AttacheError) -> StoredAttachment {
        let result: Result<StoredAttachment, AttacheError> = bytes.withUnsafeBytes { raw in
            Result { () throws(AttacheError) in try put(raw, metadata: metadata, source: source, ttl: ttl) }
        }
        return try result.get()
    }

    /// Fails with `storeFull` unless one more object of `bytes` fits, collecting first if needed.
    private func reserve(bytes: Int64, now: Int64) throws(AttacheError) {
        /// The quota the write would pass, or nil when it fits.
        func passed() throws(AttacheError) -> AttacheError.Limit? {
            let totals = try catalog.totals(at: now)
            if totals.bytes + bytes > configuration.maxBytes { return .maxStoreBytes }
            if totals.objects + 1 > configuration.maxObjects { return .maxStoreObjects }
            return nil
        }
        guard try passed() != nil else { return }
        _ = try collectLocked(dryRun: false, now: now)
        if let quota = try passed() {
            throw AttacheError(
                .storeFull,
                "storing \(bytes) bytes would pass the store quota of \(configuration.maxBytes) bytes"
                    + " / \(configuration.maxObjects) objects",
                limit: quota)
        }
    }

    // MARK: Reading

    /// The live attachment with this id, or `nil`.
    public func attachment(_ id: AttachmentID) throws(AttacheError) -> StoredAttachment? {
        try live(try catalog.object(id.hex))
    }

    /// The attachment a catalog row describes, unless there is none or it has expired.
    private func live(_ row: ObjectRow?) throws(AttacheError) -> StoredAttachment? {
        guard let row, row.expires > now else { return nil }
        return try StoredAttachment(row: row)
    }

    /// The live attachment made from `url` with `spec`, with its stored validators, so a
    /// repeated request can skip fetch and resize (or re-fetch conditionally).
    public func lookup(url: String, spec: String) throws(AttacheError) -> (StoredAttachment, SourceReference)? {
        guard let (source, row) = try catalog.source(url: url, spec: spec), row.expires > now else {
            return nil
        }
        let reference = SourceReference(
            url: source.url, spec: source.spec, etag: source.etag, lastModified: source.lastModified)
        return (try StoredAttachment(row: row), reference)
    }

    /// Issues a token that opens only `id`, until `ttl` seconds from now.
    public func issueToken(for id: AttachmentID, ttl: Int64, scope: TokenScope = .read) throws(AttacheError) -> String {
        guard try attachment(id) != nil else { throw AttacheError(.notFound, "no attachment \(id)") }
        return keyRing.issue(for: id, scope: scope, ttl: ttl, now: now).token
    }

    /// Checks `token` for `id` without opening anything: the precise refusal, for logs.
    public func authorize(
        _ token: String, for id: AttachmentID, scope: TokenScope = .read
    )
        throws(AttacheError) -> Result<AccessToken, TokenRefusal>
    {
        switch try authorizeRow(token, for: id, scope: scope) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let (claims, _)): return .success(claims)
        }
    }

    /// The token check, with the object's row it read (nil: no such object).
    private func authorizeRow(
        _ token: String, for id: AttachmentID, scope: TokenScope
    ) throws(AttacheError) -> Result<(AccessToken, ObjectRow?), TokenRefusal> {
        let now = self.now
        var verdict = keyRing.check(token, opens: id, scope: scope, now: now)
        if case .failure(.unknownKey) = verdict {
            // Perhaps signed with a key another process has just added: look at the file again
            // (at most every 100 ms, so unknown keys cannot make every request read it).
            verdict = keys.withLock { $0.current(within: .milliseconds(100)) }.check(
                token, opens: id, scope: scope, now: now)
        }
        switch verdict {
        case .failure(let refusal):
            return .failure(refusal)
        case .success(let claims):
            let row = try catalog.object(id.hex)
            if let row, claims.issuedAt < row.revokedBefore {
                return .failure(.revoked)
            }
            return .success((claims, row))
        }
    }

    /// Opens `id` with `token` and starts a lease. Every refusal is
    /// ``AttacheError/Code/accessDenied``; `onRefusal` hears the precise reason.
    public func open(
        _ id: AttachmentID,
        token: String,
        onRefusal: (TokenRefusal) -> Void = { _ in }
    ) throws(AttacheError) -> AttachmentLease {
        let access: AccessToken
        let row: ObjectRow?
        switch try authorizeRow(token, for: id, scope: .read) {
        case .failure(let refusal):
            onRefusal(refusal)
            throw AttacheError(.accessDenied, "access denied")
        case .success(let (claims, found)):
            (access, row) = (claims, found)
        }
        guard let attachment = try live(row) else { throw AttacheError(.notFound, "no attachment \(id)") }
        let path = path(of: attachment)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AttacheError(.notFound, "no attachment \(id)") }
        _ = try? AtomicFile.lock(fd, exclusive: false)
        // Collection may have unlinked the file between open and lock (it unlinks under an
        // exclusive lock): then it has no name left and is gone.
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_nlink > 0 else {
            Glibc.close(fd)
            throw AttacheError(.notFound, "no attachment \(id)")
        }
        return AttachmentLease(attachment: attachment, path: path, access: access, descriptor: fd)
    }

    /// Refuses every token for `id` issued up to now (and within this second).
    public func revokeTokens(for id: AttachmentID) throws(AttacheError) {
        guard try catalog.revoke(id.hex, before: now + 1) else {
            throw AttacheError(.notFound, "no attachment \(id)")
        }
    }

    // MARK: Keys

    /// Adds a new signing key and makes it current; older keys keep verifying.
    public func rotateKeys() throws(AttacheError) -> KeyRing {
        try updateKeys { $0.rotated() }
    }

    /// Retires a key: tokens it signed are refused from now on.
    public func retireKey(_ id: UInt32) throws(AttacheError) -> KeyRing {
        try updateKeys { ring throws(AttacheError) in try ring.retiring(id) }
    }

    private func updateKeys(_ change: (KeyRing) throws(AttacheError) -> KeyRing) throws(AttacheError) -> KeyRing {
        try withStoreLock { () throws(AttacheError) -> KeyRing in
            let path = configuration.keyFile ?? configuration.root + "/keys.json"
            let updated = try change(try KeyRing.loadOrCreate(at: path))
            try updated.save(to: path)
            keys.withLock { $0 = LoadedKeyRing(path: path, ring: updated) }
            return updated
        }
    }

    /// `now + seconds`, saturating (a huge lifetime means "never expires", not a trap).
    static func adding(_ seconds: Int64, to now: Int64) -> Int64 {
        let (sum, overflow) = now.addingReportingOverflow(max(0, seconds))
        return overflow ? .max : sum
    }

    // MARK: Locking

    /// Runs `body` holding the store-wide lock (an flock on `store.lock`), which orders
    /// publishing, collection and key changes across threads and processes.
    func withStoreLock<T>(_ body: () throws(AttacheError) -> T) throws(AttacheError) -> T {
        try Self.withStoreLock(root: configuration.root, body)
    }

    static func withStoreLock<T>(root: String, _ body: () throws(AttacheError) -> T) throws(AttacheError) -> T {
        let fd = try AtomicFile.open(root + "/store.lock", O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        defer { Glibc.close(fd) }
        _ = try AtomicFile.lock(fd, exclusive: true)
        return try body()
    }
}

/// A key ring as read from its file, with what is needed to notice that the file changed.
struct LoadedKeyRing {
    let path: String
    private(set) var ring: KeyRing
    private var identity: FileIdentity?
    private var checked: ContinuousClock.Instant

    init(path: String, ring: KeyRing) {
        self.path = path
        self.ring = ring
        identity = FileIdentity(path: path)
        checked = .now
    }

    /// The ring, re-read first when the last look at the file is older than `interval` and
    /// the file has changed since (key files are replaced by atomic renames, so a reader sees
    /// a whole old or a whole new file). A file that cannot be read keeps the ring in use.
    mutating func current(within interval: Duration) -> KeyRing {
        let now = ContinuousClock.now
        guard now - checked >= interval else { return ring }
        checked = now
        let seen = FileIdentity(path: path)
        guard seen != identity, let loaded = try? KeyRing.load(at: path) else { return ring }
        ring = loaded
        identity = seen
        return ring
    }
}

/// Enough of a file's `stat` to tell that it was replaced or rewritten.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let modifiedNanoseconds: Int64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}
