import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// Debian's Chromium, when installed (the test command installs it).
let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// The report of a batch with hostile items, checked as text and as a browser draws it.
@Suite(.enabled(if: inIsolatedChild)) struct BatchReportTests {
    /// A batch with hostile items and its report.
    final class Fixture {
        let server: TestHTTPServer
        let directory: TemporaryDirectory
        let manifest: String
        var page = ""

        init() throws {
            server = try batchMediaServer()
            directory = try TemporaryDirectory()
            manifest = directory.path + "/m.jsonl"
        }

        func run() async throws {
            let names = [
                "gray.jpg", "missing.jpg", "palette-transparent.png", "text.jpg", "animated-chi.gif", "tone.mp3",
                "portrait-progressive.jpg", "missing.jpg?again", "<b>.jpg", "clip.mp4",
            ]
            let list = directory.path + "/campaign <7>.txt"
            let text = names.map { server.url("/" + $0) }.joined(separator: "\n")
            try Data(text.utf8).write(to: URL(fileURLWithPath: list))
            let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
            let fetcher = Fetcher(policy: loopbackPolicy())
            var configuration = PipelineConfiguration()
            configuration.deadline = .seconds(120)  // a debug build beside other suites is slow
            let pipeline = Pipeline(configuration: configuration, fetcher: fetcher, store: store)
            _ = try await BatchRunner(pipeline: pipeline, jobs: 4).run(
                try BatchInput(path: list), manifest: try BatchManifest(path: manifest), output: nil)
            page = try await BatchReport(title: list).render(manifest: manifest, store: store, fetcher: fetcher)
        }
    }

    /// The number shown on a totals card.
    func card(_ page: String, _ label: String) -> String? {
        guard let end = page.range(of: "</div><div class=\"label\">\(label)</div>") else { return nil }
        let before = page[..<end.lowerBound]
        guard let start = before.range(of: "<div class=\"value\">", options: .backwards) else { return nil }
        return String(before[start.upperBound...])
    }

    @Test func theNumbersAreTheManifestsAndThePageNeedsNothingElse() async throws {
        let fixture = try Fixture()
        try await fixture.run()
        let (page, manifest) = (fixture.page, fixture.manifest)
        let summary = try BatchSummary(manifest: manifest, run: nil)
        let lines = try records(manifest)
        #expect(card(page, "items") == "\(lines.count)")
        #expect(card(page, "attached") == "\(summary.outcomes["attached"] ?? 0)")
        #expect(card(page, "failed") == "\((summary.outcomes["failed"] ?? 0) + (summary.outcomes["unreadable"] ?? 0))")
        #expect(card(page, "fetched") == BatchSummary.bytes(lines.reduce(0) { $0 + $1.bytesIn }))
        #expect(card(page, "stored") == BatchSummary.bytes(lines.reduce(0) { $0 + $1.bytesOut }))
        // Each error code with its count and its inputs.
        for (code, count) in summary.codes {
            #expect(page.contains("<code>\(code)</code> <span class=\"count\">\(count)</span>"), "\(code)")
        }
        #expect(page.contains("missing.jpg?again"))
        // Input text is escaped, never markup.
        #expect(page.contains("&lt;b&gt;.jpg") && !page.contains("<b>.jpg"))
        #expect(page.contains("campaign &lt;7&gt;.txt"))
        // Self-contained: every picture inline, nothing fetched, no script.
        let sources = page.components(separatedBy: "src=\"").dropFirst()
        let images = lines.flatMap { line -> [String] in
            guard case .array(let entries)? = line.value["items"] else { return [] }
            return entries.compactMap { $0["id"] == nil ? nil : $0["source_type"]?.stringValue }
        }.filter { ["jpeg", "png", "gif", "mp4"].contains($0) }
        // The video is shown by its poster: before (its first frame) and after (the stored poster).
        #expect(images.count >= 5 && images.contains("mp4"))
        #expect(page.contains("MP4 "), "the video's sample is captioned")
        #expect(sources.count == 2 * images.count, "before and after for each sampled image")
        for source in sources { #expect(source.hasPrefix("data:image/")) }
        for needle in ["<script", "<link", "http-equiv=\"refresh\"", "url(http", "@import", "href=\"http"] {
            #expect(!page.contains(needle), "\(needle)")
        }
    }

    /// An FCM message in a campaign: the report shows its Android and web pictures beside the
    /// before and after.
    @Test func eachReceiversPictureIsShownBesideTheRendition() async throws {
        let server = try batchMediaServer()
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path + "/in", withIntermediateDirectories: true)
        let body = """
            {"message":{"token":"t","notification":{"image":"\(server.url("/portrait-progressive.jpg"))"},\
            "webpush":{"notification":{"image":"\(server.url("/portrait-progressive.jpg"))"}}}}
            """
        try Data(body.utf8).write(to: URL(fileURLWithPath: directory.path + "/in/fcm.json"))
        let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
        let fetcher = Fetcher(policy: loopbackPolicy())
        var configuration = PipelineConfiguration()
        configuration.deadline = .seconds(120)
        let pipeline = Pipeline(configuration: configuration, fetcher: fetcher, store: store)
        let manifest = directory.path + "/m.jsonl"
        _ = try await BatchRunner(pipeline: pipeline, jobs: 1).run(
            try BatchInput(path: directory.path + "/in"), manifest: try BatchManifest(path: manifest), output: nil)
        let page = try await BatchReport(title: "fcm").render(manifest: manifest, store: store, fetcher: fetcher)
        // Cut from the decode at the size they need (the 1200×1800 portrait's full 1024 px), not
        // from the 683×1024 rendition.
        #expect(page.contains("android 1024×512"), "\(page.suffix(3000))")
        #expect(page.contains("web 1024×512"))
        let sources = page.components(separatedBy: "src=\"data:image/").count - 1
        #expect(sources == 4, "before, after, android and web")
    }

    /// Renders `html` in headless Chromium at `width` CSS pixels: the screenshot's pixels.
    func screenshot(_ html: String, width: Int, in directory: TemporaryDirectory) throws -> PixelImage {
        let file = directory.path + "/page-\(width).html"
        let png = directory.path + "/shot-\(width).png"
        try Data(html.utf8).write(to: URL(fileURLWithPath: file))
        _ = try runChromium(
            directory,
            [
                "--screenshot=\(png)", "--window-size=\(width),1600", "--force-device-scale-factor=1", "file://\(file)",
            ])
        var spec = RenditionSpec()
        spec.maxSide = 4096
        let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
        return try ImageProcessor.decode(MediaBytes(Array(bytes)), spec: spec).image
    }

    func runChromium(_ directory: TemporaryDirectory, _ arguments: [String]) throws -> String {
        let result = try runChild(
            chromium!,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--user-data-dir=\(directory.path)/chromium-profile",
            ] + arguments)
        #expect(result.status == 0, "\(result.errorText.suffix(2000))")
        return result.text
    }

    /// Pixels within a small distance of `rgb`.
    func count(_ image: PixelImage, _ rgb: (Int, Int, Int)) -> Int {
        var found = 0
        let c = image.channels
        for index in stride(from: 0, to: image.pixels.count, by: c) {
            let p = image.pixels
            if abs(Int(p[index]) - rgb.0) + abs(Int(p[index + 1]) - rgb.1) + abs(Int(p[index + 2]) - rgb.2) < 12 {
                found += 1
            }
        }
        return found
    }

    @Test(.enabled(if: chromium != nil, "Chromium is not installed here: the report is not drawn"))
    func aBrowserDrawsEveryRegionAtDesktopAndPhoneWidths() async throws {
        let fixture = try Fixture()
        try await fixture.run()
        // The stage bars are drawn against the longest stage, which depends on how busy the
        // machine was (a fetch or a store waits longer beside other work): that one's bar is
        // always the whole width.
        let stages = try BatchSummary(manifest: fixture.manifest, run: nil).stages
        let longest = [
            ("fetch", stages.fetch, (0x4C, 0x78, 0xA8)), ("validate", stages.validate, (0x72, 0xB7, 0xB2)),
            ("transform", stages.transform, (0xE4, 0x57, 0x56)), ("store", stages.store, (0x54, 0xA2, 0x4B)),
        ].max { $0.1 < $1.1 }!
        #expect(fixture.page.contains("class=\"stage-transform\""), "every stage has its bar")
        for width in [1280, 390] {
            let image = try screenshot(fixture.page, width: width, in: fixture.directory)
            #expect(image.width == width)
            let background = count(image, (0xF6, 0xF7, 0xF9)) + count(image, (0xFF, 0xFF, 0xFF))
            #expect(background < image.width * image.height * 9 / 10, "\(width): the page is not blank")
            // Each region's own colour: the header, the bars before and after, the transform
            // stage, the error-code badges.
            #expect(count(image, (0x1D, 0x23, 0x30)) > width * 40, "\(width): header")
            #expect(count(image, (0x4C, 0x78, 0xA8)) > 400, "\(width): bytes before")
            #expect(count(image, (0xF5, 0x85, 0x18)) > 200, "\(width): bytes after")
            #expect(count(image, longest.2) > 100, "\(width): stage bars (\(longest.0), the longest)")
            #expect(count(image, (0xFD, 0xEC, 0xEA)) > 100, "\(width): failure codes")
        }
    }

    @Test(.enabled(if: chromium != nil, "Chromium is not installed here: the layout is not measured"))
    func noTableOrRegionIsWiderThanThePhoneOrDesktopWindow() async throws {
        let fixture = try Fixture()
        try await fixture.run()
        let directory = fixture.directory
        // A copy that measures itself once drawn (the report itself runs no script).
        // Headless Chromium lays out no narrower than 500 px, so the page is given the phone's
        // width itself (the report has no media queries: the same layout a 390 px screen gets).
        func probe(_ width: Int) -> String {
            """
            <style>html { width: \(width)px; }</style><div id="measure"></div><script>
            const limit = document.documentElement.getBoundingClientRect().right + 0.5;
            const wide = [...document.querySelectorAll('table, section, .chart, figure, header')]
              .filter(e => e.getBoundingClientRect().right > limit || e.scrollWidth > e.clientWidth + 1)
              .map(e => e.tagName + '#' + (e.id || e.className));
            document.getElementById('measure').textContent =
              'html=' + Math.round(document.documentElement.getBoundingClientRect().width) +
              ' wide=' + wide.join(',') + ' tables=' + document.querySelectorAll('table').length;
            </script>
            """
        }
        let page = fixture.page.replacingOccurrences(
            of:
                #"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">"#,
            with: "")
        for width in [1280, 390] {
            let file = directory.path + "/probe-\(width).html"
            let html = page.replacingOccurrences(of: "</main></body>", with: "</main>\(probe(width))</body>")
            try Data(html.utf8).write(to: URL(fileURLWithPath: file))
            let dom = try runChromium(directory, ["--dump-dom", "--window-size=\(width),1600", "file://\(file)"])
            let start = try #require(dom.range(of: "<div id=\"measure\">"))
            let measured = String(dom[start.upperBound...].prefix { $0 != "<" })
            #expect(measured.hasPrefix("html=\(width) wide= tables="), "\(width): \(measured)")
            #expect(!measured.hasSuffix("tables=0"), "\(width): the failures are tables")
        }
    }
}
