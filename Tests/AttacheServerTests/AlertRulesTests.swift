import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// The alerting and recording rules of docs/operations/ as an operator runs them: promtool
/// checks and unit-tests them, and a real Prometheus scraping a running service fires an alert
/// after failures are injected.
@Suite(.enabled(if: inIsolatedChild)) struct AlertRulesTests {
    static let folder = Paths.package + "/docs/operations"
    static let promtool = "/usr/bin/promtool"
    static let prometheus = "/usr/bin/prometheus"

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: promtool), "needs promtool (scripts/media-tools.sh)"))
    func promtoolChecksAndTestsTheRules() async throws {
        let check = await runProcess(Self.promtool, ["check", "rules", Self.folder + "/attache-rules.yml"])
        #expect(check.status == 0 && check.output.contains("SUCCESS"), "\(check.output)")
        let test = await runProcess(
            Self.promtool, ["test", "rules", "attache-rules.test.yml"], directory: Self.folder)
        #expect(test.status == 0 && test.output.contains("SUCCESS"), "\(test.output)")
        // And it is able to fail: a threshold changed under the unit tests is caught.
        let directory = try TemporaryDirectory()
        let rules = try String(contentsOfFile: Self.folder + "/attache-rules.yml", encoding: .utf8)
        try Data(rules.replacingOccurrences(of: "> 0.2", with: "> 0.3").utf8)
            .write(to: URL(fileURLWithPath: directory.path + "/attache-rules.yml"))
        try FileManager.default.copyItem(
            atPath: Self.folder + "/attache-rules.test.yml", toPath: directory.path + "/attache-rules.test.yml")
        let broken = await runProcess(
            Self.promtool, ["test", "rules", "attache-rules.test.yml"], directory: directory.path)
        #expect(broken.status != 0, "\(broken.output)")
    }

    /// The shipped rules with their windows shortened (a minute of the test stands for the
    /// rules' five and ten), loaded by a real Prometheus that scrapes the running service
    /// every second: quiet while the service attaches, firing `AttacheAttachmentErrors`
    /// for `http_status` once the media host answers 404.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: prometheus), "needs Prometheus"))
    func aRealPrometheusFiresAfterInjectedFailures() async throws {
        let media = try TestHTTPServer()
        let photo = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        media.route("/photo.jpg") { _, c in c.respond(body: photo) }
        media.route("/gone.jpg") { _, c in c.respond(status: 404, body: Array("gone".utf8)) }
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }

        let directory = try TemporaryDirectory()
        var rules = try String(contentsOfFile: Self.folder + "/attache-rules.yml", encoding: .utf8)
        rules = rules.replacingOccurrences(of: #"for: [0-9]+m"#, with: "for: 0s", options: .regularExpression)
        rules = rules.replacingOccurrences(of: "[5m]", with: "[15s]")
        rules = rules.replacingOccurrences(of: "interval: 30s", with: "interval: 1s")
        try Data(rules.utf8).write(to: URL(fileURLWithPath: directory.path + "/rules.yml"))
        let target = String(service.base.dropFirst("http://".count))
        let config = """
            global: {scrape_interval: 1s, evaluation_interval: 1s}
            rule_files: [\(directory.path)/rules.yml]
            scrape_configs:
              - job_name: attache
                static_configs: [{targets: ['\(target)']}]
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory.path + "/prometheus.yml"))
        let (server, api) = try await Self.startPrometheus(
            config: directory.path + "/prometheus.yml", data: directory.path + "/data")
        defer { server.send(SIGTERM) }

        func firing() async throws -> [[String: Any]] {
            let answer = try await curl("GET", api + "/api/v1/alerts")
            let alerts = ((try answer.json()["data"] as? [String: Any])?["alerts"] as? [[String: Any]]) ?? []
            return alerts.filter { $0["state"] as? String == "firing" }
        }
        // Healthy traffic, scraped: the target is up and nothing fires.
        // The ceilings below are for a service or Prometheus that hangs; on a busy machine the
        // events they wait for (a scrape each second, a rule evaluated each second) come later.
        let scraped = await eventually(limit: .seconds(300)) {
            _ = try await curl(
                "POST", service.base + "/v1/notifications", headers: ServiceTests.auth,
                body: payload(image: media.url("/photo.jpg")))
            let up = try await curl("GET", api + "/api/v1/query?query=up")
            return up.text.contains(#""value":["#) && up.text.contains(#","1"]"#)
        }
        #expect(scraped, "Prometheus never scraped the service")
        // Only the alert under test is checked: with every `for:` at 0s, another rule may trip
        // on a starting service's first scrape (a first slow request, a gauge not yet set) —
        // that is not what this test is about, and it is printed, not failed.
        func errorsAlert(_ alerts: [[String: Any]]) -> [[String: Any]] {
            alerts.filter { ($0["labels"] as? [String: String])?["alertname"] == "AttacheAttachmentErrors" }
        }
        let healthy = try await firing()
        #expect(errorsAlert(healthy).isEmpty, "AttacheAttachmentErrors fired on healthy traffic: \(healthy)")
        let others = healthy.compactMap { ($0["labels"] as? [String: String])?["alertname"] }
        if !others.isEmpty { print("alerts: other rules firing during the healthy traffic: \(others)") }
        // The media host answers 404 from now on: the alert fires for that code.
        let fired = await eventually(limit: .seconds(300)) {
            _ = try await curl(
                "POST", service.base + "/v1/notifications", headers: ServiceTests.auth,
                body: payload(image: media.url("/gone.jpg")))
            return try await errorsAlert(firing()).contains { alert in
                (alert["labels"] as? [String: String])?["reason"] == "http_status"
            }
        }
        let last = try await firing()
        #expect(fired, "AttacheAttachmentErrors never fired: \(last)")
    }

    /// Starts Prometheus on a free-looking port below the kernel's ephemeral range and waits
    /// for it to say it is ready, or to end (the port was taken: another is tried). It cannot
    /// listen on port 0 and say which it took. No fixed time is waited: a busy machine only
    /// makes the wait longer, and a child that ended is seen at once.
    static func startPrometheus(config: String, data: String) async throws -> (ChildProcess, String) {
        var output = ""
        for attempt in 0..<10 {
            let port = Int.random(in: 20_000..<32_000)
            let server = try ChildProcess(
                prometheus,
                [
                    "--config.file=\(config)", "--storage.tsdb.path=\(data)-\(attempt)",
                    "--web.listen-address=127.0.0.1:\(port)",
                ], outputs: .merged)
            let api = "http://127.0.0.1:\(port)"
            // Ready, or gone; the ceiling is for a child that hangs, not for a slow start.
            let end = ContinuousClock.now + .seconds(600)
            while server.isRunning && ContinuousClock.now < end {
                if (try? await curl("GET", api + "/-/ready"))?.status == 200 { return (server, api) }
                try await Task.sleep(for: .milliseconds(50))
            }
            output = String(decoding: server.outputSoFar.suffix(2_000), as: UTF8.self)
            server.send(SIGKILL)
            _ = await server.ended()
        }
        Issue.record("Prometheus did not start: \(output)")
        throw CancellationError()
    }
}
