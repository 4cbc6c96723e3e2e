public import AttacheBase
import Crypto
import Glibc
import Synchronization

/// The managed attachment store: content-addressed objects published atomically, with their
/// metadata in a catalog, read only through scoped access tokens.
///
/// The backend is a local directory with a SQLite catalog (``DirectoryBackend``, the default)
/// or, with ``StoreConfiguration/shared``, PostgreSQL for the catalog and an S3 bucket for the
/// bytes (`SharedBackend`, in the `AttacheStoreShared` library: open such a store with its
/// `AttachmentStore.open(_:)`), so several processes on several machines share one store.
public final class AttachmentStore: Sendable {
    /// The configuration the store was opened with.
    public let configuration: StoreConfiguration
    package let backend: any StoreBackend
    private let changeCount = Atomic<Int>(0)
    /// The refusal of the last write that found the store full, and when (the store's clock):
    /// ``checkRoom()`` repeats it for a second instead of letting each payload fetch and
    /// transform first.
    private let lastFull = Mutex<(error: AttacheError, at: Int64)?>(nil)
    /// Holds already recorded by this process (`id|tenant`), so a copy sent again and again
    /// costs one catalog write, not one a payload; forgotten past 50,000.
    private let recordedHolds = Mutex<Set<String>>([])

    /// Opens (creating when missing) the directory store `configuration` describes. A shared
    /// store's configuration is refused here: this library does not link its backend
    /// (`AttacheStoreShared` does).
    public init(_ configuration: StoreConfiguration) throws(AttacheError) {
        guard configuration.shared == nil else {
            throw AttacheError(
                .invalidInput,
                "a shared store (PostgreSQL + S3) is opened with AttachmentStore.open(_:) from AttacheStoreShared")
        }
        self.configuration = configuration
        backend = try DirectoryBackend(configuration)
    }

    /// A store over `backend` (another library's, such as the shared one).
    package init(_ configuration: StoreConfiguration, backend: any StoreBackend) {
        self.configuration = configuration
        self.backend = backend
    }

    /// Whether the store is shared (PostgreSQL + S3) rather than a local directory.
    public var isShared: Bool { configuration.shared != nil }

    /// The key ring in use: as another process (a `key rotate`, a replica) last left it,
    /// looked at again at most once a second.
    public var keyRing: KeyRing { backend.keyRing(within: .seconds(1)) }

    /// The store's clock (Unix seconds): what `created` and `expires` are written in.
    public var now: Int64 { configuration.clock() }

    /// The backend's kind, for traces: `directory` or `shared`.
    public var backendName: String { configuration.shared == nil ? "directory" : "shared" }

    /// Where an object lives: its absolute path in a directory store, its `s3://` URL in a
    /// shared one.
    public func path(of attachment: StoredAttachment) -> String {
        backend.location(id: attachment.id.hex, fileExtension: attachment.kind.fileExtension)
    }

    /// A description of the backend for logs (no credentials).
    public var backendDescription: String {
        if let shared = configuration.shared {
            return "shared: \(shared.postgresDescription) + \(shared.blobs.description)"
        }
        return "directory: \(configuration.root)"
    }

    // MARK: Writing

