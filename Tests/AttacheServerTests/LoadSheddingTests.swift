import AttacheFetch
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// Payloads turned away on the event loop when every slot and queue place is taken: before
/// their bodies are read, on a connection that stays open, never ahead of an earlier answer on
/// their connection, and never leaving a count behind.
@Suite struct LoadSheddingTests {
    typealias Raw = RawDownloadsTests.RawConnection

    static func post(length: Int, query: String = "") -> String {
        "POST /v1/notifications\(query) HTTP/1.1\r\nHost: attache.test\r\nAuthorization: Bearer \(RunningService.apiKey)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(length)\r\n\r\n"
    }

    /// A service with one slot and one queue place, both taken by payloads held at their fetch.
    static func full() async throws -> (RunningService, HeldRoute, [Task<HTTPAnswer, any Error>], String) {
        let media = try TestHTTPServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: sampleJPEG)
        let service = try await ServiceTests.start {
            $0.maxConcurrent = 1
            $0.maxQueued = 1
            $0.retryAfterSeconds = 3
            // The held fetch stays held for as long as the test takes on a busy machine: not
            // ended by the stall or total timeout (5 s and 20 s) while the test still counts on it.
            $0.fetch.lowSpeedSeconds = 120
            $0.fetch.totalTimeout = .seconds(120)
        }
        let post = service.base + "/v1/notifications"
        let body = payload(image: media.url("/held.jpg"))
        let first = Task.detached { try await curl("POST", post, headers: ServiceTests.auth, body: body) }
        #expect(await held.waitForArrivals(1), "the first payload reached its fetch")
        let second = Task.detached { try await curl("POST", post, headers: ServiceTests.auth, body: body) }
        #expect(await eventually { service.service.admission.counts.waiting == 1 }, "the second payload waits")
        #expect(service.service.gate.count == 2)
        return (service, held, [first, second], String(decoding: body, as: UTF8.self))
    }

    @Test func aPayloadBeyondTheQueueIsRefusedBeforeItsBodyAndTheConnectionStays() async throws {
        let (service, held, waiting, body) = try await Self.full()
        defer { Task { await service.stop() } }
        let port = service.port
        let answers = try await onOwnThread {
            let connection = try Raw(port: port)
            // The head alone: the answer comes before a byte of the body is sent.
            try connection.send(Self.post(length: body.utf8.count, query: "?deadline=2s"))
            let refused = try connection.read(answers: 1)
            // The body is read and dropped; the connection answers its next request.
            try connection.send(body + "GET /healthz HTTP/1.1\r\nHost: attache.test\r\n\r\n")
            return refused + (try connection.read(answers: 1))
        }
        #expect(answers.map(\.status) == [503, 200])
        #expect(answers[0].headers.contains("Retry-After: 3"))
        #expect(String(decoding: answers[0].body, as: UTF8.self).contains(#""code":"overloaded""#))
        #expect(service.service.gate.count == 2, "a refused payload is not counted")

        held.release()
        for task in waiting { #expect(try await task.value.status == 200) }
        #expect(await eventually { service.service.gate.count == 0 })
        let metrics = try await curl("GET", service.base + "/metrics").text
        #expect((metricValue(metrics, "attache_overloaded_total") ?? 0) >= 1)
    }

    @Test func aPayloadPipelinedBehindAnUnansweredOneIsLeftToTheRouter() async throws {
        let media = try TestHTTPServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: sampleJPEG)
        let service = try await ServiceTests.start {
            $0.maxConcurrent = 1
            $0.maxQueued = 0
        }
        defer { Task { await service.stop() } }
        let body = String(decoding: payload(image: media.url("/held.jpg")), as: UTF8.self)
        let request = Self.post(length: body.utf8.count) + body
        let port = service.port
        // Two payloads in one write: the second arrives while the first fills the only slot.
        // Refused here, its 503 would be written before the first's answer.
        let answers = Task.detached {
            try await onOwnThread {
                let connection = try Raw(port: port)
                try connection.send(request + request)
                return try connection.read(answers: 2).map(\.status)
            }
        }
        #expect(await held.waitForArrivals(1))
        held.release()
        #expect(try await answers.value == [200, 200])
        #expect(await eventually { service.service.gate.count == 0 })
    }

    @Test func aClientThatHangsUpLeavesNoCountBehind() async throws {
        let media = try TestHTTPServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: sampleJPEG)
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }
        let body = String(decoding: payload(image: media.url("/held.jpg")), as: UTF8.self)
        let port = service.port
        let connection = try await onOwnThread { () -> Raw in
            let connection = try Raw(port: port)
            try connection.send(Self.post(length: body.utf8.count) + body)
            return connection
        }
        #expect(await held.waitForArrivals(1))
        #expect(service.service.gate.count == 1)
        _ = consume connection
        #expect(await eventually { service.service.gate.count == 0 }, "the count ends with the connection")
        held.release()
    }
}
