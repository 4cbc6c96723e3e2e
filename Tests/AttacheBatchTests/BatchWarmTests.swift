import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// `batch --warm`: every attachment URL of the payloads once through each edge, failures
/// counted and named without failing the batch. Run alone with the network suites.
@Suite(.enabled(if: inIsolatedChild)) struct BatchWarmTests {
    @Test func everyAttachmentURLIsRequestedOnceThroughEachEdge() async throws {
        let media = try batchMediaServer()
        let edge = try TestHTTPServer()
        edge.fallback { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: [0xFF, 0xD8, 0xFF]) }
        // An edge that answers nothing but 404.
        let broken = try TestHTTPServer()
        let directory = try TemporaryDirectory()
        let urls = directory.path + "/urls.txt"
        let names = ["gray.jpg", "palette-transparent.png", "animated-chi.gif", "gray.jpg", "missing.jpg"]
        try Data((names.map { media.url("/" + $0) }.joined(separator: "\n") + "\n").utf8)
            .write(to: URL(fileURLWithPath: urls))
        let base = "https://cdn.example.com/attachments"
        let out = directory.path + "/out.jsonl"
        let run = try runChild(
            try attacheExecutable(),
            [
                "batch", "--allow-loopback", "--store", directory.path + "/store", "--out", out, "--base-url", base,
                "--warm", edge.base, "--warm", broken.base + "/", "--json", "--metrics-file",
                directory.path + "/m.prom", urls,
            ])
        let (printed, said) = (Data(run.output), run.errorText)
        #expect(run.status == 0, "a warm-up failure does not fail the batch: \(said)")

        // The URLs the payloads name, read here on their own.
        let text = try String(contentsOfFile: out, encoding: .utf8)
        var paths: Set<String> = []
        var rest = Substring(text)
        while let start = rest.range(of: base + "/") {
            let end = rest[start.upperBound...].firstIndex(of: "\"")!
            paths.insert("/attachments/" + rest[start.upperBound..<end])
            rest = rest[end...]
        }
        #expect(paths.count >= 3, "\(text)")
        for path in paths {
            #expect(edge.count(path) == 1, "\(path) through the edge \(edge.count(path)) times")
            #expect(broken.count(path) == 1)
        }

        let summary = try #require(try JSONSerialization.jsonObject(with: printed) as? [String: Any])
        let warm = try #require(summary["warm"] as? [String: Any], "\(summary)")
        #expect(warm["urls"] as? Int == paths.count && warm["edges"] as? Int == 2)
        #expect(warm["requests"] as? Int == 2 * paths.count)
        #expect(warm["ok"] as? Int == paths.count && warm["failed"] as? Int == paths.count)
        let failures = try #require(warm["failures"] as? [[String: Any]])
        #expect(failures.count == paths.count)
        #expect(failures.allSatisfy { $0["edge"] as? String == broken.base && $0["code"] as? String == "http_status" })
        #expect(said.contains("batch: warm \(broken.base): "), "\(said)")
        let metrics = try String(contentsOfFile: directory.path + "/m.prom", encoding: .utf8)
        #expect(metrics.contains(#"state="ok"} \#(paths.count)"#) && metrics.contains("attache_batch_warm_finished{"))
    }

    @Test("a hung edge is given up on after its requests in flight fail in a row; the warm-up has a limit")
    func aHungEdgeDoesNotHoldTheWarmUp() async throws {
        let hung = try TestHTTPServer()
        hung.fallback { _, c in
            _ = c.timeUntilClientCloses(limit: .seconds(30))
            c.close()
        }
        let good = try TestHTTPServer()
        good.fallback { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: [0xFF, 0xD8, 0xFF]) }
        let urls = (0..<200).map { "https://cdn.example.com/attachments/t/\($0).jpg" }
        var policy = FetchPolicy()
        policy.allowLoopback = true
        // Long enough that a 3-byte answer on loopback is never cut on a busy machine (the hung
        // edge's requests fail at it: it is given up on after four, in two rounds).
        // The fetcher's retries stay at their default: a timeout is never retried (the hung edge's
        // requests fail once each), while a connect that fails for a moment on a machine whose
        // other suites hold many descriptors is, as in production.
        policy.totalTimeout = .seconds(5)
        let warmup = try EdgeWarmup(edges: [hung.base, good.base], concurrency: 2)
        let outcome = await warmup.run(urls, fetcher: Fetcher(policy: policy), limit: .seconds(120))
        // The hung edge: a few requests, not 200 of a second each; the good one: every URL.
        #expect(outcome.ok == 200 && outcome.failed == 200, "\(outcome.summary)")
        #expect(outcome.requests < 200 + 2 * warmup.givenUpAfter, "\(outcome.summary)")
        #expect(outcome.seconds < 60, "\(outcome.summary)")
        #expect(outcome.failures.contains { $0.message.contains("failed 4 requests in a row") })
        // The whole warm-up's limit: what is left when it passes is reported, not requested.
        let limited = await (try EdgeWarmup(edges: [hung.base], concurrency: 1)).run(
            Array(urls.prefix(50)), fetcher: Fetcher(policy: policy), limit: .seconds(1))
        #expect(limited.failed == 50 && limited.requests <= 3, "\(limited.summary)")
    }

    @Test func aWarmUpNeedsTheOutputAndAnEdgeIsOnlyAnAddress() async throws {
        let directory = try TemporaryDirectory()
        let urls = directory.path + "/urls.txt"
        try Data("http://127.0.0.1:9/a.jpg\n".utf8).write(to: URL(fileURLWithPath: urls))
        for (extra, words) in [
            (["--warm", "http://edge.example"], "needs --out"),
            (["--warm", "http://edge.example/attachments", "--out", directory.path + "/o"], "scheme, host and port"),
            (["--warm", "ftp://edge.example", "--out", directory.path + "/o"], "http://host[:port]"),
        ] {
            let run = try runChild(
                try attacheExecutable(), ["batch", "--store", directory.path + "/store"] + extra + [urls])
            let said = run.errorText
            #expect(run.status != 0 && said.contains(words), "\(extra): \(said)")
        }
    }
}
