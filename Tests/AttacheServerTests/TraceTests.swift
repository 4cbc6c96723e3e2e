import AttacheTestSupport
import Foundation
import Testing

/// OpenTelemetry traces as an operator gets them: the real `attache` binary, configured only by
/// the standard `OTEL_*` environment, exports over OTLP/HTTP to a real receiver (PyPI's
/// opentelemetry-proto decoding each `ExportTraceServiceRequest`, Tests/Fixtures/otlp_receiver.py).
@Suite struct TraceTests {
    static let python = Paths.package + "/.build/tools/bin/python"
    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    /// One decoded span.
    struct Span {
        let name: String
        let traceID: String
        let spanID: String
        let parentID: String
        let status: Int
        let statusMessage: String
        let attributes: [String: Any]
        let resource: [String: Any]
        let text: String
    }

    /// A receiver on a free loopback port, appending what it decodes to a file.
    final class Receiver: @unchecked Sendable {
        let process: ChildProcess
        let directory: TemporaryDirectory
        let port: Int

        init() async throws {
            directory = try TemporaryDirectory()
            process = try ChildProcess(
                TraceTests.python,
                [Paths.fixtures + "/otlp_receiver.py", directory.path + "/port", directory.path + "/spans.jsonl"],
                outputs: .discarded)
            let path = directory.path + "/port"
            #expect(await eventually { FileManager.default.fileExists(atPath: path) }, "the receiver did not start")
            port = try #require(Int((try? String(contentsOfFile: path, encoding: .utf8)) ?? ""))
        }

        func stop() {
            if process.isRunning { process.send(SIGTERM) }
        }

        var endpoint: String { "http://127.0.0.1:\(port)" }

        var spans: [Span] {
            let text = (try? String(contentsOfFile: directory.path + "/spans.jsonl", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let name = object["name"] as? String
                else { return nil }
                let status = object["status"] as? [String: Any]
                return Span(
                    name: name, traceID: object["trace_id"] as? String ?? "",
                    spanID: object["span_id"] as? String ?? "", parentID: object["parent_span_id"] as? String ?? "",
                    status: status?["code"] as? Int ?? -1, statusMessage: status?["message"] as? String ?? "",
                    attributes: object["attributes"] as? [String: Any] ?? [:],
                    resource: object["resource"] as? [String: Any] ?? [:], text: String(line))
            }
        }

        /// What the receiver could not decode (none expected).
        var undecodable: [String] {
            let text = (try? String(contentsOfFile: directory.path + "/spans.jsonl", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").filter { $0.contains("\"undecodable\"") }.map(String.init)
        }
    }

