import AttacheCore
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// The nginx edge of docs/operations/attache-edge.conf, as shipped (only its listen address,
/// origin address and cache folder changed), in front of a real service: a campaign's payloads
/// naming one picture get one URL, the edge keeps the download and answers 304, Range and HEAD
/// from it, never keeps a refusal, serves what it holds while the origin is stopped, and stops
/// serving a revoked object once the edge time has passed.
@Suite struct EdgeTests {
    static let nginx = "/usr/sbin/nginx"
    static let conf = Paths.package + "/docs/operations/attache-edge.conf"
    static let edgeSeconds = 10

    /// A running nginx with the shipped edge file in front of `origin`.
    final class Edge {
        let port: Int
        let directory: TemporaryDirectory
        let process: ChildProcess

        /// `readTimeout`: the file's `proxy_read_timeout` shortened, for a test of an origin
        /// that never answers.
        init(origin: Int, readTimeout: Int? = nil) async throws {
            directory = try TemporaryDirectory()
            var text = try String(contentsOfFile: EdgeTests.conf, encoding: .utf8)
            var changes = [
                ("listen 80;", "listen 127.0.0.1:0;"), ("server 127.0.0.1:8080 ", "server 127.0.0.1:\(origin) "),
                ("/var/cache/nginx/attache", directory.path + "/cache"),
            ]
            if let readTimeout { changes.append(("proxy_read_timeout 10s;", "proxy_read_timeout \(readTimeout)s;")) }
            for (from, to) in changes {
                // The file's own words: a change to them must change this test too.
                #expect(text.contains(from), "the edge file no longer says \(from)")
                text = text.replacingOccurrences(of: from, with: to)
            }
            // nginx cannot listen on port 0 and say which it took: try free-looking ports below
            // the kernel's ephemeral range (where the test servers' port-0 listeners land).
            var lastError = ""
            for _ in 0..<20 {
                let port = Int.random(in: 20_000..<32_000)
                let site = text.replacingOccurrences(of: "listen 127.0.0.1:0;", with: "listen 127.0.0.1:\(port);")
                try Data(site.utf8).write(to: URL(fileURLWithPath: directory.path + "/edge.conf"))
                let temp = directory.path + "/temp"
                let main = """
                    \(getuid() == 0 ? "user root;" : "")
                    worker_processes 1;
                    pid \(directory.path)/nginx.pid;
                    events { worker_connections 256; }
                    http {
                        access_log off;
                        client_body_temp_path \(temp)/body;
                        proxy_temp_path \(temp)/proxy;
                        fastcgi_temp_path \(temp)/fastcgi;
                        uwsgi_temp_path \(temp)/uwsgi;
                        scgi_temp_path \(temp)/scgi;
                        include \(directory.path)/edge.conf;
                    }
                    """
                try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: true)
                try Data(main.utf8).write(to: URL(fileURLWithPath: directory.path + "/nginx.conf"))
                let process = try ChildProcess(
                    EdgeTests.nginx,
                    ["-e", directory.path + "/error.log", "-c", directory.path + "/nginx.conf", "-g", "daemon off;"],
                    outputs: .discarded)
                // Listening, or gone (the port was taken). nginx writes its pid file once it
                // holds its port (while it retries a taken one, another server there answers).
                var up = false
                let pidFile = directory.path + "/nginx.pid"
                let pid = "\(process.process.processIdentifier)"
                for _ in 0..<600 where process.isRunning {
                    let written = (try? String(contentsOfFile: pidFile, encoding: .utf8))?
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                    if written == pid, (try? await curl("GET", "http://127.0.0.1:\(port)/"))?.status == 404 {
                        up = true
                        break
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                if up {
                    self.port = port
                    self.process = process
                    return
                }
                process.stop()
                lastError = (try? String(contentsOfFile: directory.path + "/error.log", encoding: .utf8)) ?? ""
            }
            throw EdgeFailed(message: "nginx did not start: \(lastError)")
        }

        deinit { process.stop() }

        /// `url` (an attachment URL of the service) as the edge serves it.
        func url(_ url: String) -> String {
            "http://127.0.0.1:\(port)" + url[url.range(of: "/attachments/")!.lowerBound...]
        }
    }

    struct EdgeFailed: Error { let message: String }

