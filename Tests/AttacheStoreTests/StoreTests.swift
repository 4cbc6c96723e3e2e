import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheStore

@Suite struct StoreTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws { directory = try TemporaryDirectory() }

    func makeStore(maxBytes: Int64 = 1 << 30, maxObjects: Int = 1_000) throws -> AttachmentStore {
        let clock = self.clock
        return try AttachmentStore(
            StoreConfiguration(
                root: directory.path + "/store", maxBytes: maxBytes, maxObjects: maxObjects, defaultTTL: 3600,
                clock: { clock.now }))
    }

    @Test func putWritesOneContentAddressedObject() throws {
        let store = try makeStore()
        let bytes = randomBytes(10_000, seed: 1)
        let stored = try store.put(bytes, metadata: ObjectMetadata(kind: .png, width: 3, height: 2, frames: 1))
        #expect(stored.id.hex == sha256Hex(bytes))
        #expect(stored.relativePath == "objects/\(stored.id.hex.prefix(2))/\(stored.id.hex.dropFirst(2)).png")
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.path(of: stored)))) == bytes)
        #expect(stored.kind == .media(.png) && stored.bytes == 10_000 && stored.width == 3 && stored.frames == 1)
        #expect(stored.expires == clock.now + 3600)
        #expect(try store.stats().objects == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/store/tmp").isEmpty)
    }

    @Test func sameBytesAreStoredOnce() throws {
        let store = try makeStore()
        let bytes = randomBytes(5_000, seed: 2)
        let first = try store.put(bytes, metadata: ObjectMetadata(kind: .jpeg), ttl: 100)
        clock.advance(50)
        let second = try store.put(bytes, metadata: ObjectMetadata(kind: .jpeg), ttl: 100)
        #expect(first.id == second.id)
        #expect(second.expires == clock.now + 100, "a second put extends the expiry")
        #expect(second.created == first.created)
        let stats = try store.stats()
        #expect(stats.objects == 1 && stats.bytes == 5_000)
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path + "/store/objects")
            .filter { $0.hasSuffix(".jpg") }
        #expect(files.count == 1)
    }

    @Test func sourceMetadataRoundTrip() throws {
        let store = try makeStore()
        let url = "https://example.test/../../etc/passwd%2e%2e%2f" + String(repeating: "x", count: 10_000)
        let source = SourceReference(url: url, spec: "max-side=1024,q=85", etag: "\"abc\"", lastModified: "Tue, 1 Jan")
        let stored = try store.put(
            randomBytes(100, seed: 3), metadata: ObjectMetadata(kind: .gif, width: 10, height: 20, frames: 7),
            source: source, ttl: 60)
        let (found, reference) = try #require(try store.lookup(url: url, spec: "max-side=1024,q=85"))
        #expect(found == stored)
        #expect(reference == source)
        #expect(try store.lookup(url: url, spec: "max-side=512") == nil)
        // The path comes from the hash only, whatever the URL says.
        #expect(store.path(of: found).hasPrefix(directory.path + "/store/objects/"))
        #expect(!store.path(of: found).contains(".."))
        clock.advance(60)
        #expect(try store.lookup(url: url, spec: "max-side=1024,q=85") == nil, "expired objects are not found")

        // SQLite text stops at NUL, so a NUL could alias two URLs: refused before anything is written.
        let nul = SourceReference(url: "https://example.test/a\u{0}b", spec: "s")
        #expect(
            failure { try store.put(randomBytes(10, seed: 3), metadata: ObjectMetadata(kind: .gif), source: nul) }?
                .code == .invalidInput)
    }

    @Test func tokensOpenOnlyTheirAttachment() throws {
        let store = try makeStore()
        let a = try store.put(randomBytes(1_000, seed: 4), metadata: ObjectMetadata(kind: .jpeg))
        let b = try store.put(randomBytes(1_000, seed: 5), metadata: ObjectMetadata(kind: .jpeg))
        let tokenA = try store.issueToken(for: a.id, ttl: 600)

        let lease = try store.open(a.id, token: tokenA)
        #expect(try lease.read() == randomBytes(1_000, seed: 4))
        lease.close()
        #expect(!lease.isOpen)

        var reasons: [TokenRefusal] = []
        let error = failure { try store.open(b.id, token: tokenA) { reasons.append($0) } }
        #expect(error?.code == .accessDenied)
        #expect(reasons == [.wrongAttachment])

        // Never before its lifetime; at most one token window (37 s for 600 s) after it.
        clock.advance(599)
        #expect((try? store.open(a.id, token: tokenA))?.close() != nil)
        clock.advance(1 + AccessToken.window(forTTL: 600))
        reasons = []
        #expect(failure { try store.open(a.id, token: tokenA) { reasons.append($0) } }?.code == .accessDenied)
        #expect(reasons == [.expired])
        #expect(
            failure { try store.issueToken(for: AttachmentID(hex: String(repeating: "0", count: 64))!, ttl: 1) }?
                .code == .notFound)
    }

    @Test func revocationAndRetiredKeys() throws {
        let store = try makeStore()
        let a = try store.put(randomBytes(1_000, seed: 6), metadata: ObjectMetadata(kind: .png))
        let before = try store.issueToken(for: a.id, ttl: 600)
        _ = try store.rotateKeys()
        #expect((try? store.open(a.id, token: before)) != nil, "rotation keeps older tokens working")
        let after = try store.issueToken(for: a.id, ttl: 600)
        _ = try store.retireKey(1)
        var reasons: [TokenRefusal] = []
        #expect(failure { try store.open(a.id, token: before) { reasons.append($0) } }?.code == .accessDenied)
        #expect(reasons == [.retiredKey])
        #expect((try? store.open(a.id, token: after)) != nil)

        // A reopened store reads the rotated key file.
        let reopened = try makeStore()
        #expect(reopened.keyRing.currentKeyID == 2)
        #expect((try? reopened.open(a.id, token: after)) != nil)

        clock.advance(1)
        try store.revokeTokens(for: a.id)
        reasons = []
        #expect(failure { try store.open(a.id, token: after) { reasons.append($0) } }?.code == .accessDenied)
        #expect(reasons == [.revoked])
        // The other store's catalog connection, used above, sees the revocation at once.
        #expect(failure { try reopened.open(a.id, token: after) }?.code == .accessDenied)
        // One issued in the revocation's own second (and token window) is issued after it.
        let sameSecond = try store.issueToken(for: a.id, ttl: 600)
        #expect(sameSecond != after && (try? store.open(a.id, token: sameSecond)) != nil)
        clock.advance(1)
        let fresh = try store.issueToken(for: a.id, ttl: 600)
        #expect((try? store.open(a.id, token: fresh)) != nil, "tokens issued after revocation work")
    }

    @Test func collectionKeepsLeasedAndUnexpiredObjects() throws {
        let store = try makeStore()
        let short = try store.put(randomBytes(100, seed: 7), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        let leased = try store.put(randomBytes(200, seed: 8), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        let long = try store.put(randomBytes(300, seed: 9), metadata: ObjectMetadata(kind: .jpeg), ttl: 1000)
        let lease = try store.open(leased.id, token: try store.issueToken(for: leased.id, ttl: 10_000))
        clock.advance(10)

        let dry = try store.collect(dryRun: true)
        #expect(dry.removed == [short.id] && dry.leased == [leased.id])
        #expect(FileManager.default.fileExists(atPath: store.path(of: short)), "a dry run removes nothing")

        let report = try store.collect()
        #expect(report.removed == [short.id] && report.removedBytes == 100)
        #expect(report.leased == [leased.id])
        #expect(!FileManager.default.fileExists(atPath: store.path(of: short)))
        #expect(FileManager.default.fileExists(atPath: store.path(of: leased)))
        #expect(try lease.read() == randomBytes(200, seed: 8), "a lease keeps reading")
        lease.close()

        let second = try store.collect()
        #expect(second.removed == [leased.id])
        #expect(try store.attachment(long.id) != nil)
        #expect(try store.stats().objects == 1)
        #expect(try store.verify().isClean)
    }

    @Test func collectionSweepsOrphansAndAbandonedTemps() throws {
        let store = try makeStore()
        let root = directory.path + "/store"
        let kept = try store.put(randomBytes(100, seed: 10), metadata: ObjectMetadata(kind: .jpeg))
        // A crash between rename and record leaves a whole, unrecorded object.
        let orphan = randomBytes(50, seed: 11)
        let orphanHex = sha256Hex(orphan)
        try FileManager.default.createDirectory(
            atPath: root + "/objects/" + orphanHex.prefix(2), withIntermediateDirectories: true)
        let orphanPath = root + "/objects/\(orphanHex.prefix(2))/\(orphanHex.dropFirst(2)).jpg"
        try Data(orphan).write(to: URL(fileURLWithPath: orphanPath))
        // A crash mid-write leaves a temp file; one still being written holds its lock.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/tmp/abandoned.part"))
        let writing = open(root + "/tmp/writing.part", O_CREAT | O_WRONLY, 0o644)
        defer { close(writing) }
        #expect(flock(writing, LOCK_EX) == 0)

        let verify = try store.verify()
        #expect(verify.isClean && verify.objects == 1 && verify.orphans == [orphanPath] && verify.temps == 2)

        let first = try store.collect()
        #expect(first.orphans == 1 && first.temps == 0, "fresh temps are left alone")
        #expect(!FileManager.default.fileExists(atPath: orphanPath))
        clock.advance(120)
        let report = try store.collect()
        #expect(report.orphans == 0 && report.temps == 1)
        #expect(!FileManager.default.fileExists(atPath: root + "/tmp/abandoned.part"))
        #expect(FileManager.default.fileExists(atPath: root + "/tmp/writing.part"))
        #expect(try store.attachment(kept.id) != nil)
    }

    @Test func verifyFindsCorruptAndMissingObjects() throws {
        let store = try makeStore()
        let a = try store.put(randomBytes(100, seed: 12), metadata: ObjectMetadata(kind: .jpeg))
        let b = try store.put(randomBytes(100, seed: 13), metadata: ObjectMetadata(kind: .jpeg))
        #expect(try store.verify().isClean)
        var bytes = randomBytes(100, seed: 12)
        bytes[50] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: store.path(of: a)))
        try FileManager.default.removeItem(atPath: store.path(of: b))
        let report = try store.verify()
        #expect(!report.isClean)
        #expect(report.corrupt == [store.path(of: a)])
        #expect(report.missing == [b.id.hex])
    }

    @Test func aTenantsQuotaIsItsOwnAndCollectsOnlyWhatExpired() throws {
        let store = try makeStore()
        let owner = StoreOwner(id: "a", maxBytes: 25_000)
        _ = try store.put(randomBytes(10_000, seed: 300), metadata: ObjectMetadata(kind: .jpeg), ttl: 10, owner: owner)
        _ = try store.put(randomBytes(10_000, seed: 301), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        var refusal: AttacheError?
        do {
            _ = try store.put(randomBytes(10_000, seed: 302), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        } catch {
            refusal = error
        }
        #expect(
            refusal?.code == .tenantQuotaExceeded && refusal?.limit == .tenantStoreBytes,
            "\(String(describing: refusal))")
        #expect(refusal?.message.contains("tenant a's store quota of 25000 bytes") == true)
        // The store itself is far from full: another tenant, and callers without one, still write.
        _ = try store.put(
            randomBytes(10_000, seed: 303), metadata: ObjectMetadata(kind: .jpeg), owner: StoreOwner(id: "b"))
        _ = try store.put(randomBytes(10_000, seed: 304), metadata: ObjectMetadata(kind: .jpeg))
        // A copy already stored (by anyone) costs the tenant nothing.
        _ = try store.put(randomBytes(10_000, seed: 303), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        #expect(try store.stats().objects == 4, "the refused put left nothing")
        #expect(try store.stats(tenant: "a") == (2, 20_000) && (try store.stats(tenant: "b")) == (1, 10_000))
        // Once its own first object has expired, the put collects it (expired objects only) and fits.
        clock.advance(11)
        _ = try store.put(randomBytes(10_000, seed: 302), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        #expect(try store.stats().objects == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/store/tmp").isEmpty)
    }

    @Test func aPurgedTenantLosesWhatItAloneHeldAndHandsOnWhatOthersHold() throws {
        let store = try makeStore()
        let (a, b) = (StoreOwner(id: "a"), StoreOwner(id: "b"))
        func put(_ size: Int, _ seed: UInt64, _ owner: StoreOwner?) throws -> StoredAttachment {
            try store.put(randomBytes(size, seed: seed), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        }
        let alone = try put(1_000, 400, a)
        let token = try store.issueToken(for: alone.id, ttl: 1_000)
        // b stores the same bytes itself; b is sent a's copy (a cache hit); a caller with no
        // tenant is sent another; b's own object.
        let both = try put(2_000, 401, a)
        _ = try put(2_000, 401, b)
        let sent = try put(3_000, 402, a)
        try store.hold([sent], for: "b")
        let untenanted = try put(4_000, 403, a)
        try store.hold([untenanted], for: nil)
        let own = try put(5_000, 404, b)
        #expect(try store.stats(tenant: "a") == (4, 10_000) && (try store.stats(tenant: "b")) == (1, 5_000))

        let report = try store.purge(tenant: "a")
        #expect(report.counts == PurgeCounts(expired: 1, expiredBytes: 1_000, handedOver: 3), "\(report)")
        #expect(report.collection.removed == [alone.id] && report.collection.leased.isEmpty)
        #expect(try store.attachment(alone.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.path(of: alone)))
        #expect(failure { try store.open(alone.id, token: token) } != nil, "its token opens nothing")
        for kept in [both, sent, untenanted, own] { #expect(try store.attachment(kept.id) != nil) }
        // What b holds is counted as b's now; the copy only a caller with no tenant holds is no one's.
        #expect(try store.stats(tenant: "a") == (0, 0) && (try store.stats(tenant: "b")) == (3, 10_000))
        #expect(try store.attachment(both.id)?.tenant == "b")
        #expect(try store.attachment(untenanted.id)?.tenant == nil)

        #expect(try store.purge(tenant: "a").counts == PurgeCounts(expired: 0, expiredBytes: 0, handedOver: 0))
        let second = try store.purge(tenant: "b")
        #expect(second.counts == PurgeCounts(expired: 3, expiredBytes: 10_000, handedOver: 0), "\(second)")
        let verify = try store.verify()
        #expect(verify.isClean && verify.objects == 1)
        #expect(try store.attachment(untenanted.id) != nil)
    }

    @Test func quotaCollectsFirstThenRefuses() throws {
        let store = try makeStore(maxBytes: 10_000, maxObjects: 100)
        _ = try store.put(randomBytes(4_000, seed: 14), metadata: ObjectMetadata(kind: .jpeg), ttl: 10)
        _ = try store.put(randomBytes(4_000, seed: 15), metadata: ObjectMetadata(kind: .jpeg), ttl: 1000)
        let full = failure { try store.put(randomBytes(4_000, seed: 16), metadata: ObjectMetadata(kind: .jpeg)) }
        #expect(full?.code == .storeFull)
        #expect(full?.limit?.rawValue == "max_store_bytes")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/store/tmp").isEmpty)
        #expect(try store.stats().bytes == 8_000)

        // Found at its quota: the next second's payloads are refused before any work.
        #expect(failure { try store.checkRoom() }?.limit?.rawValue == "max_store_bytes")
        clock.advance(1)
        #expect(failure { try store.checkRoom() } == nil, "one payload a second tries again")

        clock.advance(10)
        let stored = try store.put(randomBytes(4_000, seed: 16), metadata: ObjectMetadata(kind: .jpeg))
        #expect(try store.attachment(stored.id) != nil, "the expired object was collected to make room")
        #expect(try store.stats().bytes == 8_000)

        let counted = try makeStore(maxBytes: 1 << 30, maxObjects: 2)
        #expect(
            failure { try counted.put(randomBytes(10, seed: 17), metadata: ObjectMetadata(kind: .png)) }?
                .code == .storeFull)
    }

    @Test func concurrentWritersReadersAndCollection() async throws {
        let store = try makeStore(maxBytes: 1 << 30, maxObjects: 100_000)
        let clock = self.clock
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for i in 0..<40 {
                        let bytes = randomBytes(2_000 + i, seed: UInt64(writer * 1000 + i))
                        let stored = try store.put(bytes, metadata: ObjectMetadata(kind: .jpeg), ttl: 5)
                        // Read it back under a lease while collection runs beside us.
                        if let token = try? store.issueToken(for: stored.id, ttl: 1_000),
                            let lease = try? store.open(stored.id, token: token)
                        {
                            #expect(try lease.read() == bytes)
                            lease.close()
                        }
                    }
                }
            }
            group.addTask {
                for _ in 0..<40 {
                    clock.advance(1)
                    _ = try store.collect()
                }
            }
            try await group.waitForAll()
        }
        let report = try store.verify()
        #expect(report.isClean && report.orphans.isEmpty && report.temps == 0)
        clock.advance(10)
        _ = try store.collect()
        #expect(try store.stats().objects == 0)
        #expect(try store.verify().objects == 0)
    }
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    // An independent SHA-256 (sha256sum) so the store's own hashing is not checked against itself.
    let directory = try! TemporaryDirectory()
    let path = directory.path + "/bytes"
    try! Data(bytes).write(to: URL(fileURLWithPath: path))
    return String(try! runChild("/usr/bin/sha256sum", [path]).text.prefix(64))
}
