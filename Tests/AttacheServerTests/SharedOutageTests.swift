import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

/// The operator's bad day as a test: a replica without a blob cache (every download streams
/// from the bucket) under two posting and four downloading clients, PostgreSQL away for 10 s,
/// then the bucket for 8 s, then PostgreSQL silent (connections open, nothing answered).
extension SharedReplicaTests {
    /// What one client request got.
    struct Answered: Sendable {
        enum Kind: Sendable { case download, payload }
        var kind: Kind
        var start: ContinuousClock.Instant
        var end: ContinuousClock.Instant
        var status: Int
        var retryAfter: Bool
        /// A download answered 200 whose body is not the object's.
        var cut = false
        /// A payload whose attachment was stored (its URL in the answer).
        var attached = false
        var code: String?
    }

    /// The clients' answers, and whether they go on.
    final class Load: Sendable {
        let answers = Mutex<[Answered]>([])
        let running = Atomic<Bool>(true)
    }

    /// The seconds of one phase of the run, and its name.
    struct Phase: Sendable {
        var name: String
        var start: ContinuousClock.Instant
        var end: ContinuousClock.Instant
    }

    @Test("PostgreSQL away 10 s, the bucket away 8 s, PostgreSQL silent: no 500, no cut body, seen objects served")
    func outagesUnderLoad() async throws {
        let bucketLink = try Self.link(to: try #require(fresh.childEnvironment["ATTACHE_S3_ENDPOINT"]))
        let catalogLink = try Self.link(to: fresh.postgres)
        let replica = try await Replica(
            fresh, extra: ["--catalog-timeout", "1s"],
            postgres: fresh.postgres.replacing(/127\.0\.0\.1:[0-9]+/, with: "127.0.0.1:\(catalogLink.port)"),
            bucket: "http://127.0.0.1:\(bucketLink.port)", blobCache: false)
        defer { replica.stop() }

        let load = Load()
        let clients = Self.startClients(
            load, downloading: try await seenObjects(replica), posting: replica.base, media: media)
        func ready() async throws -> Int { try await curl("GET", replica.base + "/readyz").status }
        func served(after instant: ContinuousClock.Instant) -> (payload: Duration?, download: Duration?) {
            let list = load.answers.withLock { $0 }
            let payload = list.filter { $0.kind == .payload && $0.attached && $0.start >= instant }.map(\.end).min()
            let download = list.filter { $0.kind == .download && $0.status == 200 && !$0.cut && $0.start >= instant }
                .map(\.end).min()
            return (payload.map { $0 - instant }, download.map { $0 - instant })
        }

        // Under load before any fault.
        let warm = ContinuousClock.now
        #expect(await eventually { served(after: warm).payload != nil && served(after: warm).download != nil })
        // How long one payload and one download take on this machine today, before any fault: a
        // recovery is due within 5 s plus one in flight and one begun after the fault ended.
        let before = load.answers.withLock { $0 }
        func slowest(_ kind: Answered.Kind) -> Duration {
            before.filter { $0.kind == kind && $0.status == 200 }.map { $0.start.duration(to: $0.end) }.max() ?? .zero
        }
        let recoveryBound = (
            payload: Duration.seconds(5) + slowest(.payload) * 2,
            download: Duration.seconds(5) + slowest(.download) * 2
        )
        var phases: [Phase] = []
        var recoveries: [String: (payload: Duration?, download: Duration?)] = [:]
        var readiness: [String: (away: Int, healthz: Int, back: Int)] = [:]
        for (name, link, length, silent) in [
            ("catalog", catalogLink, Duration.seconds(10), false), ("bucket", bucketLink, .seconds(8), false),
            ("catalog-silent", catalogLink, .seconds(6), true),
        ] {
            let start = ContinuousClock.now
            if silent { link.silence() } else { link.cut() }
            // The load balancer's view while it is away (checked each second by the service).
            let notReady = await eventually { try await ready() == 503 }
            let healthz = try await curl("GET", replica.base + "/healthz").status
            try await Task.sleep(until: start + length)
            link.restore()
            let end = ContinuousClock.now
            phases.append(Phase(name: name, start: start, end: end))
            // Back: a payload attached and a download served, both begun after the fault ended.
            #expect(await eventually { served(after: end).payload != nil && served(after: end).download != nil })
            recoveries[name] = served(after: end)
            let readyAgain = await eventually { try await ready() == 200 }
            readiness[name] = (notReady ? 503 : 0, healthz, readyAgain ? 200 : 0)
        }
        load.running.store(false, ordering: .relaxed)
        await clients.value

        let all = load.answers.withLock { $0 }
        let downloads = all.filter { $0.kind == .download }
        let payloads = all.filter { $0.kind == .payload }
        Self.expectNoFailure(all)
        Self.expectEachPhase(
            phases, downloads: downloads, payloads: payloads, recoveries: recoveries, readiness: readiness,
            recoveryBound: recoveryBound)

        await Self.expectToldOncePerOutage(replica)
        let verify = try await attache(["store", "verify", "--json"])
        #expect(verify.status == 0, "\(verify.output)")
    }

    /// Never a 500 (or a dropped connection), never a 200 whose body is not the object, every 503
    /// with Retry-After; payloads answered 200, their attachment failing store_unavailable when not
    /// stored.
    static func expectNoFailure(_ all: [Answered]) {
        let downloads = all.filter { $0.kind == .download }
        let payloads = all.filter { $0.kind == .payload }
        let failed = all.filter { $0.status == 0 || ($0.status >= 500 && $0.status != 503) }
        #expect(failed.isEmpty, "\(failed.count) answers 5xx or none: \(failed.prefix(5).map(\.status))")
        let cut = downloads.filter(\.cut)
        #expect(cut.isEmpty, "\(cut.count) downloads answered 200 with a body that is not the object")
        let unavailable = all.filter { $0.status == 503 }
        #expect(unavailable.allSatisfy { $0.retryAfter }, "every 503 says when to come back")
        #expect(payloads.allSatisfy { $0.status == 200 }, "\(Set(payloads.map(\.status)))")
        let codes = Set(payloads.filter { !$0.attached }.compactMap(\.code))
        #expect(codes.isSubset(of: ["store_unavailable"]), "\(codes)")
    }

    /// The operator is told once per outage, and when it ended (the watch's next check after the
    /// fault ends writes that line: waited for).
    static func expectToldOncePerOutage(_ replica: Replica) async {
        func logLines(_ text: String, _ dependency: String) -> Int {
            replica.logged().split(separator: "\n").filter {
                $0.contains(text) && $0.contains("dependency=\(dependency)")
            }
            .count
        }
        for (dependency, outages) in [("catalog", 2), ("bucket", 1)] {
            #expect(
                await eventually { logLines("store dependency back", dependency) == outages }, "\(dependency): back")
            #expect(
                logLines("store dependency unreachable", dependency) == outages,
                "\(dependency): \(replica.logged().split(separator: "\n").filter { $0.contains("store dependency") })")
        }
    }

    /// Objects seen before the faults: four renditions, each made by `replica` and downloaded once.
    func seenObjects(_ replica: Replica) async throws -> [(url: String, body: [UInt8])] {
        var seen: [(url: String, body: [UInt8])] = []
        for sample in ["gray.jpg", "rgba-interlaced.png", "cmyk-adobe.jpg", "waterfall-rotated.jpg"] {
            let bytes = try #require(FileManager.default.contents(atPath: Paths.samples + "/" + sample)).map { $0 }
            media.route("/seen/" + sample) { _, c in c.respond(body: bytes) }
            let answer = try await curl(
                "POST", replica.base + "/v1/notifications", headers: ServiceTests.auth,
                body: payload(image: media.url("/seen/" + sample)))
            let url = try #require(
                ((answer.json()["attachments"] as? [[String: Any]])?.first?["url"] as? String), "\(answer.text)")
            let body = try await curl("GET", replica.url(url))
            #expect(body.status == 200 && body.body.count > 100, "\(sample): \(body.status) \(body.body.count) bytes")
            seen.append((replica.url(url), body.body))
        }
        return seen
    }

    /// Four clients downloading `objects` round and round and two posting payloads of new media
    /// to the service at `base`, each answer in `load`, until `load` stops.
    static func startClients(
        _ load: Load, downloading objects: [(url: String, body: [UInt8])], posting base: String, media: TestHTTPServer
    ) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<4 {
                    group.addTask {
                        var index = client
                        while load.running.load(ordering: .relaxed) {
                            let (url, body) = objects[index % objects.count]
                            index += 1
                            let start = ContinuousClock.now
                            guard let got = try? await curl("GET", url) else { continue }
                            let answered = Answered(
                                kind: .download, start: start, end: .now, status: got.status,
                                retryAfter: got.headers["retry-after"] != nil,
                                cut: got.status == 200 && got.body != body)
                            load.answers.withLock { $0.append(answered) }
                        }
                    }
                }
                for client in 0..<2 {
                    group.addTask {
                        var index = 0
                        while load.running.load(ordering: .relaxed) {
                            index += 1
                            let start = ContinuousClock.now
                            // A new source each time (fetched, made and stored; the rendition is
                            // the same object).
                            guard
                                let got = try? await curl(
                                    "POST", base + "/v1/notifications?envelope=true",
                                    headers: ServiceTests.auth,
                                    body: payload(image: media.url("/photo.jpg?client=\(client)&n=\(index)")))
                            else { continue }
                            let envelope = try? got.json()
                            let report = (envelope?["report"] as? [String: Any])?["attachments"] as? [[String: Any]]
                            let error = report?.first?["error"] as? [String: Any]
                            let answered = Answered(
                                kind: .payload, start: start, end: .now, status: got.status,
                                retryAfter: got.headers["retry-after"] != nil,
                                attached: envelope?["outcome"] as? String == "mutated", code: error?["code"] as? String)
                            load.answers.withLock { $0.append(answered) }
                        }
                    }
                }
            }
        }
    }

    /// Each phase's downloads, payloads, readiness and recovery, printed and checked: seen objects
    /// served through a catalog outage, none with the bucket away, each back within its bound.
    static func expectEachPhase(
        _ phases: [Phase], downloads: [Answered], payloads: [Answered],
        recoveries: [String: (payload: Duration?, download: Duration?)],
        readiness: [String: (away: Int, healthz: Int, back: Int)],
        recoveryBound: (payload: Duration, download: Duration)
    ) {
        var lines: [String] = []
        for phase in phases {
            let within = downloads.filter { $0.start >= phase.start && $0.end <= phase.end }
            let ok = within.filter { $0.status == 200 }.count
            let share = within.isEmpty ? 0 : Double(ok) / Double(within.count)
            let posted = payloads.filter { $0.start >= phase.start && $0.end <= phase.end }
            let recovery = recoveries[phase.name]
            let (notReady, healthz, back) = readiness[phase.name] ?? (0, 0, 0)
            lines.append(
                "\(phase.name) away \(phase.start.duration(to: phase.end)): downloads \(ok)/\(within.count) served "
                    + "(\(String(format: "%.1f", share * 100))%), 503 \(within.filter { $0.status == 503 }.count); "
                    + "payloads \(posted.count) (\(posted.filter(\.attached).count) attached); readyz \(notReady) "
                    + "while away (healthz \(healthz)), \(back) after; back: payload attached after "
                    + "\(recovery?.payload.map { "\($0)" } ?? "never"), download after "
                    + "\(recovery?.download.map { "\($0)" } ?? "never")")
            #expect(notReady == 503 && healthz == 200 && back == 200, "\(phase.name): readiness")
            // Seen objects are served through a catalog outage (their rows were read within the
            // grace); with the bucket away nothing can be.
            if phase.name.hasPrefix("catalog") {
                #expect(share >= 0.95, "\(lines.last!)")
            } else {
                #expect(within.count > 0 && within.allSatisfy { $0.status == 503 }, "\(lines.last!)")
            }
            #expect((recovery?.payload ?? .seconds(99)) <= recoveryBound.payload, "\(lines.last!), \(recoveryBound)")
            #expect((recovery?.download ?? .seconds(99)) <= recoveryBound.download, "\(lines.last!), \(recoveryBound)")
        }
        print(
            "outages under load: \(downloads.count) downloads, \(payloads.count) payloads; "
                + lines.joined(separator: "; "))
    }

}
