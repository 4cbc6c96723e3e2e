package import Glibc

/// POSIX file steps the store is built from: whole writes, fsync, atomic rename, flock.
package enum AtomicFile {
    /// Writes `bytes` to `path` so readers see the old file or the whole new one: written to
    /// a temp file beside it, fsynced, renamed over it, and the directory fsynced.
    ///
    /// Only regular files are replaced. A symbolic link keeps pointing where it did: the file
    /// it names is replaced, in its own directory. An existing device, FIFO or socket is
    /// written in place, never replaced (`--out /dev/null` stays a device); a directory is
    /// refused with `io_error`.
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(AttacheError) {
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                break
            case S_IFLNK:
                guard let resolved = realpath(path, nil) else {
                    throw AttacheError(.ioError, "\(path) is a symbolic link to nothing")
                }
                let target = String(cString: resolved)
                free(resolved)
                return try write(bytes, to: target, mode: mode)
            case S_IFDIR:
                throw AttacheError(.ioError, "\(path) is a directory")
            default:
                let fd = try open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)
                defer { Glibc.close(fd) }
                return try writeAll(fd, bytes, path: path)
            }
        }
        let temp = path + ".tmp-\(UInt64.random(in: 0...UInt64.max))"
        let fd = try open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: mode)
        do {
            try writeAll(fd, bytes, path: temp)
            try sync(fd, temp)
        } catch {
            Glibc.close(fd)
            unlink(temp)
            throw error
        }
        Glibc.close(fd)
        do {
            try rename(temp, path)
        } catch {
            unlink(temp)
            throw error
        }
        try syncDirectory(of: path)
    }

    /// Creates `path` holding `bytes`, atomically and only if it does not exist: the bytes are
    /// written and fsynced under a temporary name, then hard-linked to `path` (which fails
    /// when another writer got there first; that is not an error: its file stays).
    package static func create(_ bytes: [UInt8], at path: String, mode: mode_t = 0o644) throws(AttacheError) {
        let temp = path + ".new-\(UInt64.random(in: 0...UInt64.max))"
        let fd = try open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: mode)
        defer { unlink(temp) }
        do {
            try writeAll(fd, bytes, path: temp)
            try sync(fd, temp)
        } catch {
            Glibc.close(fd)
            throw error
        }
        Glibc.close(fd)
        guard link(temp, path) == 0 || errno == EEXIST else { throw failure("link", path) }
        try syncDirectory(of: path)
    }

    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws(AttacheError) -> Int32 {
        let fd = Glibc.open(path, flags, mode)
        guard fd >= 0 else { throw failure("open", path) }
        return fd
    }

    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String = "") throws(AttacheError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("write", path)
            }
            offset += n
        }
    }

    package static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String = "") throws(AttacheError) {
        let result: Result<Void, AttacheError> = bytes.withUnsafeBytes { raw in
            Result { () throws(AttacheError) in try writeAll(fd, raw, path: path) }
        }
        try result.get()
    }

    package static func sync(_ fd: Int32, _ path: String) throws(AttacheError) {
        guard fsync(fd) == 0 else { throw failure("fsync", path) }
    }

    package static func rename(_ from: String, _ to: String) throws(AttacheError) {
        guard Glibc.rename(from, to) == 0 else { throw failure("rename", to) }
    }

    /// fsyncs the directory holding `path`, making a rename or unlink in it durable.
    package static func syncDirectory(of path: String) throws(AttacheError) {
        try syncDirectory(directory(of: path))
    }

    package static func syncDirectory(_ directory: String) throws(AttacheError) {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", directory) }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw failure("fsync", directory) }
    }

    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Creates a directory (and its parents) if missing.
    package static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(AttacheError) {
        if mkdir(path, mode) == 0 || errno == EEXIST { return }
        if errno == ENOENT {
            try makeDirectory(directory(of: path), mode: mode)
            if mkdir(path, mode) == 0 || errno == EEXIST { return }
        }
        throw failure("mkdir", path)
    }

    /// Takes an flock; `false` when `nonBlocking` and someone else holds a conflicting one.
    package static func lock(_ fd: Int32, exclusive: Bool, nonBlocking: Bool = false) throws(AttacheError) -> Bool {
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | (nonBlocking ? LOCK_NB : 0)
        while flock(fd, operation) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw failure("flock", "")
        }
        return true
    }

    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Names in a directory, without `.` and `..`; empty when it does not exist.
    package static func list(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// The failure of `call` on `path` from `errno`: a disk or quota that is full is
    /// `store_full` (space freed lets the next write through), anything else `io_error`.
    package static func failure(_ call: String, _ path: String) -> AttacheError {
        let code = errno
        let reason = String(cString: strerror(code))
        let full = code == ENOSPC || code == EDQUOT
        return AttacheError(full ? .storeFull : .ioError, "\(call) \(path): \(reason)")
    }
}
