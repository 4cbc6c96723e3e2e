import AttacheClient
import AttacheCore
import AttacheSeal
import AttacheTestSupport
import Crypto
import Foundation
import Testing

@testable import AttacheServer

/// Sealed payloads through the service: the seal asked for in headers, the attachments
/// downloaded by the client kit from the service itself (tokens, Range), receipts counted.
@Suite(.enabled(if: inIsolatedChild)) struct SealedServiceTests {
    static func start(clock: TestClock? = nil) async throws -> RunningService {
        // Port 0 in the base URL: the service writes the port it binds, so the URLs are real.
        try await RunningService(clock: clock) { configuration in
            configuration.pipeline.baseURL = "http://127.0.0.1:0/attachments"
            configuration.pipeline.deadline = .seconds(120)
            configuration.maxDeadline = .seconds(120)
            configuration.pipeline.tokenTTL = 3600
            configuration.receipts = true
        }
    }

    @Test func sealedThroughTheServiceAndDownloadedByTheKit() async throws {
        let clock = TestClock()
        let media = try ServiceTests.mediaServer()
        let service = try await Self.start(clock: clock)
        defer { Task { await service.stop() } }
        let key = P256.KeyAgreement.PrivateKey()
        let input = Array(
            #"{"aps":{"alert":{"title":"Secret title","body":"Secret body"},"mutable-content":1},"image":"\#(media.url("/photo.jpg"))","receipts":1,"attache-receipts":1}"#
                .utf8)
        let answer = try await curl(
            "POST", service.base + "/v1/notifications",
            headers: ServiceTests.auth.merging([
                "Attache-Seal-Key": key.publicKey.x963Representation.base64EncodedString(), "Attache-Seal-Kid": "dev-9",
            ]) { $1 }, body: input)
        #expect(answer.status == 200 && answer.headers["attache-attached"] == "1", "\(answer.text)")
        #expect(!answer.text.contains("Secret") && !answer.text.contains("photo.jpg") && answer.body.count <= 4096)

        let downloads = try TemporaryDirectory()
        let kit = AttacheClient(directory: URL(fileURLWithPath: downloads.path), key: .p256(key)) { nil }
        let prepared = await kit.prepare(json: Data(answer.body), deadline: .now + .seconds(60))
        #expect(prepared.failures.isEmpty && prepared.sealError == nil, "\(prepared.failures)")
        #expect(prepared.title == "Secret title" && prepared.body == "Secret body")
        let file = try #require(prepared.attachments.first?.fileURL)
        #expect(try Data(contentsOf: file).starts(with: [0xFF, 0xD8, 0xFF]))

        // Receipts: asked for by the payload, taken with the attachment's own token.
        #expect(prepared.receipts.count == 1 && prepared.receipts[0].result == "full")
        #expect(await kit.send(prepared.receipts) == 1)
        let metrics = try await curl("GET", service.base + "/metrics")
        #expect(
            metrics.text.contains(#"attache_device_receipts_total{result="full",code="none"} 1"#),
            "\(metrics.text.prefix(4000))")
        let forged = try await curl(
            "POST", service.base + "/attachments/AAAA/" + file.deletingPathExtension().lastPathComponent + ".ats",
            body: Array(#"{"result":"full"}"#.utf8))
        #expect(forged.status == 403)

        // The token expires: the kit gets a typed error and keeps nothing it downloaded; it
        // still shows the text, and the placeholder the seal carried.
        clock.advance(7200)
        let later = try TemporaryDirectory()
        let expired = AttacheClient(directory: URL(fileURLWithPath: later.path), key: .p256(key)) { nil }
        let refused = await expired.prepare(json: Data(answer.body), deadline: .now + .seconds(60))
        #expect(
            refused.attachments.map(\.rendition) == [.placeholder]
                && refused.failures.values.contains(.httpStatus(403)), "\(refused.failures)")
        #expect(refused.body == "Secret body")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: later.path)
                == refused.attachments.map(\.fileURL.lastPathComponent))

        // A key that is no key: the placeholder alone, nothing it would have hidden, and why.
        let bad = try await curl(
            "POST", service.base + "/v1/notifications",
            headers: ServiceTests.auth.merging(["Attache-Seal-Key": "bm90IGEga2V5", "Attache-Seal-Kid": "x"]) { $1 },
            body: input)
        #expect(bad.status == 200 && bad.headers["attache-payload-error"] == "seal_failed")
        #expect(bad.text.contains("New message") && !bad.text.contains("Secret") && !bad.text.contains("photo.jpg"))
        // A header that breaks the document's pattern is refused.
        let malformed = try await curl(
            "POST", service.base + "/v1/notifications",
            headers: ServiceTests.auth.merging(["Attache-Seal-Key": "not base64!", "Attache-Seal-Kid": "x"]) { $1 },
            body: input)
        #expect(malformed.status == 400)
    }
}
