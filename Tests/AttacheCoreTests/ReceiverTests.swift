import AttacheBase
import AttacheMedia
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheCore

/// FCM v1 messages and OneSignal bodies: one fetch per distinct URL, each field rewritten to
/// its receiver's picture, every other byte kept.
@Suite(.enabled(if: inIsolatedChild)) struct ReceiverTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory
    let pipeline: Pipeline

    init() throws {
        server = try sampleMediaServer()
        let heic = try #require(FileManager.default.contents(atPath: Paths.fixtures + "/heif/DisplayP3.heic"))
        server.route("/p3.heic") { _, c in c.respond(body: Array(heic)) }
        directory = try TemporaryDirectory()
        pipeline = try makePipeline(directory)
    }

    /// The stored object a URL the pipeline wrote names.
    func object(_ url: String) throws -> [UInt8] {
        let name = String(try #require(url.split(separator: "/").last))
        let path = directory.path + "/store/objects/" + name.prefix(2) + "/" + name.dropFirst(2)
        return try #require(FileManager.default.contents(atPath: path).map(Array.init), "\(path)")
    }

    /// Checks a receiver's picture: its format, exactly its shape (±1 px), under its cap, at
    /// least 512 px wide; returns its size.
    func checkPicture(_ url: String, kind: MediaKind = .jpeg, aspect: Double = 2) throws -> (Int, Int) {
        let bytes = try object(url)
        let info = try ImageProcessor.inspect(MediaBytes(bytes))
        #expect(info.kind == kind, "\(url)")
        #expect(abs(Double(info.height) - Double(info.width) / aspect) <= 1, "\(info.width)x\(info.height)")
        #expect(bytes.count <= 1_000_000 && info.frames == 1)
        return (info.width, info.height)
    }

    @Test func anFCMMessageGetsEachPlatformsPicture() async throws {
        let body = """
            {"message":{"token":"t0k3n","notification":{"title":"T","image":"\(server.url("/waterfall-rotated.jpg"))"},\
            "android":{"notification":{"channel_id":"c","image":"\(server.url("/clip.mp4"))"}},\
            "apns":{"payload":{"aps":{"mutable-content":1,"alert":{"title":"T"}}},\
            "fcm_options":{"image":"\(server.url("/waterfall-rotated.jpg"))"}},\
            "webpush":{"headers":{"image":"\(server.url("/animated-chi.gif"))","Urgency":"high"},\
            "notification":{"image":"\(server.url("/p3.heic"))"}},\
            "data":{"n":"12345678901234567890"}}}
            """
        let content = try NotificationContent(bytes: Array(body.utf8))
        #expect(content.shape == .fcm)
        let result = await pipeline.process(Array(body.utf8))
        #expect(!result.passedThrough && !result.bestAttempt)
        // One fetch per distinct URL.
        #expect(result.outcomes.count == 4 && server.count("/waterfall-rotated.jpg") == 1)
        let out = try NotificationContent(bytes: result.payload)
        let message = try #require(out.root["message"])
        let android = try #require(message["android"]?["notification"]?["image"]?.stringValue)
        let shared = try #require(message["notification"]?["image"]?.stringValue)
        let web = try #require(message["webpush"]?["headers"]?["image"]?.stringValue)
        let heic = try #require(message["webpush"]?["notification"]?["image"]?.stringValue)
        let ios = try #require(message["apns"]?["fcm_options"]?["image"]?.stringValue)
        for url in [android, shared, web, heic, ios] { #expect(url.hasPrefix("https://cdn.test/a/"), "\(url)") }
        // A JPEG, a video, an animated GIF and a HEIC, each as a 2:1 JPEG.
        #expect(try checkPicture(heic).0 >= 512)
        #expect(try checkPicture(shared).0 >= 512)
        // The video's poster and the GIF's poster frame, as 2:1 JPEGs.
        #expect(try checkPicture(android).0 >= 512)
        #expect(try checkPicture(web).0 >= 512)
        // The iOS side as today: its rendition (not a crop) in fcm_options and the block in
        // the APNs payload, which keeps its own members.
        let block = try #require(message["apns"]?["payload"]?["attachments"])
        guard case .array(let entries) = block else {
            Issue.record("no attachment block: \(block)")
            return
        }
        #expect(entries.first?["url"]?.stringValue == ios)
        #expect(message["apns"]?["payload"]?["aps"]?["alert"]?["title"]?.stringValue == "T")
        let iosInfo = try ImageProcessor.inspect(MediaBytes(try object(ios)))
        #expect(iosInfo.width == 1024 && iosInfo.height == 683)
        // Every member it did not touch is kept, byte for byte.
        let text = String(decoding: result.payload, as: UTF8.self)
        for kept in [#""token":"t0k3n""#, #""channel_id":"c""#, #""Urgency":"high""#, #""n":"12345678901234567890""#] {
            #expect(text.contains(kept), "\(kept)")
        }
        let targets = result.outcomes.flatMap(\.targets)
        #expect(Set(targets.map(\.target)) == [.android, .web] && targets.allSatisfy { $0.error == nil })
    }

    @Test func aOneSignalBodyGetsEachPlatformsPictureAroundTheSendersPoint() async throws {
        let body = """
            {"app_id":"5eb5a37e","contents":{"en":"hi"},"big_picture":"\(server.url("/portrait-progressive.jpg"))",\
            "chrome_web_image":"\(server.url("/portrait-progressive.jpg"))",\
            "large_icon":"\(server.url("/rgba-interlaced.png"))","small_icon":"ic_stat",\
            "ios_attachments":{"id1":"\(server.url("/rgba-interlaced.png"))"},\
            "attache-focus":{"x":0.5,"y":0.1}}
            """
        let result = await pipeline.process(Array(body.utf8))
        let out = try NotificationContent(bytes: result.payload)
        #expect(out.shape == .oneSignal && out.root["attache-focus"] == nil)
        #expect(out.root["small_icon"]?.stringValue == "ic_stat")
        let big = try #require(out.root["big_picture"]?.stringValue)
        let web = try #require(out.root["chrome_web_image"]?.stringValue)
        let icon = try #require(out.root["large_icon"]?.stringValue)
        let ios = try #require(out.root["ios_attachments"]?["id1"]?.stringValue)
        #expect(try checkPicture(big).0 >= 512)
        #expect(try checkPicture(web).0 >= 512)
        _ = try checkPicture(icon, aspect: 1)
        // The transparent PNG stays a PNG for iOS.
        #expect(try ImageProcessor.inspect(MediaBytes(try object(ios))).kind == .png)
        // The sender's point (near the top) places the portrait's crop at the top.
        let portrait = try #require(result.outcomes.first { $0.url.hasSuffix("/portrait-progressive.jpg") })
        let android = try #require(portrait.targets.first { $0.target == .android })
        #expect(android.placement == "focus" && android.crop.count == 4 && android.crop[1] == 0, "\(android.crop)")
        // The same body again: every picture from the store, nothing fetched.
        let before = server.count("/portrait-progressive.jpg")
        let again = await pipeline.process(Array(body.utf8))
        #expect(again.outcomes.allSatisfy(\.cached) && server.count("/portrait-progressive.jpg") == before)
        // The same objects (a token issued in another second differs; the id does not).
        let repeated = try NotificationContent(bytes: again.payload)
        for field in out.receiverFields {
            let first = field.url.split(separator: "/").last
            #expect(repeated.value(at: field.path)?.stringValue?.split(separator: "/").last == first, "\(field.path)")
        }
    }

    /// Keys spelled with escapes and spaces around the colons: the APNs payload inside is found
    /// and its value replaced, the result parses, nothing else moves — the key's spelling and the
    /// spacing around its colon and a rewritten picture's among them.
    @Test func escapedKeysAndSpacingAreRewrittenInPlace() async throws {
        let body = """
            { "message" : { "apns" : { "payl\\u006fad" :  { "aps" : { "mutable-content" : 1 } } } ,\
             "notification" : { "title" : "a\\"b", "image" : "\(server.url("/gray.jpg"))" } } , "x" : 1.50 }
            """
        let result = await pipeline.process(Array(body.utf8))
        let out = try NotificationContent(bytes: result.payload)
        #expect(
            out.root["message"]?["apns"]?["payload"]?["attachments"] != nil,
            "\(String(decoding: result.payload, as: UTF8.self))")
        let text = String(decoding: result.payload, as: UTF8.self)
        #expect(
            text.hasPrefix(#"{ "message" : { "apns" : { "payl\u006fad" :  { "aps" : { "mutable-content" : 1 }"#)
                && text.hasSuffix(#"} } , "x" : 1.50 }"#),
            "\(text)")
        #expect(text.contains(#""title" : "a\"b", "image" : "https://cdn.test/a/"#), "\(text)")
    }

    /// A Braze `/messages/send` body: iOS's asset (its `asset_file_type` said again for what is
    /// written), Android's big picture and large icon, the web's large image and icon.
    @Test func aBrazeBodyGetsEachPlatformsPictureAndItsFileType() async throws {
        let body = """
            {"external_user_ids":["u"],"messages":{\
            "apple_push":{"alert":"a","asset_url":"\(server.url("/p3.heic"))","asset_file_type":"png"},\
            "android_push":{"alert":"a","title":"t","push_icon_image_url":"\(server.url("/rgba-interlaced.png"))",\
            "extra":{"appboy_image_url":"\(server.url("/animated-chi.gif"))","k":"v"}},\
            "web_push":{"alert":"a","title":"t","image_url":"\(server.url("/rgba-interlaced.png"))",\
            "large_image_url":"\(server.url("/waterfall-rotated.jpg"))"}}}
            """
        let content = try NotificationContent(bytes: Array(body.utf8))
        #expect(content.shape == .braze)
        #expect(content.receiverFields.map(\.receiver) == [.ios, .android, .icon, .web, .icon])
        let result = await pipeline.process(Array(body.utf8))
        #expect(result.outcomes.count == 4 && result.outcomes.allSatisfy { $0.error == nil }, "\(result.outcomes)")
        let out = try NotificationContent(bytes: result.payload)
        let messages = try #require(out.root["messages"])
        let ios = try #require(messages["apple_push"]?["asset_url"]?.stringValue)
        // A HEIC is a JPEG for iOS, and the body now says so.
        #expect(try ImageProcessor.inspect(MediaBytes(try object(ios))).kind == .jpeg)
        #expect(messages["apple_push"]?["asset_file_type"]?.stringValue == "jpg")
        let big = try #require(messages["android_push"]?["extra"]?["appboy_image_url"]?.stringValue)
        #expect(try checkPicture(big).0 >= 512, "the GIF's poster frame as a 2:1 JPEG")
        #expect(messages["android_push"]?["extra"]?["k"]?.stringValue == "v")
        _ = try checkPicture(try #require(messages["android_push"]?["push_icon_image_url"]?.stringValue), aspect: 1)
        #expect(try checkPicture(try #require(messages["web_push"]?["large_image_url"]?.stringValue)).0 >= 512)
        _ = try checkPicture(try #require(messages["web_push"]?["image_url"]?.stringValue), aspect: 1)
    }

    /// An Airship `/api/push` body: the iOS media attachment, Android's and Amazon's big
    /// picture style, the web's image and icon.
    @Test func anAirshipPushBodyGetsEachPlatformsPicture() async throws {
        let body = """
            {"audience":"all","device_types":["ios","android","amazon","web"],"notification":{"alert":"hi",\
            "ios":{"media_attachment":{"url":"\(server.url("/clip.mp4"))","options":{"crop":{"x":0.1}}}},\
            "android":{"style":{"type":"big_picture","big_picture":"\(server.url("/portrait-progressive.jpg"))"}},\
            "amazon":{"style":{"type":"big_picture","big_picture":"\(server.url("/portrait-progressive.jpg"))"}},\
            "web":{"icon":{"url":"\(server.url("/rgba-interlaced.png"))"},"image":{"url":"\(server.url("/p3.heic"))"}}}}
            """
        let content = try NotificationContent(bytes: Array(body.utf8))
        #expect(content.shape == .airship)
        let result = await pipeline.process(Array(body.utf8))
        let out = try NotificationContent(bytes: result.payload)
        let notification = try #require(out.root["notification"])
        let ios = try #require(notification["ios"]?["media_attachment"]?["url"]?.stringValue)
        #expect(try Sniffer.kind(of: try object(ios)) == .mp4)
        #expect(notification["ios"]?["media_attachment"]?["options"]?["crop"]?["x"]?.doubleValue == 0.1)
        let android = try #require(notification["android"]?["style"]?["big_picture"]?.stringValue)
        #expect(try checkPicture(android).0 >= 512)
        #expect(notification["amazon"]?["style"]?["big_picture"]?.stringValue == android)
        #expect(try checkPicture(try #require(notification["web"]?["image"]?["url"]?.stringValue)).0 >= 512)
        _ = try checkPicture(try #require(notification["web"]?["icon"]?["url"]?.stringValue), aspect: 1)
        #expect(server.count("/portrait-progressive.jpg") == 1, "one fetch per distinct URL")
    }

    /// A CleverTap campaign body: the iOS rich media (its `ct_mediaType` said again), Android's
    /// background image and large icon, Chrome's image and icon.
    @Test func aCleverTapCampaignBodyGetsEachPlatformsPicture() async throws {
        let body = """
            {"name":"c","target_mode":"push","where":{},"content":{"title":"t","body":"b","platform_specific":{\
            "ios":{"mutable-content":"true","ct_mediaUrl":"\(server.url("/clip.mp4"))","ct_mediaType":"image"},\
            "android":{"wzrk_cid":"m","background_image":"\(server.url("/waterfall-rotated.jpg"))",\
            "large_icon":"\(server.url("/rgba-interlaced.png"))"},\
            "chrome":{"image":"\(server.url("/animated-chi.gif"))","icon":"\(server.url("/rgba-interlaced.png"))"}}}}
            """
        let content = try NotificationContent(bytes: Array(body.utf8))
        #expect(content.shape == .cleverTap)
        let result = await pipeline.process(Array(body.utf8))
        let out = try NotificationContent(bytes: result.payload)
        let platforms = try #require(out.root["content"]?["platform_specific"])
        #expect(platforms["ios"]?["ct_mediaType"]?.stringValue == "video")
        let ios = try #require(platforms["ios"]?["ct_mediaUrl"]?.stringValue)
        #expect(try Sniffer.kind(of: try object(ios)) == .mp4)
        #expect(try checkPicture(try #require(platforms["android"]?["background_image"]?.stringValue)).0 >= 512)
        _ = try checkPicture(try #require(platforms["android"]?["large_icon"]?.stringValue), aspect: 1)
        #expect(try checkPicture(try #require(platforms["chrome"]?["image"]?.stringValue)).0 >= 512)
        #expect(platforms["android"]?["wzrk_cid"]?.stringValue == "m")
    }

    @Test func aTypeMemberIsSpelledAsItsSenderSpellsIt() {
        let braze = TypeMember(path: [], spelling: .brazeFileType)
        #expect(braze.word(for: .jpeg) == "jpg" && braze.word(for: .aifc) == "aif" && braze.word(for: .webp) == nil)
        let cleverTap = TypeMember(path: [], spelling: .cleverTapMediaType)
        #expect(cleverTap.word(for: .png) == "image" && cleverTap.word(for: .gif) == "gif")
        #expect(cleverTap.word(for: .m4a) == "audio" && cleverTap.word(for: .mp4) == "video")
    }

    @Test func aPayloadWithAMessageStringIsStillAnAPNsPayload() throws {
        let apns = try NotificationContent(bytes: Array(#"{"aps":{"mutable-content":1},"message":"hello"}"#.utf8))
        #expect(apns.shape == .apns && apns.receiverFields.isEmpty)
        let onesignal = try NotificationContent(bytes: Array(#"{"app_id":"x","big_picture":"ic_drawable"}"#.utf8))
        #expect(onesignal.shape == .apns, "no contents, headings or template_id")
        let local = try NotificationContent(
            bytes: Array(#"{"app_id":"x","contents":{},"large_icon":"ic_launcher"}"#.utf8))
        #expect(local.shape == .oneSignal && local.receiverFields.isEmpty, "a drawable name is not fetched")
    }
}