    /// Stores `bytes` once: hashed, published atomically and recorded. Storing bytes already
    /// present extends their expiry and adds the source. When the write would pass a quota,
    /// expired objects are collected first; if it still would, the write fails with
    /// ``AttacheError/Code/storeFull`` and nothing is left behind.
    public func put(
        _ bytes: UnsafeRawBufferPointer,
        metadata: ObjectMetadata,
        source: SourceReference? = nil,
        ttl: Int64? = nil,
        owner: StoreOwner? = nil
    ) throws(AttacheError) -> StoredAttachment {
        if let source, (source.url + source.spec + (source.etag ?? "") + (source.lastModified ?? "")).contains("\u{0}")
        {
            throw AttacheError(.invalidInput, "source fields must not contain NUL")
        }
        let id = AttachmentID(bytes: Array(SHA256.hash(data: bytes)))!
        let now = self.now
        var row = ObjectRow(
            id: id.hex, kind: metadata.kind.rawValue, ext: metadata.kind.fileExtension,
            bytes: Int64(bytes.count), width: metadata.width, height: metadata.height,
            frames: metadata.frames, created: now, expires: Self.adding(ttl ?? configuration.defaultTTL, to: now),
            revokedBefore: 0, posterTime: metadata.posterTime)
        row.tenant = owner?.id
        row.placeholder = metadata.placeholder
        row.clip = metadata.clip.map { $0.map { String($0) }.joined(separator: ",") }
        let sourceRow = source.map {
            SourceRow(
                url: $0.url, spec: $0.spec, objectID: id.hex, etag: $0.etag,
                lastModified: $0.lastModified, fetched: now, note: $0.note)
        }
        do throws(AttacheError) {
            let published = try backend.publish(bytes, row: row, source: sourceRow, owner: owner)
            lastFull.withLock { $0 = nil }
            return try StoredAttachment(row: published)
        } catch {
            // A quota reached (a disk that is full says so anew on each write: space may come
            // back at any moment).
            if error.code == .storeFull, error.limit != nil { lastFull.withLock { $0 = (error, now) } }
            throw error
        }
    }

    /// Fails with the last `store_full` while the store was found at its quota within the last second
    /// (a write that found room, or a second passing, ends it): checked before a payload's
    /// fetch and transform, which would otherwise be spent on a write that cannot land. One
    /// payload a second still tries, and finds whether collection or a deletion made room.
    public func checkRoom() throws(AttacheError) {
        let now = self.now
        let full: AttacheError? = lastFull.withLock { last in
            guard let seen = last else { return nil }
            guard now - seen.at < 1 else {
                last = nil
                return nil
            }
            return seen.error
        }
        if let full { throw full }
    }

    /// ``put(_:metadata:source:ttl:)`` for an array.
    public func put(
        _ bytes: [UInt8], metadata: ObjectMetadata, source: SourceReference? = nil, ttl: Int64? = nil,
        owner: StoreOwner? = nil
    ) throws(AttacheError) -> StoredAttachment {
        let result: Result<StoredAttachment, AttacheError> = bytes.withUnsafeBytes { raw in
            Result { () throws(AttacheError) in try put(raw, metadata: metadata, source: source, ttl: ttl, owner: owner)
            }
        }
        return try result.get()
    }

    // MARK: Reading

    /// The live attachment with this id, or `nil`.
    public func attachment(_ id: AttachmentID) throws(AttacheError) -> StoredAttachment? {
        try live(try backend.object(id.hex))
    }

    /// The attachment a catalog row describes, unless there is none or it has expired.
    private func live(_ row: ObjectRow?) throws(AttacheError) -> StoredAttachment? {
        guard let row, row.expires > now else { return nil }
        return try StoredAttachment(row: row)
    }

    /// The live attachment made from `url` with `spec`, with its stored validators, so a
    /// repeated request can skip fetch and resize (or re-fetch conditionally).
    public func lookup(url: String, spec: String) throws(AttacheError) -> (StoredAttachment, SourceReference)? {
        guard let (source, row) = try backend.source(url: url, spec: spec), row.expires > now else {
            return nil
        }
        let reference = SourceReference(
            url: source.url, spec: source.spec, etag: source.etag, lastModified: source.lastModified,
            note: source.note)
        return (try StoredAttachment(row: row), reference)
    }

    /// Records that `tenant` (nil: a caller with no tenant) was sent these stored copies, each
    /// first stored for another: a purge of that other keeps them (``purge(tenant:_:)``). A
    /// write only for a copy this process has not recorded yet.
    public func hold(_ attachments: [StoredAttachment], for tenant: String?) throws(AttacheError) {
        let suffix = "|" + (tenant ?? "")
        let ids = recordedHolds.withLock { held in
            attachments.filter { $0.tenant != tenant && !held.contains($0.id.hex + suffix) }.map(\.id.hex)
        }
        guard !ids.isEmpty else { return }
        try backend.hold(ids, tenant: tenant)
        recordedHolds.withLock { held in
            if held.count >= 50_000 { held.removeAll(keepingCapacity: true) }
            held.formUnion(ids.map { $0 + suffix })
        }
    }

