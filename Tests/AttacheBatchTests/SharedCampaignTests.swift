import AttacheBase
import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheBatch

/// `attache batch --campaign` workers (child processes) sharing one campaign in the shared
/// store's job table, over the PostgreSQL and radosgw `scripts/test.sh` starts.
@Suite(.enabled(if: inIsolatedChild && SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedCampaignTests {
    let fresh: SharedServers.Fresh
    let server: TestHTTPServer
    let directory: TemporaryDirectory
    let host = Host()

    /// What the media host saw, and the gate of its held paths.
    final class Host: Sendable {
        /// Requests per path, to tell how often each item was fetched.
        let fetches = Mutex<[String: Int]>([:])
        /// `/held/…` answers only once released; `arrivals` counts requests that reached it.
        let held = Atomic<Bool>(true)
        let arrivals = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        /// A worker to kill the moment a held request arrives (0: none), from the server's
        /// thread: a test task may be scheduled late on a busy machine, a held fetch not.
        let victim = Atomic<Int32>(0)
        let arrived = Atomic<Int>(0)
    }

    init() throws {
        fresh = try SharedServers.fresh()
        server = try TestHTTPServer()
        directory = try TemporaryDirectory()
        let body = sampleJPEG
        let host = self.host
        for index in 0..<64 {
            server.route("/media/\(index).jpg") { _, c in
                host.fetches.withLock { $0["/media/\(index).jpg", default: 0] += 1 }
                c.respond(headers: ["Content-Type": "image/jpeg"], body: body)
            }
            server.route("/held/\(index).jpg") { _, c in
                host.fetches.withLock { $0["/held/\(index).jpg", default: 0] += 1 }
                host.arrived.add(1, ordering: .sequentiallyConsistent)
                let victim = host.victim.exchange(0, ordering: .sequentiallyConsistent)
                if victim > 0 { kill(victim, SIGKILL) }
                host.arrivals.signal()
                if host.held.load(ordering: .acquiring) { host.gate.wait() }
                c.respond(headers: ["Content-Type": "image/jpeg"], body: body)
            }
        }
    }

    func release() {
        host.held.store(false, ordering: .releasing)
        for _ in 0..<256 { host.gate.signal() }
    }

    func urlList(_ paths: [String]) throws -> String {
        let path = directory.path + "/urls.txt"
        try Data((paths.map { server.url($0) }.joined(separator: "\n") + "\n").utf8).write(
            to: URL(fileURLWithPath: path))
        return path
    }

    func worker(_ input: String, manifest: String, extra: [String] = []) throws -> ChildProcess {
        try ChildProcess(
            try attacheExecutable(),
            ["batch", input, "--campaign", "spring", "--allow-loopback", "--manifest", manifest, "--json"]
                + ["--deadline", "60s"] + fresh.arguments + extra,
            environment: fresh.childEnvironment, outputs: .discarded)
    }

    /// Per item: (completions, state) from the table.
    func table() throws -> [(Int, String)] {
        try fresh.sql("SELECT completions || ',' || state FROM attache_job ORDER BY seq").split(separator: "\n").map {
            let parts = $0.split(separator: ",")
            return (Int(parts[0]) ?? -1, String(parts[1]))
        }
    }

    @Test("a worker rides through the catalog going away mid-run: every item recorded once")
    func aCatalogOutageMidRun() async throws {
        let port = try #require(fresh.postgres.firstMatch(of: /127\.0\.0\.1:([0-9]+)/).flatMap { Int($0.1) })
        let link = try FaultyLink(to: "127.0.0.1", port: port)
        let postgres = fresh.postgres.replacing(/127\.0\.0\.1:[0-9]+/, with: "127.0.0.1:\(link.port)")
        let paths = (0..<12).map { "/held/\($0).jpg" }
        let input = try urlList(paths)
        let process = try ChildProcess(
            try attacheExecutable(),
            ["batch", input, "--campaign", "spring", "--allow-loopback", "--manifest", directory.path + "/m.jsonl"]
                + ["--json", "--deadline", "60s", "--jobs", "3", "--store", postgres, "--blobs", fresh.blobs],
            environment: fresh.childEnvironment)
        // Three items claimed and being fetched: the catalog goes away, then they finish. A
        // worker that ends first (its store gone before it fetched) is this test's failure, not
        // a wait without end.
        for _ in 0..<3 {
            while host.arrivals.wait(timeout: .now() + 1) == .timedOut {
                guard process.isRunning else {
                    let said = String(decoding: process.errorsSoFar, as: UTF8.self)
                    Issue.record("the worker ended before three items were fetched: \(said.suffix(2000))")
                    release()
                    link.restore()
                    return
                }
            }
        }
        link.cut()
        release()
        // The items finish and their records fail while it is away (the outage lasts 2 s).
        try await Task.sleep(for: .seconds(2))
        link.restore()
        let ended = try await onOwnThread { process.wait() }
        #expect(ended.status == 0, "\(ended.errorText.suffix(2000))")
        let rows = try table()
        #expect(rows.count == 12 && rows.allSatisfy { $0 == (1, "done") }, "\(rows)")
        #expect(host.fetches.withLock { $0.values.allSatisfy { $0 == 1 } && $0.count == 12 })
    }

    @Test func twoWorkersRecordEveryItemOnce() throws {
        let paths = (0..<48).map { "/media/\($0).jpg" }
        let input = try urlList(paths)
        let a = try worker(input, manifest: directory.path + "/a.jsonl", extra: ["--jobs", "3"])
        let b = try worker(input, manifest: directory.path + "/b.jsonl", extra: ["--jobs", "3"])
        #expect(a.wait().status == 0 && b.wait().status == 0)
        let rows = try table()
        #expect(rows.count == 48 && rows.allSatisfy { $0 == (1, "done") }, "\(rows)")
        // Both workers write the whole manifest, from the table, in input order.
        for name in ["a", "b"] {
            let lines = try records(directory.path + "/\(name).jsonl")
            #expect(lines.map(\.reference) == (1...48).map { "urls.txt:\($0)" })
        }
        // Every item was claimed once: no two workers took the same one (how many each took
        // depends on how the machine schedules them).
        #expect(try fresh.sql("SELECT sum(attempts) FROM attache_job") == "48")
        #expect(host.fetches.withLock { $0.values.allSatisfy { $0 == 1 } && $0.count == 48 })
    }

    @Test func aKilledWorkersItemsAreTakenOverAndRecordedOnce() async throws {
        let paths = (0..<24).map { "/media/\($0).jpg" } + (0..<4).map { "/held/\($0).jpg" }
        let input = try urlList(paths)
        // The first worker takes items until it holds a held one in flight, and is killed then.
        let first = try worker(
            input, manifest: directory.path + "/first.jsonl", extra: ["--jobs", "2", "--lease", "2"])
        // Killed by the media host the moment its request for a held item arrives (a held fetch
        // would end as too_slow after 5 s without a byte).
        host.victim.store(first.pid, ordering: .sequentiallyConsistent)
        if host.arrived.load(ordering: .sequentiallyConsistent) > 0,
            host.victim.exchange(0, ordering: .sequentiallyConsistent) > 0
        {
            first.send(SIGKILL)
        }
        #expect(await signalled(host.arrivals), "the first worker reached a held item")
        first.wait()
        #expect(first.process.terminationReason == .uncaughtSignal, "it was killed, not finished")
        let running = try fresh.sql("SELECT count(*) FROM attache_job WHERE state = 'running'")
        #expect((Int(running) ?? 0) > 0, "it was killed with items in hand")
        release()
        // Two fresh workers finish the campaign; the dead one's items come back when its
        // leases run out (2 s), and are recorded once.
        let b = try worker(input, manifest: directory.path + "/b.jsonl", extra: ["--jobs", "2", "--lease", "2"])
        let c = try worker(input, manifest: directory.path + "/c.jsonl", extra: ["--jobs", "2", "--lease", "2"])
        #expect(b.wait().status == 0 && c.wait().status == 0)
        let rows = try table()
        #expect(rows.count == 28 && rows.allSatisfy { $0 == (1, "done") }, "\(rows)")
        let attempts = Int(try fresh.sql("SELECT sum(attempts) FROM attache_job")) ?? 0
        #expect(attempts > 28, "the killed worker's items were claimed again")
        let lines = try records(directory.path + "/c.jsonl")
        #expect(lines.count == 28 && Set(lines.map(\.reference)).count == 28)
        #expect(lines.allSatisfy { $0.outcome == "attached" }, "\(lines.map(\.outcome))")
    }

    /// The campaign that once left `store verify` counting 224 of 800 objects (an S3 listing cut
    /// at 64 KiB): 400 payloads of two distinct GIFs each, two workers, then every object counted.
    @Test func fourHundredItemsOfTwoMediaAreVerifiedWhole() async throws {
        for index in 0..<800 {
            var generator = SplitMix(seed: UInt64(index) + 7)
            let indices = (0..<256).map { _ in UInt8(generator.next() % 4) }
            let gif = try writeGIF(
                width: 16, height: 16, palette: [0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255],
                frames: [
                    GIFTestFrame(
                        left: 0, top: 0, width: 16, height: 16, indices: indices, delay: 0, disposal: 0,
                        transparent: -1)
                ])
            server.route("/gif/\(index).gif") { _, c in c.respond(headers: ["Content-Type": "image/gif"], body: gif) }
        }
        let input = directory.path + "/campaign.jsonl"
        let lines = (0..<400).map {
            #"{"aps":{"mutable-content":1},"media-url":[""# + server.url("/gif/\(2 * $0).gif") + #"",""#
                + server.url("/gif/\(2 * $0 + 1).gif") + #""]}"#
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: input))
        let a = try worker(input, manifest: directory.path + "/a.jsonl", extra: ["--jobs", "4"])
        let b = try worker(input, manifest: directory.path + "/b.jsonl", extra: ["--jobs", "4"])
        #expect(a.wait().status == 0 && b.wait().status == 0)
        let finished = try records(directory.path + "/a.jsonl")
        #expect(finished.count == 400 && finished.allSatisfy { $0.outcome == "attached" }, "\(finished.map(\.outcome))")
        #expect(try fresh.sql("SELECT count(*) FROM attache_object") == "800")
        let verify = try await attache(
            ["store", "verify", "--json"] + fresh.arguments, environment: fresh.childEnvironment)
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains(#""clean":true,"objects":800,"#), "\(verify.output)")
        #expect(verify.output.contains(#""corrupt":0,"missing":0,"orphans":0"#), "\(verify.output)")
    }

    @Test func aCampaignNeedsASharedStore() async throws {
        let input = try urlList(["/media/0.jpg"])
        let result = try await attache(
            ["batch", input, "--campaign", "x", "--store", directory.path + "/store", "--allow-loopback"])
        #expect(result.status != 0 && result.output.contains("through a shared store"), "\(result.output)")
    }

    /// Runs `attache` with `arguments` to its end (on a thread of its own): its status and
    /// what it said on standard output and error.
    func attache(
        _ arguments: [String], environment: [String: String]? = nil
    ) async throws -> (
        status: Int32, output: String
    ) {
        let executable = try attacheExecutable()
        let result = try await onOwnThread {
            try runChild(executable, arguments, environment: environment, outputs: .merged)
        }
        return (result.status, result.text)
    }

    /// Waits for `semaphore` without holding a pool thread (up to a generous limit).
    func signalled(_ semaphore: DispatchSemaphore) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: semaphore.wait(timeout: .now() + 120) == .success)
            }
        }
    }
}
