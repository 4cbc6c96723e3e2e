import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

/// The service on a real socket, driven by curl: mutate round trips, downloads, every refusal,
/// back-pressure, cancellation and metrics. No HTTP layer is mocked.
@Suite(.enabled(if: inIsolatedChild)) struct ServiceTests {
    static let publicBase = "http://attache.test/attachments"

    static func start(
        clock: TestClock? = nil, _ change: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws
        -> RunningService
    {
        try await RunningService(clock: clock) { configuration in
            configuration.pipeline.baseURL = publicBase
            // Generous: these tests are about answers, not speed, and CI's cores are shared.
            configuration.pipeline.deadline = .seconds(120)
            configuration.maxDeadline = .seconds(120)
            change(&configuration)
        }
    }

    static func local(_ url: String, _ service: RunningService) -> String {
        url.replacingOccurrences(of: "http://attache.test", with: service.base)
    }

    static let auth = ["Authorization": "Bearer \(RunningService.apiKey)"]

    /// Posts a payload naming a sample JPEG and returns the answer and the attachment URL.
    static func mutate(
        _ service: RunningService, media: TestHTTPServer, query: String = ""
    ) async throws -> (
        HTTPAnswer, String
    ) {
        let answer = try await curl(
            "POST", service.base + "/v1/notifications" + query, headers: auth,
            body: payload(image: media.url("/photo.jpg")))
        let object = try answer.json()
        let payload = object["payload"] as? [String: Any] ?? object
        let entries = payload["attachments"] as? [[String: Any]] ?? []
        let url = try #require(
            entries.first?["url"] as? String, "no attachment: \(answer.status) \(answer.headers) \(answer.text)")
        return (answer, url)
    }

    static func mediaServer() throws -> TestHTTPServer {
        let server = try TestHTTPServer()
        let photo = Array(FileManager.default.contents(atPath: Paths.samples + "/waterfall-rotated.jpg")!)
        server.route("/photo.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: photo) }
        return server
    }

    /// An FCM v1 message posted as it would go to FCM: Android's field and the web's rewritten to
    /// 2:1 pictures served here, the iOS side given its attachment block; the report names them.
    @Test func anFCMMessageGetsEachPlatformsPictureServedHere() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let body = """
            {"message":{"token":"t","notification":{"image":"\(media.url("/photo.jpg"))"},\
            "apns":{"payload":{"aps":{"mutable-content":1}}},"webpush":{"notification":{"image":"\(media.url("/photo.jpg"))"}}}}
            """
        // The metrics are the process's: other tests running beside this one count too.
        func madeAndroidPictures() async throws -> Int {
            let text = try await curl("GET", service.base + "/metrics").text
            let name = #"attache_target_pictures_total{target="android",reason="made"} "#
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
            return Int(line.dropFirst(name.count)) ?? 0
        }
        let madeBefore = try await madeAndroidPictures()
        let answer = try await curl(
            "POST", service.base + "/v1/notifications?envelope=true", headers: Self.auth, body: Array(body.utf8))
        #expect(answer.status == 200, "\(answer.text)")
        let envelope = try answer.json()
        let message = try #require((envelope["payload"] as? [String: Any])?["message"] as? [String: Any])
        let android = try #require((message["notification"] as? [String: Any])?["image"] as? String)
        let web = try #require(
            ((message["webpush"] as? [String: Any])?["notification"] as? [String: Any])?["image"] as? String)
        let apns = try #require((message["apns"] as? [String: Any])?["payload"] as? [String: Any])
        #expect((apns["attachments"] as? [[String: Any]])?.count == 1)
        // Alike by default, Android's and the web's picture are one object.
        #expect(android.split(separator: "/").last == web.split(separator: "/").last)
        let download = try await curl("GET", Self.local(android, service))
        #expect(download.status == 200 && download.headers["content-type"] == "image/jpeg")
        let info = try ImageProcessor.inspect(MediaBytes(download.body))
        #expect(info.width == 1024 && info.height == 512 && download.body.count <= 1_000_000)
        let outcomes = try #require((envelope["report"] as? [String: Any])?["attachments"] as? [[String: Any]])
        let targets = try #require(outcomes.first?["targets"] as? [[String: Any]])
        #expect(Set(targets.compactMap { $0["target"] as? String }) == ["android", "web"])
        let madeAfter = try await madeAndroidPictures()
        #expect(
            madeAfter >= madeBefore + 1, "attache_target_pictures_total{android,made}: \(madeBefore) → \(madeAfter)")
        // The request names the subject: the crops are placed there.
        let focused = try await curl(
            "POST", service.base + "/v1/notifications?envelope=true&focus=0.5,0", headers: Self.auth,
            body: Array(body.utf8))
        let focusedOutcomes = try #require(
            (try focused.json()["report"] as? [String: Any])?["attachments"] as? [[String: Any]])
        let placed = try #require(focusedOutcomes.first?["targets"] as? [[String: Any]])
        #expect(placed.allSatisfy { $0["placement"] as? String == "focus" }, "\(placed)")
        let bad = try await curl(
            "POST", service.base + "/v1/notifications?focus=2,0", headers: Self.auth, body: Array(body.utf8))
        #expect(bad.status == 400, "\(bad.text)")
    }

    /// A OneSignal body and an FCM message naming a JPEG, an animated GIF, a HEIC and an MP4, posted to a service
    /// whose web pictures are WebP and whose Android cap is 40 KB: every picture field is
    /// rewritten, and each download is exactly 2:1, at least 512 px wide and under its cap.
    @Test func oneSignalAndFCMBodiesOfEveryKindAreServedUnderEachCap() async throws {
        let media = try TestHTTPServer()
        for name in ["waterfall-rotated.jpg", "animated-chi.gif", "clip.mp4"] {
            let body = try #require(FileManager.default.contents(atPath: Paths.samples + "/" + name))
            media.route("/" + name) { _, c in c.respond(body: Array(body)) }
        }
        let heic = try #require(FileManager.default.contents(atPath: Paths.fixtures + "/heif/DisplayP3.heic"))
        media.route("/p3.heic") { _, c in c.respond(body: Array(heic)) }
        let service = try await Self.start { configuration in
            configuration.pipeline.targets[.web]?.format = .webp
            configuration.pipeline.targets[.android]?.maxBytes = 40_000
        }
        defer { Task { await service.stop() } }
        let body = """
            {"app_id":"a","contents":{"en":"x"},"big_picture":"\(media.url("/clip.mp4"))",\
            "huawei_big_picture":"\(media.url("/p3.heic"))","adm_big_picture":"\(media.url("/waterfall-rotated.jpg"))",\
            "chrome_web_image":"\(media.url("/animated-chi.gif"))",\
            "ios_attachments":{"photo":"\(media.url("/waterfall-rotated.jpg"))","gif":"\(media.url("/animated-chi.gif"))"}}
            """
        let answer = try await curl(
            "POST", service.base + "/v1/notifications", headers: Self.auth, body: Array(body.utf8))
        #expect(answer.status == 200, "\(answer.text)")
        let out = try answer.json()
        func download(_ field: String) async throws -> (ImageInfo, Int) {
            let url = try #require(out[field] as? String, "\(field)")
            #expect(url.hasPrefix(Self.publicBase), "\(field): \(url)")
            let got = try await curl("GET", Self.local(url, service))
            #expect(got.status == 200)
            return (try ImageProcessor.inspect(MediaBytes(got.body)), got.body.count)
        }
        for field in ["big_picture", "huawei_big_picture", "adm_big_picture"] {
            let (info, bytes) = try await download(field)
            #expect(info.kind == .jpeg && info.frames == 1, "\(field)")
            #expect(
                abs(info.height * 2 - info.width) <= 2 && info.width >= 512, "\(field): \(info.width)x\(info.height)")
            #expect(bytes <= 40_000, "\(field): \(bytes) bytes")
        }
        let (web, webBytes) = try await download("chrome_web_image")
        #expect(web.kind == .webp && web.frames == 1 && web.width >= 512 && abs(web.height * 2 - web.width) <= 2)
        #expect(webBytes <= 1_000_000)
        // The iOS side as today: the photo's rendition, the GIF still animated.
        let ios = try #require(out["ios_attachments"] as? [String: String])
        let gif = try await curl("GET", Self.local(try #require(ios["gif"]), service))
        let gifInfo = try ImageProcessor.inspect(MediaBytes(gif.body))
        #expect(gifInfo.kind == .gif && gifInfo.frames > 1)
        let photo = try await curl("GET", Self.local(try #require(ios["photo"]), service))
        #expect(try ImageProcessor.inspect(MediaBytes(photo.body)).width == 1024)

        // The same four kinds in an FCM v1 message: each field its platform's picture.
        let fcm = """
            {"message":{"notification":{"image":"\(media.url("/p3.heic"))"},\
            "android":{"notification":{"image":"\(media.url("/clip.mp4"))"}},\
            "apns":{"payload":{"aps":{"mutable-content":1}},"fcm_options":{"image":"\(media.url("/animated-chi.gif"))"}},\
            "webpush":{"notification":{"image":"\(media.url("/waterfall-rotated.jpg"))"}}}}
            """
        let fcmAnswer = try await curl(
            "POST", service.base + "/v1/notifications", headers: Self.auth, body: Array(fcm.utf8))
        let message = try #require(try fcmAnswer.json()["message"] as? [String: Any])
        func fcmDownload(_ path: [String]) async throws -> (ImageInfo, Int) {
            var value: Any? = message
            for key in path { value = (value as? [String: Any])?[key] }
            let url = try #require(value as? String, "\(path)")
            let got = try await curl("GET", Self.local(url, service))
            return (try ImageProcessor.inspect(MediaBytes(got.body)), got.body.count)
        }
        for path in [["notification", "image"], ["android", "notification", "image"]] {
            let (info, bytes) = try await fcmDownload(path)
            #expect(info.kind == .jpeg && abs(info.height * 2 - info.width) <= 2 && info.width >= 512, "\(path)")
            #expect(bytes <= 40_000, "\(path): \(bytes) bytes")
        }
        let (fcmWeb, _) = try await fcmDownload(["webpush", "notification", "image"])
        #expect(fcmWeb.kind == .webp && abs(fcmWeb.height * 2 - fcmWeb.width) <= 2 && fcmWeb.width >= 512)
        let (fcmIOS, _) = try await fcmDownload(["apns", "fcm_options", "image"])
        #expect(fcmIOS.kind == .gif && fcmIOS.frames > 1, "the iOS side keeps its animation")
        let apns = (message["apns"] as? [String: Any])?["payload"] as? [String: Any]
        #expect((apns?["attachments"] as? [[String: Any]])?.count == 1)
    }

    /// A sender asking for its own terms: a 30 KB cap and 3:1 pictures; terms out of range
    /// are refused.
    @Test func aSenderAsksForItsOwnCapAndShape() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let body = Array(#"{"message":{"android":{"notification":{"image":"\#(media.url("/photo.jpg"))"}}}}"#.utf8)
        let answer = try await curl(
            "POST", service.base + "/v1/notifications?android_max_bytes=30000&android_aspect=3", headers: Self.auth,
            body: body)
        #expect(answer.status == 200, "\(answer.text)")
        let message = try #require(try answer.json()["message"] as? [String: Any])
        let url = try #require(
            ((message["android"] as? [String: Any])?["notification"] as? [String: Any])?["image"] as? String)
        let download = try await curl("GET", Self.local(url, service))
        let info = try ImageProcessor.inspect(MediaBytes(download.body))
        #expect(
            download.body.count <= 30_000 && abs(info.height * 3 - info.width) <= 3, "\(info) \(download.body.count)")
        // One rule for every term: a yes-or-no is true or false, and no term is given twice.
        for query in [
            "android_max_bytes=999", "android_aspect=9", "faces=maybe", "faces=1", "faces=yes", "envelope=1",
            "android_max_bytes=40000&android_max_bytes=50000", "deadline=2s&deadline=3s", "format=jpeg&format=webp",
        ] {
            let refused = try await curl(
                "POST", service.base + "/v1/notifications?" + query, headers: Self.auth, body: body)
            #expect(refused.status == 400, "\(query): \(refused.text)")
        }
        let twice = try await curl(
            "POST", service.base + "/v1/notifications?faces=true&faces=false", headers: Self.auth, body: body)
        #expect(twice.text.contains("faces is given more than once"), "\(twice.text)")
        let bare = try await curl("POST", service.base + "/v1/notifications?envelope", headers: Self.auth, body: body)
        let report = try bare.json()["report"] as? [String: Any]
        #expect(bare.status == 200 && report?["shape"] as? String == "fcm", "\(bare.text)")
    }

    @Test func mutateRoundTripThenDownloadByTheReturnedURL() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let input = payload(image: media.url("/photo.jpg"))
        let (answer, url) = try await Self.mutate(service, media: media)
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "application/json")
        #expect(answer.headers["attache-outcome"] == "mutated" && answer.headers["attache-attached"] == "1")
        // Every byte of the payload is kept; the block is added before the closing brace.
        #expect(Array(answer.body.prefix(input.count - 1)) == Array(input.dropLast()))
        #expect(url.hasPrefix(Self.publicBase + "/"))

        let download = try await curl("GET", Self.local(url, service))
        #expect(download.status == 200)
        #expect(download.headers["content-type"] == "image/jpeg")
        #expect(download.headers["content-length"] == String(download.body.count))
        #expect(download.headers["x-content-type-options"] == "nosniff")
        #expect(download.headers["content-security-policy"] == "sandbox")
        #expect(download.headers["accept-ranges"] == "bytes")
        let id = try #require(url.split(separator: "/").last?.split(separator: ".").first.map(String.init))
        #expect(sha256Hex(download.body) == id, "the object is what its id says")
        #expect(download.headers["etag"] == "\"\(id)\"")
        // A device keeps it for the token's life (7 days and at most an hour's window), a
        // shared cache for the edge time (60 s), and an hour more while the origin is away.
        let control = try #require(download.headers["cache-control"])
        let directives = control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let maxAge = try #require(directives.first { $0.hasPrefix("max-age=") }.flatMap { Int($0.dropFirst(8)) })
        #expect(maxAge > 0 && maxAge <= 7 * 86_400 + 3600)
        #expect(
            directives == [
                "public", "max-age=\(maxAge)", "s-maxage=60", "stale-while-revalidate=3600", "stale-if-error=3600",
                "immutable",
            ], "\(control)")
        #expect(download.body.starts(with: [0xFF, 0xD8]))

        // The same payload again: the envelope carries the payload, its exact bytes and the report.
        let (envelopeAnswer, _) = try await Self.mutate(service, media: media, query: "?envelope=true")
        let envelope = try envelopeAnswer.json()
        #expect(envelope["outcome"] as? String == "mutated")
        let exact = try #require(Data(base64Encoded: envelope["payload_base64"] as? String ?? ""))
        #expect(exact.starts(with: input.dropLast()))
        let report = try #require(envelope["report"] as? [String: Any])
        let outcomes = try #require(report["attachments"] as? [[String: Any]])
        #expect(outcomes.first?["reason"] as? String == "attached" && outcomes.first?["cached"] as? Bool == true)
        #expect((envelope["payload"] as? [String: Any])?["attachments"] != nil)
    }

    /// `POST /v1/preview` and `GET /v1/preview?payload=`: the payload processed under the
    /// caller's key and terms, answered with the page, its policy also as a header.
    @Test func aPreviewIsThePageOfThePayloadUnderTheSameKeyAndTerms() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let body = payload(image: media.url("/photo.jpg"))
        let posted = try await curl("POST", service.base + "/v1/preview?quality=70", headers: Self.auth, body: body)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(posted.headers["content-type"] == "text/html; charset=utf-8")
        #expect(posted.headers["x-content-type-options"] == "nosniff")
        #expect(posted.headers["attache-outcome"] == "mutated")
        let policy = try #require(posted.headers["content-security-policy"])
        #expect(policy.hasPrefix("default-src 'none'; img-src data:; style-src 'sha256-"))
        #expect(policy.hasSuffix("frame-ancestors 'none'"))
        // The page's own policy names the same style sheet.
        let hash = try #require(policy.split(separator: "'").first { $0.hasPrefix("sha256-") })
        #expect(posted.text.contains("style-src '\(hash)'"))
        #expect(posted.text.contains("data-platform=\"ios-expanded\""))
        #expect(!posted.text.contains(media.url("/photo.jpg") + "\""), "never a sender's URL in an attribute")

        // The same by GET, base64url in the query; the same picture (stored once, found again).
        let encoded = Data(body).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let got = try await curl("GET", service.base + "/v1/preview?quality=70&payload=" + encoded, headers: Self.auth)
        #expect(got.status == 200, "\(got.text)")
        func object(_ page: String) -> String? {
            guard let at = page.range(of: "data-object=\"") else { return nil }
            return String(page[at.upperBound...].prefix { $0 != "\"" })
        }
        #expect(object(got.text) != nil && object(got.text) == object(posted.text))
        // No key, no page; a term that is not one is refused as on /v1/notifications; no payload.
        #expect(try await curl("POST", service.base + "/v1/preview", body: body).status == 401)
        let badTerm = try await curl("POST", service.base + "/v1/preview?quality=high", headers: Self.auth, body: body)
        #expect(badTerm.status == 400)
        #expect(try await curl("GET", service.base + "/v1/preview", headers: Self.auth).status == 400)
        #expect(try await curl("GET", service.base + "/v1/preview?payload=%25%25", headers: Self.auth).status == 400)
    }

    @Test func aRequestMayAskForWebPRenditions() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (answer, url) = try await Self.mutate(service, media: media, query: "?format=webp")
        let mutated = try answer.json()
        let entry = try #require((mutated["attachments"] as? [[String: Any]])?.first)
        #expect(entry["type"] as? String == "org.webmproject.webp", "\(entry)")
        let download = try await curl("GET", Self.local(url, service))
        #expect(download.status == 200 && download.headers["content-type"] == "image/webp")
        #expect(
            Array(download.body.prefix(4)) == Array("RIFF".utf8) && Array(download.body[8..<12]) == Array("WEBP".utf8))
        // The default stays Apple-safe, and a format that is not one is refused.
        let (_, jpegURL) = try await Self.mutate(service, media: media)
        #expect(jpegURL != url && jpegURL.hasSuffix(".jpg"))
        let bad = try await curl(
            "POST", service.base + "/v1/notifications?format=heic", headers: Self.auth,
            body: payload(image: media.url("/photo.jpg")))
        #expect(bad.status == 400)
    }

    @Test func rangesConditionalRequestsAndHead() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let whole = try await curl("GET", Self.local(url, service))
        let size = whole.body.count
        #expect(size > 1000)

        let first = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=0-99"])
        #expect(first.status == 206 && first.body == Array(whole.body[0..<100]))
        #expect(first.headers["content-range"] == "bytes 0-99/\(size)")
        let middle = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=500-"])
        #expect(middle.status == 206 && middle.body == Array(whole.body[500...]))
        let tail = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(whole.body.suffix(10)))
        let beyond = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=\(size)-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(size)")
        let several = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=0-1,5-6"])
        #expect(several.status == 200 && several.body == whole.body, "several ranges are served whole")
        let stale = try await curl(
            "GET", Self.local(url, service), headers: ["Range": "bytes=0-9", "If-Range": "\"other\""])
        #expect(stale.status == 200 && stale.body.count == size)

        let etag = try #require(whole.headers["etag"])
        let notModified = try await curl("GET", Self.local(url, service), headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        let changed = try await curl("GET", Self.local(url, service), headers: ["If-None-Match": "\"other\""])
        #expect(changed.status == 200)

        let head = try await curl("HEAD", Self.local(url, service))
        #expect(head.status == 200 && head.headers["content-length"] == String(size) && head.body.isEmpty)
    }

    /// Downloads go out with sendfile from the event loop; requests sent back to back on one
    /// connection (pipelined) are answered in order whichever path answers each.
    @Test func downloadsTakeTheFastPathAndPipelinedAnswersStayInOrder() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        let before = DownloadFastPath.answered.load(ordering: .relaxed)
        let whole = try await curl("GET", local)
        #expect(whole.status == 200 && sha256Hex(whole.body) == url.split(separator: "/").last!.prefix(64).description)
        #expect(DownloadFastPath.answered.load(ordering: .relaxed) > before, "answered by the fast path")

        // One connection, five requests written at once: the router and the fast path in turn.
        let path = String(local.dropFirst(service.base.count))
        let answers = try await pipelined(
            port: service.port,
            [
                ("GET", "/healthz", ""), ("GET", path, "Range: bytes=0-9\r\n"), ("HEAD", path, ""),
                ("GET", path, ""), ("GET", "/readyz", ""),
            ])
        #expect(
            answers.map(\.status) == [
                "HTTP/1.1 200 OK", "HTTP/1.1 206 Partial Content", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK",
                "HTTP/1.1 200 OK",
            ])
        #expect(answers.count == 5 && answers[0].body == Array("ok\n".utf8) && answers[4].body == Array("ready\n".utf8))
        #expect(answers.count == 5 && answers[1].body == Array(whole.body.prefix(10)) && answers[3].body == whole.body)
    }

    /// The fast path answers through the HTTP/1 encoder, which pairs each answer with its
    /// request's method: after a download it answered, a `HEAD` the router answers still has no
    /// body and the next answer keeps its own.
    @Test func answersAfterAFastDownloadKeepTheirBodies() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let answers = try await pipelined(
            port: service.port,
            [
                ("GET", path, ""), ("HEAD", path, ""), ("GET", "/healthz", ""), ("GET", path, ""),
                ("GET", "/readyz", ""),
            ],
            oneByOne: true)
        #expect(answers.map(\.status).allSatisfy { $0 == "HTTP/1.1 200 OK" } && answers.count == 5, "\(answers)")
        #expect(answers.count == 5 && answers[2].body == Array("ok\n".utf8) && answers[4].body == Array("ready\n".utf8))
        #expect(answers.count == 5 && answers[1].body.isEmpty && answers[3].body == answers[0].body)
    }

    /// A download's check is remembered by its event loop for a second: the next download of
    /// the URL is sent from it; a revocation made through this process ends it at once, and one
    /// made by another process (`attache store revoke`) within the second.
    @Test func rememberedChecksEndWithARevocation() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let id = try #require(AttachmentID(hex: String(path.suffix(68).prefix(64))))
        // One connection, one event loop: the second download comes from the first's check
        // (unless a second passed between them on a busy machine: then the next pair's does).
        let before = DownloadFastPath.remembered.load(ordering: .relaxed)
        for _ in 0..<20 where DownloadFastPath.remembered.load(ordering: .relaxed) == before {
            let twice = try await pipelined(port: service.port, [("GET", path, ""), ("GET", path, "")], oneByOne: true)
            #expect(twice.map(\.status) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"] && twice[0].body == twice[1].body)
        }
        #expect(DownloadFastPath.remembered.load(ordering: .relaxed) > before, "sent from the remembered check")
        // Revoked through the service's own store: refused on the same connection at once.
        let store = service.service.store
        let refused = try await pipelined(
            port: service.port, [("GET", path, ""), ("GET", path, "")], oneByOne: true,
            afterFirst: { try store.revokeTokens(for: id) })
        #expect(refused.map(\.status) == ["HTTP/1.1 200 OK", "HTTP/1.1 403 Forbidden"], "\(refused.map(\.status))")
    }

    /// Clients that go away mid-download (a phone losing signal) cost nothing lasting: the file
    /// and the lease are released, and the next download is served.
    @Test func aDownloadCutShortReleasesItsFileAndLease() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        let path = String(local.dropFirst(service.base.count))
        let descriptorsBefore = openDescriptors()
        for _ in 0..<20 {
            // Ask for the object and hang up after the first bytes of the answer.
            _ = try await pipelined(port: service.port, [("GET", path, "")], readAtMost: 100)
        }
        let again = try await curl("GET", local)
        #expect(again.status == 200 && sha256Hex(again.body) == String(path.suffix(68).prefix(64)))
        #expect(await eventually { openDescriptors() <= descriptorsBefore + 4 }, "files closed")
        // A lease (a shared lock on the object's file) still held would keep collection from
        // removing the object once it expires: an exclusive lock must be free.
        let id = String(path.suffix(68).prefix(64))
        let attachmentID = try #require(AttachmentID(hex: id))
        let stored = try #require(try service.service.store.attachment(attachmentID))
        let object = service.service.store.path(of: stored)
        let fd = open(object, O_RDONLY)
        #expect(fd >= 0)
        #expect(await eventually { flock(fd, LOCK_EX | LOCK_NB) == 0 }, "no lease left on the object")
        close(fd)
    }

    /// A client still reading a download when a graceful shutdown begins gets all of it.
    @Test func shutdownLetsADownloadInFlightFinish() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        let download = Task {
            await slowDownload(port: service.port, path: path, firstBytes: 1000, paused: paused, resume: resume)
        }
        #expect(await signalled(paused), "the download started")
        let stopping = Task { await service.stop() }
        // Shutdown has begun when new connections are refused; the download is still open.
        #expect(await eventually { try await curl("GET", service.base + "/healthz").status == 0 })
        resume.signal()
        let bytes = await download.value
        await stopping.value
        let answers = parseAnswers(bytes, heads: [false])
        #expect(answers.first?.status == "HTTP/1.1 200 OK")
        #expect(answers.first.map { sha256Hex($0.body) } == String(path.suffix(68).prefix(64)), "all of it")
    }

    @Test func tokensAreCheckedFirstAndRefusalsLookAlike() async throws {
        let clock = TestClock()
        let media = try Self.mediaServer()
        let service = try await Self.start(clock: clock) { $0.pipeline.tokenTTL = 60 }
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        #expect(try await curl("GET", local).status == 200)
        let parts = local.split(separator: "/", omittingEmptySubsequences: false)
        let token = String(parts[parts.count - 2])
        let file = String(parts[parts.count - 1])
        let base = service.base + "/attachments"

        // Tampered token, token of another attachment, no token, wrong extension.
        var tampered = Array(token.utf8)
        tampered[tampered.count - 3] =
            tampered[tampered.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let refusedTampered = try await curl("GET", "\(base)/\(String(decoding: tampered, as: UTF8.self))/\(file)")
        let otherID = String(repeating: "ab", count: 32)
        let refusedOther = try await curl("GET", "\(base)/\(token)/\(otherID).jpg")
        let refusedName = try await curl("GET", "\(base)/\(token)/not-an-id.jpg")
        #expect(refusedTampered.status == 403 && refusedOther.status == 403 && refusedName.status == 403)
        #expect(
            refusedTampered.body == refusedOther.body && refusedOther.body == refusedName.body,
            "never says which check failed")
        #expect(refusedTampered.headers["content-type"] == "application/problem+json")
        #expect(try refusedTampered.json()["code"] as? String == "access_denied")
        let missing = try await curl("GET", "\(base)/\(file)")
        let missingCode = try missing.json()["code"] as? String
        #expect(missing.status == 401 && missingCode == "unauthorized")
        let wrongExtension = try await curl("GET", "\(base)/\(token)/\(file.split(separator: ".")[0]).png")
        #expect(wrongExtension.status == 404)

        // A valid token for an id the store does not hold: 404.
        let unknown = try #require(AttachmentID(hex: otherID))
        let valid = service.service.store.keyRing.issue(for: unknown, scope: .read, ttl: 60, now: clock.now).token
        let notFound = try await curl("GET", "\(base)/\(valid)/\(otherID).jpg")
        let notFoundCode = try notFound.json()["code"] as? String
        #expect(notFound.status == 404 && notFoundCode == "not_found")

        // A rotated-out key: its tokens stop opening anything.
        let keyID = service.service.store.keyRing.currentKeyID
        _ = try service.service.store.rotateKeys()
        #expect(try await curl("GET", local).status == 200, "a rotated (not retired) key still verifies")
        _ = try service.service.store.retireKey(keyID)
        #expect(try await curl("GET", local).status == 403)

        // Expiry, on the store's clock: never before the 60 s asked, at most a token window
        // (3 s) after them.
        let (_, fresh) = try await Self.mutate(service, media: media)
        #expect(try await curl("GET", Self.local(fresh, service)).status == 200)
        clock.advance(59)
        #expect(try await curl("GET", Self.local(fresh, service)).status == 200)
        clock.advance(2 + AccessToken.window(forTTL: 60))
        #expect(try await curl("GET", Self.local(fresh, service)).status == 403)
    }

    @Test func everyClientErrorIsAProblemWithItsCode() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start { $0.maxRequestBytes = 1000 }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = payload(image: media.url("/photo.jpg"))
        func code(_ answer: HTTPAnswer) -> String? { try? answer.json()["code"] as? String }

        let anonymous = try await curl("POST", post, body: body)
        #expect(anonymous.status == 401 && code(anonymous) == "unauthorized")
        #expect(anonymous.headers["www-authenticate"] == "Bearer")
        let wrong = try await curl("POST", post, headers: ["Authorization": "Bearer not-the-key-000000000"], body: body)
        #expect(wrong.status == 401 && code(wrong) == "unauthorized")
        let rotated = try await curl(
            "POST", post, headers: ["Authorization": "Bearer second-key-for-rotation-000"], body: body)
        #expect(rotated.status == 200, "every configured key is accepted")

        let big = Array(repeating: UInt8(ascii: " "), count: 1001)
        let tooLarge = try await curl("POST", post, headers: Self.auth, body: big)
        #expect(tooLarge.status == 413 && code(tooLarge) == "request_too_large")
        #expect((try tooLarge.json()["limit"] as? String) == "max_request_bytes")
        let chunked = try await curl(
            "POST", post, headers: Self.auth.merging(["Transfer-Encoding": "chunked"]) { a, _ in a }, body: big)
        #expect(chunked.status == 413 && code(chunked) == "request_too_large")

        let badDeadline = try await curl("POST", post + "?deadline=soon", headers: Self.auth, body: body)
        #expect(badDeadline.status == 400 && code(badDeadline) == "invalid_request")
        let badHeader = try await curl(
            "POST", post, headers: Self.auth.merging(["Attache-Deadline": "-5"]) { a, _ in a }, body: body)
        #expect(badHeader.status == 400 && code(badHeader) == "invalid_request")
        let badEnvelope = try await curl("POST", post + "?envelope=maybe", headers: Self.auth, body: body)
        #expect(badEnvelope.status == 400 && code(badEnvelope) == "invalid_request")
        // One decimal grammar for every number a request carries.
        for term in [
            "quality_target=0x50", "quality_target=8e1", "quality_target=%2B80", "quality_target=%2075",
            "quality_target=80%00", "android_aspect=0x1p1", "focus=0x0.8,0.5", "focus=0.5,5e-1", "quality=%2B80",
        ] {
            let loose = try await curl("POST", post + "?" + term, headers: Self.auth, body: body)
            #expect(loose.status == 400 && code(loose) == "invalid_request", "\(term): \(loose.status)")
        }
        let nowhere = try await curl("GET", service.base + "/nowhere")
        #expect(nowhere.status == 404 && code(nowhere) == "not_found")
        #expect(nowhere.headers["content-type"] == "application/problem+json")

        // What cannot be mutated is answered 200 with the payload unchanged.
        let garbage: [UInt8] = Array("{\"aps\":".utf8) + [0xFF, 0xFE]
        let unreadable = try await curl("POST", post, headers: Self.auth, body: garbage)
        #expect(unreadable.status == 200 && unreadable.body == garbage)
        #expect(unreadable.headers["attache-outcome"] == "unreadable")
        #expect(unreadable.headers["content-type"] == "application/octet-stream")
        #expect(unreadable.headers["attache-payload-error"] == "invalid_payload")
        let plain = Array(#"{"aps":{"alert":"hi"},"image":"http://x/y.jpg"}"#.utf8)
        let notMutable = try await curl("POST", post, headers: Self.auth, body: plain)
        #expect(notMutable.status == 200 && notMutable.body == plain)
        #expect(notMutable.headers["attache-outcome"] == "passed_through")
        let empty = try await curl("POST", post, headers: Self.auth, body: [])
        #expect(empty.status == 200 && empty.body.isEmpty)
        let envelopeOfGarbage = try await curl("POST", post + "?envelope=true", headers: Self.auth, body: garbage)
        #expect(envelopeOfGarbage.status == 200)
        #expect(Data(base64Encoded: (try envelopeOfGarbage.json()["payload_base64"] as? String) ?? "") == Data(garbage))
    }

    @Test("with --allow-anonymous, no credentials pass and a wrong key is still 401")
    func aPresentedKeyThatIsWrongIsRefusedEvenWhereAnonymousIsAllowed() async throws {
        let service = try await Self.start { $0.allowAnonymous = true }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        #expect(try await curl("POST", post, body: body).status == 200)
        #expect(try await curl("POST", post, headers: Self.auth, body: body).status == 200)
        for presented in ["Bearer not-the-key-000000000", "Basic dXNlcjpwYXNz", "Bearer"] {
            let answer = try await curl("POST", post, headers: ["Authorization": presented], body: body)
            #expect(answer.status == 401, "\(presented)")
            #expect(answer.headers["www-authenticate"] == "Bearer")
        }
    }

    @Test func aBurstBeyondTheQueueIsTurnedAwayAtOnce() async throws {
        // One in the pipeline (its fetch is held at the media server), one waiting.
        let (service, held, waiting, payloadText) = try await LoadSheddingTests.full()
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = Array(payloadText.utf8)

        // Everything beyond is answered 503 at once, while the others are still held.
        for _ in 0..<5 {
            let refused = try await curl("POST", post, headers: Self.auth, body: body)
            #expect(refused.status == 503 && refused.headers["retry-after"] == "3")
            #expect((try refused.json()["code"] as? String) == "overloaded")
        }
        let metrics = try await curl("GET", service.base + "/metrics")
        #expect(metricValue(metrics.text, "attache_pipeline_in_flight") == 1)
        #expect(metricValue(metrics.text, "attache_pipeline_queued") == 1)

        held.release()
        let answers = [try await waiting[0].value, try await waiting[1].value]
        for answer in answers {
            #expect(answer.status == 200 && answer.headers["attache-attached"] == "1")
        }
        #expect(service.service.admission.counts == (0, 0))
    }

    @Test func aClientThatHangsUpCancelsItsWork() async throws {
        let media = try TestHTTPServer()
        let closed = DispatchSemaphore(value: 0)
        media.route("/hang.jpg") { _, connection in
            // The fetch is cancelled when its caller hangs up: the connection closes.
            if connection.timeUntilClientCloses(limit: .seconds(120)) != nil { closed.signal() }
            connection.close()
        }
        let service = try await Self.start { $0.maxDeadline = .seconds(600) }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications?deadline=600s"
        let body = payload(image: media.url("/hang.jpg"))
        let client = Task.detached {
            try await curl("POST", post, headers: Self.auth, body: body, extra: ["--max-time", "1"])
        }
        _ = try await client.value
        #expect(await signalled(closed), "the fetch for a client that went away was stopped long before its deadline")
        #expect(await eventually { service.service.admission.counts == (0, 0) })
    }

    @Test func healthReadinessMetricsAndTheDocument() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        #expect(try await curl("GET", service.base + "/healthz").status == 200)
        #expect(try await curl("GET", service.base + "/readyz").status == 200)
        let document = try await curl("GET", service.base + "/openapi.yaml")
        #expect(document.status == 200 && document.text.hasPrefix("openapi: 3.1"))

        let before = try await curl("GET", service.base + "/metrics").text
        let (_, url) = try await Self.mutate(service, media: media)
        _ = try await curl("GET", Self.local(url, service))
        _ = try await curl("POST", service.base + "/v1/notifications", body: [])
        let after = try await curl("GET", service.base + "/metrics").text
        let ok = #"attache_http_requests_total{route="notifications",method="POST",status="200"}"#
        let denied = #"attache_http_requests_total{route="notifications",method="POST",status="401"}"#
        #expect((metricValue(after, ok) ?? 0) >= (metricValue(before, ok) ?? 0) + 1)
        #expect((metricValue(after, denied) ?? 0) >= (metricValue(before, denied) ?? 0) + 1)
        let served = #"attache_bytes_total{direction="served"}"#
        #expect((metricValue(after, served) ?? 0) > (metricValue(before, served) ?? 0))
        #expect(after.contains(#"attache_stage_duration_seconds_bucket{stage="transform""#))
        #expect(after.contains("attache_store_objects"))
        #expect(!after.contains(RunningService.apiKey) && !after.contains("eyJ"), "no secrets in metrics")
    }

    /// `attache serve` as operators run it: SIGTERM while a payload is in the pipeline stops
    /// new connections, lets that payload finish and be answered, then exits 0.
    @Test func sigtermDrainsInFlightWorkThenExits() async throws {
        let media = try TestHTTPServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: sampleJPEG)
        let serve = try ServeProcess(["--grace-period", "60s", "--gc-interval", "0s"])
        defer { serve.stop() }
        let process = serve.process
        let base = try await serve.base()

        let answer = Task {
            try await curl(
                "POST", base + "/v1/notifications?deadline=60s", headers: Self.auth,
                body: payload(image: media.url("/held.jpg")))
        }
        #expect(await held.waitForArrivals(1), "the payload reached its fetch")
        kill(process.processIdentifier, SIGTERM)
        // New connections are refused once shutdown has begun, while the payload is still held.
        #expect(await eventually { try await curl("GET", base + "/healthz").status == 0 })
        #expect(process.isRunning, "the process waits for the payload in flight")

        held.release()
        let drained = try await answer.value
        #expect(drained.status == 200 && drained.headers["attache-attached"] == "1", "\(drained.text)")
        // Without --base-url, the attachment URLs name the port the server got, not port 0.
        let entries = (try drained.json())["attachments"] as? [[String: Any]] ?? []
        let url = try #require(entries.first?["url"] as? String, "\(drained.text)")
        #expect(url.hasPrefix(base + "/attachments/"), "\(url)")
        #expect(serve.logged.contains("attachments=\(base)/attachments"), "\(serve.logged)")
        #expect(await signalled(serve.exited), "it exits once drained")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(serve.logged)")
    }

    /// schemathesis (examples, coverage and fuzzing phases, every check) against the live
    /// service and its own document: no 5xx, every status, header, content type and body as
    /// documented, schema-violating requests refused, undocumented methods 405.
    @Test func theServiceConformsToItsOpenAPIDocument() async throws {
        let tools = Paths.package + "/.build/tools/bin/"
        let onPath = ProcessInfo.processInfo.environment["PATH", default: ""].split(separator: ":")
            .map { $0 + "/schemathesis" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        let schemathesis = try #require(
            FileManager.default.isExecutableFile(atPath: tools + "schemathesis") ? tools + "schemathesis" : onPath,
            "schemathesis is missing: bash scripts/api-tools.sh installs it")
        let python = URL(fileURLWithPath: schemathesis).deletingLastPathComponent().path + "/python3"
        let document = Paths.package + "/Sources/AttacheServer/openapi.yaml"
        let validator = await runProcess(
            FileManager.default.isExecutableFile(atPath: python) ? python : "/usr/bin/env",
            (FileManager.default.isExecutableFile(atPath: python) ? [] : ["python3"])
                + ["-m", "openapi_spec_validator", document])
        #expect(validator.status == 0, "\(validator.output)")

        let media = try Self.mediaServer()
        let service = try await Self.start { $0.receipts = true }
        defer { Task { await service.stop() } }
        // A real attachment, so that downloads are tried with a token that opens something.
        let (_, url) = try await Self.mutate(service, media: media)
        let parts = url.split(separator: "/")
        let directory = try TemporaryDirectory()
        let config = directory.path + "/schemathesis.toml"
        try Data(
            """
            [[operations]]
            include-path = "/attachments/{token}/{file}"
            parameters = { token = "\(parts[parts.count - 2])", file = "\(parts[parts.count - 1])" }
            """.utf8
        ).write(to: URL(fileURLWithPath: config))
        // One worker: CPython 3.11 before 3.11.8 can raise "AST constructor recursion depth
        // mismatch" when hypothesis parses lambdas on two threads at once (cpython#106905).
        let run = await runProcess(
            schemathesis,
            [
                "--config-file", config, "run", service.base + "/openapi.yaml",
                "-H", "Authorization: Bearer \(RunningService.apiKey)", "--checks", "all", "--max-examples", "60",
                "--seed", "20261122", "--workers", "1", "--no-color", "--report-dir", directory.path + "/report",
            ],
            environment: ProcessInfo.processInfo.environment.merging(["SCHEMATHESIS_HOOKS": ""]) { _, new in new },
            directory: directory.path)
        #expect(run.status == 0, "\(run.output.suffix(20000))")
        #expect(run.output.contains("passed") && !run.output.contains("Failures:"))
    }

    @Test func theStoreCanBreakReadinessButNotHealth() async throws {
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let tmp = service.directory.path + "/store/tmp"
        try FileManager.default.removeItem(atPath: tmp)
        _ = FileManager.default.createFile(atPath: tmp, contents: Data("not a directory".utf8))
        let ready = try await curl("GET", service.base + "/readyz")
        #expect(ready.status == 503 && ready.text.contains("store_writable"))
        #expect(try await curl("GET", service.base + "/healthz").status == 200)
    }
}

