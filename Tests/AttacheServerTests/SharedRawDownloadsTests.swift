import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

/// Downloads beneath the HTTP/1 codec from a shared store (the PostgreSQL and the bucket
/// `scripts/test.sh` starts): a check that needs the catalog runs on the blocking pool, and the
/// connection's pipelined requests wait for it and stay in order.
@Suite(.enabled(if: inIsolatedChild && SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedRawDownloadsTests {
    @Test func aCheckOnTheCatalogIsWaitedForAndTheConnectionStaysInOrder() async throws {
        let fresh = try SharedServers.fresh()
        let media = try ServiceTests.mediaServer()
        let cache = try TemporaryDirectory()
        var store = try fresh.configuration()
        store.shared?.cacheDirectory = cache.path
        let shared = store
        let service = try await ServiceTests.start { $0.store = shared }
        defer { Task { await service.stop() } }
        let (_, url) = try await ServiceTests.mutate(service, media: media)
        let whole = try await curl("GET", ServiceTests.local(url, service))
        #expect(whole.status == 200 && !whole.body.isEmpty)
        let path = String(url.dropFirst("http://attache.test".count))
        let forged = path.replacingOccurrences(of: "/attachments/A", with: "/attachments/B")
        let get = "GET \(path) HTTP/1.1\r\nHost: attache.test\r\n\r\n"
        let port = service.port
        // Each round waits until the object's row is older than a second, so the first check
        // is the catalog's; the requests behind it in the same write wait for its answer.
        var pooled = 0
        for round in 0..<3 {
            try await Task.sleep(for: .milliseconds(1_200))
            let before = service.service.metrics.downloadPaths.checkedOnPool.load(ordering: .relaxed)
            let requests =
                round == 2
                ? "GET \(forged) HTTP/1.1\r\nHost: a\r\n\r\n" + get + get
                : get + get + "GET \(path) HTTP/1.1\r\nHost: a\r\nRange: bytes=0-9\r\n\r\n" + get
            let answers = try await onOwnThread {
                try RawDownloadsTests.exchange(port: port, requests, answers: round == 2 ? 3 : 4)
            }
            if round == 2 {
                #expect(answers.map(\.status) == [403, 200, 200])
                #expect(answers[1].body == whole.body && answers[2].body == whole.body)
            } else {
                #expect(answers.map(\.status) == [200, 200, 206, 200])
                for index in [0, 1, 3] { #expect(answers[index].body == whole.body, "\(round) \(index)") }
                #expect(answers[2].body == Array(whole.body.prefix(10)))
            }
            pooled += service.service.metrics.downloadPaths.checkedOnPool.load(ordering: .relaxed) - before
        }
        // The first download of the first two rounds was checked on the pool and sent here.
        #expect(pooled >= 2)
    }
}
