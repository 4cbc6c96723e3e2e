import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheStore
@testable import AttacheStoreShared

/// Every answer the object-store client reads against a buffer of fixed size is either read
/// whole or refused with a clear error — one byte over the buffer included; a listing page of
/// any size is parsed as it streams. The object store here is a test server on 127.0.0.1 that
/// answers what each test says (signatures are not checked, bytes are).
@Suite struct AnswerCapTests {
    let server: TestHTTPServer
    let client: S3Client

    init() throws {
        server = try TestHTTPServer()
        client = S3Client(
            S3Location(
                endpoint: server.base, bucket: "bucket", prefix: "p/", region: "us-east-1", accessKey: "a",
                secretKey: "s"))
    }

    /// An S3 error document whose body is exactly `size` bytes.
    static func errorDocument(size: Int, code: String = "SlowDown") -> [UInt8] {
        let head = "<?xml version=\"1.0\"?><Error><Code>\(code)</Code><Message>"
        let tail = "</Message></Error>"
        return Array((head + String(repeating: "x", count: size - head.utf8.count - tail.utf8.count) + tail).utf8)
    }

    @Test("an error answer of 64 KiB is read whole; one byte more is refused, never cut")
    func anErrorAnswerOneByteOverItsBufferIsRefused() throws {
        let cap = S3Client.smallAnswerMax
        server.route("/bucket/p/whole") { _, c in
            c.respond(status: 503, reason: "Slow Down", body: Self.errorDocument(size: cap))
        }
        server.route("/bucket/p/over") { _, c in
            c.respond(status: 503, reason: "Slow Down", body: Self.errorDocument(size: cap + 1))
        }
        let whole = failure { try client.delete(key: "whole") }
        #expect(
            whole?.code == .storeUnavailable && whole?.message.contains("SlowDown") == true,
            "\(String(describing: whole))")
        let over = failure { try client.delete(key: "over") }
        #expect(over?.code == .storeUnavailable, "\(String(describing: over))")
        #expect(over?.message.contains("refused, not read in part") == true, "\(String(describing: over))")
    }

    /// A ListObjectsV2 page of `count` keys from `first`.
    static func listing(_ keys: [String], truncated: Bool = false, next: String? = nil) -> [UInt8] {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bucket</Name>"
        xml += "<IsTruncated>\(truncated)</IsTruncated>"
        if let next { xml += "<NextContinuationToken>\(next)</NextContinuationToken>" }
        for key in keys {
            xml += "<Contents><Key>\(key)</Key><LastModified>2026-11-24T07:00:00.000Z</LastModified>"
            xml += "<ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>4000</Size>"
            xml += "<StorageClass>STANDARD</StorageClass></Contents>"
        }
        return Array((xml + "</ListBucketResult>").utf8)
    }

    @Test("a listing of 2,500 keys over three pages of 1,000 (≈300 KB each) is read whole, in order")
    func aListingOfManyPagesIsReadWhole() throws {
        let keys = (0..<2500).map { String(format: "p/objects/%02x/%062d.jpg", $0 % 256, $0) }.sorted()
        server.route("/bucket") { request, c in
            let token = request.path.components(separatedBy: "continuation-token=").dropFirst().first?.prefix {
                $0 != "&"
            }
            let page = token.flatMap { Int($0) } ?? 0
            let slice = Array(keys[(page * 1000)..<min(keys.count, page * 1000 + 1000)])
            let more = page * 1000 + 1000 < keys.count
            c.respond(body: Self.listing(slice, truncated: more, next: more ? String(page + 1) : nil))
        }
        var seen: [String] = []
        var pages = 0
        try client.list(prefix: "objects/") { page in
            pages += 1
            seen += page.map(\.key)
            #expect(page.allSatisfy { $0.size == 4000 && $0.modified == 1_795_503_600 })
            return true
        }
        #expect(pages == 3)
        #expect(seen == keys.map { String($0.dropFirst(2)) }, "every key, relative to the prefix, in order")
        #expect(Self.listing(Array(keys.prefix(1000))).count > 250_000, "a page is far over the old 64 KiB")
    }

    @Test("a page with one key more than max-keys, or one element over 64 KiB, is refused")
    func oversizedPagesAndElementsAreRefused() throws {
        server.route("/bucket") { request, c in
            if request.path.contains("max-keys=10&") || request.path.contains("max-keys=11&") {
                c.respond(body: Self.listing((0...10).map { "p/k\($0)" }))
            } else {
                c.respond(body: Self.listing(["p/" + String(repeating: "k", count: ListingParser.maxElement)]))
            }
        }
        let tooMany = failure { try client.list(prefix: "", maxKeys: 10) { _ in true } }
        #expect(tooMany?.code == .storeUnavailable && tooMany?.message.contains("more than the 10 keys") == true)
        let exactly = failure {
            try client.list(prefix: "", maxKeys: 11) { page in
                #expect(page.count == 11)
                return true
            }
        }
        #expect(exactly == nil, "max-keys entries are a page")
        let huge = failure { try client.list(prefix: "", maxKeys: 1000) { _ in true } }
        #expect(
            huge?.code == .storeUnavailable && huge?.message.contains("over \(ListingParser.maxElement) bytes") == true)
    }

    @Test("a page that ends inside an element, or truncated without a token, is refused")
    func brokenPagesAreRefused() throws {
        server.route("/bucket") { request, c in
            if request.path.contains("prefix=p%2Fcut") {
                let body = Self.listing(["p/cut1", "p/cut2"])
                c.respond(body: Array(body.prefix(body.count - 40)))
            } else {
                c.respond(body: Self.listing(["p/a"], truncated: true, next: nil))
            }
        }
        let cut = failure { try client.list(prefix: "cut") { _ in true } }
        #expect(cut?.code == .storeUnavailable)
        let noToken = failure { try client.list(prefix: "x") { _ in true } }
        #expect(noToken?.code == .storeUnavailable && noToken?.message.contains("continuation") == true)
    }

    @Test("the listing parser takes any chunking of a page alike")
    func theParserTakesAnyChunking() throws {
        let keys = (0..<50).map { "p/objects/\($0)&amp;x.jpg" }
        let body = Self.listing(keys, truncated: true, next: "t&amp;1")
        var random = SplitMix(seed: 7)
        for _ in 0..<50 {
            var parser = ListingParser(maxKeys: 1000)
            var at = 0
            while at < body.count {
                let size = 1 + random.below(200)
                let end = min(body.count, at + size)
                _ = body[at..<end].withUnsafeBytes { parser.feed($0) }
                at = end
            }
            try parser.finish()
            #expect(parser.objects.map(\.key) == keys.map { $0.replacingOccurrences(of: "&amp;", with: "&") })
            #expect(parser.truncated && parser.next == "t&1")
        }
    }
}
