import AttacheBase
import AttacheClient
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import AttacheTestSupport
import Crypto
import Foundation
import Synchronization
import Testing

@testable import AttacheCore

/// Sealed payloads end to end on this machine: the pipeline seals (media fetched from a real
/// server on 127.0.0.1), the client kit opens the seal and downloads each attachment from a
/// real attachment host that serves the store's files — and, on purpose, misbehaves. One test at
/// a time: several measure how soon the kit returns after its deadline, and another test's
/// pipeline work beside them would be their lateness.
@Suite(.enabled(if: inIsolatedChild), .serialized) struct SealedDeliveryTests {
    static let marker = "MARKER-7f3a9c-secret-alert"

    let media: TestHTTPServer
    let host: TestHTTPServer
    let directory: TemporaryDirectory
    let store: AttachmentStore

    init() throws {
        media = try TestHTTPServer()
        for name in ["waterfall-rotated.jpg", "palette-transparent.png", "tone.wav", "clip.mp4", "gray.jpg"] {
            let body = Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!)
            media.route("/" + name) { _, c in c.respond(body: body) }
        }
        host = try TestHTTPServer()
        directory = try TemporaryDirectory()
        store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
    }

    func pipeline(_ change: (inout PipelineConfiguration) -> Void = { _ in }) -> Pipeline {
        var configuration = PipelineConfiguration()
        configuration.baseURL = host.url("/a")
        // Nothing here is about the payload's deadline: a debug build on a machine whose cores
        // are kept busy by others must not run out of it.
        configuration.deadline = .seconds(120)
        change(&configuration)
        return Pipeline(configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()), store: store)
    }

    /// The bytes of the stored object a URL names.
    func object(_ url: String) throws -> [UInt8] {
        let name = URL(string: url)!.lastPathComponent
        let id = String(name.split(separator: ".")[0])
        let path =
            store.configuration.root + "/objects/\(id.prefix(2))/\(id.dropFirst(2)).\(name.split(separator: ".")[1])"
        return try #require(FileManager.default.contents(atPath: path).map(Array.init))
    }

    /// Serves `body` at the path of `url`, a `Range` (`bytes=a-b`) answered 206 with its
    /// `Content-Range`.
    func serve(_ url: String, body: [UInt8], cutFirstAt cut: Int? = nil, ranges: Seen? = nil) {
        let path = URL(string: url)!.path
        let first = Atomic(true)
        host.route(path) { request, c in
            let range = TestHTTPServer.Connection.range(request, count: body.count)
            if let value = request.headers["range"] { ranges?.list.withLock { $0.append(value) } }
            let part = Array(body[range ?? 0..<body.count])
            var head = range != nil ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n"
            head += "Content-Length: \(part.count)\r\n"
            if let range {
                head += "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(body.count)\r\n"
            }
            if let cut, first.exchange(false, ordering: .relaxed) {
                // Announce the whole part, send some of it, hang up.
                c.write(Array((head + "\r\n").utf8) + part.prefix(cut))
                c.close()
                return
            }
            c.write(Array((head + "\r\n").utf8) + part)
        }
    }

    /// Serves `body` at the path of `url` slowly: `bytes` every `every` microseconds (the
    /// server's own thread sleeps; the client's deadline is what the test is about).
    func drip(_ url: String, body: [UInt8], bytes: Int, every: UInt32) {
        host.route(URL(string: url)!.path) { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n")
            for chunk in stride(from: 0, to: body.count, by: bytes) {
                guard c.write(Array(body[chunk..<min(chunk + bytes, body.count)])) else { break }
                usleep(every)
            }
            c.close()
        }
    }

    static func payload(_ urls: [String: String], alert: String = marker) -> [UInt8] {
        let members = urls.sorted { $0.key < $1.key }.map { "\(JSONValue.quote($0.key)):\(JSONValue.quote($0.value))" }
        return Array(
            (#"{"aps":{"alert":{"title":"T \#(alert)","body":"B \#(alert)"},"mutable-content":1,"sound":"x"},"#
                + members.joined(separator: ",") + #","app":{"thread":42}}"#).utf8)
    }

    /// The kit's view of a sealed payload: the opened plaintext and the visible part.
    static func visible(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func recipientP256() throws -> (SealRecipient, P256.KeyAgreement.PrivateKey) {
        let key = P256.KeyAgreement.PrivateKey()
        return (try SealRecipient(encoded: Array(key.publicKey.x963Representation), keyID: "device-1"), key)
    }

    func client(_ key: SealKey?, memory: Int? = nil) throws -> (AttacheClient, URL) {
        let downloads = URL(fileURLWithPath: directory.path + "/downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        return (AttacheClient(directory: downloads, key: key, memoryAvailable: { memory }), downloads)
    }

    /// Every file of the entry URLs served from the store as it is.
    func serveStore(_ opened: [String: Any]) throws {
        for entry in opened["attachments"] as? [[String: Any]] ?? [] {
            let url = try #require(entry["url"] as? String)
            serve(url, body: try object(url))
            if let small = (entry["small"] as? [String: Any])?["url"] as? String {
                serve(small, body: try object(small))
            }
        }
    }

    /// Opens a sealed payload the way the kit does (for tests that need the entries).
    static func open(_ bytes: [UInt8], _ key: P256.KeyAgreement.PrivateKey) throws -> [String: Any] {
        let envelope = try SealedEnvelope(member: try #require(try visible(bytes)["encrypted-content"]))
        let plain = try PayloadSeal.open(envelope, p256: key)
        return try #require(try JSONSerialization.jsonObject(with: Data(plain)) as? [String: Any])
    }

    @Test(arguments: ["p256", "x25519"])
    func sealedRoundTripOpensInTheKit(suite: String) async throws {
        let input = Self.payload([
            "image": media.url("/waterfall-rotated.jpg"), "media-url": media.url("/tone.wav"),
        ])
        let sealKey: SealKey
        let recipient: SealRecipient
        if suite == "p256" {
            let key = P256.KeyAgreement.PrivateKey()
            (recipient, sealKey) = (try SealRecipient(p256: key.publicKey, keyID: "phone-1"), .p256(key))
        } else {
            let key = Curve25519.KeyAgreement.PrivateKey()
            (recipient, sealKey) = (
                try SealRecipient(encoded: Array(key.publicKey.rawRepresentation), keyID: "phone-2"), .x25519(key)
            )
        }
        let result = await pipeline().process(input, sealTo: recipient)
        #expect(result.payloadError == nil && result.payload.count <= 4096)
        #expect(result.outcomes.allSatisfy { $0.attachment != nil }, "\(result.outcomes.map(\.reason))")
        let text = String(decoding: result.payload, as: UTF8.self)
        // Nothing confidential is visible: not the alert, not the media URLs, not the block.
        #expect(!text.contains(Self.marker) && !text.contains("waterfall") && !text.contains("\"attachments\""))
        let visible = try Self.visible(result.payload)
        let aps = try #require(visible["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: Any])?["body"] as? String == "New message")
        #expect((aps["mutable-content"] as? Int) == 1 && aps["sound"] as? String == "x")
        #expect((visible["app"] as? [String: Any])?["thread"] as? Int == 42, "members not named stay")
        let envelope = try #require(visible["encrypted-content"] as? [String: Any])
        #expect(
            envelope["suite"] as? String == recipient.suite.rawValue && envelope["kid"] as? String == recipient.keyID)

        // The host serves the store's bytes: the kit opens, downloads, decrypts and checks.
        let hidden = try SealRecipientTestKeys.openAny(result.payload, sealKey)
        try serveStore(hidden)
        let (kit, downloads) = try client(sealKey)
        let prepared = await kit.prepare(json: Data(result.payload), deadline: .now + .seconds(60))
        #expect(prepared.sealError == nil && prepared.failures.isEmpty, "\(prepared.failures)")
        #expect(prepared.title == "T \(Self.marker)" && prepared.body == "B \(Self.marker)")
        #expect(prepared.attachments.count == 2 && !prepared.bestAttempt)
        let image = try #require(prepared.attachments.first { $0.typeHint == "public.jpeg" })
        #expect(image.rendition == .full && image.typeHint == "public.jpeg" && image.fileURL.pathExtension == "jpg")
        let bytes = try Data(contentsOf: image.fileURL)
        #expect(bytes.starts(with: [0xFF, 0xD8, 0xFF]))
        let wav = try Data(
            contentsOf: try #require(prepared.attachments.first { $0.typeHint != "public.jpeg" }).fileURL)
        #expect(wav == FileManager.default.contents(atPath: Paths.samples + "/tone.wav"), "audio passes through whole")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: downloads.path).sorted().allSatisfy {
                !$0.hasPrefix(".")
            })

        // No plaintext anywhere under the store: not the alert, not a slice of any attachment.
        let needles = [Array(Self.marker.utf8), Array(bytes[4096..<4160]), Array(wav[2000..<2064])]
        for file in FileManager.default.enumerator(atPath: store.configuration.root)!.compactMap({ $0 as? String }) {
            let path = store.configuration.root + "/" + file
            guard let content = FileManager.default.contents(atPath: path) else { continue }
            for needle in needles { #expect(content.range(of: Data(needle)) == nil, "plaintext in \(file)") }
        }
    }

    @Test func wrongKeyShowsThePlaceholderAndKeepsNothing() async throws {
        let (recipient, _) = try Self.recipientP256()
        let result = await pipeline().process(Self.payload(["image": media.url("/gray.jpg")]), sealTo: recipient)
        let (kit, downloads) = try client(.p256(P256.KeyAgreement.PrivateKey()))
        let prepared = await kit.prepare(json: Data(result.payload), deadline: .now + .seconds(30))
        #expect(prepared.sealError == .sealRejected)
        #expect(prepared.body == "New message" && prepared.title == nil && prepared.attachments.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: downloads.path).isEmpty)
        // No key at all: the same placeholder.
        let (none, _) = try client(nil)
        let unopened = await none.prepare(json: Data(result.payload), deadline: .now + .seconds(30))
        #expect(unopened.sealError == .noKey && unopened.body == "New message")
    }

    /// The rotated photo sealed (no small rendition): the payload, the key, its entry and URL.
    func sealedPhoto() async throws -> (PipelineResult, P256.KeyAgreement.PrivateKey, [String: Any], String) {
        let (recipient, key) = try Self.recipientP256()
        // At a fixed high quality, so that the object spans three segments whatever `auto` would
        // choose.
        let result = await pipeline {
            $0.smallSide = 0
            $0.rendition.quality = .fixed(95)
        }.process(
            Self.payload(["image": media.url("/waterfall-rotated.jpg")]), sealTo: recipient)
        let opened = try Self.open(result.payload, key)
        let entry = try #require((opened["attachments"] as? [[String: Any]])?.first)
        return (result, key, entry, try #require(entry["url"] as? String))
    }

    /// A flipped byte in one segment, a truncated body, two segments swapped, trailing bytes:
    /// each is a typed error and the download directory keeps nothing.
    @Test func tamperedDownloadsAreRefusedAndNothingIsKept() async throws {
        let (result, key, _, url) = try await sealedPhoto()
        let sealed = try object(url)
        let segment = SegmentedCipher.defaultSegmentSize + SegmentedCipher.tagSize
        try #require(sealed.count > 16 + 2 * segment, "needs at least three segments")

        var flipped = sealed
        flipped[16 + segment + 100] ^= 0x01
        var swapped = sealed
        swapped.replaceSubrange(
            16..<(16 + 2 * segment), with: sealed[(16 + segment)..<(16 + 2 * segment)] + sealed[16..<(16 + segment)])
        let cases: [(String, [UInt8], AttacheClientError)] = [
            ("flipped", flipped, .segmentRejected(1)),
            ("truncated at a boundary", Array(sealed.prefix(16 + 2 * segment)), .truncated),
            ("truncated mid-segment", Array(sealed.dropLast(100)), .truncated),
            ("swapped", swapped, .segmentRejected(0)),
            ("longer", sealed + [0], .tooLarge),
        ]
        for (name, body, expected) in cases {
            serve(url, body: body)
            let (kit, downloads) = try client(.p256(key))
            let prepared = await kit.prepare(json: Data(result.payload), deadline: .now + .seconds(30))
            // Nothing of the tampered bytes is shown or kept: what is drawn is the placeholder
            // the seal itself carried (authenticated with it), the ladder's last picture.
            #expect(prepared.attachments.map(\.rendition) == [.placeholder], "\(name)")
            let error = prepared.failures.values.first
            #expect(error == expected, "\(name): \(String(describing: error))")
            #expect(prepared.body == "B \(Self.marker)", "\(name): the text is still shown")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: downloads.path)
                    == prepared.attachments.map(\.fileURL.lastPathComponent), "\(name)")
        }
    }

    /// A connection cut mid-body is resumed with `Range` from the first segment not yet
    /// decrypted; the file is whole and checks.
    @Test func aCutDownloadResumesWithRange() async throws {
        let (result, key, entry, url) = try await sealedPhoto()
        let ranges = Seen()
        let segment = SegmentedCipher.defaultSegmentSize + SegmentedCipher.tagSize
        serve(url, body: try object(url), cutFirstAt: 16 + segment + 5000, ranges: ranges)
        let (kit, _) = try client(.p256(key))
        let prepared = await kit.prepare(json: Data(result.payload), deadline: .now + .seconds(30))
        #expect(prepared.failures.isEmpty, "\(prepared.failures)")
        let file = try #require(prepared.attachments.first?.fileURL)
        let digest = SHA256.hash(data: try Data(contentsOf: file)).map { String(format: "%02x", $0) }.joined()
        #expect(digest == entry["sha256"] as? String)
        // Segment 0 was written before the cut: the resumed request starts at segment 1.
        let asked = ranges.list.withLock { $0 }
        #expect(
            asked.count == 2 && asked[0].hasPrefix("bytes=0-") && asked[1].hasPrefix("bytes=\(16 + segment)-"),
            "\(asked)")
    }

    /// The fallback ladder: with little memory the small rendition is taken without trying the
    /// full one; against a host too slow for the full one, the small one arrives in time; when
    /// nothing arrives, the text alone — never nothing.
    @Test func theLadderTakesTheSmallRenditionOrTheText() async throws {
        let (recipient, key) = try Self.recipientP256()
        let result = await pipeline().process(
            Self.payload(["image": media.url("/waterfall-rotated.jpg")]), sealTo: recipient)
        let opened = try Self.open(result.payload, key)
        let entry = try #require((opened["attachments"] as? [[String: Any]])?.first)
        let small = try #require(entry["small"] as? [String: Any], "an image gets a small rendition")
        #expect(((small["width"] as? Int) ?? 0) <= 320 && ((small["height"] as? Int) ?? 0) <= 320)
        // Inside the seal, the entry carries the placeholder as an unsealed one does (and the
        // visible payload carries nothing of it).
        let hash = try #require(entry["th"] as? String, "a sealed picture's placeholder: \(entry)")
        let unsealed = await pipeline().process(Self.payload(["image": media.url("/waterfall-rotated.jpg")]))
        let plain = try #require((try Self.visible(unsealed.payload)["attachments"] as? [[String: Any]])?.first)
        #expect(hash == plain["th"] as? String)
        #expect(!String(decoding: result.payload, as: UTF8.self).contains(hash))
        let fullURL = try #require(entry["url"] as? String)
        let smallURL = try #require(small["url"] as? String)
        try serveStore(opened)

        // 3 MB left: a 1024-pixel image needs ~4 MB decoded, so only the small one is fetched.
        let (tight, _) = try client(.p256(key), memory: 3_000_000)
        let before = host.count(URL(string: fullURL)!.path)
        let lean = await tight.prepare(json: Data(result.payload), deadline: .now + .seconds(30))
        #expect(lean.attachments.first?.rendition == .small && lean.failures.isEmpty)
        #expect(host.count(URL(string: fullURL)!.path) == before, "the full rendition was not fetched")

        // A host that drips the full rendition: under a 24 MB budget and a 2 s deadline the
        // small one is shown, in time.
        drip(fullURL, body: try object(fullURL), bytes: 1000, every: 100_000)
        let (budget, downloads) = try client(.p256(key), memory: 24_000_000)
        // What counts is the time the process ran: a busy machine's stalls are not the kit's.
        let meter = StallMeter()
        defer { meter.stop() }
        let start = ContinuousClock.now
        let slow = await budget.prepare(json: Data(result.payload), deadline: start + .seconds(2))
        let elapsed = ContinuousClock.now - start
        let stalled = meter.stalled(from: start, to: start + elapsed)
        #expect(slow.attachments.first?.rendition == .small, "\(slow.failures)")
        #expect(slow.body == "B \(Self.marker)")
        #expect(elapsed - stalled < .seconds(3), "returned after \(elapsed) with a 2 s deadline (\(stalled) unrun)")
        print("ladder: slow host, 24 MB, 2 s deadline → small rendition in \(elapsed)")
        let files = try FileManager.default.contentsOfDirectory(atPath: downloads.path)
        #expect(files.count == 1 && files[0].contains("-small"), "\(files)")

        // Both dripping: the placeholder the seal carried, and the text, in time (never nothing).
        drip(smallURL, body: try object(smallURL), bytes: 100, every: 200_000)
        let (last, lastDownloads) = try client(.p256(key), memory: 24_000_000)
        let textStart = ContinuousClock.now
        let text = await last.prepare(json: Data(result.payload), deadline: textStart + .seconds(2))
        let textEnd = ContinuousClock.now
        #expect(text.attachments.map(\.rendition) == [.placeholder] && text.bestAttempt)
        #expect(text.title == "T \(Self.marker)")
        let textStalled = meter.stalled(from: textStart, to: textEnd)
        #expect(
            textEnd - textStart - textStalled < .seconds(3),
            "returned after \(textEnd - textStart) with a 2 s deadline (\(textStalled) unrun)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: lastDownloads.path)
                == text.attachments.map(\.fileURL.lastPathComponent))
    }

    @Test("past the small rendition the ladder draws the picture's placeholder, before the text alone")
    func theLadderDrawsThePlaceholder() async throws {
        let result = await pipeline().process(Self.payload(["image": media.url("/waterfall-rotated.jpg")]))
        let payload = try Self.visible(result.payload)
        let entry = try #require((payload["attachments"] as? [[String: Any]])?.first)
        let hash = try #require(entry["th"] as? String, "\(entry)")
        #expect(hash.count <= 36 && !hash.contains("="), "\(hash)")
        let fullURL = try #require(entry["url"] as? String)
        let smallURL = try #require((entry["small"] as? [String: Any])?["url"] as? String)
        drip(fullURL, body: try object(fullURL), bytes: 100, every: 200_000)
        drip(smallURL, body: try object(smallURL), bytes: 100, every: 200_000)
        let (kit, downloads) = try client(nil, memory: 24_000_000)
        let meter = StallMeter()
        defer { meter.stop() }
        let start = ContinuousClock.now
        let prepared = await kit.prepare(json: Data(result.payload), deadline: start + .seconds(2))
        let end = ContinuousClock.now
        #expect(end - start - meter.stalled(from: start, to: end) < .seconds(3), "returned after \(end - start)")
        let drawn = try #require(prepared.attachments.first, "\(prepared.failures)")
        #expect(drawn.rendition == .placeholder && drawn.typeHint == "public.png" && prepared.bestAttempt)
        let png = try Data(contentsOf: drawn.fileURL)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count < 8_000, "\(png.count) bytes")
        let files = try FileManager.default.contentsOfDirectory(atPath: downloads.path)
        #expect(files == [drawn.fileURL.lastPathComponent], "only the placeholder is left: \(files)")
    }

    /// A sealed video's small rendition is its poster (a sealed JPEG): against a host too slow
    /// for the video, the device gets the poster in time, typed as a JPEG.
    @Test func aSealedVideoFallsBackToItsPoster() async throws {
        let (recipient, key) = try Self.recipientP256()
        let result = await pipeline().process(Self.payload(["image": media.url("/clip.mp4")]), sealTo: recipient)
        let opened = try Self.open(result.payload, key)
        let entry = try #require((opened["attachments"] as? [[String: Any]])?.first)
        #expect(entry["type"] as? String == "public.mpeg-4")
        let small = try #require(entry["small"] as? [String: Any], "a video gets its poster")
        #expect(small["type"] as? String == "public.jpeg" && small["key"] != nil && small["sha256"] != nil)
        let fullURL = try #require(entry["url"] as? String)
        try serveStore(opened)
        drip(fullURL, body: try object(fullURL), bytes: 500, every: 200_000)
        let (kit, downloads) = try client(.p256(key), memory: 24_000_000)
        let meter = StallMeter()
        defer { meter.stop() }
        let start = ContinuousClock.now
        let prepared = await kit.prepare(json: Data(result.payload), deadline: start + .seconds(2))
        let end = ContinuousClock.now
        let attachment = try #require(prepared.attachments.first, "\(prepared.failures)")
        #expect(attachment.rendition == .small && attachment.typeHint == "public.jpeg")
        #expect(attachment.fileURL.pathExtension == "jpg")
        let poster = try Data(contentsOf: attachment.fileURL)
        #expect(Array(poster.prefix(3)) == [0xFF, 0xD8, 0xFF], "the poster arrives opened")
        #expect(end - start - meter.stalled(from: start, to: end) < .seconds(3), "returned after \(end - start)")
        let files = try FileManager.default.contentsOfDirectory(atPath: downloads.path)
        #expect(files.count == 1 && files[0].hasSuffix("-small.jpg"), "\(files)")
    }
}

/// What a test server saw.
final class Seen: Sendable {
    let list = Mutex<[String]>([])
}

/// Opening with either kind of key, for the round trip.
enum SealRecipientTestKeys {
    static func openAny(_ bytes: [UInt8], _ key: SealKey) throws -> [String: Any] {
        let visible = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let envelope = try SealedEnvelope(member: try #require(visible["encrypted-content"]))
        let plain: [UInt8]
        switch key {
        case .p256(let key): plain = try PayloadSeal.open(envelope, p256: key)
        case .x25519(let key): plain = try PayloadSeal.open(envelope, x25519: key)
        case .custom(let open): plain = try open(envelope)
        }
        return try #require(try JSONSerialization.jsonObject(with: Data(plain)) as? [String: Any])
    }
}
