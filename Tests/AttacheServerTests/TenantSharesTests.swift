import AttacheFetch
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// The admission places are shared by API key: a key sending as fast as it can never leaves
/// another key's payload without a place, and a lone key may use all but the others' reserves.
@Suite struct TenantSharesTests {
    @Test("each key's first places are its own; the rest go to whoever comes first")
    func reservesHoldAgainstAKeyThatTakesEverything() {
        var shares = TenantShares(total: 40, shares: ["key-0": 1, "key-1": 1])
        #expect(shares.reserve("key-0") == 4 && shares.reserve("key-1") == 4)
        // Key 0 alone takes all but key 1's reserve (a caller without a key has none).
        var taken = 0
        while shares.take("key-0") { taken += 1 }
        #expect(taken == 36)
        let keyless = shares.take(Tenants.anonymous)
        #expect(!keyless, "no key: nothing kept for it")
        var ones = 0
        while shares.take("key-1") { ones += 1 }
        #expect(ones == 4 && shares.sum == 40)
        shares.give("key-0")
        let third = shares.take(Tenants.anonymous)
        let zero = shares.take("key-0")
        #expect(third && !zero)
        // One tenant: no reserve, every place.
        var alone = TenantShares(total: 8, shares: ["key-0": 1])
        #expect(alone.reserve("key-0") == 0)
        var all = 0
        while alone.take("key-0") { all += 1 }
        #expect(all == 8)
        // Small pools keep at most half in reserve; with one place each, none.
        #expect(TenantShares(total: 2, shares: ["a": 1, "b": 1]).reserve("a") == 0)
        let many = Dictionary(uniqueKeysWithValues: (0..<20).map { ("key-\($0)", 1) })
        #expect(TenantShares(total: 40, shares: many).reserve("key-3") == 1)
    }

    @Test("a tenant's reserve follows its share, and new shares keep what is held")
    func sharesWeighTheReserves() {
        var shares = TenantShares(total: 64, shares: ["big": 3, "small": 1])
        // At most 4 places a unit of share, and at most half of all places kept in all.
        #expect(shares.reserve("big") == 12 && shares.reserve("small") == 4)
        var big = 0
        while shares.take("big") { big += 1 }
        #expect(big == 60, "all but small's reserve")
        var small = 0
        while shares.take("small") { small += 1 }
        #expect(small == 4)
        // The tenants file read again: "small" gone, "new" in; what is held stays held and is
        // given back as it ends.
        shares.share(["big": 3, "new": 1])
        #expect(shares.sum == 64 && !shares.take("new"))
        for _ in 0..<4 { shares.give("small") }
        #expect(shares.sum == 60)
        let forNew = (0..<4).map { _ in shares.take("new") }
        #expect(forNew.allSatisfy { $0 } && shares.sum == 64)
        // A tenant that holds its reserve is owed nothing: the free places are anyone's.
        for _ in 0..<8 { shares.give("big") }
        var anyone = 0
        while shares.take(Tenants.anonymous) { anyone += 1 }
        #expect(anyone == 8, "\(anyone)")
    }

    @Test("a key that fills the pipeline and the queue leaves another key's payloads served, not 503")
    func anotherKeysPayloadIsServedBesideAFullOne() async throws {
        let media = try TestHTTPServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: sampleJPEG)
        let service = try await ServiceTests.start {
            $0.maxConcurrent = 4
            $0.maxQueued = 4
            $0.fetch.lowSpeedSeconds = 120
            $0.fetch.totalTimeout = .seconds(120)
        }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = payload(image: media.url("/held.jpg?n=refused"))
        // Key A: 8 places, 4 slots; B is owed 2 places and 1 slot, so A gets 6 and 3 (each its
        // own URL: one fetch each).
        var first: [Task<HTTPAnswer, any Error>] = []
        for n in 0..<6 {
            let mine = payload(image: media.url("/held.jpg?n=\(n)"))
            first.append(Task.detached { try await curl("POST", post, headers: ServiceTests.auth, body: mine) })
        }
        #expect(await held.waitForArrivals(3), "A's payloads took their slots")
        #expect(await eventually { service.service.gate.count == 6 && service.service.admission.counts.waiting == 3 })
        let refused = try await curl("POST", post, headers: ServiceTests.auth, body: body)
        #expect(refused.status == 503, "A beyond its places: \(refused.status)")
        // B's payload (one that passes through) gets a place and a slot at once.
        let other = ["Authorization": "Bearer second-key-for-rotation-000"]
        let plain = Array(#"{"aps":{"alert":"hi"},"note":"b"}"#.utf8)
        let served = try await curl("POST", post + "?deadline=30s", headers: other, body: plain)
        #expect(served.status == 200 && served.body == plain, "B beside a full A: \(served.status) \(served.text)")
        held.release()
        for task in first { #expect(try await task.value.status == 200) }
        #expect(await eventually { service.service.gate.count == 0 && service.service.admission.counts.running == 0 })
    }
}
