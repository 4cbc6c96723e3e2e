import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

/// The download path beneath the HTTP/1 codec: what it takes as a plain download `GET` (only
/// heads written the one plain way), and, on a running service, pipelined downloads, a
/// connection that then asks for something else, and a request with a body.
@Suite struct RawDownloadsTests {
    static let prefix = Array("/attachments/".utf8)
    static let target = "/attachments/AQAAAAHs_J7f3PNi0CIA9pmh9kRz/ecfc9edf.jpg"

    static func parse(_ text: String) -> DownloadHead.Parsed {
        Array(text.utf8).withUnsafeBytes { DownloadHead.parse($0, prefix: prefix) }
    }

    @Test func aPlainGetIsTakenWithItsLength() {
        let head =
            "GET \(Self.target)?x=1 HTTP/1.1\r\nHost: edge\r\nUser-Agent: device/1\r\nAccept: */*\r\n"
            + "Connection: Keep-Alive\r\n\r\n"
        guard case .get(let path, let length) = Self.parse(head + "GET /next") else {
            Issue.record("\(Self.parse(head))")
            return
        }
        #expect(path == Substring(Self.target.dropFirst("/attachments/".count)))
        #expect(length == head.utf8.count)
        // Cut anywhere before its end, it waits for the rest.
        for cut in 1..<head.utf8.count {
            #expect(Self.parse(String(head.utf8.prefix(cut))!) == .incomplete, "\(cut)")
        }
    }

    @Test func everythingElseGoesToTheDecoder() {
        let plain = "GET \(Self.target) HTTP/1.1\r\nHost: edge\r\n"
        let others = [
            "HEAD \(Self.target) HTTP/1.1\r\nHost: edge\r\n\r\n",
            "POST \(Self.target) HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
            "GET /metrics HTTP/1.1\r\nHost: edge\r\n\r\n",
            "GET \(Self.target) HTTP/1.0\r\nHost: edge\r\n\r\n",
            "GET \(Self.target) HTTP/1.1\nHost: edge\n\n",
            "GET /attachments/%41/b.jpg HTTP/1.1\r\n\r\n",
            "GET  \(Self.target) HTTP/1.1\r\n\r\n",
            plain + "Content-Length: 0\r\n\r\n",
            plain + "transfer-encoding: chunked\r\n\r\n",
            plain + "Transfer-Encoding : chunked\r\n\r\n",
            plain + " Folded: on\r\n\r\n",
            plain + "Range: bytes=0-9\r\n\r\n",
            plain + "If-None-Match: \"x\"\r\n\r\n",
            plain + "Connection: close\r\n\r\n",
            plain + "Connection: keep-alive, Upgrade\r\n\r\n",
            plain + "Expect: 100-continue\r\n\r\n",
            plain + "X-Bad: a\u{0}b\r\n\r\n",
            plain + "X-Bad: a\rb\r\n\r\n",
            plain + "NoColon\r\n\r\n",
            plain + String(repeating: "X-Many: 1\r\n", count: 101) + "\r\n",
            plain + "X-Long: " + String(repeating: "a", count: DownloadHead.maxHead) + "\r\n\r\n",
            // The framing rules' Host: exactly one, a host and port.
            plain + "Host: edge\r\n\r\n",
            "GET \(Self.target) HTTP/1.1\r\nHost:\r\n\r\n",
            "GET \(Self.target) HTTP/1.1\r\nHost: \r\n\r\n",
            "GET \(Self.target) HTTP/1.1\r\nHost: a b/c\r\n\r\n",
            "GET \(Self.target) HTTP/1.1\r\nUser-Agent: x\r\n\r\n",
        ]
        for head in others {
            #expect(Self.parse(head) == .other, "\(head.debugDescription)")
        }
    }

