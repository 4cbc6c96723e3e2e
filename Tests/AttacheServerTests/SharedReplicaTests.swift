import AttacheBase
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

/// `attache serve` replicas as operators run them: separate processes on their own ports over
/// one PostgreSQL and one radosgw bucket (the servers `scripts/test.sh` starts).
@Suite(.enabled(if: inIsolatedChild && SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedReplicaTests {
    let fresh: SharedServers.Fresh
    let media: TestHTTPServer

    init() throws {
        fresh = try SharedServers.fresh()
        media = try ServiceTests.mediaServer()
    }

    /// One `attache serve` child on an ephemeral port.
    final class Replica: @unchecked Sendable {
        let child: ChildProcess
        let directory: TemporaryDirectory
        private(set) var port = 0

        /// `postgres` and `bucket` (an S3 endpoint) stand for the test's servers when given (a
        /// ``FaultyLink`` to them).
        init(
            _ fresh: SharedServers.Fresh, extra: [String] = [], postgres: String? = nil, bucket: String? = nil,
            blobCache: Bool = true
        ) async throws {
            directory = try TemporaryDirectory()
            let arguments =
                [
                    "serve", "--port", "0", "--api-keys", RunningService.apiKey, "--allow-loopback", "--gc-interval",
                    "0s", "--deadline", "60s", "--max-deadline", "60s", "--blob-cache",
                    blobCache ? directory.path + "/cache" : "none",
                ]
                + ["--store", postgres ?? fresh.postgres, "--blobs", fresh.blobs] + extra
            var environment = fresh.childEnvironment
            if let bucket { environment["ATTACHE_S3_ENDPOINT"] = bucket }
            child = try ChildProcess(try attacheExecutable(), arguments, environment: environment)
            let found = await eventually { self.listening() != nil || !self.child.isRunning }
            guard found, let port = listening() else {
                throw SharedServersMissing(message: "the replica did not start: \(logged())")
            }
            self.port = port
        }

        func logged() -> String { String(decoding: child.errorsSoFar, as: UTF8.self) }

        private func listening() -> Int? {
            let text = logged()
            guard let range = text.range(of: #"address=http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression)
            else { return nil }
            return Int(text[range].split(separator: ":").last!.dropLast())
        }

        var base: String { "http://127.0.0.1:\(port)" }

        /// The same attachment path on this replica.
        func url(_ attachment: String) -> String {
            base + String(attachment[attachment.range(of: "/attachments/")!.lowerBound...])
        }

        func stop() { child.stop() }

        deinit { stop() }
    }

    /// Runs `body` with two replicas over this test's store, stopped when it returns.
    func withReplicas(_ body: (Replica, Replica) async throws -> Void) async throws {
        let a = try await Replica(fresh)
        let b = try await Replica(fresh)
        defer {
            a.stop()
            b.stop()
        }
        try await body(a, b)
    }

    func attache(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        await runProcess(try attacheExecutable(), arguments + fresh.arguments, environment: fresh.childEnvironment)
    }

    @Test func storedThroughOneIsServedByTheOtherWithRanges() async throws {
        try await withReplicas { a, b in
            let (_, url) = try await mutate(a)
            let whole = try await curl("GET", a.url(url))
            #expect(whole.status == 200 && whole.body.count > 1000, "\(whole.status) \(whole.text.prefix(200))")
            // The writer keeps a copy; the other replica has none yet: it copies this one from the
            // bucket on its first download and serves it from there.
            let name = String(url.split(separator: "/").last!)
            let copy = "/cache/" + name.prefix(2) + "/" + name.dropFirst(2)
            #expect(FileManager.default.fileExists(atPath: a.directory.path + copy))
            #expect(!FileManager.default.fileExists(atPath: b.directory.path + copy))
            let other = try await curl("GET", b.url(url))
            #expect(other.status == 200 && other.body == whole.body)
            #expect(FileManager.default.contents(atPath: b.directory.path + copy).map(Array.init) == whole.body)
            #expect(other.headers["etag"] == whole.headers["etag"])
            let range = try await curl("GET", b.url(url), headers: ["Range": "bytes=100-1099"])
            #expect(range.status == 206 && range.body == Array(whole.body[100..<1100]))
            #expect(range.headers["content-range"] == "bytes 100-1099/\(whole.body.count)")
            let suffix = try await curl("GET", b.url(url), headers: ["Range": "bytes=-10"])
            #expect(suffix.status == 206 && suffix.body == Array(whole.body.suffix(10)))
            let head = try await curl("HEAD", b.url(url))
            #expect(head.status == 200 && head.headers["content-length"] == String(whole.body.count))
            // A token for another object, or a damaged one, is refused the same way by both.
            let forged = url.replacingOccurrences(of: "/attachments/", with: "/attachments/x")
            #expect(try await curl("GET", b.url(forged)).status == 403)
            let ready = try await curl("GET", b.base + "/readyz")
            #expect(ready.status == 200, "\(ready.text)")
        }
    }

    @Test func aRotationThroughOneIsHonouredByTheOther() async throws {
        try await withReplicas { a, b in
            let (_, old) = try await mutate(a)
            #expect(try await curl("GET", b.url(old)).status == 200)
            let rotated = try await attache(["key", "rotate", "--json"])
            #expect(rotated.status == 0, "\(rotated.output)")
            let retired = try await attache(["key", "retire", "1", "--json"])
            #expect(retired.status == 0, "\(retired.output)")
            // Both replicas refuse the retired key's tokens once they look at the key ring again
            // (at most a second later): waited for as an event, not a guessed time.
            #expect(await eventually { try await curl("GET", a.url(old)).status == 403 })
            #expect(await eventually { try await curl("GET", b.url(old)).status == 403 })
            // New tokens come from the new key, and the other replica opens them.
            let (_, new) = try await mutate(a)
            #expect(try await curl("GET", b.url(new)).status == 200)
            let (_, fromB) = try await mutate(b)
            #expect(try await curl("GET", a.url(fromB)).status == 200)
        }
    }

    /// Both replicas remember a download's check for up to a second (from the oldest reading it
    /// rests on); a revocation by another process is honoured by both within that second.
    @Test func aRevocationIsHonouredByEveryReplicaWithinASecond() async throws {
        try await withReplicas { a, b in
            let (_, url) = try await mutate(a)
            for replica in [a, b] {
                for _ in 0..<4 { #expect(try await curl("GET", replica.url(url)).status == 200) }
            }
            let id = String(url.split(separator: "/").last!.prefix(64))
            let revoked = try await attache(["store", "revoke", id])
            #expect(revoked.status == 0, "\(revoked.output)")
            // The contract, not a guess at the machine's speed: a request made once a second
            // has passed since the revocation committed is refused (a slower machine only
            // makes it later).
            try await Task.sleep(until: .now + .milliseconds(1050))
            for replica in [a, b] {
                for _ in 0..<4 { #expect(try await curl("GET", replica.url(url)).status == 403) }
            }
        }
    }

    @Test func concurrentPutsOfTheSameMediaFromBothMakeOneObject() async throws {
        try await withReplicas { a, b in
            // One payload stores the rendition and its small sibling: the count to keep.
            let first = try await mutate(a).1
            let once = try await attache(["store", "stats", "--json"])
            let objects = try #require(once.output.firstMatch(of: /"objects":([0-9]+)/)?.1)
            let urls = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<12 {
                    group.addTask { try await mutate(index % 2 == 0 ? a : b).1 }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            let ids = Set((urls + [first]).map { $0.split(separator: "/").last!.split(separator: ".").first! })
            #expect(ids.count == 1, "\(ids)")
            let stats = try await attache(["store", "stats", "--json"])
            #expect(stats.output.contains("\"objects\":\(objects),"), "\(stats.output)")
            let verify = try await attache(["store", "verify", "--json"])
            #expect(verify.status == 0 && verify.output.contains("\"orphans\":0"), "\(verify.output)")
        }
    }

    @Test func collectionUnderLoadRemovesNothingInUse() async throws {
        try await withReplicas { a, b in
            let (_, url) = try await mutate(a)
            let whole = try await curl("GET", a.url(url)).body
            let downloads = Task {
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<120 {
                        group.addTask {
                            let answer = try await curl("GET", (index % 2 == 0 ? a : b).url(url))
                            return answer.status == 200 && answer.body == whole
                        }
                    }
                    return try await group.reduce(true) { $0 && $1 }
                }
            }
            var removed = 0
            for _ in 0..<5 {
                let pass = try await attache(["gc", "--json"])
                #expect(pass.status == 0, "\(pass.output)")
                removed += pass.output.contains("\"removed\":0") ? 0 : 1
            }
            #expect(try await downloads.value, "every download during collection was whole")
            #expect(removed == 0, "nothing live was collected")
            let verify = try await attache(["store", "verify", "--json"])
            let stats = try await attache(["store", "stats", "--json"])
            let objects = try #require(stats.output.firstMatch(of: /"objects":([0-9]+)/)?.1)
            #expect(verify.status == 0 && verify.output.contains("\"objects\":\(objects),"), "\(verify.output)")
        }
    }

    /// A link to the test's PostgreSQL or bucket (host and port from `url`) that can be cut.
    static func link(to url: String) throws -> FaultyLink {
        let authority = try #require(url.firstMatch(of: /127\.0\.0\.1:([0-9]+)/))
        return try FaultyLink(to: "127.0.0.1", port: try #require(Int(authority.1)))
    }

    @Test("with the bucket or the catalog away a download is 503 with Retry-After, never a 500 or a cut 200")
    func downloadsDuringAnOutage() async throws {
        let bucket = try #require(fresh.childEnvironment["ATTACHE_S3_ENDPOINT"])
        let bucketLink = try Self.link(to: bucket)
        let catalogLink = try Self.link(to: fresh.postgres)
        let writer = try await Replica(fresh)
        // Replicas that have never seen the object: one reaches the bucket, one the catalog,
        // through links the test cuts.
        let overBucket = try await Replica(fresh, bucket: "http://127.0.0.1:\(bucketLink.port)")
        let overCatalog = try await Replica(
            fresh, postgres: fresh.postgres.replacing(/127\.0\.0\.1:[0-9]+/, with: "127.0.0.1:\(catalogLink.port)"))
        defer {
            for replica in [writer, overBucket, overCatalog] { replica.stop() }
        }
        let (_, url) = try await mutate(writer)
        let whole = try await curl("GET", writer.url(url))
        #expect(whole.status == 200 && whole.body.count > 1000)
        // Media of its own for each outage's payload (bytes the store has not seen).
        for (name, sample) in [("bucket", "gray.jpg"), ("catalog", "rgba-interlaced.png"), ("seen", "cmyk-adobe.jpg")] {
            let bytes = try #require(FileManager.default.contents(atPath: Paths.samples + "/" + sample)).map { $0 }
            media.route("/" + name + ".png") { _, c in c.respond(body: bytes) }
        }
        // An object the catalog replica serves (reads its row, keeps a copy) before the outage.
        let seenAnswer = try await curl(
            "POST", writer.base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/seen.png")))
        let seen = try #require(
            ((seenAnswer.json()["attachments"] as? [[String: Any]])?.first?["url"] as? String), "\(seenAnswer.text)")
        let seenBody = try await curl("GET", overCatalog.url(seen))
        #expect(seenBody.status == 200)

        for (replica, link, what) in [(overBucket, bucketLink, "bucket"), (overCatalog, catalogLink, "catalog")] {
            link.cut()
            let away = try await curl("GET", replica.url(url))
            #expect(away.status == 503, "\(what): \(away.status) \(away.text.prefix(300))")
            #expect(away.headers["retry-after"] == "2", "\(what): \(away.headers)")
            #expect(away.text.contains("store_unavailable"), "\(what): \(away.text.prefix(300))")
            if what == "catalog" {
                // Within the grace, an object whose row it read and of which it has a copy is
                // still served to a valid token (the row read more than the second a download
                // may rest on without a query).
                try await Task.sleep(for: .milliseconds(1100))
                let served = try await curl("GET", overCatalog.url(seen))
                #expect(
                    served.status == 200 && served.body == seenBody.body, "\(served.status) \(served.text.prefix(300))")
            }
            // A load balancer is told to send payloads elsewhere; the process is alive.
            let ready = try await curl("GET", replica.base + "/readyz")
            #expect(ready.status == 503 && ready.text.contains("store_writable"), "\(what): \(ready.text)")
            #expect(try await curl("GET", replica.base + "/healthz").status == 200)
            try await expectPassedThroughWhileAway(replica, what)
            // The operator is told once that it went away.
            let warned = await eventually { replica.logged().contains("store dependency unreachable") }
            #expect(warned, "\(what): \(replica.logged().suffix(1000))")
            link.restore()
            let back = await eventually { replica.logged().contains("store dependency back") }
            #expect(back, "\(what): \(replica.logged().suffix(1000))")
            let log = replica.logged()
            #expect(log.components(separatedBy: "store dependency unreachable").count == 2, "\(what): once")
            #expect(log.contains("dependency=\(what)"), "\(what): \(log.suffix(1000))")
            // Back: served whole (a connection the cut left broken is replaced).
            var served = try await curl("GET", replica.url(url))
            for _ in 0..<50 where served.status != 200 {
                try await Task.sleep(for: .milliseconds(100))
                served = try await curl("GET", replica.url(url))
            }
            #expect(
                served.status == 200 && served.body == whole.body,
                "\(what): \(served.status) \(served.text.prefix(300))")
        }
        // Nothing half-written: every object in the bucket has its row and hash, and none is lost.
        let verify = try await attache(["store", "verify", "--json"])
        #expect(verify.status == 0, "\(verify.output)")
    }

    /// A payload while `what` is away, of media the store has not seen: answered unchanged, in
    /// time, its attachment failing store_unavailable with the reason.
    func expectPassedThroughWhileAway(_ replica: Replica, _ what: String) async throws {
        let started = ContinuousClock.now
        let posted = try await curl(
            "POST", replica.base + "/v1/notifications?envelope=true", headers: ServiceTests.auth,
            body: payload(image: media.url("/" + what + ".png")))
        #expect(posted.status == 200 && ContinuousClock.now - started < .seconds(60), "\(what): \(posted.status)")
        let envelope = try posted.json()
        let outcome = ((envelope["report"] as? [String: Any])?["attachments"] as? [[String: Any]])?.first
        #expect(envelope["outcome"] as? String == "passed_through", "\(what): \(posted.text.prefix(600))")
        #expect(
            (outcome?["error"] as? [String: Any])?["code"] as? String == "store_unavailable",
            "\(what): \(posted.text.prefix(600))")
    }

    func mutate(_ replica: Replica) async throws -> (HTTPAnswer, String) {
        let answer = try await curl(
            "POST", replica.base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/photo.jpg")))
        let object = try answer.json()
        let payload = object["payload"] as? [String: Any] ?? object
        let entries = payload["attachments"] as? [[String: Any]] ?? []
        let url = try #require(
            entries.first?["url"] as? String,
            "no attachment: \(answer.status) \(answer.text) \(replica.logged().suffix(2000))")
        return (answer, url)
    }
}
