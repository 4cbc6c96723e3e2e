import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch
@testable import AttachePreview

/// The platform preview: what a payload says is text to the page, each platform's picture is the
/// one made for it, cut as that platform cuts it, and a browser draws it where the page says.
@Suite(.enabled(if: inIsolatedChild)) struct PreviewTests {
    /// A media host, a store and a pipeline.
    final class Fixture: @unchecked Sendable {
        let server: TestHTTPServer
        let directory: TemporaryDirectory
        let store: AttachmentStore
        let pipeline: Pipeline

        init() throws {
            server = try TestHTTPServer()
            for name in [
                "gray.jpg", "animated-chi.gif", "portrait-progressive.jpg", "waterfall-rotated.jpg", "clip.mp4",
            ] {
                let body = Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!)
                server.route("/" + name) { _, c in c.respond(body: body) }
            }
            directory = try TemporaryDirectory()
            store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
            var configuration = PipelineConfiguration()
            configuration.deadline = .seconds(120)  // a debug build beside other suites is slow
            configuration.categories = CategorySet(
                image: "attache.image",
                actions: [
                    "attache.image": [.init(id: "open", title: "Open <b>now</b>"), .init(id: "save", title: "Save")]
                ])
            pipeline = Pipeline(configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()), store: store)
        }

        func url(_ name: String) -> String { server.url("/" + name) }

        /// The payload processed, and its page.
        func preview(_ payload: String) async -> (PipelineResult, String) {
            let result = await pipeline.process(Array(payload.utf8))
            let page = NotificationPreview(title: "payload <1>.json")
                .render(result, objects: NotificationPreview.objects(in: store))
            return (result, page)
        }

        /// An FCM body with three pictures: the iOS one, Android's own, the web's.
        var threePictures: String {
            """
            {"message": {"token": "t", "notification": {"title": "Falls at dawn", "body": "Three pictures"},
             "android": {"notification": {"image": "\(url("waterfall-rotated.jpg"))"}},
             "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": "\(url("portrait-progressive.jpg"))"}},
             "webpush": {"headers": {"image": "\(url("animated-chi.gif"))"}}}}
            """
        }

        /// A OneSignal body with every receiver: iOS, Android, web and the large icon.
        var everyReceiver: String {
            """
            {"app_id": "a", "headings": {"en": "Trips"}, "contents": {"en": "Every receiver"},
             "ios_attachments": {"id1": "\(url("portrait-progressive.jpg"))"}, "big_picture": "\(url("waterfall-rotated.jpg"))",
             "chrome_web_image": "\(url("animated-chi.gif"))", "large_icon": "\(url("gray.jpg"))"}
            """
        }
    }

    /// The `<img>` elements of a page: their attributes by name.
    static func pictures(_ page: String) -> [[String: String]] {
        page.components(separatedBy: "<img ").dropFirst().map { tag in
            let tag = String(tag.prefix { $0 != ">" })
            var attributes: [String: String] = [:]
            var rest = Substring(tag)
            while let equals = rest.range(of: "=\"") {
                let name = rest[..<equals.lowerBound].split(separator: " ").last.map(String.init) ?? ""
                let after = rest[equals.upperBound...]
                guard let close = after.firstIndex(of: "\"") else { break }
                attributes[name] = String(after[..<close])
                rest = after[after.index(after: close)...]
            }
            return attributes
        }
    }

    @Test func whatThePayloadSaysIsTextToThePage() async throws {
        let fixture = try Fixture()
        let hostile = #"http://127.0.0.1:1/x.jpg?"'><script>alert(4)</script>"#
        let payload = """
            {"aps": {"alert": {"title": "<script>alert(1)</script> & </style><style>body{display:none}</style>",
              "subtitle": "javascript:alert(2)", "body": "A \\"quoted\\" body</title><img src=x onerror=alert(3)>"},
              "mutable-content": 1},
             "image": "\(fixture.url("portrait-progressive.jpg"))", "media-url": \(JSONValue.quote(hostile))}
            """
        let (result, page) = await fixture.preview(payload)
        #expect(result.outcomes.count == 2)
        #expect(result.outcomes.contains { $0.attachment != nil }, "\(result.report())")
        // The only markup is the page's own: no script, no event handler, no inline style, one
        // style sheet, and every picture a data: URI.
        #expect(page.lowercased().components(separatedBy: "<script").count == 1)
        #expect(page.components(separatedBy: "<style>").count == 2)
        #expect(!page.contains("<img src=x"), "a tag from the payload")
        #expect(!page.contains(" style="))
        #expect(!page.contains("javascript:alert(2)<") || page.contains(">javascript:alert(2)<"))
        #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;/style&gt;&lt;style&gt;"))
        #expect(page.contains("A &quot;quoted&quot; body&lt;/title&gt;&lt;img src=x onerror=alert(3)&gt;"))
        #expect(page.contains("?&quot;&#39;&gt;&lt;script&gt;alert(4)&lt;/script&gt;"), "the URL is text")
        #expect(page.contains("payload &lt;1&gt;.json"))
        // The category's actions, as text.
        #expect(page.contains(">Open &lt;b&gt;now&lt;/b&gt;<"))
        let pictures = Self.pictures(page)
        #expect(!pictures.isEmpty)
        for picture in pictures { #expect(picture["src"]?.hasPrefix("data:image/") == true, "\(picture)") }
        // The policy names the page's own style sheet by its hash, and nothing else runs.
        let style = try #require(PreviewPage.styleHash(of: page))
        #expect(
            page.contains(
                "content=\"default-src 'none'; img-src data:; style-src 'sha256-\(style)'; base-uri 'none'; form-action 'none'\""
            ))
    }

    @Test func eachPlatformShowsThePictureMadeForIt() async throws {
        let fixture = try Fixture()
        let (result, page) = await fixture.preview(fixture.threePictures)
        func made(_ convention: String, _ target: TargetSpec.Target? = nil) -> String? {
            let outcome = result.outcomes.first { $0.url.hasSuffix(convention) }
            guard let target else { return outcome?.attachment?.id }
            return outcome?.targets.first { $0.target == target }?.id
        }
        let byPlatform = Dictionary(Self.pictures(page).map { ($0["data-platform"] ?? "", $0) }) { a, _ in a }
        // iOS draws its own field's picture (not the message's common one), collapsed and expanded.
        let ios = try #require(made("portrait-progressive.jpg"))
        #expect(byPlatform["ios-collapsed"]?["data-object"] == ios)
        #expect(byPlatform["ios-expanded"]?["data-object"] == ios)
        #expect(byPlatform["ios-placeholder"] != nil, "the placeholder beside it")
        // Android its own field's 2:1 picture, the web its own.
        #expect(byPlatform["android-expanded"]?["data-object"] == made("waterfall-rotated.jpg", .android))
        #expect(byPlatform["android-collapsed"]?["data-object"] == made("waterfall-rotated.jpg", .android))
        #expect(byPlatform["web-windows"]?["data-object"] == made("animated-chi.gif", .web))
        // Sizes from the platforms' geometry.
        #expect(byPlatform["ios-collapsed"]?["data-box"]?.hasSuffix(",40,40") == true)
        #expect(byPlatform["android-expanded"]?["data-box"]?.hasSuffix(",328,164") == true)
        #expect(byPlatform["web-windows"]?["data-box"]?.hasSuffix(",364,180") == true)
        // The portrait's collapsed square is the one on its subject the entry carries.
        let clip = try #require(
            result.outcomes.first { $0.url.hasSuffix("portrait-progressive.jpg") }?.attachment?
                .thumbnail.clippingRect)
        #expect(byPlatform["ios-collapsed"]?["data-crop"] == clip.map { String($0) }.joined(separator: ","))
        // Three pictures in one page a person can mail: under 300 KB.
        #expect(page.utf8.count < 300_000, "\(page.utf8.count) bytes")
    }

    @Test func aPayloadForOnePlatformSaysTheOthersGetNothing() async throws {
        let fixture = try Fixture()
        let payload = """
            {"aps": {"alert": "Just iOS", "mutable-content": 1}, "image": "\(fixture.url("clip.mp4"))"}
            """
        let (result, page) = await fixture.preview(payload)
        #expect(result.outcomes.first?.attachment?.kind.category == .video, "\(result.report())")
        #expect(page.contains("This payload sends nothing to Android."))
        #expect(page.contains("This payload sends nothing to web push."))
        // A video's frame, as iOS draws it (its poster time's).
        #expect(Self.pictures(page).contains { $0["data-platform"] == "ios-expanded" })
    }

    @Test func aBatchWritesEachItemsPageAndItsReportLinksThem() async throws {
        let fixture = try Fixture()
        let inputs = fixture.directory.path + "/payloads"
        try FileManager.default.createDirectory(atPath: inputs, withIntermediateDirectories: true)
        let payloads = [
            "one.json": fixture.threePictures, "two.json": fixture.everyReceiver,
            "three.json": #"{"aps": {"alert": "no picture", "mutable-content": 1}}"#,
        ]
        for (name, text) in payloads {
            try Data(text.utf8).write(to: URL(fileURLWithPath: inputs + "/" + name))
        }
        let pages = fixture.directory.path + "/previews"
        try FileManager.default.createDirectory(atPath: pages, withIntermediateDirectories: true)
        let manifest = fixture.directory.path + "/m.jsonl"
        let progress = try await BatchRunner(
            pipeline: fixture.pipeline, jobs: 2, previews: BatchPreviews(directory: pages)
        ).run(try BatchInput(path: inputs), manifest: try BatchManifest(path: manifest), output: nil)
        #expect(progress.done == 3)
        // One page per recorded item, named from its reference.
        let recorded = try records(manifest).map(\.reference)
        #expect(recorded.count == 3)
        for reference in recorded {
            let page = try String(
                contentsOfFile: pages + "/" + BatchPreviews.fileName(reference: reference), encoding: .utf8)
            #expect(page.contains("Notification preview"), "\(reference)")
        }
        let written = try FileManager.default.contentsOfDirectory(atPath: pages).filter { $0.hasSuffix(".html") }
        #expect(written.count == 3)
        // The report links each sample to its page.
        var report = BatchReport(title: inputs)
        report.previews = BatchPreviews.link(to: pages, from: fixture.directory.path)
        #expect(report.previews == "previews")
        let html = try await report.render(manifest: manifest, store: fixture.store, fetcher: nil)
        for reference in recorded where !reference.hasSuffix("three.json") {
            #expect(html.contains("href=\"previews/\(BatchPreviews.fileName(reference: reference))\""), "\(reference)")
        }
        #expect(BatchPreviews.link(to: "/a/b/previews", from: "/a/c") == "../b/previews")
    }

    // MARK: In a browser

    /// The screenshot's mean difference (0–255 per channel) from `expected` inside `box`, a
    /// border left out (the rounded corners).
    static func difference(_ shot: PixelImage, _ expected: PixelImage, box: [Int]) -> Double {
        let inset = max(3, min(box[2], box[3]) / 8)
        var total = 0
        var count = 0
        for y in inset..<(box[3] - inset) {
            for x in inset..<(box[2] - inset) {
                let s = shot.pixel(x: box[0] + x, y: box[1] + y)
                let e = expected.pixel(x: x, y: y)
                for c in 0..<3 { total += abs(Int(s[s.startIndex + c]) - Int(e[e.startIndex + c])) }
                count += 3
            }
        }
        return Double(total) / Double(max(1, count))
    }

    /// What a platform draws of `image`, made here without the product's code: the part `crop`
    /// names (`all`, `centre`, or x,y,w,h in 0…1), its centre at the box's shape, averaged down.
    static func expected(_ image: PixelImage, crop: String, width: Int, height: Int) -> PixelImage {
        var (x, y, w, h) = (0.0, 0.0, Double(image.width), Double(image.height))
        let parts = crop.split(separator: ",").compactMap { Double($0) }
        if parts.count == 4 {
            (x, y) = (parts[0] * Double(image.width), parts[1] * Double(image.height))
            (w, h) = (parts[2] * Double(image.width), parts[3] * Double(image.height))
        }
        let aspect = Double(width) / Double(height)
        if w / h > aspect {
            x += (w - h * aspect) / 2
            w = h * aspect
        } else {
            y += (h - w / aspect) / 2
            h = w / aspect
        }
        var out = [UInt8]()
        for oy in 0..<height {
            for ox in 0..<width {
                let x0 = Int(x + w * Double(ox) / Double(width))
                let x1 = max(x0 + 1, Int(x + w * Double(ox + 1) / Double(width)))
                let y0 = Int(y + h * Double(oy) / Double(height))
                let y1 = max(y0 + 1, Int(y + h * Double(oy + 1) / Double(height)))
                var sum = [0, 0, 0]
                for sy in y0..<min(y1, image.height) {
                    for sx in x0..<min(x1, image.width) {
                        let p = image.pixel(x: sx, y: sy)
                        for c in 0..<3 { sum[c] += Int(p[p.startIndex + (image.channels >= 3 ? c : 0)]) }
                    }
                }
                let n = max(1, (min(y1, image.height) - y0) * (min(x1, image.width) - x0))
                out += sum.map { UInt8($0 / n) }
            }
        }
        return PixelImage(width: width, height: height, channels: 3, pixels: out)
    }

    /// Headless Chromium's screenshot of `page` at the page's stage size, and what it logged.
    static func draw(_ page: String, in directory: TemporaryDirectory, name: String) throws -> (PixelImage, String) {
        let file = directory.path + "/\(name).html"
        let png = directory.path + "/\(name).png"
        try Data(page.utf8).write(to: URL(fileURLWithPath: file))
        let stage = try #require(page.range(of: "stage=")).upperBound
        let height = Int(page[stage...].prefix { $0.isNumber }) ?? 1600
        let result = try runChild(
            chromium!,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--user-data-dir=\(directory.path)/chromium-profile", "--enable-logging=stderr", "--v=0",
                "--screenshot=\(png)", "--window-size=\(PreviewPage.width),\(height)", "--force-device-scale-factor=1",
                "file://\(file)",
            ], outputs: .merged)
        #expect(result.status == 0, "\(result.text.suffix(2000))")
        var spec = RenditionSpec()
        spec.maxSide = 8192
        let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
        return (try ImageProcessor.decode(MediaBytes(Array(bytes)), spec: spec).image, result.text)
    }

    @Test(.enabled(if: chromium != nil, "Chromium is not installed here: the preview is not drawn"))
    func aBrowserDrawsEachPictureWhereThePageSays() async throws {
        let fixture = try Fixture()
        for (name, payload) in [("fcm", fixture.threePictures), ("onesignal", fixture.everyReceiver)] {
            let (_, page) = await fixture.preview(payload)
            let (shot, log) = try Self.draw(page, in: fixture.directory, name: name)
            // No console message: no policy violation, no error.
            let console = log.split(separator: "\n").filter { $0.contains(":CONSOLE") }
            #expect(console.isEmpty, "\(name): \(console)")
            var platforms: [String] = []
            for picture in Self.pictures(page) {
                let platform = picture["data-platform"] ?? ""
                guard let id = picture["data-object"], let crop = picture["data-crop"],
                    let object = try? store(fixture, id)
                else { continue }
                let box = (picture["data-box"] ?? "").split(separator: ",").compactMap { Int($0) }
                try #require(box.count == 4 && box[0] + box[2] <= shot.width && box[1] + box[3] <= shot.height)
                let expected = Self.expected(object, crop: crop, width: box[2], height: box[3])
                let off = Self.difference(shot, expected, box: box)
                #expect(off < 10, "\(name) \(platform): the screenshot differs from the rendition by \(off)")
                // The same place drawn with another picture is far off: the check can tell.
                let other = Self.expected(object, crop: "0,0,0.3,0.3", width: box[2], height: box[3])
                #expect(Self.difference(shot, other, box: box) > off, "\(name) \(platform)")
                platforms.append(platform)
            }
            let wanted = ["ios-collapsed", "ios-expanded", "android-collapsed", "android-expanded", "web-windows"]
            #expect(Set(wanted).isSubset(of: Set(platforms)), "\(name): \(platforms)")
            if name == "onesignal" {
                #expect(Set(["web-windows-icon", "web-macos-icon"]).isSubset(of: Set(platforms)), "\(platforms)")
            }
        }
        // A page that breaks its policy is heard: the check above can fail.
        let (_, page) = await fixture.preview(fixture.threePictures)
        let broken = page.replacingOccurrences(
            of: "<main id=\"stage\">", with: "<main id=\"stage\"><p style=\"color:red\">x</p>")
        let (_, log) = try Self.draw(broken, in: fixture.directory, name: "broken")
        #expect(log.contains(":CONSOLE"), "an inline style the policy refuses is logged")
    }

    /// A stored object decoded upright, as the platforms are given it.
    func store(_ fixture: Fixture, _ id: String) throws -> PixelImage {
        let key = try #require(AttachmentID(hex: id))
        let object = try #require(try fixture.store.attachment(key))
        let bytes = try fixture.store.contents(of: object)
        return try DisplayCopy.picture(MediaBytes(Array(bytes)))
    }
}
