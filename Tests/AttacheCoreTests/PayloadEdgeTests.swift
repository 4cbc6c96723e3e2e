import AttacheBase
import AttacheMedia
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheCore

/// What a careless or hostile sender's payloads are read as, and what the report says of what
/// was not used: an APNs payload with an app's own keys, a body with two senders' marks,
/// pictures that cannot be fetched, a focus that is no point, a type a sender cannot name.
@Suite(.enabled(if: inIsolatedChild)) struct PayloadEdgeTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory
    let pipeline: Pipeline

    init() throws {
        server = try sampleMediaServer()
        directory = try TemporaryDirectory()
        pipeline = try makePipeline(directory)
    }

    /// The app's own top-level keys that look like a send body's: none makes an APNs payload
    /// (it has `aps`) anything else.
    static let customKeys = [
        #""message":{"id":"m-42"}"#,
        #""messages":{"apple_push":{"id":1}}"#,
        #""content":{"platform_specific":{}}"#,
        #""notification":{"kind":"chat"},"audience":"friends""#,
        #""app_id":"com.example","contents":{"en":"hi"}"#,
    ]

    @Test("an APNs payload with an app's key that a send body also has keeps its picture", arguments: customKeys)
    func anAPNsPayloadWithASendBodysKeyIsStillAnAPNsPayload(custom: String) async throws {
        let body = """
            {"aps":{"alert":"New chat","mutable-content":1},"image":"\(server.url("/gray.jpg"))",\(custom)}
            """
        let result = await pipeline.process(Array(body.utf8))
        #expect(result.shape == .apns && !result.passedThrough, "\(result.report())")
        #expect(result.outcomes.count == 1 && result.outcomes.first?.attachment != nil, "\(result.report())")
        #expect(result.notes.count == 1 && result.notes[0].contains("top-level aps"), "\(result.notes)")
        let out = try NotificationContent(bytes: result.payload)
        #expect(out.root["attachments"] != nil)
        #expect(result.report().contains(#""shape":"apns""#))
    }

    @Test("a body with two senders' marks is read as the first in the documented order, and says so")
    func aBodyWithTwoSendersMarksSaysWhichWasRead() async throws {
        let body = """
            {"message":{"token":"t","notification":{"image":"\(server.url("/gray.jpg"))"}},\
            "messages":{"web_push":{"large_image_url":"\(server.url("/cmyk-adobe.jpg"))"}}}
            """
        let result = await pipeline.process(Array(body.utf8))
        #expect(result.shape == .fcm)
        #expect(result.outcomes.map(\.url) == [server.url("/gray.jpg")], "Braze's field is not read")
        let note = try #require(result.notes.first)
        #expect(note.contains("FCM HTTP v1") && note.contains("Braze") && note.contains("not read"), "\(note)")
        #expect(SendShape.all.map(\.shape) == [.fcm, .braze, .oneSignal, .airship, .cleverTap])
    }

    static let unfetchable: [(String, AttacheError.Code)] = [
        ("ftp://media.example/p.jpg", .schemeNotAllowed),
        ("file:///etc/passwd", .schemeNotAllowed),
        ("data:image/png;base64,iVBORw0KGgo=", .invalidURL),
        ("javascript:alert(1)", .invalidURL),
        ("/images/p.jpg", .invalidURL),
    ]

    @Test("a send body's picture that cannot be fetched keeps its value and gets a report line")
    func aPictureThatCannotBeFetchedIsReported() async throws {
        for (url, code) in Self.unfetchable + [(" " + server.url("/gray.jpg"), .invalidURL)] {
            let body = #"{"message":{"token":"t","android":{"notification":{"image":"# + JSONValue.quote(url) + "}}}}"
            let result = await pipeline.process(Array(body.utf8))
            let outcome = try #require(result.outcomes.first, "\(url): no report line")
            #expect(outcome.error?.code == code, "\(url): \(outcome.reason)")
            #expect(outcome.failedStage == "fetch")
            let out = try NotificationContent(bytes: result.payload)
            #expect(out.value(at: ["message", "android", "notification", "image"])?.stringValue == url)
        }
        // A large icon's drawable name is the app's, not a URL: left alone, without a line.
        let icon = #"{"app_id":"a","contents":{"en":"hi"},"large_icon":"ic_stat_chat"}"#
        let result = await pipeline.process(Array(icon.utf8))
        #expect(result.outcomes.isEmpty && result.payload == Array(icon.utf8))
    }

    @Test("a rewritten picture keeps the bytes around it: the key's spelling and the spacing at its colon")
    func aRewrittenPictureKeepsTheBytesAroundIt() async throws {
        let body = """
            {"message" : {"token":"t",  "notification": {"\\u0069mage" :  "\(server.url("/gray.jpg"))" ,"title":"x"}}}
            """
        let result = await pipeline.process(Array(body.utf8))
        let text = String(decoding: result.payload, as: UTF8.self)
        let url = try #require(
            try NotificationContent(bytes: result.payload).value(at: ["message", "notification", "image"])?.stringValue)
        #expect(url.hasPrefix("https://cdn.test/a/"))
        // The Android picture's placeholder is added at the end of the message; all else stays.
        let hash = try #require(result.outcomes.first?.targets.first { $0.target == .android }?.placeholder)
        let expected = body.replacingOccurrences(of: server.url("/gray.jpg"), with: url)
            .replacingOccurrences(
                of: #""title":"x"}}}"#, with: #""title":"x"},"android":{"data":{"attache_thumbhash":"\#(hash)"}}}}"#)
        #expect(text == expected, "\(text)")
    }

    @Test("Braze: a rendition its asset_file_type cannot name is reported; a type member of any value is rewritten")
    func aTypeTheSenderCannotNameIsReported() async throws {
        let webp = pipeline.writing(.webp)
        let body = """
            {"messages":{"apple_push":{"alert":"a","asset_url":"\(server.url("/cmyk-adobe.jpg"))",\
            "asset_file_type":"jpg"}}}
            """
        let result = await webp.process(Array(body.utf8))
        let outcome = try #require(result.outcomes.first)
        #expect(outcome.attachment == nil && outcome.error?.code == .unsupportedVariant, "\(outcome.reason)")
        #expect(outcome.error?.message.contains("asset_file_type") == true)
        #expect(result.payload == Array(body.utf8), "the field keeps its URL, the type its word")

        let numbered = """
            {"messages":{"apple_push":{"alert":"a","asset_url":"\(server.url("/gray.jpg"))","asset_file_type":5}}}
            """
        let out = try NotificationContent(bytes: await pipeline.process(Array(numbered.utf8)).payload)
        #expect(out.value(at: ["messages", "apple_push", "asset_url"])?.stringValue?.hasPrefix("https://") == true)
        #expect(out.value(at: ["messages", "apple_push", "asset_file_type"]) == .string("jpg"), "the pair agree")
    }

    @Test("a reused receiver's picture reports its crop, placement, encodes and quality as when it was made")
    func aReusedPictureReportsHowItWasMade() async throws {
        let body = """
            {"message":{"token":"t","android":{"notification":{"image":"\(server.url("/waterfall-rotated.jpg"))"}}}}
            """
        let first = try #require(await pipeline.process(Array(body.utf8)).outcomes.first?.targets.first)
        let again = try #require(await pipeline.process(Array(body.utf8)).outcomes.first?.targets.first)
        #expect(!first.cached && again.cached)
        #expect(first.crop.count == 4 && again.crop == first.crop)
        #expect(again.placement != nil && again.placement == first.placement)
        #expect(again.encodes != nil && again.encodes == first.encodes && again.quality == first.quality)
        #expect(again.json.text.contains(#""placement":""#), "\(again.json.text)")
    }

    @Test("a URL's user:password never goes back in a report")
    func aReportHasNoUserinfo() async throws {
        let secret = "http://alice:s3cret@127.0.0.1:9/p.jpg?x=1"
        let result = await pipeline.process(payload(["image": JSONValue.quote(secret)]))
        let report = result.report()
        #expect(!report.contains("s3cret") && !report.contains("alice"), "\(report)")
        #expect(report.contains(#""url":"http://***@127.0.0.1:9/p.jpg?x=1""#), "\(report)")
        #expect(result.outcomes.first?.error?.code == .invalidURL)
    }

    @Test("an attache-focus that is not a point is said in the report")
    func anInvalidFocusIsNoted() async throws {
        for focus in [#"{"x":2,"y":0.5}"#, #""top""#, #"{"x":0.5}"#] {
            let body = """
                {"message":{"token":"t","android":{"notification":{"image":"\(server.url("/gray.jpg"))"}}},\
                "attache-focus":\(focus)}
                """
            let result = await pipeline.process(Array(body.utf8))
            #expect(result.notes.contains { $0.contains("attache-focus") }, "\(focus): \(result.notes)")
            #expect(try NotificationContent(bytes: result.payload).root["attache-focus"] == nil)
        }
        let good = """
            {"message":{"token":"t","android":{"notification":{"image":"\(server.url("/gray.jpg"))"}}},\
            "attache-focus":{"x":0.5,"y":0.2}}
            """
        #expect(await pipeline.process(Array(good.utf8)).notes.isEmpty)
    }

    @Test("payloads naming one picture at once share one fetch and one transform")
    func payloadsNamingOnePictureShareOneRun() async throws {
        let url = server.url("/waterfall-rotated.jpg?campaign=1")
        let body = #"{"message":{"token":"t","notification":{"image":"# + JSONValue.quote(url) + "}}}"
        let pipeline = self.pipeline
        let results = await withTaskGroup(of: PipelineResult.self) { group in
            for _ in 0..<12 { group.addTask { await pipeline.process(Array(body.utf8)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(server.count("/waterfall-rotated.jpg") == 1, "one fetch for twelve payloads")
        let ids = Set(results.compactMap { $0.outcomes.first?.targets.first?.id })
        #expect(ids.count == 1 && results.allSatisfy { $0.outcomes.first?.targets.first?.url != nil })
        // A payload after they are done finds the stored pictures: still no fetch.
        _ = await pipeline.process(Array(body.utf8))
        #expect(server.count("/waterfall-rotated.jpg") == 1)
    }
}
