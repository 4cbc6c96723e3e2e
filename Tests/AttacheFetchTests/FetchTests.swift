import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheFetch

/// A real JPEG from the samples, served by the test servers.

/// Runs `body` and returns its typed error, or nil when it succeeded.
func fetchFailure(
    _ fetcher: Fetcher, _ url: String, deadline: ContinuousClock.Instant? = nil, limits: MediaLimits? = MediaLimits()
) async -> AttacheError? {
    do {
        _ = try await fetcher.fetch(url, deadline: deadline, limits: limits)
        return nil
    } catch {
        return error
    }
}

@Suite(.enabled(if: inIsolatedChild)) struct FetchTests {
    let server: TestHTTPServer

    init() throws {
        server = try TestHTTPServer()
        server.route("/image.jpg") { _, c in
            c.respond(
                headers: [
                    "Content-Type": "image/jpeg", "ETag": "\"v1\"", "Last-Modified": "Sun, 22 Nov 2026 00:00:00 GMT",
                ],
                body: sampleJPEG)
        }
    }

    @Test func fetchesBytesAndValidators() async throws {
        let fetcher = Fetcher(policy: loopbackPolicy())
        let media = try await fetcher.fetch(server.url("/image.jpg"))
        #expect(Array(media.bytes.buffer) == sampleJPEG)
        #expect(media.kind == .jpeg && media.status == 200 && media.attempts == 1 && media.redirects == 0)
        #expect(media.etag == "\"v1\"" && media.lastModified == "Sun, 22 Nov 2026 00:00:00 GMT")
        #expect(media.contentType == "image/jpeg" && media.remoteAddress == "127.0.0.1")
    }

    @Test func loopThreadIsNamedAndRunsAtTheNiceValueAskedFor() async throws {
        // 19, the lowest priority, needs no privilege whatever this process runs at.
        let lowered = Fetcher(policy: loopbackPolicy(), threadNice: 19)
        let plain = Fetcher(policy: loopbackPolicy())
        for fetcher in [lowered, plain] {
            let media = try await fetcher.fetch(server.url("/image.jpg"))
            #expect(Array(media.bytes.buffer) == sampleJPEG)
        }
        #expect(try threadNice(lowered.loopThreadID) == 19)
        // The name the kernel shows (`top -H`, /proc), not only Foundation's.
        let comm = try String(contentsOfFile: "/proc/self/task/\(lowered.loopThreadID)/comm", encoding: .utf8)
        #expect(comm == "attache-fetch\n")
        // Without one, the thread keeps the nice value of the thread that made it.
        #expect(try threadNice(plain.loopThreadID) == getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    }

    @Test func requestCarriesNoAcceptEncodingAndAFixedUserAgent() async throws {
        let seen = Mutex<[String: String]>([:])
        server.route("/headers") { request, c in
            seen.withLock { $0 = request.headers }
            c.respond(body: sampleJPEG)
        }
        setenv("http_proxy", "http://127.0.0.1:1", 1)
        defer { unsetenv("http_proxy") }
        _ = try await Fetcher(policy: loopbackPolicy()).fetch(server.url("/headers"))
        let headers = seen.withLock { $0 }
        #expect(headers["accept-encoding"] == nil)
        #expect(headers["user-agent"] == FetchPolicy().userAgent)
    }

    @Test func redirectChainsAndLoops() async throws {
        for step in 1...8 {
            server.route("/hop/\(step)") { _, c in c.redirect(to: step == 1 ? "/image.jpg" : "/hop/\(step - 1)") }
        }
        server.route("/loop") { _, c in c.redirect(to: "/loop") }
        let fetcher = Fetcher(policy: loopbackPolicy())
        let media = try await fetcher.fetch(server.url("/hop/5"))
        #expect(media.redirects == 5 && media.finalURL == server.url("/image.jpg"))
        #expect(await fetchFailure(fetcher, server.url("/hop/6"))?.code == .tooManyRedirects)
        #expect(await fetchFailure(fetcher, server.url("/loop"))?.code == .tooManyRedirects)
        #expect(server.count("/loop") == 6)
    }

    @Test func redirectToAnotherPortAndToAnotherScheme() async throws {
        let other = try TestHTTPServer()
        other.route("/there.jpg") { _, c in c.respond(body: sampleJPEG) }
        server.route("/elsewhere") { _, c in c.redirect(to: other.url("/there.jpg")) }
        server.route("/to-ftp") { _, c in c.redirect(to: "ftp://127.0.0.1:\(other.port)/x.jpg") }
        server.route("/to-file") { _, c in c.redirect(to: "file:///etc/passwd") }
        let fetcher = Fetcher(policy: loopbackPolicy())
        let media = try await fetcher.fetch(server.url("/elsewhere"))
        #expect(media.finalURL == other.url("/there.jpg") && media.bytes.count == sampleJPEG.count)
        #expect(await fetchFailure(fetcher, server.url("/to-ftp"))?.code == .schemeNotAllowed)
        #expect(await fetchFailure(fetcher, server.url("/to-file"))?.code == .schemeNotAllowed)
        let httpsOnly = Fetcher(policy: loopbackPolicy { $0.httpsOnly = true })
        #expect(await fetchFailure(httpsOnly, server.url("/image.jpg"))?.code == .schemeNotAllowed)
    }

    @Test func redirectWithUserinfoAndHostAllowlist() async throws {
        server.route("/to-userinfo") { _, c in
            c.redirect(to: "http://user:secret@127.0.0.1:\(self.server.port)/image.jpg")
        }
        server.route("/to-localhost") { _, c in c.redirect(to: "http://localhost:\(self.server.port)/image.jpg") }
        let fetcher = Fetcher(policy: loopbackPolicy())
        #expect(await fetchFailure(fetcher, server.url("/to-userinfo"))?.code == .invalidURL)
        #expect(server.count("/image.jpg") == 0, "the redirect with userinfo was never requested")
        let allowlisted = Fetcher(policy: loopbackPolicy { $0.allowedHosts = ["127.0.0.1"] })
        #expect(try await allowlisted.fetch(server.url("/image.jpg")).bytes.count == sampleJPEG.count)
        let error = await fetchFailure(allowlisted, server.url("/to-localhost"))
        #expect(error?.code == .hostNotAllowed && error?.detail == "localhost")
        #expect(await fetchFailure(allowlisted, "http://localhost:\(server.port)/image.jpg")?.code == .hostNotAllowed)
    }

    @Test func lyingLengthAndTruncatedBodies() async throws {
        server.route("/lying-length") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n")
            c.write(Array(sampleJPEG.prefix(1000)))
            c.close()
        }
        server.route("/truncated-chunked") { _, c in
            c.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n")
            c.write(Array(sampleJPEG.prefix(1000)))
            c.write("\r\n")
            c.close()
        }
        server.route("/short-length") { _, c in
            // Claims fewer bytes than it sends: the body is cut at the declared length.
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n")
            c.write(sampleJPEG)
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        #expect(await fetchFailure(fetcher, server.url("/lying-length"))?.code == .truncated)
        #expect(await fetchFailure(fetcher, server.url("/truncated-chunked"))?.code == .truncated)
        let cut = try await fetcher.fetch(server.url("/short-length"))
        #expect(cut.bytes.count == 100, "a body longer than declared is read to its declared length only")
    }

    @Test("malformed answers are bad_response, an oversized header too_large, and the bytes read are counted")
    func malformedAnswersHaveCodesThatSayWhat() async throws {
        server.route("/no-status-line") { _, c in
            c.write("Content-Type: image/jpeg\r\nContent-Length: 4\r\n\r\nabcd")
            c.close()
        }
        server.route("/two-lengths") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: \(sampleJPEG.count)\r\nContent-Length: 10\r\n\r\n")
            c.write(sampleJPEG)
            c.close()
        }
        server.route("/huge-header-line") { _, c in
            c.write("HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 10_000_000) + "\r\n\r\n")
            c.close()
        }
        server.route("/many-header-lines") { _, c in
            c.write(
                "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Many: aaaaaaaaaaaaaaaaaaaaaaaa\r\n", count: 5000) + "\r\n")
            c.close()
        }
        server.route("/same-length-twice") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: \(sampleJPEG.count), \(sampleJPEG.count)\r\n\r\n")
            c.write(sampleJPEG)
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        let noStatus = await fetchFailure(fetcher, server.url("/no-status-line"))
        #expect(noStatus?.code == .badResponse, "\(String(describing: noStatus))")
        let twoLengths = await fetchFailure(fetcher, server.url("/two-lengths"))
        #expect(twoLengths?.code == .badResponse, "\(String(describing: twoLengths))")
        for path in ["/huge-header-line", "/many-header-lines"] {
            let refusal = await fetchFailure(fetcher, server.url(path))
            #expect(refusal?.code == .tooLarge, "\(path): \(String(describing: refusal))")
        }
        // One length said twice alike is one length (RFC 9110 §8.6).
        #expect(try await fetcher.fetch(server.url("/same-length-twice")).bytes.count == sampleJPEG.count)
    }

    @Test("header values longer than their buffer are left out, never cut; the final URL is whole")
    func longValuesAreWholeOrAbsent() async throws {
        let long = "\"" + String(repeating: "e", count: 300) + "\""
        let short = "\"" + String(repeating: "e", count: 200) + "\""
        server.route("/long-etag.jpg") { _, c in c.respond(headers: ["ETag": long], body: sampleJPEG) }
        server.route("/short-etag.jpg") { _, c in c.respond(headers: ["ETag": short], body: sampleJPEG) }
        let path = "/" + String(repeating: "p", count: 9000) + ".jpg"
        server.route(path) { _, c in c.respond(body: sampleJPEG) }
        server.route("/to-long") { _, c in c.redirect(to: path) }
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        #expect(
            try await fetcher.fetch(server.url("/long-etag.jpg")).etag == nil,
            "a validator that is not whole is not kept")
        #expect(try await fetcher.fetch(server.url("/short-etag.jpg")).etag == short)
        let redirected = try await fetcher.fetch(server.url("/to-long"))
        #expect(redirected.finalURL == server.url(path), "a final URL of 9,000 bytes, whole")
    }

    @Test("a failed fetch reports the body bytes it read")
    func aFailedFetchCountsTheBytesItRead() async throws {
        server.route("/lying") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n")
            c.write(Array(sampleJPEG.prefix(1000)))
            c.close()
        }
        server.route("/endless") { _, c in
            c.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            c.write(sampleJPEG)
            let more = [UInt8](repeating: 0xAB, count: 64 * 1024)
            while c.write(more) {}
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        let lying = await fetchFailure(fetcher, server.url("/lying"))
        #expect(lying?.code == .truncated && lying?.fetchedBytes == 1000, "\(String(describing: lying))")
        var limits = MediaLimits()
        limits.imageBytes = 300_000
        let endless = await fetchFailure(fetcher, server.url("/endless"), limits: limits)
        #expect(endless?.code == .tooLarge)
        #expect((endless?.fetchedBytes ?? 0) > 300_000, "\(String(describing: endless?.fetchedBytes))")
    }

    @Test func oversizeBodiesWithAndWithoutLength() async throws {
        let big = [UInt8](repeating: 0xAB, count: 2_000_000)
        server.route("/big-with-length") { _, c in c.respond(body: sampleJPEG + big) }
        server.route("/big-without-length") { _, c in
            c.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            c.write(sampleJPEG)
            for _ in 0..<20 { if !c.write(big) { break } }
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxBytes = 1_000_000 })
        let declared = await fetchFailure(fetcher, server.url("/big-with-length"))
        #expect(declared?.code == .tooLarge && declared?.limit?.rawValue == "max_fetch_bytes")
        let streamed = await fetchFailure(fetcher, server.url("/big-without-length"))
        #expect(streamed?.code == .tooLarge && streamed?.limit?.rawValue == "max_fetch_bytes")

        // Once the first bytes tell the kind, its own cap applies and is the one named.
        var small = MediaLimits()
        small.imageBytes = 500_000
        for path in ["/big-with-length", "/big-without-length"] {
            let refusal = await fetchFailure(Fetcher(policy: loopbackPolicy()), server.url(path), limits: small)
            #expect(
                refusal?.code == .tooLarge && refusal?.limit == .maxImageBytes,
                "\(path): \(String(describing: refusal))")
        }
    }

    @Test func eachKindHasItsOwnCapOnceSniffed() async throws {
        let wav = Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8) + [UInt8](repeating: 0, count: 64)
        let body = [UInt8](repeating: 1, count: 3_000_000)
        server.route("/big.wav") { _, c in c.respond(body: wav + body) }
        server.route("/big.jpg") { _, c in c.respond(body: sampleJPEG + body) }
        var limits = MediaLimits()
        limits.audioBytes = 2_000_000
        let fetcher = Fetcher(policy: loopbackPolicy())
        let refusal = await fetchFailure(fetcher, server.url("/big.wav"), limits: limits)
        #expect(refusal?.code == .tooLarge && refusal?.limit == .maxAudioBytes)
        let image = try await fetcher.fetch(server.url("/big.jpg"), limits: limits)
        #expect(image.bytes.count == sampleJPEG.count + body.count && image.kind == .jpeg)
    }

    @Test func htmlWithAnImageExtensionIsRefusedEarly() async throws {
        let page = Array("<!DOCTYPE html><html><body>".utf8) + [UInt8](repeating: 0x20, count: 5_000_000)
        let sent = Atomic<Bool>(false)
        server.route("/photo.jpg") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: \(page.count)\r\n\r\n")
            sent.store(c.write(page), ordering: .relaxed)
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy())
        let error = await fetchFailure(fetcher, server.url("/photo.jpg"))
        #expect(error?.code == .unsupportedType && error?.detail == "html")
        try await Task.sleep(for: .milliseconds(200))
        let wholePageSent = sent.load(ordering: .relaxed)
        #expect(!wholePageSent, "the transfer was aborted before the 5 MB page was read")
    }

    @Test func retriesServerErrorsWithinTheDeadline() async throws {
        server.route("/flaky") { _, c in
            if self.server.count("/flaky") == 1 {
                c.respond(status: 503, reason: "Unavailable")
            } else {
                c.respond(body: sampleJPEG)
            }
        }
        server.route("/always-500") { _, c in c.respond(status: 500, reason: "Error") }
        server.route("/missing") { _, c in c.respond(status: 404, reason: "Not Found") }
        server.route("/throttled") { _, c in c.respond(status: 429, reason: "Too Many Requests") }
        let fetcher = Fetcher(policy: loopbackPolicy())
        let media = try await fetcher.fetch(server.url("/flaky"))
        #expect(media.attempts == 2)
        let error = await fetchFailure(fetcher, server.url("/always-500"))
        #expect(error?.code == .httpStatus && error?.detail == "500")
        #expect(server.count("/always-500") == 3, "one try and two retries")
        #expect(await fetchFailure(fetcher, server.url("/missing"))?.detail == "404")
        #expect(server.count("/missing") == 1, "4xx is not retried")
        _ = await fetchFailure(fetcher, server.url("/throttled"))
        #expect(server.count("/throttled") == 3)
        // No retry when the deadline does not leave room for one.
        let tight = Fetcher(policy: loopbackPolicy { $0.retryDelay = .seconds(5) })
        _ = await fetchFailure(tight, server.url("/always-500"), deadline: .now + .seconds(1))
        #expect(server.count("/always-500") == 4)
    }

    /// How long each hostile response lived is timed by the server, on its own thread: from the
    /// request's arrival to the client closing the connection.
    @Test func slowAndSilentHostsEndWithinTheDeadline() async throws {
        // Each response's life and the time the process went unrun during it (not counted).
        let meter = StallMeter()
        defer { meter.stop() }
        let lifetimes = Mutex<[String: Duration]>([:])
        server.route("/drip") { _, c in
            let start = ContinuousClock.now
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            c.write(Array(sampleJPEG.prefix(100)))
            for _ in 0..<100 {
                if c.timeUntilClientCloses(limit: .milliseconds(200)) != nil { break }
                if !c.write([0]) { break }
            }
            let end = ContinuousClock.now
            lifetimes.withLock { $0["drip"] = end - start - meter.stalled(from: start, to: end) }
            c.close()
        }
        server.route("/silent") { _, c in
            let start = ContinuousClock.now
            let lived = c.timeUntilClientCloses(limit: .seconds(5))
            let stalled = meter.stalled(from: start, to: ContinuousClock.now)
            lifetimes.withLock { $0["silent"] = lived.map { $0 - stalled } }
            c.close()
        }
        let fetcher = Fetcher(
            policy: loopbackPolicy {
                $0.lowSpeedSeconds = 1
                $0.maxRetries = 0
            })
        let slow = await fetchFailure(fetcher, server.url("/drip"))
        #expect(slow?.code == .tooSlow, "\(String(describing: slow))")
        let silent = await fetchFailure(fetcher, server.url("/silent"), deadline: .now + .milliseconds(700))
        #expect(silent?.code == .timedOut)
        // The server's thread records the silent response's life when it sees the close.
        let recorded = try await onOwnThread {
            for _ in 0..<1000 where lifetimes.withLock({ $0.count }) < 2 { usleep(10_000) }
            return lifetimes.withLock { $0 }
        }
        // 1 s below 1 KiB/s is too slow; the silent host is dropped at the 700 ms deadline.
        #expect(try #require(recorded["drip"]) < .milliseconds(2_500), "\(recorded)")
        #expect(try #require(recorded["silent"]) < .milliseconds(1_000), "\(recorded)")
    }

    @Test func cancellingTheTaskAbortsTheTransfer() async throws {
        let meter = StallMeter()
        defer { meter.stop() }
        let closedAfter = Mutex<Duration?>(nil)
        let requested = Mutex<ContinuousClock.Instant?>(nil)
        server.route("/hang") { _, c in
            requested.withLock { $0 = .now }
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            c.write(Array(sampleJPEG.prefix(100)))
            let start = ContinuousClock.now
            let lived = c.timeUntilClientCloses(limit: .seconds(10))
            closedAfter.withLock { $0 = lived.map { _ in ContinuousClock.now - start } }
            c.close()
        }
        let fetcher = Fetcher(policy: loopbackPolicy())
        let url = server.url("/hang")
        let task = Task { () -> AttacheError? in await fetchFailure(fetcher, url) }
        while requested.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        let cancelledAt = ContinuousClock.now
        task.cancel()
        let error = await task.value
        #expect(error?.code == .cancelled)
        // The connection closed soon after cancel(), timed on the server's thread.
        for _ in 0..<200 where closedAfter.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        let closed = try #require(closedAfter.withLock { $0 })
        let sinceCancel = closed - (cancelledAt - requested.withLock { $0! })
        let stalled = meter.stalled(from: cancelledAt, to: cancelledAt + sinceCancel)
        #expect(
            sinceCancel - stalled < .milliseconds(300),
            "closed \(sinceCancel) after cancel() (\(stalled) of it the process went unrun)")
    }

    @Test func manyTransfersAtOnceAndNoDescriptorOrMemoryGrowth() async throws {
        let body = sampleJPEG + [UInt8](repeating: 7, count: 20_000)
        server.route("/small.jpg") { _, c in c.respond(body: body) }
        let fetcher = Fetcher(policy: loopbackPolicy(), maxHostConnections: 32)
        func batch(_ count: Int) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var submitted = 0
                func add() {
                    let url = server.url("/small.jpg?i=\(submitted)")
                    submitted += 1
                    group.addTask {
                        let count = try await fetcher.fetch(url).bytes.count
                        #expect(count == body.count)
                    }
                }
                for _ in 0..<min(64, count) { add() }
                while try await group.next() != nil { if submitted < count { add() } }
            }
        }
        try await batch(1_000)
        let descriptors = openDescriptors()
        let resident = residentBytes()
        let heap = heapInUse()
        try await batch(10_000)
        let grownDescriptors = openDescriptors() - descriptors
        let grownMemory = residentBytes() - resident
        let grownHeap = heapInUse() - heap
        // Other suites open files beside this one; a leak per transfer would show as thousands.
        #expect(grownDescriptors < 100, "descriptors grew by \(grownDescriptors) over 10,000 transfers")
        // Heap bytes in use are the leak measure; resident memory is checked too, with room for
        // allocator caches (AddressSanitizer's quarantine alone holds freed blocks resident).
        #expect(grownHeap < 8 << 20, "heap in use grew by \(grownHeap >> 10) KB over 10,000 transfers")
        #expect(grownMemory < 96 << 20, "resident memory grew by \(grownMemory >> 20) MB over 10,000 transfers")
        #expect(server.count("/small.jpg") == 11_000)
    }
}
