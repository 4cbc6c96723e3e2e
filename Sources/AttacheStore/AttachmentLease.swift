public import AttacheBase

/// An open attachment: the server's start/stop accessing of a security-scoped resource.
///
/// While a lease is open, collection leaves the object alone (a shared lock on the file in a
/// directory store, a shared advisory lock in PostgreSQL in a shared one), so it is never
/// removed under a reader. ``close()`` (or deinit) ends the lease.
public final class AttachmentLease: Sendable {
    /// The attachment opened.
    public let attachment: StoredAttachment
    /// Where the object lives: a file path, or its `s3://` URL.
    public let path: String
    /// The token's claims that opened it (its expiry bounds how long a client may cache).
    public let access: AccessToken
    private let handle: any ObjectHandle

    init(attachment: StoredAttachment, path: String, access: AccessToken, handle: any ObjectHandle) {
        self.attachment = attachment
        self.path = path
        self.access = access
        self.handle = handle
    }

    deinit { close() }

    /// Whether the lease is still open.
    public var isOpen: Bool { handle.isOpen }

    /// Reads the whole object.
    public func read() throws(AttacheError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(attachment.bytes))
        let result: Result<Int, AttacheError> = out.withUnsafeMutableBytes { buffer in
            Result { () throws(AttacheError) in try handle.read(into: buffer, at: 0) }
        }
        let read = try result.get()
        guard read == out.count else { throw AttacheError(.ioError, "attachment \(attachment.id) ended early") }
        return out
    }

    /// Reads up to `buffer.count` bytes at `offset` (fewer only at the end of the object), for
    /// streaming without holding the whole object. In a shared store this is one ranged GET.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int {
        try handle.read(into: buffer, at: offset)
    }

    /// The lease's own descriptor, for handing the object's bytes to the kernel (`sendfile`)
    /// without another system call. It stays valid until ``close()``; the caller never closes
    /// it and keeps the lease open until the kernel is done with it. -1 once closed, and
    /// always -1 for an object that is not a local file (a shared store's).
    public var sendableDescriptor: Int32 { handle.descriptor }

    /// Copies the object to `destination` atomically.
    public func copy(to destination: String) throws(AttacheError) {
        try AtomicFile.write(try read(), to: destination)
    }

    /// Ends the lease. Safe to call more than once.
    public func close() {
        handle.close()
    }
}
