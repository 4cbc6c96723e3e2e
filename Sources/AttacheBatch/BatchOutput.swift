public import AttacheBase
import Glibc

/// Where mutated payloads go: a directory (one file per item, each written atomically, so a
/// redone item replaces its own file) or one JSONL file (a name ending in `.jsonl`), appended
/// in the order items finish. On a rerun the JSONL file is cut back to where it ended after the
/// last item the manifest records, so an item redone after a kill is never written twice.
public final class BatchOutput {
    public enum Kind: Sendable { case directory, lines }

    public let path: String
    public let kind: Kind
    private var fd: Int32 = -1
    /// Bytes in the JSONL file.
    public private(set) var size: Int64 = 0

    /// What a manifest line records as the output's end: the JSONL file's size, nil for a
    /// directory.
    public var end: Int64? { kind == .lines ? size : nil }

    /// Opens the output; for JSONL, cut back to `recordedEnd` (what the manifest records).
    public init(path: String, recordedEnd: Int64?) throws(AttacheError) {
        self.path = path
        if path.hasSuffix(".jsonl") || path.hasSuffix(".ndjson") {
            kind = .lines
            fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw AtomicFile.failure("open", path) }
            var info = stat()
            fstat(fd, &info)
            let keep = min(recordedEnd ?? 0, Int64(info.st_size))
            guard ftruncate(fd, off_t(keep)) == 0, lseek(fd, off_t(keep), SEEK_SET) >= 0 else {
                throw AtomicFile.failure("truncate", path)
            }
            size = keep
        } else {
            kind = .directory
            try AtomicFile.makeDirectory(path)
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Writes one item's payload.
    public func write(_ payload: [UInt8], name: String) throws(AttacheError) {
        switch kind {
        case .directory:
            try AtomicFile.write(payload, to: path + "/" + name)
        case .lines:
            // One payload per line: a line break in JSON is whitespace between tokens (a string
            // cannot hold one), so it becomes a space.
            let line = payload.map { $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 } + [0x0A]
            try AtomicFile.writeAll(fd, line, path: path)
            size += Int64(payload.count + 1)
        }
    }

    /// Makes what was written durable (directory files are durable as they are written).
    public func sync() throws(AttacheError) {
        if fd >= 0, fdatasync(fd) != 0 { throw AtomicFile.failure("fdatasync", path) }
    }
}
