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