    static func environment(_ receiver: Receiver) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        environment["OTEL_SERVICE_NAME"] = "attache-under-test"
        environment["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test"
        // Spans leave in batches every 100 ms rather than every 5 s.
        environment["OTEL_BSP_SCHEDULE_DELAY"] = "100"
        return environment
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: python), "needs .build/tools (scripts/api-tools.sh)"))
    func aRequestsSpansContinueTheCallersTrace() async throws {
        let receiver = try await Receiver()
        defer { receiver.stop() }
        let media = try TestHTTPServer()
        let photo = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        media.route("/photo.jpg") { _, c in c.respond(body: photo) }
        media.route("/moved.jpg") { _, c in c.redirect(to: "/photo.jpg") }
        media.route("/gone.jpg") { _, c in c.respond(status: 404, body: Array("gone".utf8)) }

        let serve = try ServeProcess(
            ["--log-format", "json", "--gc-interval", "0s"], environment: Self.environment(receiver))
        defer { serve.stop() }
        let base = try await serve.base()

        // A caller's trace, a secret in the alert and in each URL's query.
        let secretQuery = "signature=SECRET-QUERY-\(UInt32.random(in: 0 ... .max))"
        let alert = "SECRET-ALERT-\(UInt32.random(in: 0 ... .max))"
        let body = """
            {"aps":{"alert":"\(alert)","mutable-content":1},
             "media-url":"\(media.url("/moved.jpg"))?\(secretQuery)"}
            """
        var headers = ServiceTests.auth
        headers["traceparent"] = "00-\(Self.callerTrace)-\(Self.callerSpan)-01"
        headers["tracestate"] = "vendor=opaque"
        let answer = try await curl("POST", base + "/v1/notifications", headers: headers, body: Array(body.utf8))
        #expect(answer.status == 200 && answer.headers["attache-attached"] == "1", "\(answer.text)")
        let url = try #require(((try answer.json())["attachments"] as? [[String: Any]])?.first?["url"] as? String)
        let token = String(url.split(separator: "/").dropLast().last ?? "")
        #expect(try await curl("GET", url).status == 200)
        // A second payload whose media host answers 404.
        let failed = try await curl(
            "POST", base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/gone.jpg")))
        #expect(failed.status == 200 && failed.headers["attache-attached"] == "0", "\(failed.text)")

        let stages = ["fetch", "validate", "transform", "store"]
        #expect(
            await eventually {
                let spans = receiver.spans
                return spans.filter { $0.name == "attachment" }.count >= 2
                    && spans.contains { $0.name.hasPrefix("GET /attachments") }
                    && spans.filter { stages.contains($0.name) }.count >= 5
            }, "spans never arrived: \(receiver.spans.map(\.name)) \(receiver.undecodable)")
        let spans = receiver.spans
        #expect(receiver.undecodable.isEmpty, "\(receiver.undecodable)")

        // One trace: the caller's. The server span is the caller's child; the attachment its.
        let traced = spans.filter { $0.traceID == Self.callerTrace }
        let server = try #require(traced.first { $0.name == "POST /v1/notifications" }, "\(spans.map(\.name))")
        #expect(server.parentID == Self.callerSpan)
        #expect(server.attributes["http.route"] as? String == "/v1/notifications")
        #expect(server.attributes["http.response.status_code"] as? Int == 200)
        #expect(server.attributes["http.request.method"] as? String == "POST")
        #expect(server.resource["service.name"] as? String == "attache-under-test")
        #expect(server.resource["deployment.environment"] as? String == "test")
        let attachment = try #require(traced.first { $0.name == "attachment" })
        #expect(attachment.parentID == server.spanID)
        #expect(attachment.status != 2)
        try Self.expectStageSpans(traced, under: attachment, photo: photo, media: media)
        // The download: a server span of its own (a new trace), its route without the token.
        let download = try #require(spans.first { $0.name == "GET /attachments/{token}/{file}" })
        #expect(download.attributes["http.response.status_code"] as? Int == 200)

        // The failure: the fetch span and the attachment's say why, in the status.
        let failedFetch = try #require(spans.first { $0.name == "fetch" && $0.status == 2 }, "\(spans.map(\.text))")
        #expect(failedFetch.statusMessage == "http_status")
        let failedAttachment = try #require(spans.first { $0.spanID == failedFetch.parentID })
        #expect(
            failedAttachment.status == 2 && failedAttachment.attributes["attache.failed_stage"] as? String == "fetch")

        Self.expectNoSecret(in: spans, [RunningService.apiKey, alert, "SECRET-QUERY", token])
        // The request's JSON log line names its trace and span.
        let line = try #require(
            serve.logged.split(separator: "\n").first {
                $0.contains(#""route":"notifications""#) && $0.contains(Self.callerTrace)
            },
            "\(serve.logged)")
        #expect(line.contains(#""span_id":"\#(server.spanID)""#), "\(line)")
    }

    /// A child span of `attachment` per stage, each with what it is asked to say.
    static func expectStageSpans(_ traced: [Span], under attachment: Span, photo: [UInt8], media: TestHTTPServer) throws
    {
        let stages = ["fetch", "validate", "transform", "store"]
        var byStage: [String: Span] = [:]
        for stage in stages {
            let found = traced.filter { $0.name == stage }
            #expect(found.count == 1, "\(stage): \(found.count)")
            byStage[stage] = found.first
            #expect(found.first?.parentID == attachment.spanID, "\(stage)")
        }
        let fetch = try #require(byStage["fetch"]).attributes
        #expect(fetch["http.response.status_code"] as? Int == 200)
        #expect(fetch["attache.fetch.redirects"] as? Int == 1)
        #expect(fetch["network.peer.address"] as? String == "127.0.0.1")
        #expect(fetch["http.response.body.size"] as? Int == photo.count)
        for phase in ["name_lookup_ms", "connect_ms", "first_byte_ms", "total_ms"] {
            #expect(fetch["attache.fetch." + phase] is Double, "\(phase): \(fetch)")
        }
        #expect(
            (fetch["attache.fetch.total_ms"] as? Double ?? -1) >= (fetch["attache.fetch.connect_ms"] as? Double ?? 0))
        #expect(fetch["url.full"] as? String == media.url("/photo.jpg"), "the last hop, without its query")
        let transform = try #require(byStage["transform"]).attributes
        #expect(transform["attache.transform.decoder"] as? String == "libjpeg-turbo")
        #expect(transform["attache.transform.bytes_in"] as? Int == photo.count)
        #expect(transform["attache.transform.width_in"] as? Int == 128)
        #expect((transform["attache.transform.bytes_out"] as? Int ?? 0) > 0)
        #expect(transform["attache.transform.width_out"] is Int)
        let store = try #require(byStage["store"]).attributes
        #expect(store["attache.store.backend"] as? String == "directory")
        #expect(store["attache.store.new"] as? Bool == true)
    }

    /// No secret in any span: the API key, the alert, a query, the token.
    static func expectNoSecret(in spans: [Span], _ secrets: [String]) {
        for span in spans {
            for secret in secrets {
                #expect(!span.text.contains(secret), "\(span.name) holds a secret: \(span.text)")
            }
        }
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: python), "needs .build/tools (scripts/api-tools.sh)"))
    func aBatchOfTwentyGivesTwentyItemSpans() async throws {
        let receiver = try await Receiver()
        defer { receiver.stop() }
        let media = try TestHTTPServer()
        let photo = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        media.route("/photo.jpg") { _, c in c.respond(body: photo) }
        let directory = try TemporaryDirectory()
        let input = directory.path + "/payloads"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        for index in 0..<20 {
            let image = media.url("/photo.jpg") + (index % 2 == 0 ? "" : "?n=\(index)")
            try Data(payload(image: image)).write(to: URL(fileURLWithPath: input + "/item\(index).json"))
        }
        let run = await runProcess(
            try attacheExecutable(),
            [
                "batch", input, "--store", directory.path + "/store", "--allow-loopback", "--out",
                directory.path + "/out", "--manifest", directory.path + "/manifest.jsonl",
            ], environment: Self.environment(receiver), directory: directory.path)
        #expect(run.status == 0, "\(run.output)")
        // Every span is sent before the command returns.
        let spans = receiver.spans
        let batch = try #require(spans.first { $0.name == "batch" }, "\(spans.map(\.name)) \(receiver.undecodable)")
        #expect(batch.attributes["attache.batch.done"] as? Int == 20)
        let items = spans.filter { $0.name == "batch.item" }
        #expect(items.count == 20)
        #expect(items.allSatisfy { $0.parentID == batch.spanID && $0.traceID == batch.traceID })
        #expect(Set(items.compactMap { $0.attributes["attache.batch.item"] as? String }).count == 20)
        // Each item's attachment under it.
        let itemIDs = Set(items.map(\.spanID))
        let attachments = spans.filter { $0.name == "attachment" }
        #expect(attachments.count == 20 && attachments.allSatisfy { itemIDs.contains($0.parentID) })
    }
}
