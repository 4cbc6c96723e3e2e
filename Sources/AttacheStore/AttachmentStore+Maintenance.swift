public import AttacheBase
import Crypto
import Glibc

/// What one garbage-collection pass did (or would do, on a dry run).
public struct CollectionReport: Hashable, Sendable {
    /// Expired objects removed.
    public var removed: [AttachmentID] = []
    /// Their bytes.
    public var removedBytes: Int64 = 0
    /// Expired objects kept because a lease is open on them.
    public var leased: [AttachmentID] = []
    /// Object files without a catalog row (left by a crash between rename and record), removed.
    public var orphans = 0
    /// Abandoned temp files (writer gone, older than a minute), removed.
    public var temps = 0
    /// Whether nothing was actually removed.
    public var dryRun = false
}

/// What a full check of the store found.
public struct VerifyReport: Hashable, Sendable {
    /// Object files whose bytes hash to their name.
    public var objects = 0
    /// Object files whose bytes do not hash to their name, or whose size differs from the catalog.
    public var corrupt: [String] = []
    /// Files under `objects/` without a catalog row (whole, but unrecorded).
    public var orphans: [String] = []
    /// Catalog rows without their file.
    public var missing: [String] = []
    /// Files in `tmp/` (invisible to readers).
    public var temps = 0
    /// No corrupt object and no row without its file.
    public var isClean: Bool { corrupt.isEmpty && missing.isEmpty }
}

/// Totals for `attache store stats`.
public struct StoreStats: Hashable, Sendable {
    /// Objects recorded.
    public var objects: Int
    /// Their bytes.
    public var bytes: Int64
    /// Objects past their expiry, waiting for collection.
    public var expired: Int
    /// Source records (URL + spec → object).
    public var sources: Int
    /// The byte quota.
    public var maxBytes: Int64
    /// The object quota.
    public var maxObjects: Int
    /// The key that signs new tokens.
    public var currentKeyID: UInt32
    /// Keys that still verify.
    public var liveKeys: Int
}

extension AttachmentStore {
    /// Removes expired objects that no lease holds, orphaned object files and abandoned temp
    /// files. Objects being written are in `tmp/` under their writer's lock and never touched.
    public func collect(dryRun: Bool = false) throws(AttacheError) -> CollectionReport {
        let now = self.now
        return try withStoreLock { () throws(AttacheError) in try collectLocked(dryRun: dryRun, now: now) }
    }

    /// Collection with the store lock already held.
    func collectLocked(dryRun: Bool, now: Int64) throws(AttacheError) -> CollectionReport {
        var report = CollectionReport(dryRun: dryRun)
        for row in try catalog.expired(at: now) {
            let attachment = try StoredAttachment(row: row)
            let path = path(of: attachment)
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { Glibc.close(fd) }
                guard try AtomicFile.lock(fd, exclusive: true, nonBlocking: true) else {
                    report.leased.append(attachment.id)
                    continue
                }
                if !dryRun { unlink(path) }
            }
            if !dryRun { try catalog.delete(row.id) }
            report.removed.append(attachment.id)
            report.removedBytes += row.bytes
        }
        let known = Set(try catalog.allObjects().map(\.id))
        for (path, id) in objectFiles() where !known.contains(id) {
            report.orphans += 1
            if !dryRun { unlink(path) }
        }
        let tmp = configuration.root + "/tmp"
        for name in AtomicFile.list(tmp) {
            let path = tmp + "/" + name
            var info = stat()
            guard stat(path, &info) == 0, Int64(info.st_mtim.tv_sec) < now - 60 else { continue }
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            guard try AtomicFile.lock(fd, exclusive: true, nonBlocking: true) else { continue }
            report.temps += 1
            if !dryRun { unlink(path) }
        }
        return report
    }

    /// Rehashes every object and matches files against the catalog.
    public func verify() throws(AttacheError) -> VerifyReport {
        var report = VerifyReport()
        let rows = Dictionary(uniqueKeysWithValues: try catalog.allObjects().map { ($0.id, $0) })
        var seen = Set<String>()
        for (path, id) in objectFiles() {
            guard let row = rows[id] else {
                report.orphans.append(path)
                if !Self.hashMatches(path: path, id: id) { report.corrupt.append(path) }
                continue
            }
            seen.insert(id)
            let expected = configuration.root + "/" + ObjectLayout.relativePath(id: id, fileExtension: row.ext)
            if path != expected || !Self.hashMatches(path: path, id: id, bytes: row.bytes) {
                report.corrupt.append(path)
            } else {
                report.objects += 1
            }
        }
        report.missing = rows.keys.filter { !seen.contains($0) }.sorted()
        report.temps = AtomicFile.list(configuration.root + "/tmp").count
        return report
    }

    /// Counts and quotas.
    public func stats() throws(AttacheError) -> StoreStats {
        let totals = try catalog.totals(at: now)
        let ring = keyRing
        return StoreStats(
            objects: totals.objects, bytes: totals.bytes, expired: totals.expired,
            sources: try catalog.sourceCount(), maxBytes: configuration.maxBytes,
            maxObjects: configuration.maxObjects, currentKeyID: ring.currentKeyID,
            liveKeys: ring.entries.filter { !$0.retired }.count)
    }

    /// Every file under `objects/xx/` with the id its name spells (`xx` + stem).
    private func objectFiles() -> [(path: String, id: String)] {
        let objects = configuration.root + "/objects"
        var files: [(String, String)] = []
        for prefix in AtomicFile.list(objects) {
            for name in AtomicFile.list(objects + "/" + prefix) {
                let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
                files.append((objects + "/" + prefix + "/" + name, prefix + stem))
            }
        }
        return files
    }

    private static func hashMatches(path: String, id: String, bytes: Int64? = nil) -> Bool {
        guard let data = try? MediaBytes(contentsOfFile: path) else { return false }
        if let bytes, Int64(data.count) != bytes { return false }
        return AttachmentID(bytes: Array(SHA256.hash(data: UnsafeRawBufferPointer(data.buffer))))?.hex == id
    }
}
