#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Immutable bytes of one media file, at a stable address for the C codecs.
///
/// Files are memory-mapped rather than copied, so a large input costs address space, not
/// resident memory, and the decoders see one contiguous buffer.
public final class MediaBytes: @unchecked Sendable {
    /// The first byte (never dereferenced when `count` is 0).
    public let base: UnsafeRawPointer
    /// Number of bytes.
    public let count: Int
    private let release: @Sendable (UnsafeMutableRawPointer, Int) -> Void

    /// Copies `bytes` into memory owned by this value.
    public init(_ bytes: some Collection<UInt8>) {
        let size = bytes.count
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: 16)
        let typed = memory.bindMemory(to: UInt8.self, capacity: max(size, 1))
        _ = UnsafeMutableBufferPointer(start: typed, count: size).initialize(from: bytes)
        base = UnsafeRawPointer(memory)
        count = size
        release = { pointer, _ in pointer.deallocate() }
    }

    /// Takes ownership of `count` bytes allocated with `malloc` (freed with `free`).
    package init(adoptingMalloc pointer: UnsafeMutableRawPointer?, count: Int) {
        if let pointer, count > 0 {
            base = UnsafeRawPointer(pointer)
            self.count = count
            release = { pointer, _ in free(pointer) }
        } else {
            free(pointer)
            let memory = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 16)
            base = UnsafeRawPointer(memory)
            self.count = 0
            release = { pointer, _ in pointer.deallocate() }
        }
    }

    /// Maps the file at `path` read-only.
    /// - Throws: ``AttacheError`` with code `io_error` when the file cannot be opened or mapped.
    public init(contentsOfFile path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AttacheError(.ioError, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw AttacheError(.ioError, "cannot stat \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw AttacheError(.ioError, "\(path) is not a regular file")
        }
        let size = Int(info.st_size)
        if size == 0 {
            let memory = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 16)
            base = UnsafeRawPointer(memory)
            count = 0
            release = { pointer, _ in pointer.deallocate() }
            return
        }
        guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED else {
            throw AttacheError(.ioError, "cannot map \(path): \(String(cString: strerror(errno)))")
        }
        base = UnsafeRawPointer(mapped)
        count = size
        release = { pointer, length in munmap(pointer, length) }
    }

    deinit {
        release(UnsafeMutableRawPointer(mutating: base), count)
    }

    /// The bytes as a typed buffer.
    public var buffer: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// Writes the bytes to a new file at `path` (replacing one that exists).
    public func write(to path: String) throws(AttacheError) {
        let fd = try AtomicFile.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC)
        defer { close(fd) }
        try AtomicFile.writeAll(fd, UnsafeRawBufferPointer(buffer), path: path)
    }

    /// A copy of the first `n` bytes (or fewer).
    public func prefix(_ n: Int) -> [UInt8] { Array(buffer.prefix(n)) }
}
