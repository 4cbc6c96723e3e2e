import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheStore
@testable import AttacheStoreShared

/// The shared backend over the real PostgreSQL and radosgw that `scripts/test.sh` starts: two
/// store instances stand for two replicas (the process-level tests are in the service suites).
@Suite(.enabled(if: SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedStoreTests {
    let fresh: SharedServers.Fresh
    let clock = TestClock()

    init() throws { fresh = try SharedServers.fresh() }

    func open(maxBytes: Int64 = 1 << 30, maxObjects: Int = 1_000) throws -> AttachmentStore {
        let clock = self.clock
        return try AttachmentStore.open(
            fresh.configuration(maxBytes: maxBytes, maxObjects: maxObjects, clock: { clock.now }))
    }

    @Test func storedThroughOneIsReadThroughTheOtherWithRanges() throws {
        let (a, b) = (try open(), try open())
        let bytes = randomBytes(3 << 20, seed: 1)
        let stored = try a.put(bytes, metadata: ObjectMetadata(kind: .jpeg, width: 4, height: 3))
        #expect(stored.id.hex == sha256Hex(bytes))
        #expect(a.path(of: stored).hasPrefix(fresh.blobs + "/objects/"))
        let token = try a.issueToken(for: stored.id, ttl: 600)
        let lease = try b.open(stored.id, token: token)
        defer { lease.close() }
        #expect(lease.attachment == stored)
        #expect(lease.sendableDescriptor == -1, "a bucket object has no local descriptor")
        #expect(try lease.read() == bytes)
        var window = [UInt8](repeating: 0, count: 1000)
        let read = try window.withUnsafeMutableBytes { try lease.read(into: $0, at: 2_000_000) }
        #expect(read == 1000 && window == Array(bytes[2_000_000..<2_001_000]))
        let tail = try window.withUnsafeMutableBytes { try lease.read(into: $0, at: Int64(bytes.count - 10)) }
        #expect(tail == 10 && Array(window.prefix(10)) == Array(bytes.suffix(10)))
        #expect(try b.contents(of: stored) == bytes)
        #expect(try b.lookup(url: "https://x/none", spec: "s") == nil)
    }

    @Test func localCopiesSpareTheGetAndFollowTheCatalog() throws {
        let directory = try TemporaryDirectory()
        let clock = self.clock
        var configuration = try fresh.configuration(clock: { clock.now })
        configuration.shared!.cacheDirectory = directory.path + "/a"
        let a = try AttachmentStore.open(configuration)
        configuration.shared!.cacheDirectory = directory.path + "/b"
        let b = try AttachmentStore.open(configuration)
        let bytes = randomBytes(300_000, seed: 21)
        let stored = try a.put(bytes, metadata: ObjectMetadata(kind: .png), ttl: 50)
        let id = stored.id.hex
        let copy = "/\(id.prefix(2))/\(id.dropFirst(2)).png"
        #expect(FileManager.default.fileExists(atPath: directory.path + "/a" + copy), "the writer keeps a copy")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/b" + copy))
        let token = try a.issueToken(for: stored.id, ttl: 600)
        let lease = try b.open(stored.id, token: token)
        #expect(lease.sendableDescriptor >= 0, "served from the copy, which the kernel can send")
        #expect(try lease.read() == bytes)
        lease.close()
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: directory.path + "/b" + copy))) == bytes)
        // Within a second of a read, another open needs no query at all.
        let again = try #require(try b.openWithoutWaiting(stored.id, token: token))
        again.close()
        // The catalog still decides: a revocation elsewhere is honoured within a second (the
        // row read for the last download is remembered that long), waited for as an event.
        try a.revokeTokens(for: stored.id)
        var refusal: TokenRefusal?
        for _ in 0..<300 where refusal != .revoked {
            _ = try? b.open(stored.id, token: token) { refusal = $0 }
            if refusal != .revoked { usleep(10_000) }
        }
        #expect(refusal == .revoked)
        clock.advance(100)
        #expect(try a.collect().removed == [stored.id])
        #expect(throws: AttacheError.self) { try b.open(stored.id, token: token) }
        #expect(try b.attachment(stored.id) == nil)
        // Once the remembered row is older than a second, the catalog says it is gone and the
        // copy goes too.
        for _ in 0..<300 where FileManager.default.fileExists(atPath: directory.path + "/b" + copy) {
            _ = try? b.open(stored.id, token: token)
            usleep(10_000)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/b" + copy), "a collected object's copy goes")
    }

    @Test func sourcesAndExpiryAreShared() throws {
        let (a, b) = (try open(), try open())
        let bytes = randomBytes(5000, seed: 2)
        let source = SourceReference(url: "https://example.com/a.jpg", spec: "jpeg:1024", etag: "\"v1\"")
        let stored = try a.put(bytes, metadata: ObjectMetadata(kind: .jpeg), source: source, ttl: 100)
        let found = try #require(try b.lookup(url: source.url, spec: source.spec))
        #expect(found.0.id == stored.id && found.1.etag == "\"v1\"")
        // Storing the same bytes again (through the other) extends the expiry, one object.
        let again = try b.put(bytes, metadata: ObjectMetadata(kind: .jpeg), ttl: 500)
        #expect(again.id == stored.id && again.expires == stored.created + 500)
        #expect(try a.stats().objects == 1)
        clock.advance(501)
        #expect(try b.attachment(stored.id) == nil, "expired")
        let collected = try a.collect()
        #expect(collected.removed == [stored.id] && collected.removedBytes == 5000)
        #expect(try b.stats().objects == 0 && b.stats().bytes == 0)
        #expect(try b.verify().isClean)
        #expect(try b.verify().objects == 0)
    }

    @Test func rotationAndRetirementOnOneAreHonouredByTheOther() throws {
        let (a, b) = (try open(), try open())
        let stored = try a.put(randomBytes(1000, seed: 3), metadata: ObjectMetadata(kind: .png))
        let old = try b.issueToken(for: stored.id, ttl: 600)
        let before = a.keyRing.currentKeyID
        let rotated = try a.rotateKeys()
        #expect(rotated.currentKeyID == before + 1)
        // A token signed with the new key opens through the other as soon as its next look at
        // the key ring (an unknown key makes it look, at most every 100 ms).
        let new = try a.issueToken(for: stored.id, ttl: 600)
        var opened = false
        for _ in 0..<200 where !opened {
            opened = (try? b.open(stored.id, token: new)) != nil
            if !opened { usleep(20_000) }
        }
        #expect(opened)
        #expect((try? b.open(stored.id, token: old)) != nil, "the old key still verifies")
        _ = try a.retireKey(before)
        // The other sees the retirement within its one-second look (waiting on the event: the
        // version it reads), never by a guessed sleep.
        var refusal: TokenRefusal?
        for _ in 0..<200 where refusal != .retiredKey {
            refusal = nil
            _ = try? b.open(stored.id, token: old) { refusal = $0 }
            if refusal != .retiredKey { usleep(20_000) }
        }
        #expect(refusal == .retiredKey)
        // Revocation, too, is one row both read.
        try a.revokeTokens(for: stored.id)
        var revoked: TokenRefusal?
        #expect(throws: AttacheError.self) { try b.open(stored.id, token: new) { revoked = $0 } }
        #expect(revoked == .revoked)
    }

    @Test func concurrentPutsOfTheSameBytesMakeOneObject() async throws {
        let stores = [try open(), try open()]
        let bytes = randomBytes(200_000, seed: 4)
        let ids = try await withThrowingTaskGroup(of: AttachmentID.self) { group in
            for index in 0..<16 {
                let store = stores[index % 2]
                group.addTask { try store.put(bytes, metadata: ObjectMetadata(kind: .gif)).id }
            }
            return try await group.reduce(into: Set<AttachmentID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        let stats = try stores[0].stats()
        #expect(stats.objects == 1 && stats.bytes == 200_000)
        let verify = try stores[1].verify()
        #expect(verify.isClean && verify.objects == 1 && verify.orphans.isEmpty)
    }

    @Test func collectionLeavesLeasedObjectsAndRemovesOrphans() throws {
        let (a, b) = (try open(), try open())
        let held = try a.put(randomBytes(4000, seed: 5), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        let free = try a.put(randomBytes(4000, seed: 6), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        let lease = try b.open(held.id, token: try b.issueToken(for: held.id, ttl: 600))
        // Bytes uploaded by a writer that died before its commit: no row, no lock.
        let orphan = randomBytes(3000, seed: 7)
        let shared = try #require(a.backend as? SharedBackend)
        let orphanID = sha256Hex(orphan)
        try orphan.withUnsafeBytes { try shared.blobs.put(key: SharedBackend.objectKey(orphanID, "jpg"), bytes: $0) }
        #expect(try a.verify().orphans.count == 1)
        clock.advance(11)
        // An object uploaded in the last 15 minutes without its row is not an orphan yet: its
        // upload may be about to commit.
        let dry = try a.collect(dryRun: true)
        #expect(dry.removed == [free.id] && dry.leased == [held.id] && dry.orphans == 0)
        #expect(try a.verify().objects == 2, "a dry run removes nothing")
        let report = try a.collect()
        #expect(report.removed == [free.id] && report.leased == [held.id] && report.orphans == 0)
        #expect(try lease.read().count == 4000, "the leased object is still whole")
        lease.close()
        // Its age is the object store's own (LastModified against the listing's Date), so the
        // store's clock moving changes nothing; with no minimum age it goes.
        clock.advance(900)
        #expect(try a.collect(CollectionOptions(dryRun: true)).orphans == 0)
        let after = try a.collect(CollectionOptions(minOrphanAge: .zero))
        #expect(after.removed == [held.id] && after.orphans == 1)
        let verify = try b.verify()
        #expect(verify.isClean && verify.objects == 0 && verify.orphans.isEmpty)
    }

    @Test func quotasCountEveryReplicasObjects() throws {
        let (a, b) = (try open(maxBytes: 10_000, maxObjects: 3), try open(maxBytes: 10_000, maxObjects: 3))
        _ = try a.put(randomBytes(4000, seed: 8), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        _ = try b.put(randomBytes(4000, seed: 9), metadata: ObjectMetadata(kind: .jpeg), ttl: 100)
        #expect(throws: AttacheError.self) {
            try a.put(randomBytes(4000, seed: 10), metadata: ObjectMetadata(kind: .jpeg))
        }
        #expect(try b.verify().objects == 2, "a refused put leaves nothing behind")
        // Once the first has expired, the put collects it and fits.
        clock.advance(11)
        _ = try a.put(randomBytes(4000, seed: 10), metadata: ObjectMetadata(kind: .jpeg))
        let stats = try b.stats()
        #expect(stats.objects == 2 && stats.bytes == 8000)
    }

    @Test func verifyFindsDamagedAndMissingBytes() throws {
        let store = try open()
        let a = try store.put(randomBytes(2000, seed: 11), metadata: ObjectMetadata(kind: .png))
        let b = try store.put(randomBytes(2000, seed: 12), metadata: ObjectMetadata(kind: .png))
        let shared = try #require(store.backend as? SharedBackend)
        let damaged = randomBytes(2000, seed: 13)
        try damaged.withUnsafeBytes { try shared.blobs.put(key: SharedBackend.objectKey(a.id.hex, "png"), bytes: $0) }
        try shared.blobs.delete(key: SharedBackend.objectKey(b.id.hex, "png"))
        let report = try store.verify()
        #expect(report.corrupt == [store.path(of: a)])
        #expect(report.missing == [b.id.hex])
        #expect(!report.isClean)
    }

    /// `attache store storm` writers (the same put a replica makes) killed with SIGKILL 20
    /// times, each after 1–3 reported objects plus a random sliver of its next upload: every
    /// recorded object is whole, and once the dead writers' sessions are gone (their locks
    /// released: the event waited for), one collection leaves no orphan.
    @Test func killedWritersLeaveNoVisiblePartAndNoOrphanAfterCollection() throws {
        var generator = SystemRandomNumberGenerator()
        var reported = 0
        // Each writer is a new process whose first act is to connect to PostgreSQL while the rest
        // of the suite runs beside it: on a machine kept busy that once took longer than the
        // product's 10 s bound (libpq's "timeout expired"). What is tested is what a kill leaves
        // behind, so the writers' connections may take a minute.
        let arguments = fresh.arguments(connectTimeout: 60)
        for _ in 0..<20 {
            reported += try killStormWriter(
                ["--count", "100000", "--max-size", "1048576"] + arguments, environment: fresh.childEnvironment,
                pause: 0...3_000, using: &generator)
        }
        let store = try open()
        let report = try store.verify()
        #expect(report.corrupt.isEmpty && report.missing.isEmpty, "\(report)")
        #expect(report.objects >= reported)
        // A dead client's session ends when PostgreSQL notices its socket closed.
        var locks = "?"
        for _ in 0..<500 where locks != "0" {
            locks = try fresh.sql(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    + "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())")
            if locks != "0" { usleep(10_000) }
        }
        #expect(locks == "0")
        let collected = try store.collect(CollectionOptions(minOrphanAge: .zero))
        #expect(collected.orphans == report.orphanCount && collected.removed.isEmpty)
        let after = try store.verify()
        #expect(after.isClean && after.orphans.isEmpty && after.objects == report.objects)
        print("after 20 SIGKILLs: \(report.objects) whole objects, \(report.orphanCount) orphans collected")
    }

    /// The object store is reached directly: a proxy variable (pointing nowhere) changes nothing.
    @Test func proxyVariablesDoNotReachTheObjectStore() throws {
        var environment = fresh.childEnvironment
        environment["http_proxy"] = "http://127.0.0.1:1"
        environment["HTTPS_PROXY"] = "http://127.0.0.1:1"
        let put = try runChild(
            try attacheExecutable(), ["store", "put", "--json", Paths.samples + "/gray.jpg"] + fresh.arguments,
            environment: environment, outputs: .merged)
        #expect(put.status == 0 && put.text.contains("\"ok\":true"), "\(put.text)")
    }

    /// PostgreSQL restarting or failing over cuts every connection: the next calls reconnect
    /// (a statement outside a transaction is retried once on a fresh connection), and leases
    /// taken afterwards still keep collection away.
    @Test func cutConnectionsAreReplacedOnTheNextCall() throws {
        let store = try open()
        let bytes = randomBytes(200_000, seed: 31)
        let stored = try store.put(
            bytes, metadata: ObjectMetadata(kind: .jpeg, width: 4, height: 3),
            source: SourceReference(url: "https://x/cut.jpg", spec: "s", etag: nil, lastModified: nil))
        let token = try store.issueToken(for: stored.id, ttl: 600)
        let cut = try fresh.sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                + "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        #expect((Int(cut) ?? 0) > 0, "the store's connections were there to cut")

        #expect(try store.lookup(url: "https://x/cut.jpg", spec: "s")?.0 == stored)
        let lease = try store.open(stored.id, token: token)
        #expect(try lease.read() == bytes)
        let other = randomBytes(100_000, seed: 32)
        let second = try store.put(other, metadata: ObjectMetadata(kind: .png))
        #expect(try store.contents(of: second) == other)
        clock.advance(400 * 86_400)
        let collected = try store.collect()
        #expect(!collected.removed.contains(stored.id), "the open lease keeps its object")
        #expect(collected.removed.contains(second.id))
        lease.close()
    }

    /// A download lease is a shared lock of its connection's session. One taken before that
    /// session was cut went with it; closing it afterwards must not give back the lock a later
    /// download took in the new session of the same connection.
    @Test func aLeaseFromBeforeACutDoesNotReleaseOneTakenAfter() throws {
        let clock = self.clock
        var configuration = try fresh.configuration(clock: { clock.now })
        configuration.shared!.cacheDirectory = nil
        configuration.shared!.leaseConnections = 1
        let store = try AttachmentStore.open(configuration)
        let bytes = randomBytes(50_000, seed: 33)
        let stored = try store.put(bytes, metadata: ObjectMetadata(kind: .png), ttl: 100)
        let token = try store.issueToken(for: stored.id, ttl: 100_000)
        let before = try store.open(stored.id, token: token)
        _ = try fresh.sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                + "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        let after = try store.open(stored.id, token: token)
        before.close()
        clock.advance(101)
        #expect(try store.collect().removed.isEmpty, "the download opened after the cut holds its object")
        #expect(try after.read() == bytes)
        after.close()
        #expect(try store.collect().removed == [stored.id])
    }

    /// A writer's lock goes with its session: when the session ends between the upload and
    /// the commit, collection may already have taken the bytes as an orphan, so the put fails
    /// and records nothing; the next put of the same bytes stores them whole.
    @Test func aWaitingWorkerIsWokenWhenAnotherRecordsAnItem() throws {
        let store = try open()
        let (a, b) = (
            try CampaignQueue(store: store, campaign: "wake"), try CampaignQueue(store: store, campaign: "wake")
        )
        let other = try CampaignQueue(store: store, campaign: "other")
        func jobs(_ count: Int) -> [QueuedJob] {
            (0..<count).map {
                QueuedJob(
                    seq: $0, reference: "r\($0)", url: nil, outputName: "\($0).json", payload: Array("{}".utf8),
                    readError: nil)
            }
        }
        try a.enqueue(jobs(2), total: 2)
        try other.enqueue(jobs(1), total: 1)
        #expect(try a.claim(limit: 5).map(\.seq) == [0, 1])
        #expect(try b.claim(limit: 5).isEmpty)
        let status = try b.status()
        #expect(status.running == 2 && status.pending == 0)
        #expect((status.untilNextLeaseEnds ?? .zero) > .seconds(20), "a's leases run 30 s")
        // Nothing recorded: the wait runs out; another campaign's record does not end it either.
        #expect(!b.waitForCompletion(timeout: .milliseconds(20)))
        #expect(try other.claim(limit: 1).count == 1)
        #expect(try other.finish(0, record: "{}", failed: false, output: nil))
        #expect(!b.waitForCompletion(timeout: .milliseconds(20)))
        #expect(!(try b.finish(1, record: "{}", failed: false, output: nil)), "b does not hold it")
        // a records an item while b waits (up to two minutes): b is woken by the notification.
        let woken = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let result = b.waitForCompletion(timeout: .seconds(120))
            woken.withLock { $0 = result }
            done.signal()
        }.start()
        #expect(try a.finish(0, record: "{}", failed: false, output: nil))
        done.wait()
        #expect(woken.withLock { $0 } == true)
        #expect(try b.status().done == 1)
    }

    @Test func anUploadWhoseSessionEndedIsNotRecorded() throws {
        let store = try open()
        let bytes = randomBytes(60_000, seed: 34)
        let id = sha256Hex(bytes)
        let fresh = self.fresh
        SharedBackend.uploaded.withLock { hook in
            hook = { uploaded in
                guard uploaded == id else { return }
                _ = try? fresh.sql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        + "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            }
        }
        defer { SharedBackend.uploaded.withLock { $0 = nil } }
        #expect {
            _ = try store.put(bytes, metadata: ObjectMetadata(kind: .png))
        } throws: { error in
            (error as? AttacheError)?.code == .storeUnavailable
        }
        #expect(try fresh.sql("SELECT count(*) FROM attache_object") == "0", "no row points at the bytes")
        SharedBackend.uploaded.withLock { $0 = nil }
        let stored = try store.put(bytes, metadata: ObjectMetadata(kind: .png))
        #expect(try store.contents(of: stored) == bytes)
        #expect(try store.verify().isClean)
    }

    @Test func aWrongKeyRingKeyIsAClearError() throws {
        _ = try open()
        var other = try fresh.configuration()
        other.shared!.keyRingKey = [UInt8](repeating: 7, count: 32)
        #expect {
            _ = try AttachmentStore.open(other)
        } throws: { error in
            (error as? AttacheError)?.code == .storeCorrupt
                && (error as? AttacheError)?.message.contains("ATTACHE_KEYRING_KEY") == true
        }
    }
}

/// Configuration mistakes, found before anything is opened (no servers needed).
@Suite struct SharedStoreConfigurationTests {
    @Test func everyMissingPartIsNamedAtOnce() {
        #expect {
            _ = try SharedStoreConfiguration.parse(store: "postgres://db/x", blobs: "s3://B", environment: [:])
        } throws: { error in
            let message = (error as? AttacheError)?.message ?? ""
            return message.contains("'B' is not a bucket name") && message.contains("ATTACHE_S3_ENDPOINT")
                && message.contains("AWS_ACCESS_KEY_ID") && message.contains("AWS_SECRET_ACCESS_KEY")
                && message.contains("ATTACHE_KEYRING_KEY")
        }
        #expect {
            _ = try SharedStoreConfiguration.parse(store: "postgres://db/x", blobs: nil, environment: [:])
        } throws: { error in
            (error as? AttacheError)?.message.contains("--blobs s3://bucket is required") == true
        }
        let environment = [
            "ATTACHE_S3_ENDPOINT": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
            "ATTACHE_KEYRING_KEY": Data(repeating: 1, count: 32).base64EncodedString(),
        ]
        let parsed = try? SharedStoreConfiguration.parse(
            store: "postgres://u:secret@db:5432/x", blobs: "s3://bucket-1/pre", environment: environment)
        #expect(parsed?.blobs.bucket == "bucket-1" && parsed?.blobs.prefix == "pre/")
        #expect(parsed?.blobs.region == "us-east-1")
        #expect(parsed?.postgresDescription == "postgres://u@db:5432/x", "no password in logs")
    }

    @Test func unreachableServersAreStoreUnavailable() throws {
        let environment = [
            "ATTACHE_S3_ENDPOINT": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
            "ATTACHE_KEYRING_KEY": Data(repeating: 1, count: 32).base64EncodedString(),
        ]
        var configuration = StoreConfiguration(root: "")
        configuration.shared = try SharedStoreConfiguration.parse(
            store: "postgres://nobody@127.0.0.1:9/none?connect_timeout=2", blobs: "s3://bucket",
            environment: environment)
        #expect {
            _ = try AttachmentStore.open(configuration)
        } throws: { error in
            (error as? AttacheError)?.code == .storeUnavailable
                && (error as? AttacheError)?.message.contains("cannot connect to PostgreSQL") == true
        }
    }

    @Test func queriesAreSortedAndEncodedForSigning() {
        let client = S3Client(
            S3Location(endpoint: "http://h:1/", bucket: "b", region: "r", accessKey: "a", secretKey: "s"))
        #expect(
            client.url(
                key: "objects/a b+c", query: [("prefix", "objects/"), ("list-type", "2"), ("a1", "x"), ("a", "y")])
                == "http://h:1/b/objects/a%20b%2Bc?a=y&a1=x&list-type=2&prefix=objects%2F")
    }
}
