package import AttacheBase
import Crypto
import Glibc
import Synchronization

/// The embedded backend: one directory with the objects as files and the catalog in SQLite.
///
/// Layout under the root: `objects/ab/cdef….jpg` (named by SHA-256, extension from the sniffed
/// kind), `tmp/` (writes in progress), `catalog.sqlite` (metadata), `keys.json` (token keys,
/// mode 0600) and `store.lock` (serialises publishing and collection across processes).
/// Leases are shared `flock`s on the object files; collection takes an exclusive one.
final class DirectoryBackend: StoreBackend {
    let configuration: StoreConfiguration
    let catalog: Catalog
    private let keys: Mutex<LoadedKeyRing>
    private let keyFile: String

    /// Several processes may open a new store at once: the catalog's schema and the key ring
    /// are created under the store lock, so they all get the same ones.
    init(_ configuration: StoreConfiguration) throws(AttacheError) {
        self.configuration = configuration
        let root = configuration.root
        try AtomicFile.makeDirectory(root, mode: 0o700)
        try AtomicFile.makeDirectory(root + "/objects")
        try AtomicFile.makeDirectory(root + "/tmp")
        let keyFile = configuration.keyFile ?? root + "/keys.json"
        let (catalog, ring) = try Self.withStoreLock(root: root) { () throws(AttacheError) in
            (try Catalog(path: root + "/catalog.sqlite"), try KeyRing.loadOrCreate(at: keyFile))
        }
        self.catalog = catalog
        self.keyFile = keyFile
        keys = Mutex(LoadedKeyRing(path: keyFile, ring: ring))
    }

    func location(id: String, fileExtension: String) -> String {
        configuration.root + "/" + ObjectLayout.relativePath(id: id, fileExtension: fileExtension)
    }

    func object(_ id: String) throws(AttacheError) -> ObjectRow? { try catalog.object(id) }

    func source(url: String, spec: String) throws(AttacheError) -> (SourceRow, ObjectRow)? {
        try catalog.source(url: url, spec: spec)
    }

    func sourceCount() throws(AttacheError) -> Int { try catalog.sourceCount() }

    func totals(tenant: String) throws(AttacheError) -> (objects: Int, bytes: Int64) {
        try catalog.totals(tenant: tenant)
    }

    func holders(_ id: String) throws(AttacheError) -> Set<String> { try catalog.holders(id) }

    func hold(_ ids: [String], tenant: String?) throws(AttacheError) {
        try catalog.hold(ids, tenant: tenant)
    }

    /// Under the store lock, so no write records a hold between the hand-over and the expiry.
    func purge(tenant: String, now: Int64) throws(AttacheError) -> PurgeCounts {
        try withStoreLock { () throws(AttacheError) in try catalog.purge(tenant: tenant, now: now) }
    }

    func totals(at now: Int64) throws(AttacheError) -> (objects: Int, bytes: Int64, expired: Int) {
        try catalog.totals(at: now)
    }

    func revoke(_ id: String, before time: Int64) throws(AttacheError) -> Bool {
        try catalog.revoke(id, before: time)
    }

    // MARK: Writing

    /// Hashed by the caller; written to `tmp/`, fsynced, renamed into `objects/` and recorded.
    func publish(
        _ bytes: UnsafeRawBufferPointer, row: ObjectRow, source: SourceRow?, owner: StoreOwner?
    ) throws(AttacheError) -> ObjectRow {
        let final = location(id: row.id, fileExtension: row.ext)
        // Write outside the store lock; the temp file stays locked while it is being written so
        // collection never takes it.
        let temp = configuration.root + "/tmp/\(UInt64.random(in: 0...UInt64.max)).part"
        let fd = try AtomicFile.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC)
        var published = false
        defer {
            if !published { unlink(temp) }
            Glibc.close(fd)
        }
        _ = try AtomicFile.lock(fd, exclusive: true)
        try AtomicFile.writeAll(fd, bytes, path: temp)
        try AtomicFile.sync(fd, temp)

