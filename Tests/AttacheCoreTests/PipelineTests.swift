import AttacheBase
import AttacheFetch
import AttacheMedia
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheCore
@testable import AttacheStore

/// A media host serving Samples/media, plus misbehaving routes.
func sampleMediaServer() throws -> TestHTTPServer {
    let server = try TestHTTPServer()
    for name in try FileManager.default.contentsOfDirectory(atPath: Paths.samples) {
        let body = Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!)
        server.route("/" + name) { _, c in c.respond(headers: ["Content-Type": "application/octet-stream"], body: body)
        }
    }
    server.route("/hang.jpg") { _, c in
        _ = c.timeUntilClientCloses(limit: .seconds(30))
        c.close()
    }
    server.route("/lying.png") { _, c in
        c.respond(headers: ["Content-Type": "image/png"], body: sampleJPEG)
    }
    return server
}

func makePipeline(
    _ directory: TemporaryDirectory, _ change: (inout PipelineConfiguration) -> Void = { _ in }
) throws -> Pipeline {
    var configuration = PipelineConfiguration()
    configuration.baseURL = "https://cdn.test/a/"
    // No test here is about the payload's deadline: the suite's tests run side by side (posters
    // and transcodes among them) on a machine whose cores others keep busy, and a payload may
    // wait minutes for the suite's executor before its first step (one waited 313 s with its
    // fetch not begun); so it gets a deadline past the suite's own limit. The deadline's own
    // tests are in DeadlineTests.
    configuration.deadline = .seconds(3600)
    change(&configuration)
    let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
    return Pipeline(configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()), store: store)
}

func payload(_ members: [String: String], mutable: Bool = true) -> [UInt8] {
    let aps = mutable ? #""aps":{"alert":"hi","mutable-content":1}"# : #""aps":{"alert":"hi"}"#
    let rest = members.sorted { $0.key < $1.key }.map { "\(JSONValue.quote($0.key)):\($0.value)" }
    return Array(("{" + ([aps] + rest).joined(separator: ",") + "}").utf8)
}