    /// Heads mutated from plain downloads (bytes changed, inserted, removed or repeated, with
    /// a bias to the bytes that matter: CR, LF, space, colon, tab, `%`, NUL): every one taken as
    /// a download is one SwiftNIO's decoder reads as that plain `GET` (FuzzChecks.head, the
    /// property of the `head` fuzz target), and many mutants are still taken.
    @Test func mutatedHeadsTakenAsDownloadsAreTheDecodersToo() throws {
        let seeds = [
            "GET \(Self.target) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
            "GET \(Self.target)?a=1 HTTP/1.1\r\nHost: edge\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
            "GET \(Self.target) HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nX-Trace:\t1 \r\n\r\n",
        ].map { Array($0.utf8) }
        let special: [UInt8] = [13, 10, 32, 58, 9, 37, 0, 0x7F, 0x80, 63, 47]
        var random = SplitMix(seed: 0x4EAD)
        var taken = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...random.below(3) {
                let at = random.below(bytes.count)
                let byte = random.below(3) == 0 ? UInt8(random.below(256)) : special[random.below(special.count)]
                switch random.below(4) {
                case 0: bytes[at] = byte
                case 1: bytes.insert(byte, at: at)
                case 2: bytes.remove(at: at)
                default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 1 + random.below(8))], at: at)
                }
            }
            do throws(FuzzChecks.FuzzFinding) {
                try FuzzChecks.head(bytes)
            } catch {
                Issue.record("\(error): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
            }
            if case .get = bytes.withUnsafeBytes({ DownloadHead.parse($0, prefix: Self.prefix) }) { taken += 1 }
        }
        #expect(taken > 1_000, "mutants still taken as downloads: \(taken)")
    }

    /// Raw bytes over one connection: the answers, in order, as read.
    static func exchange(
        port: Int, _ request: String, answers: Int, bodiless: Set<Int> = []
    ) throws -> [(status: Int, headers: String, body: [UInt8])] {
        let connection = try RawConnection(port: port)
        try connection.send(request)
        return try connection.read(answers: answers, bodiless: bodiless)
    }

    /// One client connection to 127.0.0.1, written and read as bytes (by one thread at a time).
    final class RawConnection: @unchecked Sendable {
        private let fd: Int32
        private var buffer: [UInt8] = []

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard connectLoopback(fd, port: port, timeoutSeconds: 30) == 0 else {
                close(fd)
                throw RawFailure(message: "connect: \(errno)")
            }
        }

        deinit { close(fd) }

        func send(_ request: String) throws {
            let bytes = Array(request.utf8)
            guard Glibc.send(fd, bytes, bytes.count, 0) == bytes.count else { throw RawFailure(message: "send") }
        }

        /// The next `answers` answers (`bodiless`: their indexes among them that have no body).
        func read(answers: Int, bodiless: Set<Int> = []) throws -> [(status: Int, headers: String, body: [UInt8])] {
            var out: [(Int, String, [UInt8])] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            func fill() throws {
                let n = recv(fd, &chunk, chunk.count, 0)
                guard n > 0 else { throw RawFailure(message: "closed after \(out.count) answers") }
                buffer += chunk[0..<n]
            }
            while out.count < answers {
                var end: Int?
                while end == nil {
                    if buffer.count >= 4 {
                        end = (3..<buffer.count).first { i in buffer[(i - 3)...i].elementsEqual([13, 10, 13, 10]) }
                    }
                    if end == nil { try fill() }
                }
                let head = String(decoding: buffer[...end!], as: UTF8.self)
                buffer.removeFirst(end! + 1)
                let status = Int(head.split(separator: " ")[1]) ?? 0
                let length =
                    bodiless.contains(out.count)
                    ? 0
                    : head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                        .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffer.count < length { try fill() }
                out.append((status, head, Array(buffer.prefix(length))))
                buffer.removeFirst(length)
            }
            return out
        }
    }

    struct RawFailure: Error { let message: String }

    @Test func pipelinedDownloadsThenOtherRequestsOnOneConnection() async throws {
        let media = try ServiceTests.mediaServer()
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await ServiceTests.mutate(service, media: media)
        let whole = try await curl("GET", ServiceTests.local(url, service))
        #expect(whole.status == 200 && !whole.body.isEmpty)
        let path = String(url.dropFirst("http://attache.test".count))
        let get = "GET \(path) HTTP/1.1\r\nHost: attache.test\r\n\r\n"
        let before = service.service.metrics.downloadPaths.answered.load(ordering: .relaxed)
        let downloaded = #"route="attachment",method="GET",status="200""#
        let countedBefore = try await FramingTests.counter(service, downloaded)
        // Three downloads in one write, then a ranged one and a HEAD (the decoder's), then a
        // plain one again (the router answers it, now that the connection is the decoder's).
        // On a thread of its own: the router's answers need the cooperative pool this would block.
        let port = service.port
        let answers = try await onOwnThread {
            try Self.exchange(
                port: port,
                get + get + get + "GET \(path) HTTP/1.1\r\nHost: a\r\nRange: bytes=0-9\r\n\r\n"
                    + "HEAD \(path) HTTP/1.1\r\nHost: a\r\n\r\n" + get, answers: 6, bodiless: [4])
        }
        #expect(answers.map(\.status) == [200, 200, 200, 206, 200, 200])
        for index in [0, 1, 2, 5] { #expect(answers[index].body == whole.body, "\(index)") }
        #expect(answers[3].body == Array(whole.body.prefix(10)))
        #expect(
            answers[4].body.isEmpty && answers[4].headers.lowercased().contains("content-length: \(whole.body.count)"))
        #expect(answers[0].headers.contains("Cache-Control: public, max-age="))
        #expect(service.service.metrics.downloadPaths.answered.load(ordering: .relaxed) - before >= 3)
        // Each whole GET is counted once, here or by the router (the HEAD under its own method).
        #expect(try await FramingTests.counter(service, downloaded) - countedBefore >= 4)

        // A GET with a body goes to the decoder, and the connection's answers stay in order.
        let forged = path.replacingOccurrences(of: "/attachments/A", with: "/attachments/B")
        let mixed = try await onOwnThread {
            try Self.exchange(
                port: port,
                get + "GET \(forged) HTTP/1.1\r\nHost: a\r\n\r\n" + get
                    + "GET \(path) HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc" + get, answers: 5)
        }
        #expect(mixed.map(\.status) == [200, 403, 200, 200, 200], "\(mixed.map(\.headers))")
        #expect(mixed[4].body == whole.body)
    }

    @Test("a download's head is held to the framing rules of every other path: Host once, a host, not empty")
    func downloadHeadsWithBadHostsAreRefused() async throws {
        let media = try ServiceTests.mediaServer()
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await ServiceTests.mutate(service, media: media)
        let path = String(url.dropFirst("http://attache.test".count))
        let port = service.port
        // One spelling of a URL: a trailing or doubled `/` is no URL the pipeline wrote, on either path.
        for variant in [path + "/", path.replacingOccurrences(of: "/attachments/", with: "/attachments//")] {
            for method in ["GET", "HEAD"] {
                let answer = try await curl(method, "http://127.0.0.1:\(service.port)" + variant)
                #expect(answer.status == 404, "\(method) \(variant): \(answer.status)")
            }
            let ranged = try await curl(
                "GET", "http://127.0.0.1:\(service.port)" + variant, headers: ["Range": "bytes=0-1"])
            #expect(ranged.status == 404, "ranged \(variant): \(ranged.status)")
        }
        let good = try await onOwnThread {
            try Self.exchange(port: port, "GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n", answers: 1)
        }
        #expect(good.map(\.status) == [200])
        let heads = [
            "GET \(path) HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET \(path) HTTP/1.1\r\nHost:\r\n\r\n",
            "GET \(path) HTTP/1.1\r\nHost: a b/c\r\n\r\n",
            "GET \(path) HTTP/1.1\r\nUser-Agent: x\r\n\r\n",
        ]
        for head in heads {
            // The same head as GET, as HEAD and with a Range: one answer, 400, whichever path reads it.
            for variant in [
                head, head.replacingOccurrences(of: "GET ", with: "HEAD "),
                head.replacingOccurrences(of: "\r\n\r\n", with: "\r\nRange: bytes=0-1\r\n\r\n"),
            ] {
                let answer = try await rawExchange(port: port, Array(variant.utf8))
                #expect(
                    FramingTests.status(answer) == 400,
                    "\(variant.debugDescription): \(FramingTests.statusLine(answer))")
            }
        }
    }
}