    /// Two payloads naming `path` on `media`, through `service`: their attachment URLs.
    static func urls(_ service: RunningService, _ media: TestHTTPServer, _ path: String) async throws -> [String] {
        var urls: [String] = []
        for _ in 0..<2 {
            let answer = try await curl(
                "POST", service.base + "/v1/notifications",
                headers: ["Authorization": "Bearer \(RunningService.apiKey)"],
                body: payload(image: media.url(path)))
            let attachments = try #require(try answer.json()["attachments"] as? [[String: Any]], "\(answer.text)")
            urls.append(try #require(attachments.first?["url"] as? String))
        }
        return urls
    }

    /// The directives both download paths (the event loop's keep-alive GET, the router's HEAD)
    /// answer: a shared cache's time never past the token's end; `0s` is `private`.
    @Test func theEdgeTimeIsWithinTheTokensLifeAndZeroIsPrivate() async throws {
        let media = try TestHTTPServer()
        media.route("/gray.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: sampleJPEG) }
        for (edge, ttl) in [(0, 3600), (60, 20)] {
            let service = try await ServiceTests.start { configuration in
                configuration.edgeMaxAge = .seconds(edge)
                configuration.pipeline.tokenTTL = Int64(ttl)
            }
            let url = ServiceTests.local(try await Self.urls(service, media, "/gray.jpg")[0], service)
            for method in ["GET", "HEAD"] {
                let answer = try await curl(method, url)
                let control = try #require(answer.headers["cache-control"])
                let directives = control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let age = try #require(directives.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst(8)) })
                #expect(age <= ttl + Int(AccessToken.window(forTTL: Int64(ttl))) && age > ttl - 30, "\(control)")
                if edge == 0 {
                    #expect(directives == ["private", "max-age=\(age)"], "\(method): \(control)")
                } else {
                    // A 20 s token: its edge time is what is left of it, not 60 s.
                    #expect(directives == ["public", "max-age=\(age)", "s-maxage=\(age)", "immutable"], "\(control)")
                }
            }
            await service.stop()
        }
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: nginx), "needs nginx (scripts/test.sh installs it)"))
    func theShippedEdgeKeepsDownloadsAndNothingElse() async throws {
        let media = try TestHTTPServer()
        let gray = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        let other = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/waterfall-rotated.jpg")))
        media.route("/gray.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: gray) }
        media.route("/other.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: other) }
        let service = try await ServiceTests.start { configuration in
            configuration.edgeMaxAge = .seconds(Self.edgeSeconds)
            configuration.pipeline.tokenTTL = 3600
        }
        let edge = try await Edge(origin: service.port)

        // One object named by two payloads: one URL (the token window is 225 s here; the two
        // may straddle a window's end, and then a third must match the second).
        var urls = try await Self.urls(service, media, "/gray.jpg")
        if urls[0] != urls[1] { urls = try await Self.urls(service, media, "/gray.jpg") }
        #expect(urls[0] == urls[1], "one object's payloads share one URL")
        let url = edge.url(urls[0])
        let origin = ServiceTests.local(urls[0], service)

        let cachedAt = ContinuousClock.now
        let first = try await curl("GET", url)
        #expect(first.status == 200)
        #expect(first.headers["x-cache-status"] == "MISS")
        let direct = try await curl("GET", origin)
        #expect(first.body == direct.body && !first.body.isEmpty)
        let control = try #require(first.headers["cache-control"])
        let parts = control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(parts.first == "public" && parts.last == "immutable", "\(control)")
        #expect(parts.contains("s-maxage=\(Self.edgeSeconds)"), "\(control)")
        let maxAge = try #require(parts.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst(8)) })
        #expect(maxAge > 3600 - 60 && maxAge <= 3600 + 225, "the device keeps it for the token's life: \(control)")

        let second = try await curl("GET", url)
        // A hit while the edge time lasts (on a machine slow enough to pass it, the edge asks again).
        let fresh = ContinuousClock.now - cachedAt < .seconds(Self.edgeSeconds)
        #expect(second.status == 200 && second.body == first.body)
        #expect(!fresh || second.headers["x-cache-status"] == "HIT", "\(second.headers)")
        let etag = try #require(first.headers["etag"])
        let notModified = try await curl("GET", url, headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        let range = try await curl("GET", url, headers: ["Range": "bytes=10-109"])
        #expect(range.status == 206 && range.headers["content-range"] == "bytes 10-109/\(first.body.count)")
        #expect(range.body == Array(first.body[10...109]))
        let head = try await curl("HEAD", url)
        #expect(head.status == 200 && head.headers["content-length"] == String(first.body.count))
        #expect(ContinuousClock.now - cachedAt >= .seconds(Self.edgeSeconds) || head.headers["x-cache-status"] == "HIT")

        try await Self.expectForgedTokensRefused(url)

        // Revoked at the origin: the edge stops serving it once the edge time has passed.
        let segments = url.split(separator: "/", omittingEmptySubsequences: false)
        let id = try #require(AttachmentID(hex: String(segments.last!.prefix { $0 != "." })))
        try service.service.store.revokeTokens(for: id)
        let revokedAt = ContinuousClock.now
        #expect(
            await eventually(limit: .seconds(Self.edgeSeconds + 30)) {
                try await curl("GET", url).status == 403
            }, "a revoked object is still served by the edge \(ContinuousClock.now - revokedAt) later")

        // Another object cached, then the origin stopped: the edge still serves it, fresh and
        // then past its edge time (stale while the origin cannot answer).
        let kept = edge.url(try await Self.urls(service, media, "/other.jpg")[0])
        let cached = try await curl("GET", kept)
        #expect(cached.status == 200 && cached.headers["x-cache-status"] == "MISS")
        await service.stop()
        let whileFresh = try await curl("GET", kept)
        #expect(whileFresh.status == 200 && whileFresh.body == cached.body)
        try await Task.sleep(for: .seconds(Self.edgeSeconds + 1))
        let stale = try await curl("GET", kept)
        #expect(stale.status == 200 && stale.body == cached.body, "the origin's absence is seen by a device")
        #expect(stale.headers["x-cache-status"] == "STALE")
    }

    /// `url` with its token forged: refused, and refused by the origin each time (never kept).
    static func expectForgedTokensRefused(_ url: String) async throws {
        let segments = url.split(separator: "/", omittingEmptySubsequences: false)
        let token = segments[segments.count - 2]
        let flipped = (token.first == "A" ? "B" : "A") + token.dropFirst()
        let forged = url.replacingOccurrences(of: String(token), with: flipped)
        for _ in 0..<2 {
            let refused = try await curl("GET", forged)
            #expect(refused.status == 403 && refused.headers["cache-control"] == "no-store")
            #expect(refused.headers["x-cache-status"] == "MISS", "a refusal is never answered from the edge")
        }
    }

    /// A listener on `port` that takes connections and never answers: an origin that hangs.
    final class HangingOrigin: @unchecked Sendable {
        let fd: Int32
        private var accepted: [Int32] = []

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            // The stopped service's socket may take a moment to let the port go.
            for _ in 0..<100 where bound != 0 {
                usleep(50_000)
                bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            guard bound == 0, listen(fd, 64) == 0 else {
                throw EdgeFailed(message: "cannot listen on \(port): \(String(cString: strerror(errno)))")
            }
            Thread.detachNewThread { [self] in
                while true {
                    let client = accept(fd, nil, nil)
                    if client < 0 { return }
                    accepted.append(client)
                }
            }
        }

        deinit {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    /// A download cached at the edge, then its origin gone (stopped, or hanging): the edge
    /// serves its copy past the edge time while the token lasts, and never after the token's
    /// end, whatever the origin does.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: nginx), "needs nginx (scripts/test.sh installs it)"),
        arguments: ["stopped", "hanging"])
    func noCopyIsServedPastItsTokensEnd(origin gone: String) async throws {
        let media = try TestHTTPServer()
        let gray = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        media.route("/gray.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: gray) }
        let service = try await ServiceTests.start { configuration in
            configuration.edgeMaxAge = .seconds(2)
            // Long enough that the token outlives the edge time however slowly the URL is made
            // and first fetched (at 8 s, 7 s went by on a busy machine: max-age=1, s-maxage=1).
            configuration.pipeline.tokenTTL = 20
        }
        let edge = try await Edge(origin: service.port, readTimeout: gone == "hanging" ? 1 : nil)
        let url = edge.url(try await Self.urls(service, media, "/gray.jpg")[0])
        let cachedAt = ContinuousClock.now
        let first = try await curl("GET", url)
        #expect(first.status == 200 && first.headers["x-cache-status"] == "MISS")
        let control = try #require(first.headers["cache-control"])
        let parts = control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let left = try #require(parts.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst(8)) })
        #expect(parts.contains("s-maxage=2"), "\(control)")
        // Stale for what is left of the token after the edge time, and no longer.
        #expect(parts.contains("stale-if-error=\(left - 2)") && parts.contains("stale-while-revalidate=\(left - 2)"))
        let tokenEnds = cachedAt + .seconds(left)
        let port = service.port
        await service.stop()
        let hanging = gone == "hanging" ? try HangingOrigin(port: port) : nil
        // Past the edge time (nginx counts it in whole seconds), within the token's life: the
        // copy, stale.
        try await Task.sleep(until: cachedAt + .milliseconds(3500))
        let stale = try await curl("GET", url)
        let status = "\(gone): \(stale.status) \(stale.headers["x-cache-status"] ?? "")"
        #expect(ContinuousClock.now >= tokenEnds || stale.status == 200, "\(status)")
        #expect(ContinuousClock.now >= tokenEnds || stale.headers["x-cache-status"] == "STALE", "\(status)")
        // Past the token's end: never the copy.
        try await Task.sleep(until: tokenEnds + .milliseconds(1500))
        for _ in 0..<3 {
            let late = try await curl("GET", url)
            #expect(late.status != 200, "\(gone): served \(late.headers["x-cache-status"] ?? "") past the token's end")
            #expect(late.status == 502 || late.status == 504, "\(late.status)")
        }
        withExtendedLifetime(hanging) {}
    }
}