    /// The whole object (for reports and tools; downloads read through a lease).
    public func contents(of attachment: StoredAttachment) throws(AttacheError) -> [UInt8] {
        guard let (row, handle) = try backend.open(attachment.id.hex) else {
            throw AttacheError(.notFound, "no attachment \(attachment.id)")
        }
        defer { handle.close() }
        var out = [UInt8](repeating: 0, count: Int(row.bytes))
        let result: Result<Int, AttacheError> = out.withUnsafeMutableBytes { buffer in
            Result { () throws(AttacheError) in try handle.read(into: buffer, at: 0) }
        }
        let read = try result.get()
        guard read == out.count else { throw AttacheError(.ioError, "attachment \(attachment.id) ended early") }
        return out
    }

    /// Issues a token that opens only `id`, for `ttl` seconds from now: the same token for
    /// every call within one window (``AccessToken/window(forTTL:)``), so it may expire up to a
    /// window later; issued no earlier than the object's last revocation.
    public func issueToken(for id: AttachmentID, ttl: Int64, scope: TokenScope = .read) throws(AttacheError) -> String {
        let now = self.now
        guard let row = try backend.object(id.hex), row.expires > now else {
            throw AttacheError(.notFound, "no attachment \(id)")
        }
        return keyRing.issue(
            for: id, scope: scope, ttl: ttl, now: now, window: AccessToken.window(forTTL: ttl),
            notBefore: row.revokedBefore
        ).token
    }

    /// Checks `token` for `id` without opening anything: the precise refusal, for logs.
    public func authorize(
        _ token: String, for id: AttachmentID, scope: TokenScope = .read
    )
        throws(AttacheError) -> Result<AccessToken, TokenRefusal>
    {
        switch check(token, for: id, scope: scope, now: now) {
        case .failure(let refusal):
            return .failure(refusal)
        case .success(let claims):
            if let row = try backend.object(id.hex), claims.issuedAt < row.revokedBefore {
                return .failure(.revoked)
            }
            return .success(claims)
        }
    }

    /// The signature and claims check (no catalog read).
    private func check(
        _ token: String, for id: AttachmentID, scope: TokenScope, now: Int64
    ) -> Result<AccessToken, TokenRefusal> {
        let verdict = keyRing.check(token, opens: id, scope: scope, now: now)
        guard case .failure(.unknownKey) = verdict else { return verdict }
        // Perhaps signed with a key another process has just added: look again (at most
        // every 100 ms, so unknown keys cannot make every request read the key ring).
        return backend.keyRing(within: .milliseconds(100)).check(token, opens: id, scope: scope, now: now)
    }

    /// Opens `id` with `token` and starts a lease. Every refusal is
    /// ``AttacheError/Code/accessDenied``; `onRefusal` hears the precise reason.
    public func open(
        _ id: AttachmentID,
        token: String,
        onRefusal: (TokenRefusal) -> Void = { _ in }
    ) throws(AttacheError) -> AttachmentLease {
        let now = self.now
        let access = try accept(check(token, for: id, scope: .read, now: now), onRefusal)
        guard let (row, handle) = try backend.open(id.hex) else {
            throw AttacheError(.notFound, "no attachment \(id)")
        }
        return try lease(row, handle, access: access, now: now, onRefusal)
    }

    /// ``open(_:token:onRefusal:)`` when it can be answered without waiting on a server: always
    /// for a directory store; for a shared one, when the object's row was read within the last
    /// second and a local copy is at hand. Nil when the answer needs the catalog.
    public func openWithoutWaiting(
        _ id: AttachmentID,
        token: String,
        onRefusal: (TokenRefusal) -> Void = { _ in }
    ) throws(AttacheError) -> AttachmentLease? {
        let now = self.now
        let verdict = backend.keyRingNow.check(token, opens: id, scope: .read, now: now)
        if case .failure(.unknownKey) = verdict { return nil }
        let access = try accept(verdict, onRefusal)
        switch try backend.openImmediately(id.hex) {
        case .wouldWait:
            return nil
        case .missing:
            throw AttacheError(.notFound, "no attachment \(id)")
        case .opened(let row, let handle):
            return try lease(row, handle, access: access, now: now, onRefusal)
        }
    }

