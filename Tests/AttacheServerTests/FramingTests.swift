import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// What a hostile or broken client sends on the wire: bodies that cannot be framed, clients that
/// hang up mid-body, requests HTTP/1.1 forbids, and routes no one has. Raw bytes on a socket;
/// every answer is read off it.
@Suite(.enabled(if: inIsolatedChild)) struct FramingTests {
    static let auth = "Authorization: Bearer \(RunningService.apiKey)\r\n"
    static let post = "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(auth)Content-Type: application/json\r\n"
    /// A payload that passes through (no `mutable-content`): a complete request is answered fast.
    static let payload = #"{"aps":{"alert":"hi"},"note":"framing"}"#

    /// The status line of a raw answer, e.g. `HTTP/1.1 400 Bad Request`.
    static func statusLine(_ answer: [UInt8]) -> String {
        String(decoding: answer.prefix { $0 != 0x0D }, as: UTF8.self)
    }

    static func status(_ answer: [UInt8]) -> Int? {
        let parts = statusLine(answer).split(separator: " ")
        return parts.count > 1 ? Int(parts[1]) : nil
    }

    static func counter(_ service: RunningService, _ sample: String) async throws -> Double {
        let text = try await curl("GET", service.base + "/metrics").text
        return metricValue(text, "attache_http_requests_total{\(sample)}") ?? 0
    }

    @Test("a body that cannot be framed is 400 invalid_request and closes, never a 500")
    func malformedChunkedBodiesAreClientErrors() async throws {
        let service = try await RunningService()
        defer { Task { await service.stop() } }
        let chunked = Self.post + "Transfer-Encoding: chunked\r\n\r\n"
        let bodies = [
            "zz\r\nabc\r\n0\r\n\r\n", "FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n",
            "10000000000000002\r\nabc\r\n0\r\n\r\n",
            "-2\r\nabc\r\n0\r\n\r\n", "2\n{}\r\n0\r\n\r\n", "2\r\n{}XX0\r\n\r\n",
        ]
        let failedBefore = try await Self.counter(service, #"route="notifications",method="POST",status="500""#)
        for body in bodies {
            let answer = try await rawExchange(port: service.port, Array((chunked + body).utf8))
            let text = String(decoding: answer, as: UTF8.self)
            #expect(Self.status(answer) == 400, "\(body.debugDescription): \(text)")
            #expect(text.contains(#""code":"invalid_request""#), "\(body.debugDescription): \(text)")
            #expect(text.lowercased().contains("connection: close"), "\(body.debugDescription): \(text)")
        }
        let failedAfter = try await Self.counter(service, #"route="notifications",method="POST",status="500""#)
        #expect(failedAfter == failedBefore, "a malformed body was counted as a server error")
    }

    @Test("a client hanging up mid-body is counted as a hang-up (499), not as a server error")
    func aHangUpMidBodyIsCountedAsSuch() async throws {
        let service = try await RunningService()
        defer { Task { await service.stop() } }
        let sample = #"route="notifications",method="POST",status="499""#
        let before = try await Self.counter(service, sample)
        let failedBefore = try await Self.counter(service, #"route="notifications",method="POST",status="500""#)
        let requests = [
            Self.post + "Content-Length: 100\r\n\r\n{\"aps\"",
            Self.post + "Transfer-Encoding: chunked\r\n\r\n6\r\n{\"aps\"\r\n",
        ]
        for request in requests {
            // The client closes its side after 6 body bytes; whatever it still reads is not a 5xx.
            let answer = try await rawExchange(port: service.port, Array(request.utf8))
            #expect((Self.status(answer) ?? 400) < 500, "\(String(decoding: answer, as: UTF8.self))")
        }
        // The hang-up is counted when the service sees the close, which may be after the client
        // is gone; the registry is the process's, and a suite beside this one (ServiceTests'
        // client that hangs up) may add one of its own.
        #expect(await eventually { try await Self.counter(service, sample) >= before + 2 })
        #expect(try await Self.counter(service, #"route="notifications",method="POST",status="500""#) == failedBefore)
    }

    @Test("RFC 9112 framing: Host once (HTTP/1.1), chunked alone, no Transfer-Encoding on HTTP/1.0")
    func requestsHTTPForbidsAreRefused() async throws {
        let service = try await RunningService()
        defer { Task { await service.stop() } }
        let body = "2\r\n{}\r\n0\r\n\r\n"
        // (request, status, whether the answer is ours: `chunked` twice is refused by the HTTP decoder
        // itself, with an empty 400, before the head reaches a handler.)
        let cases: [(String, Int, Bool)] = [
            ("GET /healthz HTTP/1.1\r\n\r\n", 400, true),
            ("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, true),
            ("GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, true),
            (
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: gzip, chunked\r\n\r\n\(body)",
                501, true
            ),
            (
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: xchunked\r\n\r\n\(body)",
                501, true
            ),
            (
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: chunked, chunked\r\n\r\n\(body)",
                400, false
            ),
            (
                "POST /v1/notifications HTTP/1.0\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: chunked\r\n\r\n\(body)",
                400, true
            ),
        ]
        for (request, expected, ours) in cases {
            let answer = try await rawExchange(port: service.port, Array(request.utf8))
            let text = String(decoding: answer, as: UTF8.self)
            #expect(Self.status(answer) == expected, "\(request.debugDescription): \(text)")
            #expect(!ours || text.contains(#""code":"invalid_request""#), "\(request.debugDescription): \(text)")
            #expect(text.lowercased().contains("connection: close"), "\(request.debugDescription): \(text)")
        }
        // What HTTP allows still works: HTTP/1.0 without Host, chunked alone.
        let old = try await rawExchange(port: service.port, Array("GET /healthz HTTP/1.0\r\n\r\n".utf8))
        #expect(Self.status(old) == 200)
        let good = try await rawExchange(
            port: service.port,
            Array(
                (Self.post + "Transfer-Encoding: chunked\r\n\r\n\(String(Self.payload.utf8.count, radix: 16))\r\n"
                    + Self.payload + "\r\n0\r\n\r\n").utf8))
        #expect(Self.status(good) == 200)
        #expect(String(decoding: good, as: UTF8.self).hasSuffix(Self.payload))
    }

    @Test("unknown paths and wrong methods are counted as route unmatched")
    func unknownRoutesAreUnmatched() async throws {
        let service = try await RunningService()
        defer { Task { await service.stop() } }
        let unmatched404 = #"route="unmatched",method="GET",status="404""#
        let unmatched405 = #"route="unmatched",method="PUT",status="405""#
        let attachment = #"route="attachment",method="PUT",status="405""#
        let before = (
            try await Self.counter(service, unmatched404), try await Self.counter(service, unmatched405),
            try await Self.counter(service, attachment)
        )
        #expect(try await curl("GET", service.base + "/wp-login.php").status == 404)
        #expect(try await curl("PUT", service.base + "/healthz").status == 405)
        #expect(try await curl("PUT", service.base + "/attachments/token/file.jpg").status == 405)
        #expect(try await Self.counter(service, unmatched404) == before.0 + 1)
        #expect(try await Self.counter(service, unmatched405) == before.1 + 2)
        #expect(try await Self.counter(service, attachment) == before.2)
    }

    @Test("a sweep of broken and cut requests: no 5xx, and the service answers after")
    func sweepOfBrokenAndCutRequests() async throws {
        let service = try await RunningService()
        defer { Task { await service.stop() } }
        let body = Self.payload
        let plain = Array((Self.post + "Content-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
        let chunked = Array(
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n" + "5\r\n" + body.prefix(5) + "\r\n"
                + String(body.utf8.count - 5, radix: 16) + "\r\n" + body.dropFirst(5) + "\r\n0\r\n\r\n").utf8)
        var requests: [[UInt8]] = []
        // Every cut of both requests (the client closes its side after the cut).
        for request in [plain, chunked] {
            for cut in 0...request.count { requests.append(Array(request.prefix(cut))) }
        }
        // Random damage to the body (and the chunk lines), then a random cut.
        var random = SplitMix(seed: 0x5EED_F4A3)
        for index in 0..<1000 {
            var request = index % 2 == 0 ? plain : chunked
            let headEnd = Self.post.utf8.count
            for _ in 0..<(1 + random.below(4)) {
                let at = headEnd + random.below(request.count - headEnd)
                request[at] = UInt8(truncatingIfNeeded: random.next())
            }
            if random.below(3) == 0 { request = Array(request.prefix(headEnd + random.below(request.count - headEnd))) }
            requests.append(request)
        }
        #expect(requests.count >= 1000)
        let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
            let lanes = 4
            for lane in 0..<lanes {
                let mine = stride(from: lane, to: requests.count, by: lanes).map { requests[$0] }
                group.addTask {
                    var seen: [Int] = []
                    for request in mine {
                        let answer = try await rawExchange(port: service.port, request)
                        seen.append(Self.status(answer) ?? 0)
                    }
                    return seen
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let serverErrors = statuses.filter { $0 >= 500 && $0 != 501 }
        #expect(serverErrors.isEmpty, "5xx answers: \(serverErrors.prefix(10))")
        #expect(statuses.contains(200) && statuses.contains(400))
        let health = try await curl("GET", service.base + "/healthz")
        #expect(health.status == 200)
        let after = try await rawExchange(port: service.port, plain)
        #expect(Self.status(after) == 200)
    }
}
