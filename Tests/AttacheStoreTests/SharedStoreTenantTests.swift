import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheStore
@testable import AttacheStoreShared

/// Tenants in a shared store: quotas across replicas and the purge of one that leaves.
extension SharedStoreTests {
    /// `body`, tried again while the object store does not answer in time (`store_unavailable`:
    /// nothing was stored and the quota's room given back, so a caller tries again): on a busy
    /// machine the local object store can stall past the client's 10 s twice in a row.
    static func retryingStalls<T>(_ body: () throws(AttacheError) -> T) throws(AttacheError) -> T {
        for _ in 0..<4 {
            do throws(AttacheError) {
                return try body()
            } catch {
                guard error.code == .storeUnavailable else { throw error }
            }
        }
        return try body()
    }

    @Test func aTenantsQuotaHoldsAcrossReplicasAndLeavesTheOthersAlone() async throws {
        let stores = [try open(), try open()]
        let owner = StoreOwner(id: "a", maxBytes: 1_000_000, maxObjects: 5)
        // Both replicas write distinct objects for tenant "a" at once: never more than its five.
        let outcomes = try await withThrowingTaskGroup(of: AttacheError.Code?.self) { group in
            for index in 0..<16 {
                let store = stores[index % 2]
                group.addTask {
                    do throws(AttacheError) {
                        _ = try Self.retryingStalls { () throws(AttacheError) in
                            try store.put(
                                randomBytes(10_000, seed: 100 + UInt64(index)), metadata: ObjectMetadata(kind: .jpeg),
                                owner: owner)
                        }
                        return nil
                    } catch {
                        return error.code
                    }
                }
            }
            return try await group.reduce(into: [AttacheError.Code?]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 5, "\(outcomes)")
        #expect(outcomes.compactMap { $0 }.allSatisfy { $0 == .tenantQuotaExceeded }, "\(outcomes)")
        let shared = try #require(stores[0].backend as? SharedBackend)
        #expect(try shared.totals(tenant: "a") == (5, 50_000) && (try stores[1].stats(tenant: "a")) == (5, 50_000))
        // Another tenant is not touched by it, and a copy "a" already stored costs "a" nothing.
        let other = StoreOwner(id: "b", maxObjects: 1)
        _ = try Self.retryingStalls { () throws(AttacheError) in
            try stores[1].put(randomBytes(10_000, seed: 200), metadata: ObjectMetadata(kind: .jpeg), owner: other)
        }
        _ = try Self.retryingStalls { () throws(AttacheError) in
            try stores[0].put(randomBytes(10_000, seed: 100), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        }
        #expect(try stores[0].stats().objects == 6)
        let verify = try stores[1].verify()
        #expect(verify.isClean && verify.objects == 6, "refused puts left no row: \(verify)")
        // Collected objects give their owner its room back.
        clock.advance(Int64(stores[0].configuration.defaultTTL) + 1)
        _ = try stores[0].collect()
        #expect(try shared.totals(tenant: "a") == (0, 0) && (try shared.totals(tenant: "b")) == (0, 0))
    }

    @Test func aPurgeOnOneReplicaRemovesWhatTheTenantAloneHeldFromTheBucketForBoth() throws {
        let (one, two) = (try open(), try open())
        let (a, b) = (StoreOwner(id: "a"), StoreOwner(id: "b", maxObjects: 10))
        func put(_ store: AttachmentStore, _ size: Int, _ seed: UInt64, _ owner: StoreOwner?) throws -> StoredAttachment
        {
            try store.put(randomBytes(size, seed: seed), metadata: ObjectMetadata(kind: .jpeg), owner: owner)
        }
        let alone = [try put(one, 1_000, 500, a), try put(two, 1_500, 501, a)]
        let both = try put(one, 2_000, 502, a)
        _ = try put(two, 2_000, 502, b)
        let sent = try put(one, 3_000, 503, a)
        try two.hold([sent], for: "b")
        let own = try put(two, 5_000, 504, b)
        let token = try one.issueToken(for: alone[1].id, ttl: 1_000)
        #expect(try one.stats(tenant: "a") == (4, 7_500) && (try two.stats(tenant: "b")) == (1, 5_000))

        let report = try two.purge(tenant: "a")
        #expect(report.counts == PurgeCounts(expired: 2, expiredBytes: 2_500, handedOver: 2), "\(report)")
        #expect(Set(report.collection.removed) == Set(alone.map(\.id)))
        let shared = try #require(one.backend as? SharedBackend)
        for gone in alone {
            #expect(try one.attachment(gone.id) == nil)
            #expect(try !shared.blobs.exists(key: SharedBackend.objectKey(gone.id.hex, "jpg")))
        }
        #expect(failure { try one.open(alone[1].id, token: token) } != nil, "its token opens nothing")
        for kept in [both, sent, own] {
            let lease = try one.open(kept.id, token: try one.issueToken(for: kept.id, ttl: 100))
            #expect(try lease.read().count == Int(kept.bytes))
            lease.close()
        }
        #expect(try one.stats(tenant: "a") == (0, 0) && (try one.stats(tenant: "b")) == (3, 10_000))
        let verify = try one.verify()
        #expect(verify.isClean && verify.objects == 3, "\(verify)")
    }
}