    private func accept(
        _ verdict: Result<AccessToken, TokenRefusal>, _ onRefusal: (TokenRefusal) -> Void
    ) throws(AttacheError) -> AccessToken {
        switch verdict {
        case .failure(let refusal):
            onRefusal(refusal)
            throw AttacheError(.accessDenied, "access denied")
        case .success(let claims):
            return claims
        }
    }

    /// The lease on an opened object, once revocation and expiry allow it.
    private func lease(
        _ row: ObjectRow, _ handle: any ObjectHandle, access: AccessToken, now: Int64,
        _ onRefusal: (TokenRefusal) -> Void
    ) throws(AttacheError) -> AttachmentLease {
        if access.issuedAt < row.revokedBefore {
            handle.close()
            onRefusal(.revoked)
            throw AttacheError(.accessDenied, "access denied")
        }
        guard row.expires > now else {
            handle.close()
            throw AttacheError(.notFound, "no attachment \(row.id)")
        }
        let attachment = try StoredAttachment(row: row)
        return AttachmentLease(
            attachment: attachment, path: backend.location(id: row.id, fileExtension: row.ext), access: access,
            handle: handle)
    }

    /// Refuses every token for `id` issued up to now (and within this second).
    public func revokeTokens(for id: AttachmentID) throws(AttacheError) {
        defer { changed() }
        guard try backend.revoke(id.hex, before: now + 1) else {
            throw AttacheError(.notFound, "no attachment \(id)")
        }
    }

    /// Looks at a directory store's key file again when the last look is older than `interval`
    /// (one `stat`, and a read only when the file changed), so that a check made next rests on a
    /// fresh look; a shared store's key ring keeps its own schedule (a catalog query).
    public func refreshKeyRing(olderThan interval: Duration) {
        guard !isShared else { return }
        _ = backend.keyRing(within: interval)
    }

    /// How old the answer an open of `id` would give now may be: the oldest of the readings it
    /// rests on (the key ring as last looked at; a shared store's row as read within the last
    /// second). A check made from them stands for what it is until a second after this.
    public func answeringSince(_ id: AttachmentID) -> ContinuousClock.Instant {
        backend.answeringSince(id.hex)
    }

    /// Counts the changes made through this store object that may refuse a token that opened
    /// something before (revocations, key retirements, collections): a check remembered while
    /// it stays the same is still this process's answer.
    public var changes: Int { changeCount.load(ordering: .acquiring) }

    func changed() { changeCount.add(1, ordering: .releasing) }

    /// Checks that the store takes writes now (a temp file in a directory store; the catalog
    /// and the bucket in a shared one).
    public func checkWritable() throws(AttacheError) {
        try backend.checkWritable()
    }

    /// What the store depends on, by name: `disk` for a directory store, `catalog` (PostgreSQL)
    /// and `bucket` (S3) for a shared one.
    public var dependencies: [String] { backend.dependencies }

    /// Checks that the dependency named `name` (one of ``dependencies``) answers now.
    public func check(dependency name: String) throws(AttacheError) {
        try backend.check(dependency: name)
    }

    // MARK: Keys

    /// Adds a new signing key and makes it current; older keys keep verifying.
    public func rotateKeys() throws(AttacheError) -> KeyRing {
        try backend.updateKeys { $0.rotated() }
    }

    /// Retires a key: tokens it signed are refused from now on.
    public func retireKey(_ id: UInt32) throws(AttacheError) -> KeyRing {
        defer { changed() }
        return try backend.updateKeys { ring throws(AttacheError) in try ring.retiring(id) }
    }

    /// `now + seconds`, saturating (a huge lifetime means "never expires", not a trap).
    static func adding(_ seconds: Int64, to now: Int64) -> Int64 {
        let (sum, overflow) = now.addingReportingOverflow(max(0, seconds))
        return overflow ? .max : sum
    }
}

/// A key ring as read from its file, with what is needed to notice that the file changed.
struct LoadedKeyRing {
    let path: String
    private(set) var ring: KeyRing
    private var identity: FileIdentity?
    private var checked: ContinuousClock.Instant
    /// When the file was last looked at: the ring is as of then.
    var lastLook: ContinuousClock.Instant { checked }

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