        return try withStoreLock { () throws(AttacheError) -> ObjectRow in
            if try catalog.object(row.id) != nil, AtomicFile.exists(final) {
                return try catalog.record(row, source: source)
            }
            try reserve(bytes: row.bytes, now: row.created, owner: owner)
            let directory = AtomicFile.directory(of: final)
            if !AtomicFile.exists(directory) {
                try AtomicFile.makeDirectory(directory)
                try AtomicFile.syncDirectory(configuration.root + "/objects")
            }
            try AtomicFile.rename(temp, final)
            published = true
            try AtomicFile.syncDirectory(directory)
            return try catalog.record(row, source: source)
        }
    }

    /// Fails with `storeFull` unless one more object of `bytes` fits, or `tenantQuotaExceeded`
    /// unless it fits the owner's quota, collecting expired objects first if needed.
    private func reserve(bytes: Int64, now: Int64, owner: StoreOwner?) throws(AttacheError) {
        let quota = Quota(configuration)
        let limited = owner.map { $0.maxBytes != nil || $0.maxObjects != nil } ?? false
        func ownerPassed() throws(AttacheError) -> AttacheError.Limit? {
            guard let owner, limited else { return nil }
            return owner.passed(try catalog.totals(tenant: owner.id), adding: bytes)
        }
        let storePassed = quota.passed(try catalog.totals(at: now), adding: bytes) != nil
        let owned = try ownerPassed()
        guard storePassed || owned != nil else { return }
        _ = try collectLocked(CollectionOptions(), now: now)
        if let limit = quota.passed(try catalog.totals(at: now), adding: bytes) {
            throw quota.full(bytes: bytes, limit: limit)
        }
        if let owner, let limit = try ownerPassed() { throw owner.full(bytes: bytes, limit: limit) }
    }

    // MARK: Reading

    func open(_ id: String) throws(AttacheError) -> (ObjectRow, any ObjectHandle)? {
        guard let row = try catalog.object(id) else { return nil }
        let path = location(id: id, fileExtension: row.ext)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        _ = try? AtomicFile.lock(fd, exclusive: false)
        // Collection may have unlinked the file between open and lock (it unlinks under an
        // exclusive lock): then it has no name left and is gone.
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_nlink > 0 else {
            Glibc.close(fd)
            return nil
        }
        return (row, FileObject(path: path, descriptor: fd))
    }

    /// A directory store never waits on a server.
    func openImmediately(_ id: String) throws(AttacheError) -> ImmediateOpen {
        guard let (row, handle) = try open(id) else { return .missing }
        return .opened(row, handle)
    }

    var keyRingNow: KeyRing { keyRing(within: .seconds(1)) }

    /// Rows are read on every open; the key ring is as of its last look.
    func answeringSince(_ id: String) -> ContinuousClock.Instant {
        keys.withLock { $0.lastLook }
    }

    var dependencies: [String] { ["disk"] }

    func check(dependency name: String) throws(AttacheError) { try checkWritable() }

    func checkWritable() throws(AttacheError) {
        let probe = configuration.root + "/tmp/ready-\(getpid())-\(UInt64.random(in: 0 ... .max)).part"
        try AtomicFile.write([1, 2, 3], to: probe)
        unlink(probe)
    }

    // MARK: Keys

    func keyRing(within interval: Duration) -> KeyRing {
        keys.withLock { $0.current(within: interval) }
    }

    func updateKeys(_ change: (KeyRing) throws(AttacheError) -> KeyRing) throws(AttacheError) -> KeyRing {
        try withStoreLock { () throws(AttacheError) -> KeyRing in
            let updated = try change(try KeyRing.loadOrCreate(at: keyFile))
            try updated.save(to: keyFile)
            keys.withLock { $0 = LoadedKeyRing(path: keyFile, ring: updated) }
            return updated
        }
    }

    // MARK: Maintenance

    func collect(_ options: CollectionOptions, now: Int64) throws(AttacheError) -> CollectionReport {
        try withStoreLock { () throws(AttacheError) in try collectLocked(options, now: now) }
    }

    /// Collection with the store lock already held.
    private func collectLocked(_ options: CollectionOptions, now: Int64) throws(AttacheError) -> CollectionReport {
        let dryRun = options.dryRun
        var report = CollectionReport(dryRun: dryRun)
        let pace = DeletionPace(perSecond: options.maxDeletesPerSecond)
        for row in try catalog.expired(at: now) {
            guard let id = AttachmentID(hex: row.id) else { continue }
            let path = location(id: row.id, fileExtension: row.ext)
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { Glibc.close(fd) }
                guard try AtomicFile.lock(fd, exclusive: true, nonBlocking: true) else {
                    report.leased.append(id)
                    continue
                }
                if !dryRun {
                    pace.wait()
                    unlink(path)
                }
            }
            if !dryRun { try catalog.delete(row.id) }
            report.removed.append(id)
            report.removedBytes += row.bytes
        }
        // Orphans, one prefix directory at a time against that prefix's rows. Writers rename and
        // record under the store lock this pass holds, so a file without a row is an orphan
        // whatever its age (the minimum age is for the shared store's uploads).
        for prefix in ObjectLayout.prefixes {
            let files = objectFiles(prefix: prefix)
            guard !files.isEmpty else { continue }
            var rows = RowCursor(prefix: prefix) { [catalog] (after, below) throws(AttacheError) in
                try catalog.objects(after: after, below: below, limit: RowCursor.pageSize)
            }
            for (path, id) in files {
                while let row = try rows.peek(), row.id < id { rows.advance() }
                if let row = try rows.peek(), row.id == id { continue }
                report.orphans += 1
                if !dryRun {
                    pace.wait()
                    unlink(path)
                }
            }
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

    func verify(
        prefix: String, options: VerifyOptions, problem: (VerifyProblem) -> Void
    ) throws(AttacheError) -> VerifyCounts {
        var counts = VerifyCounts()
        var rows = RowCursor(prefix: prefix) { [catalog] (after, below) throws(AttacheError) in
            try catalog.objects(after: after, below: below, limit: RowCursor.pageSize)
        }
        for (path, id) in objectFiles(prefix: prefix) {
            guard let row = try rows.match(id, counts: &counts, problem: problem) else {
                counts.orphans += 1
                problem(VerifyProblem(kind: .orphan, id: id, location: path))
                if !Self.hashMatches(path: path, id: id) {
                    counts.corrupt += 1
                    problem(VerifyProblem(kind: .corrupt, id: id, location: path))
                }
                continue
            }
            let hash = options.sampled(id)
            if path != location(id: id, fileExtension: row.ext)
                || !(hash ? Self.hashMatches(path: path, id: id, bytes: row.bytes) : Self.sizeMatches(path, row.bytes))
            {
                counts.corrupt += 1
                problem(VerifyProblem(kind: .corrupt, id: id, location: path))
            } else {
                counts.objects += 1
                if hash { counts.hashed += 1 }
            }
        }
        _ = try rows.match(nil, counts: &counts, problem: problem)
        return counts
    }

    private var progressPath: String { configuration.root + "/verify.progress" }

    func verifyProgress() throws(AttacheError) -> [String: VerifyCounts] {
        guard AtomicFile.exists(progressPath), let bytes = try? MediaBytes(contentsOfFile: progressPath) else {
            return [:]
        }
        let text = String(decoding: UnsafeRawBufferPointer(bytes.buffer), as: UTF8.self)
        var done: [String: VerifyCounts] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 6, ObjectLayout.prefixes.contains(String(fields[0])) else { continue }
            let numbers = fields.dropFirst().compactMap { Int($0) }
            guard numbers.count == 5 else { continue }
            var counts = VerifyCounts()
            (counts.objects, counts.hashed, counts.corrupt, counts.orphans, counts.missing) =
                (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4])
            done[String(fields[0])] = counts
        }
        return done
    }

    func recordVerifyProgress(prefix: String, counts: VerifyCounts) throws(AttacheError) {
        let line =
            "\(prefix) \(counts.objects) \(counts.hashed) \(counts.corrupt) \(counts.orphans) \(counts.missing)\n"
        let fd = Glibc.open(progressPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AtomicFile.failure("open", progressPath) }
        defer { Glibc.close(fd) }
        try AtomicFile.writeAll(fd, Array(line.utf8), path: progressPath)
    }

    func resetVerifyProgress() throws(AttacheError) {
        try AtomicFile.write([], to: progressPath)
    }

    var verifyConcurrency: Int { 1 }

    func temporaryFiles() -> Int { AtomicFile.list(configuration.root + "/tmp").count }

    /// The files of one prefix directory, in id order, with the id each name spells.
    private func objectFiles(prefix: String) -> [(path: String, id: String)] {
        let folder = configuration.root + "/objects/" + prefix
        return AtomicFile.list(folder).sorted().map { name in
            let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
            return (folder + "/" + name, prefix + stem)
        }
    }

    private static func sizeMatches(_ path: String, _ bytes: Int64) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && Int64(info.st_size) == bytes
    }

    private static func hashMatches(path: String, id: String, bytes: Int64? = nil) -> Bool {
        guard let data = try? MediaBytes(contentsOfFile: path) else { return false }
        if let bytes, Int64(data.count) != bytes { return false }
        return AttachmentID(bytes: Array(SHA256.hash(data: UnsafeRawBufferPointer(data.buffer))))?.hex == id
    }

    // MARK: Locking

    /// Runs `body` holding the store-wide lock (an flock on `store.lock`), which orders
    /// publishing, collection and key changes across threads and processes.
    private func withStoreLock<T>(_ body: () throws(AttacheError) -> T) throws(AttacheError) -> T {
        try Self.withStoreLock(root: configuration.root, body)
    }

    private static func withStoreLock<T>(root: String, _ body: () throws(AttacheError) -> T) throws(AttacheError) -> T {
        let fd = try AtomicFile.open(root + "/store.lock", O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
        defer { Glibc.close(fd) }
        _ = try AtomicFile.lock(fd, exclusive: true)
        return try body()
    }
}