@Suite(.enabled(if: inIsolatedChild)) struct PipelineTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory

    init() throws {
        server = try sampleMediaServer()
        directory = try TemporaryDirectory()
    }

    @Test("a store found at its quota refuses the next payloads before their fetch and transform")
    func aFullStoreRefusesBeforeTheWork() async throws {
        let media = try TestHTTPServer()
        let photo = Array(FileManager.default.contents(atPath: Paths.samples + "/waterfall-rotated.jpg")!)
        let fetched = Mutex(0)
        for name in ["a", "b", "c"] {
            media.route("/\(name).jpg") { _, c in
                fetched.withLock { $0 += 1 }
                c.respond(headers: ["Content-Type": "image/jpeg"], body: photo)
            }
        }
        let clock = TestClock()
        var configuration = PipelineConfiguration()
        configuration.baseURL = "https://cdn.test/a/"
        configuration.deadline = .seconds(300)
        var store = StoreConfiguration(root: directory.path + "/full", maxBytes: 1000)
        store.clock = { clock.now }
        let pipeline = Pipeline(
            configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()),
            store: try AttachmentStore(store))
        let first = await pipeline.process(payload(["image": JSONValue.quote(media.url("/a.jpg"))]))
        #expect(first.outcomes.first?.error?.code == .storeFull)
        // The same second: refused as it comes, nothing fetched.
        let second = await pipeline.process(payload(["image": JSONValue.quote(media.url("/b.jpg"))]))
        #expect(second.outcomes.first?.error?.code == .storeFull && second.outcomes.first?.failedStage == "store")
        #expect(fetched.withLock { $0 } == 1, "a payload was fetched for a store that cannot take it")
        // A second later one payload tries again (and finds it still full).
        clock.advance(1)
        let third = await pipeline.process(payload(["image": JSONValue.quote(media.url("/c.jpg"))]))
        #expect(third.outcomes.first?.error?.code == .storeFull)
        #expect(fetched.withLock { $0 } == 2)
    }

    @Test func attachesEveryAcceptedKindFromRealFiles() async throws {
        let pipeline = try makePipeline(directory)
        let kinds: [(String, MediaKind)] = [
            ("waterfall-rotated.jpg", .jpeg), ("palette-transparent.png", .png), ("tone.aiff", .aiff),
            ("tone.aifc", .aifc), ("tone.wav", .wav), ("tone.mp3", .mp3), ("tone.m4a", .m4a),
            ("clip-mpeg1.mpg", .mpeg), ("clip-mpeg2.mpg", .mpeg2), ("clip.mp4", .mp4), ("clip.m4v", .m4v),
            ("clip.avi", .avi), ("animated-chi.gif", .gif),
        ]
        for (name, kind) in kinds {
            // A deadline no busy machine reaches: this test is about kinds, not speed.
            let result = await pipeline.process(
                payload(["image": JSONValue.quote(server.url("/" + name))]), deadline: .now + .seconds(300))
            let outcome = try #require(result.outcomes.first)
            let attachment = try #require(outcome.attachment, "\(name): \(String(describing: outcome.error))")
            #expect(attachment.type == kind.uti)
            #expect(attachment.url.hasPrefix("https://cdn.test/a/"))
            #expect(attachment.url.hasSuffix("/\(attachment.id).\(kind.fileExtension)"))
            // The path segment before the file is a token that opens exactly this attachment.
            let token = String(attachment.url.split(separator: "/").dropLast().last ?? "")
            let id = try #require(AttachmentID(hex: attachment.id))
            #expect((try? pipeline.store.authorize(token, for: id).get()) != nil)
            let block = try #require(try JSONParser.parse(result.payload)["attachments"])
            #expect(block.text == JSONValue.array([attachment.json(full: true)]).text)
        }
        // The animation keeps its frames and gets a thumbnail time from its poster frame.
        let gif = await pipeline.process(payload(["image": JSONValue.quote(server.url("/animated-chi.gif"))]))
        let animated = try #require(gif.outcomes.first?.attachment)
        #expect((animated.frames ?? 0) > 1 && animated.thumbnail.time != nil)
        #expect(animated.width == 320 && animated.height == 240, "already smaller than 1024: not enlarged")

        // The photo was downscaled and turned upright; the sound was stored as it came.
        let photo = await pipeline.process(payload(["image": JSONValue.quote(server.url("/waterfall-rotated.jpg"))]))
        let attachment = try #require(photo.outcomes.first?.attachment)
        #expect(attachment.width == 1024 && attachment.height == 683)
        #expect(photo.outcomes.first?.cached == true, "the second request reused the stored rendition")
    }

    @Test func aVideoGetsItsPosterAtTheSendersTimeAsItsSmallRendition() async throws {
        let pipeline = try makePipeline(directory)
        let airship = #"{"url":"\#(server.url("/clip.mp4"))","options":{"time":0.2}}"#
        let result = await pipeline.process(
            payload(["com.urbanairship.media_attachment": airship]), deadline: .now + .seconds(300))
        let entry = try #require(result.outcomes.first?.attachment, "\(result.outcomes)")
        #expect(entry.type == "public.mpeg-4")
        let small = try #require(entry.small)
        #expect(small.type == "public.jpeg" && small.url.hasSuffix(".jpg"))
        #expect(entry.thumbnail.time == 0.2)
        let id = try #require(AttachmentID(hex: String(small.url.split(separator: "/").last!.prefix(64))))
        let poster = try pipeline.store.contents(of: try #require(try pipeline.store.attachment(id)))
        #expect(Array(poster).starts(with: [0xFF, 0xD8, 0xFF]))
        // The block says the poster's type; without a time the first frame is taken.
        let block = try #require(try JSONParser.parse(result.payload)["attachments"])
        #expect(block.text.contains(#""small":{"url":"#) && block.text.contains(#""type":"public.jpeg""#))
        let plain = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/clip.m4v"))]), deadline: .now + .seconds(300))
        let first = try #require(plain.outcomes.first?.attachment)
        #expect(first.thumbnail.time == 0 && first.small?.type == "public.jpeg")
    }

    @Test func refusedAndSpoofedMediaAreReportedAndThePayloadStillGoesOut() async throws {
        let pipeline = try makePipeline(directory)
        let input = payload([
            "image": JSONValue.quote(server.url("/page-named-as.png")),
            "media-url": JSONValue.quote(server.url("/lying.png")),
            "attachment-url": JSONValue.quote(server.url("/tone.aac")),
            "my-attachment": JSONValue.quote(server.url("/clip.mov")),
        ])
        let result = await pipeline.process(input)
        let byURL = Dictionary(uniqueKeysWithValues: result.outcomes.map { ($0.url, $0) })
        #expect(byURL[server.url("/page-named-as.png")]?.error?.detail == "html")
        #expect(byURL[server.url("/tone.aac")]?.error?.code == .unsupportedType)
        // A QuickTime movie is not an attachment type: it is transcoded (an MP4 and its poster).
        let movie = try #require(byURL[server.url("/clip.mov")]?.attachment)
        #expect(movie.type == "public.mpeg-4" && movie.small?.type == "public.jpeg", "\(movie)")
        let lying = try #require(byURL[server.url("/lying.png")])
        #expect(lying.attachment?.type == "public.jpeg", "the bytes decide the kind")
        #expect(lying.warnings.contains { $0.contains("Content-Type image/png") })
        #expect(lying.warnings.contains { $0.contains("URL says .png") })
        #expect(!result.passedThrough)
        #expect(
            try JSONParser.parse(result.payload)["attachments"].map { value -> Int in
                if case .array(let items) = value { return items.count }
                return -1
            } == 2)
    }

    @Test("an outcome whose fetch failed reports the bytes the fetch read")
    func aFailedFetchsBytesAreReported() async throws {
        server.route("/short.jpg") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n")
            c.write(Array(sampleJPEG.prefix(1000)))
            c.close()
        }
        let pipeline = try makePipeline(directory)
        let result = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/short.jpg"))]), deadline: .now + .seconds(60))
        let outcome = try #require(result.outcomes.first)
        #expect(outcome.error?.code == .truncated)
        #expect(outcome.fetchedBytes == 1000)
        #expect(result.report().contains(#""fetched_bytes":1000"#), "\(result.report())")
    }

    @Test(
        "an MP4 cut after its index is refused and nothing stored; VP9 in MP4 is transcoded, or refused with transcodes off"
    )
    func unplayableVideoIsRefused() async throws {
        for (name, code, transcodes) in [
            ("cut-after-index.mp4", AttacheError.Code.truncated, true), ("vp9.mp4", nil, true),
            ("vp9.mp4", .unsupportedVariant, false), ("h264.mp4", nil, true),
        ] {
            let pipeline = try makePipeline(directory) { $0.rendition.video.enabled = transcodes }
            let body = try #require(FileManager.default.contents(atPath: Paths.fixtures + "/video/" + name)).map { $0 }
            server.route("/" + name) { _, c in c.respond(headers: ["Content-Type": "video/mp4"], body: body) }
            let result = await pipeline.process(
                payload(["image": JSONValue.quote(server.url("/" + name))]), deadline: .now + .seconds(60))
            let outcome = try #require(result.outcomes.first)
            #expect(outcome.error?.code == code, "\(name): \(result.report())")
            #expect((outcome.attachment == nil) == (code != nil), "\(name)")
            if name == "vp9.mp4" && transcodes {
                #expect(outcome.actions.first?.hasPrefix("transcoded to H.264/AAC MP4") == true, "\(outcome.actions)")
                #expect(result.report().contains(#""actions":["transcoded"#))
            }
        }
    }

    @Test("an animated GIF over the 10 MB image cap is fetched up to the GIF source cap and attached as an MP4")
    func aLargeGIFIsFetchedAndMadeVideo() async throws {
        // 80 frames of 400×400 noise (about 16 MB), 10 centiseconds each: 8 s.
        var random = SplitMix(seed: 16)
        let palette = (0..<768).map { _ in UInt8(random.below(256)) }
        let frames = (0..<80).map { _ in
            GIFTestFrame(
                left: 0, top: 0, width: 400, height: 400, indices: (0..<160_000).map { _ in UInt8(random.below(256)) },
                delay: 10, disposal: 1, transparent: -1)
        }
        let gif = try writeGIF(width: 400, height: 400, palette: palette, frames: frames)
        #expect(gif.count > 12_000_000 && gif.count < 50_000_000, "\(gif.count)")
        server.route("/large.gif") { _, c in c.respond(headers: ["Content-Type": "image/gif"], body: gif) }
        let pipeline = try makePipeline(directory)
        let result = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/large.gif"))]), deadline: .now + .seconds(120))
        let outcome = try #require(result.outcomes.first)
        #expect(outcome.error == nil && outcome.attachment?.type == "public.mpeg-4", "\(result.report())")
        #expect(outcome.actions.contains { $0.hasPrefix("made an H.264 MP4 of 80 frames") }, "\(outcome.actions)")
        // With video off, the GIF cap is the image cap: refused at the fetch, by its cap.
        let still = try makePipeline(directory) { $0.rendition.video.enabled = false }
        let refused = await still.process(
            payload(["image": JSONValue.quote(server.url("/large.gif"))]), deadline: .now + .seconds(120))
        #expect(refused.outcomes.first?.error?.code == .tooLarge, "\(refused.report())")
    }

    @Test("an animated WebP over the image cap is fetched up to the animation cap and made an MP4; a still one is not")
    func anAnimatedWebPOverTheImageCapIsFetchedAndMadeVideo() async throws {
        for (name, path) in [("animated.webp", "/video/animated.webp"), ("still.webp", "/webp/lossy.webp")] {
            let body = try #require(FileManager.default.contents(atPath: Paths.fixtures + path)).map { $0 }
            #expect(body.count > 10_000, "\(name): \(body.count) bytes")
            server.route("/" + name) { _, c in c.respond(headers: ["Content-Type": "image/webp"], body: body) }
        }
        // An image cap below both files: the animation is read under the animation cap.
        let pipeline = try makePipeline(directory) { $0.mediaLimits.imageBytes = 10_000 }
        let result = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/animated.webp"))]), deadline: .now + .seconds(120))
        let outcome = try #require(result.outcomes.first)
        #expect(outcome.error == nil && outcome.attachment?.type == "public.mpeg-4", "\(result.report())")
        #expect(outcome.sourceKind == "webp")
        let still = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/still.webp"))]), deadline: .now + .seconds(120))
        #expect(still.outcomes.first?.error?.code == .tooLarge, "\(still.report())")
        let stillSize = try #require(FileManager.default.contents(atPath: Paths.fixtures + "/webp/lossy.webp")).count
        #expect(still.outcomes.first?.fetchedBytes ?? .max < stillSize, "refused from its first bytes, not read whole")
        // With video off, the animation's cap is the image cap.
        let videoOff = try makePipeline(directory) {
            $0.mediaLimits.imageBytes = 10_000
            $0.rendition.video.enabled = false
        }
        let refused = await videoOff.process(
            payload(["image": JSONValue.quote(server.url("/animated.webp"))]), deadline: .now + .seconds(120))
        #expect(refused.outcomes.first?.error?.code == .tooLarge, "\(refused.report())")
    }

    @Test("a WebP is fetched, converted and attached as a JPEG (a PNG with alpha), its source type said")
    func aWebPIsAttachedAsWhatADeviceTakes() async throws {
        let pipeline = try makePipeline(directory)
        for (name, type) in [("lossy.webp", "public.jpeg"), ("lossless-alpha.webp", "public.png")] {
            let body = try #require(FileManager.default.contents(atPath: Paths.fixtures + "/webp/" + name)).map { $0 }
            server.route("/" + name) { _, c in c.respond(headers: ["Content-Type": "image/webp"], body: body) }
            let result = await pipeline.process(
                payload(["image": JSONValue.quote(server.url("/" + name))]), deadline: .now + .seconds(60))
            let outcome = try #require(result.outcomes.first)
            #expect(outcome.attachment?.type == type && outcome.sourceKind == "webp", "\(result.report())")
            #expect(outcome.warnings.isEmpty, "\(outcome.warnings)")
        }
    }

    @Test("a source within every limit whose rendition is not smaller is stored as it came, said kept_source")
    func aSourceThatFitsIsKeptAndSaidSo() async throws {
        let pipeline = try makePipeline(directory)
        let result = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/palette-transparent.png"))]), deadline: .now + .seconds(60))
        let outcome = try #require(result.outcomes.first)
        let attachment = try #require(outcome.attachment)
        #expect(outcome.keptSource == true)
        #expect(attachment.bytes <= outcome.fetchedBytes)
        #expect(result.report().contains(#""kept_source":true"#))
        // A downscaled one is a rendition.
        let photo = await pipeline.process(
            payload(["image": JSONValue.quote(server.url("/waterfall-rotated.jpg"))]), deadline: .now + .seconds(60))
        #expect(photo.outcomes.first?.keptSource == false)
    }

    @Test func payloadsWithoutMutableContentOrUnreadablePassThroughByteForByte() async throws {
        let pipeline = try makePipeline(directory)
        let plain = payload(["image": JSONValue.quote(server.url("/gray.jpg"))], mutable: false)
        let result = await pipeline.process(plain)
        #expect(result.payload == plain && result.passedThrough && result.outcomes.isEmpty)
        #expect(server.count("/gray.jpg") == 0, "nothing was fetched")
        for broken in ["{\"aps\":", "not json", "[1,2]", ""] {
            let bytes = Array(broken.utf8)
            let outcome = await pipeline.process(bytes)
            #expect(outcome.payload == bytes && outcome.payloadError?.code == .invalidPayload)
        }
        let none = payload(["other": "1"])
        #expect(await pipeline.process(none).payload == none)
    }

    @Test func untouchedBytesSurviveTheMutation() async throws {
        let pipeline = try makePipeline(directory)
        let original = """
            {
              "aps" : {"alert":{"title":"T","loc-args":["a",1.0]},"mutable-content":1,"category":"c"},
              "image" : "\(server.url("/gray.jpg"))",
              "big" : 12345678901234567890123, "float": 1.10, "esc": "\\u00e9\\n", "nested": {"dup": [1, 2]}
            }
            """
        let result = await pipeline.process(Array(original.utf8))
        let text = String(decoding: result.payload, as: UTF8.self)
        let block = try #require(text.range(of: #","attachments":["#))
        #expect(text[..<block.lowerBound] == original.dropLast(2), "everything before the block is the original")
        #expect(text.hasSuffix("]\n}"))
    }

    @Test func trimsToTheSizeLimit() async throws {
        let names = [
            "gray.jpg", "cmyk-adobe.jpg", "palette-transparent.png", "rgba-interlaced.png", "tone.wav", "tone.mp3",
            "tone.aiff", "clip.mp4", "clip.avi", "clip-mpeg1.mpg", "clip-mpeg2.mpg", "tone.m4a", "clip.m4v",
            "tone.aifc", "tone-frames.mp3", "waterfall-rotated.jpg",
        ]
        let atts =
            "{"
            + names.enumerated().map { "\"k\($0)\":\(JSONValue.quote(server.url("/" + $1)))" }.joined(separator: ",")
            + "}"
        let pipeline = try makePipeline(directory) { $0.maxSources = names.count }
        // A deadline no busy machine reaches: this test is about trimming, not speed.
        let result = await pipeline.process(payload(["att": atts]), deadline: .now + .seconds(300))
        #expect(result.payload.count <= 4096)
        // The placeholders go first, then the small renditions, then the optional fields, then
        // attachments from the end.
        #expect(
            result.trimmed.prefix(3) == [
                "placeholders", "small renditions", "optional fields (bytes, width, height, frames, options)",
            ])
        let dropped = result.outcomes.filter { $0.error?.code == .payloadTooLarge }
        let attached = result.outcomes.filter { $0.attachment != nil }
        #expect(!dropped.isEmpty && !attached.isEmpty && dropped.count + attached.count == names.count)
        #expect(result.trimmed.count == dropped.count + 3)
        // Later attachments go first: the kept ones are the first in payload order.
        #expect(attached.map(\.url) == Array(result.outcomes.map(\.url).prefix(attached.count)))
        let block = try #require(try JSONParser.parse(result.payload)["attachments"])
        guard case .array(let items) = block else { throw AttacheError(.internalError, "no block") }
        #expect(
            items.count == attached.count
                && items.allSatisfy {
                    $0["options"] == nil && $0["small"] == nil && $0["th"] == nil && $0["url"] != nil
                })

        // With room to spare nothing is trimmed.
        let small = await pipeline.process(payload(["image": JSONValue.quote(server.url("/gray.jpg"))]))
        #expect(small.trimmed.isEmpty && small.payload.count <= 4096)
    }

    /// A stored rendition is reused only for the spec that made it: changing any field of the
    /// rendition spec fetches and transforms again.
    @Test func everyRenditionFieldMissesTheCache() async throws {
        let input = payload(["image": JSONValue.quote(server.url("/gray.jpg"))])
        let base = try makePipeline(directory)
        _ = await base.process(input)
        #expect(await base.process(input).outcomes.first?.cached == true, "the same spec reuses the rendition")
        for (field, change) in renditionSpecVariants {
            let fetched = server.count("/gray.jpg")
            let variant = try makePipeline(directory) { change(&$0.rendition) }
            let first = try #require(await variant.process(input).outcomes.first)
            #expect(first.attachment != nil && !first.cached, "\(field) changed: a new rendition")
            #expect(server.count("/gray.jpg") == fetched + 1, "\(field) changed: fetched again")
            #expect(await variant.process(input).outcomes.first?.cached == true, "\(field): the same spec hits")
        }
    }

    /// A tenant answered from a copy another stored first holds it too: purging the first keeps
    /// what the second was sent, and takes what the first alone was sent.
    @Test func aCopySentFromTheStoreOutlivesAPurgeOfTheTenantThatStoredIt() async throws {
        let shared = payload(["image": JSONValue.quote(server.url("/gray.jpg"))])
        let alone = payload(["image": JSONValue.quote(server.url("/waterfall-rotated.jpg"))])
        let first = try makePipeline(directory) { $0.storeOwner = StoreOwner(id: "a") }
        let second = try makePipeline(directory) { $0.storeOwner = StoreOwner(id: "b") }
        let stored = try #require(await first.process(shared).outcomes.first?.attachment)
        let only = try #require(await first.process(alone).outcomes.first?.attachment)
        let hit = try #require(await second.process(shared).outcomes.first)
        #expect(hit.cached && hit.attachment?.id == stored.id, "b was sent a's copy")
        let report = try first.store.purge(tenant: "a")
        #expect(report.counts.handedOver >= 1 && report.counts.expired >= 1, "\(report)")
        let kept = try #require(AttachmentID(hex: stored.id))
        #expect(try second.store.attachment(kept)?.tenant == "b")
        #expect(try first.store.attachment(try #require(AttachmentID(hex: only.id))) == nil)
        #expect(try first.store.stats(tenant: "a") == (0, 0))
    }

    /// Only the first `maxSources` media are fetched; the rest are reported, never requested.
    @Test func sourcesBeyondTheLimitAreReportedNotFetched() async throws {
        let pipeline = try makePipeline(directory) { $0.maxSources = 3 }
        let atts =
            "{"
            + (0..<12).map { "\"k\($0)\":\(JSONValue.quote(server.url("/gray.jpg?n=\($0)")))" }.joined(separator: ",")
            + "}"
        let result = await pipeline.process(payload(["att": atts]))
        #expect(result.outcomes.count == 12)
        #expect(result.outcomes.prefix(3).allSatisfy { $0.attachment != nil })
        let skipped = result.outcomes.dropFirst(3)
        #expect(skipped.allSatisfy { $0.error?.code == .tooManySources && $0.error?.limit == .maxSources })
        #expect(server.count("/gray.jpg") == 3, "the skipped ones were never requested")
    }

    /// A payload's fetches share one byte budget, counted as bytes arrive.
    @Test func thePayloadsFetchBudgetStopsTransfers() async throws {
        let pipeline = try makePipeline(directory) { $0.maxPayloadFetchBytes = 20_000 }
        let result = await pipeline.process(
            payload([
                "image": JSONValue.quote(server.url("/waterfall-rotated.jpg")),
                "media-url": JSONValue.quote(server.url("/portrait-progressive.jpg")),
            ]))
        for outcome in result.outcomes {
            #expect(outcome.error?.code == .budgetExceeded, "\(outcome.url): \(String(describing: outcome.error))")
            #expect(outcome.error?.limit == .maxPayloadFetchBytes)
            #expect(outcome.timings.fetch > 0, "the stage that ran and failed reports its time")
        }
        #expect(result.passedThrough)
    }

    /// A declared length is reserved whole: two bodies that fit the budget only one at a time
    /// give one attachment, not two starved transfers.
    @Test func aBudgetForOneBodyFetchesOneBody() async throws {
        let pipeline = try makePipeline(directory) { $0.maxPayloadFetchBytes = 400_000 }
        let result = await pipeline.process(
            payload([
                "image": JSONValue.quote(server.url("/waterfall-rotated.jpg")),
                "media-url": JSONValue.quote(server.url("/portrait-progressive.jpg")),
            ]))
        #expect(result.outcomes.filter { $0.attachment != nil }.count == 1, "\(result.outcomes.map(\.reason))")
        #expect(result.outcomes.filter { $0.error?.code == .budgetExceeded }.count == 1)
    }

    /// A payload with no room left for even the smallest entry fetches nothing.
    @Test func aPayloadWithNoRoomFetchesNothing() async throws {
        let pipeline = try makePipeline(directory)
        let input = payload([
            "image": JSONValue.quote(server.url("/gray.jpg")),
            "pad": JSONValue.quote(String(repeating: "p", count: 3900)),
        ])
        let result = await pipeline.process(input)
        #expect(result.payload == input && result.passedThrough)
        #expect(result.outcomes.map { $0.error?.code } == [.payloadTooLarge])
        #expect(server.count("/gray.jpg") == 0)
    }

    /// What a payload adds to the store is bounded too; nothing over it is written.
    @Test func thePayloadsStoreBudgetKeepsTheStoreBounded() async throws {
        let pipeline = try makePipeline(directory) { $0.maxPayloadStoreBytes = 10_000 }
        let before = try pipeline.store.stats()
        let result = await pipeline.process(
            payload([
                "image": JSONValue.quote(server.url("/gray.jpg")),
                "media-url": JSONValue.quote(server.url("/tone.wav")),
                "attachment-url": JSONValue.quote(server.url("/clip.mp4")),
            ]))
        let after = try pipeline.store.stats()
        let stored = result.outcomes.compactMap(\.attachment).reduce(Int64(0)) {
            $0 + $1.bytes + ($1.small?.bytes ?? 0)
        }
        #expect(after.bytes - before.bytes <= 10_000 && after.bytes - before.bytes == stored)
        let refused = result.outcomes.filter { $0.error?.code == .budgetExceeded }
        #expect(!refused.isEmpty && refused.allSatisfy { $0.error?.limit == .maxPayloadStoreBytes })
    }

    @Test func decodedMemoryBudgetShrinksImages() async throws {
        let pipeline = try makePipeline(directory) { $0.rendition.decodedMemoryBudget = 200 * 200 * 4 }
        let result = await pipeline.process(payload(["image": JSONValue.quote(server.url("/waterfall-rotated.jpg"))]))
        let attachment = try #require(result.outcomes.first?.attachment)
        #expect((attachment.width ?? 0) * (attachment.height ?? 0) * 4 <= 200 * 200 * 4)
        #expect(attachment.width! > attachment.height!, "still upright landscape")
    }
}
