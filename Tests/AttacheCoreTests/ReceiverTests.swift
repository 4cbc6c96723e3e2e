import AttacheBase
import AttacheClient
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

    /// What one picture field of a sender's body must name after the pipeline.
    enum Picture: Sendable {
        /// A 2:1 JPEG at least 512 px wide (Android's and the web's picture).
        case wide
        /// A 1:1 picture (a large icon).
        case icon
        /// The iOS side: the rendition of this kind (not a crop).
        case ios(MediaKind)
    }

    /// One sender: a body (`$/` standing for the test server), the shape it is read as, each
    /// picture field and what it must name, and members whose values are checked afterwards
    /// (kept as they were, or a type word said again for what was written).
    struct Sender: Sendable, CustomTestStringConvertible {
        var name: String
        var shape: PayloadShape
        var body: String
        var pictures: [([String], Picture)]
        var values: [([String], String)]
        /// Where the Android and web pictures' placeholders must be, and whose they are.
        var placeholders: [([String], TargetSpec.Target)] = []
        var testDescription: String { name }
    }

    static let senders: [Sender] = [
        Sender(
            name: "FCM v1 message", shape: .fcm,
            body: """
                {"message":{"token":"t0k3n","notification":{"title":"T","image":"$/waterfall-rotated.jpg"},\
                "android":{"notification":{"channel_id":"c","image":"$/clip.mp4"}},\
                "apns":{"payload":{"aps":{"mutable-content":1,"alert":{"title":"T"}}},\
                "fcm_options":{"image":"$/waterfall-rotated.jpg"}},\
                "webpush":{"headers":{"image":"$/animated-chi.gif","Urgency":"high"},\
                "notification":{"image":"$/p3.heic"}},\
                "data":{"n":"12345678901234567890"}}}
                """,
            // A JPEG, a video's poster, an animated GIF's poster frame and a HEIC, each as a 2:1
            // JPEG; iOS gets its rendition (not a crop).
            pictures: [
                (["message", "notification", "image"], .wide),
                (["message", "android", "notification", "image"], .wide),
                (["message", "webpush", "headers", "image"], .wide),
                (["message", "webpush", "notification", "image"], .wide),
                (["message", "apns", "fcm_options", "image"], .ios(.jpeg)),
            ],
            values: [
                (["message", "token"], "t0k3n"), (["message", "android", "notification", "channel_id"], "c"),
                (["message", "webpush", "headers", "Urgency"], "high"),
                (["message", "data", "n"], "12345678901234567890"),
                (["message", "apns", "payload", "aps", "alert", "title"], "T"),
                // android.data and webpush.data override message.data: made, they carry it too.
                (["message", "android", "data", "n"], "12345678901234567890"),
                (["message", "webpush", "data", "n"], "12345678901234567890"),
            ],
            placeholders: [
                (["message", "android", "data", "attache_thumbhash"], .android),
                (["message", "webpush", "data", "attache_thumbhash"], .web),
            ]),
        Sender(
            name: "OneSignal body", shape: .oneSignal,
            body: """
                {"app_id":"5eb5a37e","contents":{"en":"hi"},"big_picture":"$/portrait-progressive.jpg",\
                "chrome_web_image":"$/portrait-progressive.jpg",\
                "large_icon":"$/rgba-interlaced.png","small_icon":"ic_stat",\
                "ios_attachments":{"id1":"$/rgba-interlaced.png"},\
                "attache-focus":{"x":0.5,"y":0.1}}
                """,
            // The transparent PNG stays a PNG for iOS.
            pictures: [
                (["big_picture"], .wide), (["chrome_web_image"], .wide), (["large_icon"], .icon),
                (["ios_attachments", "id1"], .ios(.png)),
            ],
            values: [(["small_icon"], "ic_stat"), (["app_id"], "5eb5a37e")]),
        Sender(
            name: "Braze /messages/send body", shape: .braze,
            body: """
                {"external_user_ids":["u"],"messages":{\
                "apple_push":{"alert":"a","asset_url":"$/p3.heic","asset_file_type":"png"},\
                "android_push":{"alert":"a","title":"t","push_icon_image_url":"$/rgba-interlaced.png",\
                "extra":{"appboy_image_url":"$/animated-chi.gif","k":"v"}},\
                "web_push":{"alert":"a","title":"t","image_url":"$/rgba-interlaced.png",\
                "large_image_url":"$/waterfall-rotated.jpg"}}}
                """,
            // A HEIC is a JPEG for iOS, and the body now says so; the GIF's poster frame is the
            // big picture.
            pictures: [
                (["messages", "apple_push", "asset_url"], .ios(.jpeg)),
                (["messages", "android_push", "extra", "appboy_image_url"], .wide),
                (["messages", "android_push", "push_icon_image_url"], .icon),
                (["messages", "web_push", "large_image_url"], .wide), (["messages", "web_push", "image_url"], .icon),
            ],
            values: [
                (["messages", "apple_push", "asset_file_type"], "jpg"),
                (["messages", "android_push", "extra", "k"], "v"),
            ],
            placeholders: [
                (["messages", "android_push", "extra", "attache_thumbhash"], .android),
                (["messages", "web_push", "extra", "attache_thumbhash"], .web),
            ]),
        Sender(
            name: "Airship /api/push body", shape: .airship,
            body: """
                {"audience":"all","device_types":["ios","android","amazon","web"],"notification":{"alert":"hi",\
                "ios":{"media_attachment":{"url":"$/clip.mp4","options":{"crop":{"x":0.1}}}},\
                "android":{"style":{"type":"big_picture","big_picture":"$/portrait-progressive.jpg"}},\
                "amazon":{"style":{"type":"big_picture","big_picture":"$/portrait-progressive.jpg"}},\
                "web":{"icon":{"url":"$/rgba-interlaced.png"},"image":{"url":"$/p3.heic"}}}}
                """,
            pictures: [
                (["notification", "ios", "media_attachment", "url"], .ios(.mp4)),
                (["notification", "android", "style", "big_picture"], .wide),
                (["notification", "amazon", "style", "big_picture"], .wide),
                (["notification", "web", "image", "url"], .wide), (["notification", "web", "icon", "url"], .icon),
            ],
            values: [(["notification", "android", "style", "type"], "big_picture"), (["audience"], "all")],
            placeholders: [
                (["notification", "android", "extra", "attache_thumbhash"], .android),
                (["notification", "amazon", "extra", "attache_thumbhash"], .android),
                (["notification", "web", "extra", "attache_thumbhash"], .web),
            ]),
        Sender(
            name: "CleverTap campaign body", shape: .cleverTap,
            body: """
                {"name":"c","target_mode":"push","where":{},"content":{"title":"t","body":"b","platform_specific":{\
                "ios":{"mutable-content":"true","ct_mediaUrl":"$/clip.mp4","ct_mediaType":"image"},\
                "android":{"wzrk_cid":"m","background_image":"$/waterfall-rotated.jpg",\
                "large_icon":"$/rgba-interlaced.png"},\
                "chrome":{"image":"$/animated-chi.gif","icon":"$/rgba-interlaced.png"}}}}
                """,
            // The video stays a video for iOS, and ct_mediaType now says so.
            pictures: [
                (["content", "platform_specific", "ios", "ct_mediaUrl"], .ios(.mp4)),
                (["content", "platform_specific", "android", "background_image"], .wide),
                (["content", "platform_specific", "android", "large_icon"], .icon),
                (["content", "platform_specific", "chrome", "image"], .wide),
                (["content", "platform_specific", "chrome", "icon"], .icon),
            ],
            values: [
                (["content", "platform_specific", "ios", "ct_mediaType"], "video"),
                (["content", "platform_specific", "android", "wzrk_cid"], "m"),
            ]),
    ]

    /// The sender's body with the test server's URLs.
    func body(_ sender: Sender) -> [UInt8] {
        Array(sender.body.replacingOccurrences(of: "$/", with: server.url("/")).utf8)
    }

    /// Every sender: each picture field rewritten to its receiver's picture (its shape, its
    /// format, under its cap), one fetch per distinct URL, every member checked as it should be.
    @Test(arguments: senders)
    func eachSendersBodyGetsEachReceiversPicture(_ sender: Sender) async throws {
        let input = body(sender)
        let content = try NotificationContent(bytes: input)
        #expect(content.shape == sender.shape)
        #expect(Set(content.receiverFields.map(\.path)) == Set(sender.pictures.map(\.0)), "every field is read")
        let result = await pipeline.process(input)
        #expect(!result.passedThrough && !result.bestAttempt)
        #expect(result.outcomes.allSatisfy { $0.error == nil }, "\(result.outcomes.map(\.reason))")
        let urls = Set(content.receiverFields.map(\.url))
        #expect(result.outcomes.count == urls.count, "one fetch per distinct URL")
        for url in urls { #expect(server.count(String(url.dropFirst(server.url("").count))) == 1, "\(url)") }
        let out = try NotificationContent(bytes: result.payload)
        for (path, picture) in sender.pictures {
            let url = try #require(out.value(at: path)?.stringValue, "\(path)")
            #expect(url.hasPrefix("https://cdn.test/a/"), "\(path): \(url)")
            switch picture {
            case .wide: #expect(try checkPicture(url).0 >= 512, "\(path)")
            case .icon: _ = try checkPicture(url, aspect: 1)
            case .ios(let kind):
                #expect(try Sniffer.kind(of: try object(url)) == kind, "\(path)")
            }
        }
        for (path, value) in sender.values {
            #expect(out.value(at: path)?.stringValue == value, "\(path)")
        }
        // Each Android and web picture's placeholder where its app reads it: the report's hash of
        // that picture, a 2:1 picture decoded; none in a body whose sender has no such map.
        let targets = result.outcomes.flatMap(\.targets)
        for (path, target) in sender.placeholders {
            let hash = try #require(out.value(at: path)?.stringValue, "\(path)")
            #expect(targets.contains { $0.target == target && $0.placeholder == hash }, "\(path)")
            let bytes = try #require(Placeholder.hash(base64: hash))
            let image = try #require(Placeholder.decode(bytes))
            #expect(abs(Double(image.width) / Double(image.height) - 2) < 0.4, "\(image.width)x\(image.height)")
        }
        let written = String(decoding: result.payload, as: UTF8.self).components(separatedBy: "attache_thumbhash")
        #expect(written.count - 1 == sender.placeholders.count)
        #expect(result.trimmed.isEmpty, "\(result.trimmed)")
    }

    /// A body that would pass the platforms' 4 KB (its iOS part aside) with the placeholders
    /// gets its pictures without them, and says so.
    @Test func aBodyWithNoRoomGetsItsPicturesWithoutPlaceholders() async throws {
        let pad = String(repeating: "x", count: 4000)
        let input = Array(
            """
            {"message":{"token":"t","android":{"notification":{"image":"\(server.url("/waterfall-rotated.jpg"))"}},\
            "data":{"pad":"\(pad)"}}}
            """.utf8)
        let result = await pipeline.process(input)
        let out = try NotificationContent(bytes: result.payload)
        let url = try #require(out.value(at: ["message", "android", "notification", "image"])?.stringValue)
        #expect(url.hasPrefix("https://cdn.test/a/") && out.value(at: ["message", "android", "data"]) == nil)
        #expect(result.trimmed == ["send-body placeholders"])
        // With room, the same picture gets its placeholder.
        let roomy = await pipeline.process(
            Array(String(decoding: input, as: UTF8.self).replacingOccurrences(of: pad, with: "x").utf8))
        let kept = try NotificationContent(bytes: roomy.payload)
        #expect(kept.value(at: ["message", "android", "data", "attache_thumbhash"])?.stringValue != nil)
        #expect(kept.value(at: ["message", "android", "data", "pad"])?.stringValue == "x")
    }

    /// FCM's iOS side as before: the rendition at 1024 px in `fcm_options` and the attachment
    /// block in the APNs payload, which keeps its own members; every member it did not touch
    /// kept byte for byte.
    @Test func anFCMMessageKeepsItsAPNsPayloadAndEveryByteItDidNotTouch() async throws {
        let result = await pipeline.process(body(Self.senders[0]))
        let out = try NotificationContent(bytes: result.payload)
        let message = try #require(out.root["message"])
        let ios = try #require(message["apns"]?["fcm_options"]?["image"]?.stringValue)
        let block = try #require(message["apns"]?["payload"]?["attachments"])
        guard case .array(let entries) = block else {
            Issue.record("no attachment block: \(block)")
            return
        }
        #expect(entries.first?["url"]?.stringValue == ios)
        let iosInfo = try ImageProcessor.inspect(MediaBytes(try object(ios)))
        #expect(iosInfo.width == 1024 && iosInfo.height == 683)
        let text = String(decoding: result.payload, as: UTF8.self)
        for kept in [#""token":"t0k3n""#, #""channel_id":"c""#, #""Urgency":"high""#, #""n":"12345678901234567890""#] {
            #expect(text.contains(kept), "\(kept)")
        }
        let targets = result.outcomes.flatMap(\.targets)
        #expect(Set(targets.map(\.target)) == [.android, .web] && targets.allSatisfy { $0.error == nil })
    }

    /// OneSignal's focal point places the portrait's crop at the top, and is taken out of the
    /// body; the same body again is served from the store, the same objects named.
    @Test func aOneSignalBodysFocusPlacesTheCropAndARepeatIsServedFromTheStore() async throws {
        let input = body(Self.senders[1])
        let result = await pipeline.process(input)
        let out = try NotificationContent(bytes: result.payload)
        #expect(out.root["attache-focus"] == nil)
        let portrait = try #require(result.outcomes.first { $0.url.hasSuffix("/portrait-progressive.jpg") })
        let android = try #require(portrait.targets.first { $0.target == .android })
        #expect(android.placement == "focus" && android.crop.count == 4 && android.crop[1] == 0, "\(android.crop)")
        let before = server.count("/portrait-progressive.jpg")
        let again = await pipeline.process(input)
        #expect(again.outcomes.allSatisfy(\.cached) && server.count("/portrait-progressive.jpg") == before)
        // The same objects (a token issued in another second differs; the id does not).
        let repeated = try NotificationContent(bytes: again.payload)
        for field in out.receiverFields {
            let first = field.url.split(separator: "/").last
            #expect(repeated.value(at: field.path)?.stringValue?.split(separator: "/").last == first, "\(field.path)")
        }
    }

    /// Airship's `options` beside the iOS URL are kept.
    @Test func anAirshipMediaAttachmentKeepsItsOptions() async throws {
        let result = await pipeline.process(body(Self.senders[3]))
        let out = try NotificationContent(bytes: result.payload)
        let options = out.root["notification"]?["ios"]?["media_attachment"]?["options"]
        #expect(options?["crop"]?["x"]?.doubleValue == 0.1)
    }

    /// Airship's `options.time` beside the iOS URL is honoured as on the APNs side: a video's
    /// frame at that time is the one the other receivers' pictures are cut from (and their
    /// stored pictures are told apart by it).
    @Test func anAirshipThumbnailTimeChoosesTheVideoFrameTheOtherPicturesComeFrom() async throws {
        func androidPicture(time: Double?) async throws -> [UInt8] {
            let options = time.map { #","options":{"time":\#($0)}"# } ?? ""
            let body = """
                {"audience":"all","notification":{"alert":"hi",\
                "ios":{"media_attachment":{"url":"\(server.url("/clip.mp4"))"\(options)}},\
                "android":{"style":{"type":"big_picture","big_picture":"\(server.url("/clip.mp4"))"}}}}
                """
            let content = try NotificationContent(bytes: Array(body.utf8))
            #expect(content.receiverFields.first?.options.time == time)
            let result = await pipeline.process(Array(body.utf8))
            #expect(result.outcomes.allSatisfy { $0.error == nil }, "\(result.outcomes.map(\.reason))")
            let out = try NotificationContent(bytes: result.payload)
            let url = try #require(out.root["notification"]?["android"]?["style"]?["big_picture"]?.stringValue)
            return try object(url)
        }
        let first = try await androidPicture(time: nil)
        let late = try await androidPicture(time: 0.3)
        let differs = late != first
        #expect(differs, "the frame at 0.3 s, not the first")
        let again = try await androidPicture(time: nil) == first
        #expect(again, "without a time, the first frame again")
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
                && text.range(
                    of: #"\} ,"android":\{"data":\{"attache_thumbhash":"[A-Za-z0-9+/]+"\}\}\} , "x" : 1.50 \}$"#,
                    options: .regularExpression) != nil,
            "the Android placeholder is added at the end of the message, all else where it was: \(text)")
        #expect(text.contains(#""title" : "a\"b", "image" : "https://cdn.test/a/"#), "\(text)")
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