/// The byte and object quotas, checked the same way by every backend.
package struct Quota {
    package let maxBytes: Int64
    package let maxObjects: Int

    package init(_ configuration: StoreConfiguration) {
        maxBytes = configuration.maxBytes
        maxObjects = configuration.maxObjects
    }

    /// The quota one more object of `bytes` would pass, or nil when it fits.
    package func passed(
        _ totals: (objects: Int, bytes: Int64, expired: Int), adding bytes: Int64
    ) -> AttacheError.Limit? {
        if totals.bytes + bytes > maxBytes { return .maxStoreBytes }
        if totals.objects + 1 > maxObjects { return .maxStoreObjects }
        return nil
    }

    package func full(bytes: Int64, limit: AttacheError.Limit) -> AttacheError {
        AttacheError(
            .storeFull,
            "storing \(bytes) bytes would pass the store quota of \(maxBytes) bytes / \(maxObjects) objects",
            limit: limit)
    }
}

/// A local object file held open under a shared `flock` (collection needs an exclusive one).
package final class FileObject: ObjectHandle {
    package let path: String
    private let fd: Mutex<Int32>

    package init(path: String, descriptor: Int32) {
        self.path = path
        fd = Mutex(descriptor)
    }

    deinit { close() }

    package var descriptor: Int32 { fd.withLock { $0 } }
    package var isOpen: Bool { fd.withLock { $0 >= 0 } }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int {
        let result: Result<Int, AttacheError> = fd.withLock { fd in
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

    package func close() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            Glibc.close(fd)
            fd = -1
        }
    }
}
