import AttacheBase
import AttacheStore
import ExtrasBase64
import Synchronization

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