@Suite struct ServiceUnitTests {
    @Test func byteRanges() {
        #expect(ByteRange.parse("bytes=0-9", size: 100) == .range(0...9))
        #expect(ByteRange.parse("bytes=90-200", size: 100) == .range(90...99))
        #expect(ByteRange.parse("bytes=-5", size: 100) == .range(95...99))
        #expect(ByteRange.parse("bytes=-500", size: 100) == .range(0...99))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=5-2", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=0-1,4-5", size: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=a-b", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=99999999999999999999999-", size: 100) == .unsatisfiable)
    }

    @Test func aPreviewsQueryPayloadIsBase64URL() {
        #expect(NotificationRoute.base64URL("aGk") == Array("hi".utf8))
        #expect(NotificationRoute.base64URL("aGk=") == Array("hi".utf8))
        #expect(NotificationRoute.base64URL("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(NotificationRoute.base64URL("") == [])
        for refused in ["a", "aGk==", "aG=k", "+/+/", "aGk===", "aGk ", "a\u{e9}"] {
            #expect(NotificationRoute.base64URL(refused) == nil, "\(refused)")
        }
    }

    @Test func aBaseURLNamingPortZeroTakesTheBoundPort() {
        #expect(
            PipelineSlot.baseURL("http://127.0.0.1:0/attachments", bound: 41234) == "http://127.0.0.1:41234/attachments"
        )
        #expect(PipelineSlot.baseURL("http://[::1]:0/a", bound: 8081) == "http://[::1]:8081/a")
        #expect(PipelineSlot.baseURL("https://media.example.com/attachments", bound: 8081) == nil)
        #expect(PipelineSlot.baseURL("http://127.0.0.1:8080/attachments", bound: 8081) == nil)
        #expect(PipelineSlot.baseURL("http://127.0.0.1:0/attachments", bound: 0) == nil)
    }

    @Test func apiKeysCompareWhole() {
        let keys = APIKeys(["alpha-key-0000000000", "beta-key-00000000000"])
        #expect(keys.accepts("alpha-key-0000000000") && keys.accepts("beta-key-00000000000"))
        #expect(!keys.accepts("alpha-key-000000000") && !keys.accepts("alpha-key-00000000000") && !keys.accepts(""))
        #expect(APIKeys.bearer("Bearer abc") == "abc" && APIKeys.bearer("bearer  abc") == "abc")
        #expect(APIKeys.bearer("Basic abc") == nil && APIKeys.bearer("Bearer") == nil && APIKeys.bearer(nil) == nil)
        #expect(!APIKeys([]).accepts("anything"))
    }

    @Test func admissionHandsSlotsOnInOrder() async {
        let admission = Admission(slots: 1, queue: 1)
        #expect(await admission.enter())
        let waiter = Task { await admission.enter() }
        #expect(await eventually { admission.counts.waiting == 1 })
        #expect(await admission.enter() == false, "queue full: turned away at once")
        admission.leave()
        #expect(await waiter.value)
        #expect(admission.counts == (1, 0))
        // A cancelled waiter leaves the queue and holds no slot.
        let cancelled = Task { await admission.enter() }
        #expect(await eventually { admission.counts.waiting == 1 })
        cancelled.cancel()
        #expect(await cancelled.value == false)
        #expect(admission.counts == (1, 0))
        admission.leave()
        #expect(admission.counts == (0, 0))
    }

    @Test func settingsComeFromFlagsThenEnvironmentThenFile() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/attache.json"
        try Data(#"{"port": 9001, "maxQueued": 5, "maxSide": 640, "apiKeys": "file-key-0000000000000"}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let reader = try await ServerSettings.reader(
            flags: ["port": "9003"], environment: ["ATTACHE_PORT": "9002", "ATTACHE_MAX_QUEUED": "7"], file: file)
        let loaded = ServerSettings.load(reader, environment: ["HOME": directory.path])
        #expect(loaded.problems.isEmpty, "\(loaded.problems)")
        #expect(loaded.configuration.port == 9003, "a flag beats the environment")
        #expect(loaded.configuration.maxQueued == 7, "the environment beats the file")
        #expect(loaded.configuration.pipeline.rendition.maxSide == 640, "the file beats the default")
        #expect(loaded.configuration.apiKeys == ["file-key-0000000000000"])
        #expect(loaded.configuration.pipeline.baseURL == "http://127.0.0.1:9003/attachments")
    }

    @Test func everyBadSettingGetsItsOwnMessage() async throws {
        let reader = try await ServerSettings.reader(
            flags: ["port": "http", "deadline": "soon"],
            environment: ["ATTACHE_MAX_QUEUED": "-1", "ATTACHE_BASE_URL": "ftp://x/y", "ATTACHE_API_KEYS": "short"],
            file: nil)
        let loaded = ServerSettings.load(reader, environment: [:])
        let problems = loaded.problems.joined(separator: "\n")
        #expect(loaded.problems.count == 5, "\(problems)")
        for name in ["ATTACHE_PORT", "ATTACHE_DEADLINE", "ATTACHE_MAX_QUEUED", "ATTACHE_BASE_URL", "ATTACHE_API_KEYS"] {
            #expect(problems.contains(name), "\(name) in \(problems)")
        }
        #expect(!problems.contains("short"), "a secret is never echoed")
        let none = ServerSettings.load(try await ServerSettings.reader(flags: [:], environment: [:], file: nil))
        #expect(none.problems.contains { $0.contains("no API key") })
    }

    /// The document's enums of error codes and limit names are the catalogue's, in its order.
    @Test func theDocumentNamesEveryCodeAndLimit() {
        let text = String(decoding: OpenAPIDocument.bytes, as: UTF8.self)
        func names(after schema: String) -> [String] {
            guard let start = text.range(of: "    \(schema):\n") else { return [] }
            let rest = text[start.upperBound...]
            guard let open = rest.firstIndex(of: "["), let close = rest.firstIndex(of: "]") else { return [] }
            return rest[rest.index(after: open)..<close].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        #expect(names(after: "ErrorCode") == AttacheError.Code.all.map(\.rawValue))
        #expect(names(after: "LimitName") == AttacheError.Limit.all.map(\.rawValue))
    }

    @Test func attachmentsPathFromTheBaseURL() {
        var configuration = ServerConfiguration(store: StoreConfiguration(root: "/tmp/x"))
        for (base, path) in [
            ("https://cdn.example/a/b/", "/a/b"), ("http://h:1/attachments", "/attachments"), ("https://h", ""),
        ] {
            configuration.pipeline.baseURL = base
            #expect(configuration.attachmentsPath == path)
        }
    }
}
