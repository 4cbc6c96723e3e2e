import AttacheServer
import AttacheTestSupport
import Foundation
import Testing

/// No connection is held past its timeouts, and the open connections stay below the descriptor
/// limit: idle connections, slow heads (slowloris), stalled bodies, clients that never read,
/// and more connections than descriptors. Raw sockets on 127.0.0.1; every bound below is a
/// lower one set by the service's own timer, or a generous ceiling on an event.
@Suite struct ConnectionLimitTests {
    /// A client socket to the service, read and written on a thread of its own.
    final class Client: @unchecked Sendable {
        let fd: Int32

        struct Failure: Error { let message: String }

        init(port: Int, receiveBuffer: Int32? = nil) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard connectLoopback(fd, port: port, timeoutSeconds: 30, receiveWindow: receiveBuffer) == 0 else {
                close(fd)
                throw Failure(message: "cannot connect to 127.0.0.1:\(port): \(errno)")
            }
        }

        deinit { close(fd) }

        /// Ends the connection now (its descriptor is closed with the client).
        func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

        func send(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
        }

        /// Reads until the service closes the connection (or `limit` passes); the time it took
        /// and what was read.
        func readToClose(limit: Double = 60) -> (seconds: Double, bytes: [UInt8], closed: Bool) {
            let started = Date()
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Date().timeIntervalSince(started) < limit {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    return (Date().timeIntervalSince(started), received, true)
                }
                if n > 0 { received += buffer[0..<n] }
            }
            return (Date().timeIntervalSince(started), received, false)
        }

        /// Sends `text` a byte at a time, `interval` apart, until the service closes the
        /// connection or `limit` passes; the seconds from the first byte to the close.
        func trickle(_ text: String, interval: UInt32, limit: Double = 60) -> Double? {
            let started = Date()
            var bytes = Array(text.utf8)[...]
            var scratch = [UInt8](repeating: 0, count: 4096)
            while Date().timeIntervalSince(started) < limit {
                if let byte = bytes.popFirst() {
                    guard Glibc.send(fd, [byte], 1, Int32(MSG_NOSIGNAL)) == 1 else {
                        return Date().timeIntervalSince(started)
                    }
                }
                usleep(interval)
                let n = recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    return Date().timeIntervalSince(started)
                }
            }
            return nil
        }
    }

    static func started(_ change: @escaping (inout ConnectionLimits) -> Void) async throws -> RunningService {
        try await ServiceTests.start { configuration in change(&configuration.connections) }
    }

    static func timeouts(_ service: RunningService, _ timeout: String) async throws -> Double {
        let text = try await curl("GET", service.base + "/metrics").text
        return metricValue(text, #"attache_connection_timeouts_total{timeout="\#(timeout)"}"#) ?? 0
    }

    @Test("an idle connection is closed at its head timeout, and after an answer at its idle timeout")
    func idleConnectionsAreClosed() async throws {
        let service = try await Self.started {
            $0.headTimeout = .seconds(1)
            $0.idleTimeout = .seconds(2)
        }
        defer { Task { await service.stop() } }
        let port = service.port
        let fresh = try await onOwnThread { try Client(port: port).readToClose() }
        #expect(fresh.closed && fresh.seconds >= 0.95, "\(fresh)")
        let kept = try await onOwnThread { () throws -> (Double, [UInt8], Bool) in
            let client = try Client(port: port)
            _ = client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
            return client.readToClose()
        }
        #expect(kept.2 && kept.0 >= 1.95, "\(kept)")
        #expect(String(decoding: kept.1, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(try await Self.timeouts(service, "idle") >= 1)
        #expect(try await Self.timeouts(service, "head") >= 1)
    }

    @Test("a head sent a byte at a time is closed at the head timeout from its first byte, however often bytes come")
    func slowHeadsAreClosed() async throws {
        let service = try await Self.started { $0.headTimeout = .seconds(1) }
        defer { Task { await service.stop() } }
        let port = service.port
        let head = "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: " + String(repeating: "a", count: 2000)
        let closedAfter = try await onOwnThread { try Client(port: port).trickle(head, interval: 100_000) }
        let seconds = try #require(closedAfter, "a slow head kept its connection open for a minute")
        #expect(seconds >= 0.95, "closed after \(seconds) s")
        #expect(try await Self.timeouts(service, "head") >= 1)
    }

    @Test("a body that stops coming is closed at the body timeout; requests that keep coming are not")
    func stalledBodiesAreClosed() async throws {
        let service = try await Self.started {
            $0.headTimeout = .seconds(1)
            $0.bodyTimeout = .seconds(1)
            $0.idleTimeout = .seconds(60)
        }
        defer { Task { await service.stop() } }
        let port = service.port
        let stalled = try await onOwnThread { () throws -> (Double, [UInt8], Bool) in
            let client = try Client(port: port)
            _ = client.send(
                "POST /v1/notifications HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(RunningService.apiKey)\r\n"
                    + "Content-Length: 100\r\n\r\n{\"aps\"")
            return client.readToClose()
        }
        #expect(stalled.2 && stalled.0 >= 0.95, "\(stalled)")
        #expect(try await Self.timeouts(service, "body") >= 1)
        // Whole requests 0.2 s apart for 3 s, each head in one write: never a timeout.
        let steady = try await onOwnThread { () throws -> Int in
            let client = try Client(port: port)
            var answered = 0
            var buffer = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<15 {
                guard client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n") else { break }
                guard recv(client.fd, &buffer, buffer.count, 0) > 0 else { break }
                answered += 1
                usleep(200_000)
            }
            return answered
        }
        #expect(steady == 15)
    }

    @Test("a client that never reads its downloads is closed at the send timeout")
    func clientsThatNeverReadAreClosed() async throws {
        let media = try ServiceTests.mediaServer()
        let service = try await Self.started {
            $0.sendTimeout = .seconds(1)
            $0.idleTimeout = .seconds(60)
        }
        defer { Task { await service.stop() } }
        let (_, url) = try await ServiceTests.mutate(service, media: media)
        let path = String(url.dropFirst("http://attache.test".count))
        let before = try await Self.timeouts(service, "send")
        let port = service.port
        // 200 downloads asked for at once and none read: far more than the sockets' buffers hold.
        let client = try await onOwnThread { () throws -> Client in
            let client = try Client(port: port, receiveBuffer: 4096)
            _ = client.send(String(repeating: "GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n", count: 200))
            return client
        }
        #expect(await eventually { (try? await Self.timeouts(service, "send")) == before + 1 })
        let after = try await onOwnThread { client.readToClose(limit: 30) }
        #expect(after.closed)
    }

    @Test("beyond max-connections a new connection gets 503 and is closed; the others are served")
    func connectionsBeyondTheLimitAreRefused() async throws {
        let service = try await Self.started { $0.maxConnections = 4 }
        defer { Task { await service.stop() } }
        let port = service.port
        // Three held, each answered once (so each is counted before the next test); then two
        // more at once: one of them is the fourth, the other is past the limit.
        let held = try await onOwnThread { () throws -> [Client] in
            try (0..<3).map { _ in
                let client = try Client(port: port)
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = client.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
                _ = recv(client.fd, &buffer, buffer.count, 0)
                return client
            }
        }
        let answers = try await onOwnThread { () throws -> [String] in
            let two = try (0..<2).map { _ in try Client(port: port) }
            for client in two { _ = client.send("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n") }
            return two.map { String(decoding: $0.readToClose(limit: 30).bytes, as: UTF8.self) }
        }
        let refused = answers.filter { $0.hasPrefix("HTTP/1.1 503") }
        #expect(refused.count == 1 && answers.filter { $0.hasPrefix("HTTP/1.1 200") }.count == 1, "\(answers)")
        #expect(refused.first?.contains(#""limit":"max_connections""#) == true, "\(refused)")
        #expect(refused.first?.contains("Retry-After: 1") == true, "\(refused)")
        let text = try await curl("GET", service.base + "/metrics").text
        #expect((metricValue(text, "attache_connections_refused_total") ?? 0) >= 1, "\(text.prefix(200))")
        withExtendedLifetime(held) {}
    }

    @Test("under a descriptor limit of 256, 240 held connections: the newest get 503s, the accepted are served")
    func heldConnectionsNeverTakeTheStoresDescriptors() async throws {
        let media = try ServiceTests.mediaServer()
        let directory = try TemporaryDirectory()
        let child = try ChildProcess(
            "/usr/bin/prlimit",
            [
                "--nofile=256:256", "--", try attacheExecutable(), "serve", "--port", "0", "--store",
                directory.path + "/store", "--api-keys", RunningService.apiKey, "--allow-loopback",
                "--max-concurrent", "8", "--max-queued", "8",
                // The held connections send nothing: on a busy machine the test may take longer
                // than the default minute a head may take, and the service would rightly close them.
                "--head-timeout", "1h",
            ])
        defer { child.send(SIGTERM) }
        func logged() -> String { String(decoding: child.errorsSoFar, as: UTF8.self) }
        #expect(await eventually { logged().contains("listening") || !child.isRunning }, "\(logged())")
        let range = try #require(
            logged().range(of: #"address=http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression))
        let port = try #require(Int(logged()[range].split(separator: ":").last!.dropLast()))
        let base = "http://127.0.0.1:\(port)"
        // (256 − 64 − 4 × 8) / 2 = 80 connections; the rest of the 240 are refused as they come.
        let held = try await onOwnThread { (0..<240).compactMap { _ in try? Client(port: port) } }
        #expect(held.count == 240)
        let refused = try await curl(
            "POST", base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/photo.jpg")))
        #expect(refused.status == 503, "\(refused.status) \(refused.text)")
        #expect(refused.text.contains("max_connections"), "\(refused.text)")
        // A payload on one of the connections that were taken is attached (the store writes:
        // its descriptors were kept), and so is its download on another.
        let body = String(decoding: payload(image: media.url("/photo.jpg")), as: UTF8.self)
        let post =
            "POST /v1/notifications HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(RunningService.apiKey)\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        let answers = try await onOwnThread { () throws -> [String] in
            // The accepted ones have nothing to read; the refused ones have their 503.
            var scratch = [UInt8](repeating: 0, count: 16)
            let accepted = held.filter { recv($0.fd, &scratch, scratch.count, Int32(MSG_DONTWAIT | MSG_PEEK)) < 0 }
            guard accepted.count >= 2 else { return ["only \(accepted.count) accepted"] }
            _ = accepted[0].send(post)
            let attached = String(decoding: accepted[0].readToClose(limit: 60).bytes, as: UTF8.self)
            guard
                let url = attached.range(
                    of: #"http://127\.0\.0\.1:[0-9]+/attachments/[^"]+"#, options: .regularExpression)
            else { return [attached] }
            let path = String(attached[url].drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
            _ = accepted[1].send("GET \(path) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            return [attached, String(decoding: accepted[1].readToClose(limit: 60).bytes.prefix(400), as: UTF8.self)]
        }
        #expect(answers.first?.hasPrefix("HTTP/1.1 200") == true && answers.count == 2, "\(answers)")
        #expect(answers.last?.hasPrefix("HTTP/1.1 200") == true, "\(answers)")
        #expect(!logged().contains("Too many open files"), "\(logged().suffix(2000))")
        // Once the held connections go, new ones are served again.
        for client in held { client.hangUp() }
        let again = try await curl(
            "POST", base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/photo.jpg")),
            extra: ["--retry", "30", "--retry-all-errors", "--retry-delay", "1"])
        #expect(again.status == 200, "\(again.text)")
    }
}
