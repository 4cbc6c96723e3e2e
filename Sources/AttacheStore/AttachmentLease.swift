public import AttacheBase
import Glibc
import Synchronization

/// An open attachment: the server's start/stop accessing of a security-scoped resource.
///
/// While a lease is open the object holds a shared lock that garbage collection respects, so
/// it is never removed under a reader. ``close()`` (or deinit) ends the lease.
public final class AttachmentLease: Sendable {
    /// The attachment opened.
    public let attachment: StoredAttachment
    /// Absolute path of the object file.
    public let path: String
    /// The token's claims that opened it (its expiry bounds how long a client may cache).
    public let access: AccessToken
    private let descriptor: Mutex<Int32>

    init(attachment: StoredAttachment, path: String, access: AccessToken, descriptor: Int32) {
        self.attachment = attachment
        self.path = path
        self.access = access
        self.descriptor = Mutex(descriptor)
    }

    deinit { close() }

    /// Whether the lease is still open.
    public var isOpen: Bool { descriptor.withLock { $0 >= 0 } }

    /// Reads the whole object.
    public func read() throws(AttacheError) -> [UInt8] {
        let result: Result<[UInt8], AttacheError> = descriptor.withLock { fd in
            guard fd >= 0 else { return .failure(AttacheError(.ioError, "lease already closed")) }
            var out = [UInt8](repeating: 0, count: Int(attachment.bytes))
            var offset = 0
            while offset < out.count {
                let n = out.withUnsafeMutableBytes {
                    pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(offset))
                }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    return .failure(AtomicFile.failure("read", path))
                }
                offset += n
            }
            return .success(out)
        }
        return try result.get()
    }

    /// Reads up to `buffer.count` bytes at `offset` (fewer only at the end of the object), for
    /// streaming without holding the whole object.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int {
        let result: Result<Int, AttacheError> = descriptor.withLock { fd in
            guard fd >= 0 else { return .failure(AttacheError(.ioError, "lease already closed")) }
            var done = 0
            while done < buffer.count {
                let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { return .failure(AtomicFile.failure("read", path)) }
                if n == 0 { break }
                done += n
            }
            return .success(done)
        }
        return try result.get()
    }

    /// The lease's own descriptor, for handing the object's bytes to the kernel (`sendfile`)
    /// without another system call. It stays valid until ``close()``; the caller never closes
    /// it and keeps the lease open until the kernel is done with it. -1 once closed.
    public var sendableDescriptor: Int32 { descriptor.withLock { $0 } }

    /// Copies the object to `destination` atomically.
    public func copy(to destination: String) throws(AttacheError) {
        try AtomicFile.write(try read(), to: destination)
    }

    /// Ends the lease. Safe to call more than once.
    public func close() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            Glibc.close(fd)
            fd = -1
        }
    }
}
