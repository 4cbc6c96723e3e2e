package import AttacheBase

/// Where a store keeps its catalog and its object bytes. ``AttachmentStore`` owns the rules
/// every backend shares (ids, expiry arithmetic, tokens, revocation checks); a backend owns
/// publishing, reading under a lease, collection and the key ring, with the same guarantees:
/// content addressing, atomic publication (readers never see an object before its row), one
/// object per content, quotas, and collection that never takes an object being written or read.
package protocol StoreBackend: Sendable {
    /// The object's row, or nil.
    func object(_ id: String) throws(AttacheError) -> ObjectRow?
    /// The row made from `url` with `spec`, with the object's row.
    func source(url: String, spec: String) throws(AttacheError) -> (SourceRow, ObjectRow)?
    /// Publishes `bytes` under `row.id` (extending the expiry of an object already there) and
    /// records `source`; collects expired objects first when a quota would be passed.
    /// Stores the bytes and records `row` (charged to `owner`, within its quota, when given).
    func publish(
        _ bytes: UnsafeRawBufferPointer, row: ObjectRow, source: SourceRow?, owner: StoreOwner?
    ) throws(AttacheError) -> ObjectRow
    /// Opens `id` for reading and holds it against collection; nil when there is no such object.
    func open(_ id: String) throws(AttacheError) -> (ObjectRow, any ObjectHandle)?
    /// ``open(_:)`` if it can be answered without waiting on a server (a local file and what
    /// this process already knows), else ``ImmediateOpen/wouldWait``.
    func openImmediately(_ id: String) throws(AttacheError) -> ImmediateOpen
    /// The oldest reading (key ring, catalog row) an open of `id` would answer from now.
    func answeringSince(_ id: String) -> ContinuousClock.Instant
    /// The key ring as last seen, without looking again.
    var keyRingNow: KeyRing { get }
    /// Raises the object's revocation time; false when there is no such object.
    func revoke(_ id: String, before time: Int64) throws(AttacheError) -> Bool
    /// One collection pass.
    func collect(_ options: CollectionOptions, now: Int64) throws(AttacheError) -> CollectionReport
    /// Matches the objects whose id starts with `prefix` (two hex digits) against their rows,
    /// hashing those the options sample; tells `problem` each problem found.
    func verify(
        prefix: String, options: VerifyOptions, problem: (VerifyProblem) -> Void
    ) throws(AttacheError) -> VerifyCounts
    /// Prefixes verified by the verification under way (or cut off), with their counts.
    func verifyProgress() throws(AttacheError) -> [String: VerifyCounts]
    /// Records that `prefix` is verified.
    func recordVerifyProgress(prefix: String, counts: VerifyCounts) throws(AttacheError)
    /// Starts a new verification's record.
    func resetVerifyProgress() throws(AttacheError)
    /// How many prefixes to verify at once.
    var verifyConcurrency: Int { get }
    /// Files of writes in progress or abandoned (a directory store's `tmp/`).
    func temporaryFiles() -> Int
    /// Object count, bytes and expired count.
    func totals(at now: Int64) throws(AttacheError) -> (objects: Int, bytes: Int64, expired: Int)
    /// What one tenant's objects hold (those it stored first; expired ones until collected).
    func totals(tenant: String) throws(AttacheError) -> (objects: Int, bytes: Int64)
    /// Records that `tenant` (nil: a caller with no tenant) holds each object of `ids` first
    /// stored for another (a stored copy it was sent): what ``purge(tenant:now:)`` keeps.
    func hold(_ ids: [String], tenant: String?) throws(AttacheError)
    /// Who holds the object: the tenant it was first stored for and each that holds it too
    /// (`""` for a caller with no tenant); empty when there is no such object.
    func holders(_ id: String) throws(AttacheError) -> Set<String>
    /// Takes `tenant` off every object: one another holds too is handed to it (and counted as
    /// its), the rest expire at `now`. Collection removes their bytes.
    func purge(tenant: String, now: Int64) throws(AttacheError) -> PurgeCounts
    /// Source rows.
    func sourceCount() throws(AttacheError) -> Int
    /// The key ring as last seen, looked at again when older than `interval`.
    func keyRing(within interval: Duration) -> KeyRing
    /// Applies `change` to the key ring, serialised with every other change.
    func updateKeys(_ change: (KeyRing) throws(AttacheError) -> KeyRing) throws(AttacheError) -> KeyRing
    /// The tenants the catalog keeps for every replica (a directory store: nil, by default).
    func catalogTenants() throws(AttacheError) -> CatalogTenants?
    /// Their version alone.
    func catalogTenantsVersion() throws(AttacheError) -> Int64?
    /// Replaces them whole; the new version.
    func replaceCatalogTenants(_ rows: [String]) throws(AttacheError) -> Int64
    /// Checks that the store takes writes now (the service's readiness).
    func checkWritable() throws(AttacheError)
    /// What the store depends on, by name (`disk`; `catalog` and `bucket`).
    var dependencies: [String] { get }
    /// Checks that the dependency named `name` answers now.
    func check(dependency name: String) throws(AttacheError)
    /// Where an object lives: a file path, or the object's `s3://` URL.
    func location(id: String, fileExtension: String) -> String
}

/// What taking a tenant off the store did to its objects.
public struct PurgeCounts: Hashable, Sendable {
    /// Objects only the tenant held, expired (for collection to remove), and their bytes.
    public var expired: Int
    public var expiredBytes: Int64
    /// Objects another tenant (or a caller with none) holds too, handed to it and kept.
    public var handedOver: Int

    package init(expired: Int, expiredBytes: Int64, handedOver: Int) {
        (self.expired, self.expiredBytes, self.handedOver) = (expired, expiredBytes, handedOver)
    }
}

/// What an open without waiting found.
package enum ImmediateOpen {
    case opened(ObjectRow, any ObjectHandle)
    case missing
    case wouldWait
}

/// An open object: reads at offsets, and (for a local file) the descriptor the kernel can send
/// from. ``close()`` ends the hold against collection; it is safe to call more than once.
package protocol ObjectHandle: Sendable {
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int
    /// The file descriptor, or -1 when the object is not a local file (or the handle is closed).
    var descriptor: Int32 { get }
    var isOpen: Bool { get }
    func close()
}
