internal import AttacheBase
import AttacheStore
import Crypto
import Glibc
import Synchronization

/// A replica's local copy of the bucket objects it serves: `<dir>/ab/cdef….jpg`, filled when an
/// object is stored here or first downloaded here, bounded in bytes (least recently used go
/// first).
///
/// Objects are named by their SHA-256 and never change, so a copy is never stale: it needs no
/// invalidation, and a copy is checked against its name as it is filled. Whether an object may
/// be served is still decided by the catalog on every open (expiry, revocation); the cache only
/// spares the GET. Copies being read hold a shared `flock`, which eviction respects.
final class BlobCache: Sendable {
    let directory: String
    let maxBytes: Int64
    /// Objects larger than this are streamed from the bucket, not copied.
    let maxObjectBytes: Int64
    private let used = Atomic<Int64>(0)
    private let evicting = Mutex<Bool>(false)

    init(directory: String, maxBytes: Int64, maxObjectBytes: Int64) throws(AttacheError) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.maxObjectBytes = maxObjectBytes
        try AtomicFile.makeDirectory(directory, mode: 0o700)
        try AtomicFile.makeDirectory(directory + "/tmp")
        var total: Int64 = 0
        for (path, _) in files() {
            var info = stat()
            if stat(path, &info) == 0 { total += Int64(info.st_size) }
        }
        used.store(total, ordering: .relaxed)
    }

    func path(_ id: String, _ ext: String) -> String {
        directory + "/" + ObjectLayout.relativePath(id: id, fileExtension: ext).dropFirst("objects/".count)
    }

    /// The copy of `row`'s object, open under a shared lock; nil when there is none.
    func open(_ row: ObjectRow) -> FileObject? {
        let path = path(row.id, row.ext)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        _ = try? AtomicFile.lock(fd, exclusive: false)
        var info = stat()
        // Evicted between open and lock (eviction unlinks under an exclusive lock), or not whole.
        guard fstat(fd, &info) == 0, info.st_nlink > 0, Int64(info.st_size) == row.bytes else {
            Glibc.close(fd)
            return nil
        }
        // The access time says how recently it was used (for eviction), whatever the mount says.
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]
        futimens(fd, &times)
        return FileObject(path: path, descriptor: fd)
    }

    /// Keeps `bytes` as the copy of `row`'s object (written to a temp file, renamed into place).
    func keep(_ bytes: UnsafeRawBufferPointer, row: ObjectRow) {
        guard Int64(bytes.count) <= maxObjectBytes, !AtomicFile.exists(path(row.id, row.ext)) else { return }
        _ = try? fill(row) { (fd, temp) throws(AttacheError) in try AtomicFile.writeAll(fd, bytes, path: temp) }
    }

    /// Copies `row`'s object from `blobs`, checking it against its name as it streams to disk.
    func fetch(_ row: ObjectRow, key: String, from blobs: S3Client) throws(AttacheError) {
        try fill(row) { (fd, temp) throws(AttacheError) in
            var hash = SHA256()
            var failure: AttacheError? = nil
            try blobs.get(key: key) { chunk in
                hash.update(bufferPointer: chunk)
                do throws(AttacheError) {
                    try AtomicFile.writeAll(fd, chunk, path: temp)
                    return true
                } catch {
                    failure = error
                    return false
                }
            }
            if let failure { throw failure }
            guard AttachmentID(bytes: Array(hash.finalize()))?.hex == row.id else {
                throw AttacheError(.storeCorrupt, "object store: \(key) does not hash to its name")
            }
        }
    }

    private func fill(
        _ row: ObjectRow, _ write: (Int32, String) throws(AttacheError) -> Void
    ) throws(AttacheError) {
        let final = path(row.id, row.ext)
        let temp = directory + "/tmp/\(UInt64.random(in: 0 ... .max)).part"
        let fd = try AtomicFile.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
        var renamed = false
        defer {
            Glibc.close(fd)
            if !renamed { unlink(temp) }
        }
        try write(fd, temp)
        var info = stat()
        guard fstat(fd, &info) == 0, Int64(info.st_size) == row.bytes else {
            throw AttacheError(.storeCorrupt, "object store: \(row.id) is not \(row.bytes) bytes")
        }
        let parent = AtomicFile.directory(of: final)
        if !AtomicFile.exists(parent) { try AtomicFile.makeDirectory(parent) }
        try AtomicFile.rename(temp, final)
        renamed = true
        if used.add(row.bytes, ordering: .relaxed).newValue > maxBytes { evict() }
    }

    /// Removes the least recently used copies not being read until the cache is at 90 % of its
    /// bound (one thread at a time; others go on).
    private func evict() {
        guard
            evicting.withLock({ busy in
                if busy { return false }
                busy = true
                return true
            })
        else { return }
        defer { evicting.withLock { $0 = false } }
        var entries: [(path: String, used: Int64, size: Int64)] = []
        for (path, _) in files() {
            var info = stat()
            if stat(path, &info) == 0 { entries.append((path, Int64(info.st_atim.tv_sec), Int64(info.st_size))) }
        }
        var total = entries.reduce(0) { $0 + $1.size }
        for entry in entries.sorted(by: { $0.used < $1.used }) where total > maxBytes * 9 / 10 {
            let fd = Glibc.open(entry.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            guard (try? AtomicFile.lock(fd, exclusive: true, nonBlocking: true)) == true else { continue }
            unlink(entry.path)
            total -= entry.size
        }
        used.store(total, ordering: .relaxed)
    }

    /// Drops the copy of an object the catalog no longer has.
    func forget(_ id: String) {
        let prefix = directory + "/" + id.prefix(2)
        let stem = String(id.dropFirst(2))
        for name in AtomicFile.list(prefix) where name.hasPrefix(stem + ".") { unlink(prefix + "/" + name) }
    }

    private func files() -> [(String, String)] {
        var out: [(String, String)] = []
        for prefix in AtomicFile.list(directory) where prefix.utf8.count == 2 {
            for name in AtomicFile.list(directory + "/" + prefix) {
                out.append((directory + "/" + prefix + "/" + name, prefix + name))
            }
        }
        return out
    }
}
