import AttacheBase
import AttacheTestSupport
import Crypto
import Foundation
import Testing

@testable import AttacheMedia

extension Corpus {
    static let gifs: [Row] = rows.filter { $0.format == "GIF" || $0.file.hasSuffix(".gif") }
}

func gifFixtureHashes(_ file: String) -> [String]? {
    let name = (file as NSString).lastPathComponent
    guard let text = try? String(contentsOfFile: Fixtures.root + "/gif-frames/\(name).txt", encoding: .utf8) else {
        return nil
    }
    return text.split(separator: "\n").map(String.init)
}

func frameHash(_ image: PixelImage) -> String {
    var rgba = image.pixels
    for i in stride(from: 0, to: rgba.count, by: 4) where rgba[i + 3] == 0 {
        rgba[i] = 0
        rgba[i + 1] = 0
        rgba[i + 2] = 0
    }
    return SHA256.hash(data: rgba).map { String(format: "%02x", $0) }.joined()
}

@Suite struct GIFTests {
    @Test func manifestHasGIFRows() {
        #expect(Corpus.gifs.count >= 50)
    }

    @Test(arguments: Corpus.gifs)
    func row(_ row: Corpus.Row) throws {
        let bytes = try MediaBytes(contentsOfFile: row.path)
        let either = row.note.hasPrefix("either")
        switch Result(catching: { () throws(AttacheError) in try ImageProcessor.inspect(bytes) }) {
        case .success(let info):
            #expect(row.expectOK, "accepted a file the manifest rejects")
            #expect(info.width == row.width && info.height == row.height && info.frames == row.frames)
            #expect(info.duration ?? 0 > 0)
        case .failure(let error):
            #expect(!row.expectOK || either, "refused a file the manifest accepts: \(error)")
            #expect([.corruptData, .truncated, .dimensionsTooLarge].contains(error.code), "\(error)")
        }
    }

    /// Where Attache composites as browsers do and Pillow does not; only the frame count is
    /// compared for these.
    static let pillowDiffers = [
        "pillow__dispose_bgnd.gif": "Pillow fills disposal-2 areas with the background colour; browsers clear them",
        "pillow__dispose_bgnd_rgba.gif":
            "Pillow fills disposal-2 areas with the background colour; browsers clear them",
        "pillow__test_extents.gif": "Pillow grows the canvas for a frame outside the screen; browsers clip it",
    ]

    /// Our composites equal an independent decoder's (Pillow), frame by frame.
    @Test(arguments: Corpus.gifs.filter(\.expectOK))
    func compositesMatchAnIndependentDecoder(_ row: Corpus.Row) throws {
        guard let expected = gifFixtureHashes(row.file) else { return }
        guard let frames = try? ImageProcessor.compositeGIF(MediaBytes(contentsOfFile: row.path)) else {
            #expect(row.note.hasPrefix("either"), "\(row.file) failed to decode")
            return
        }
        if Self.pillowDiffers[(row.file as NSString).lastPathComponent] != nil {
            #expect(frames.count == expected.count)
        } else {
            #expect(frames.map(frameHash) == expected, "\(row.file)")
        }
    }

    /// A GIF whose frames share one palette is composited as indices; every frame must equal
    /// the RGBA compositor's.
    @Test func indexedScreenEqualsRGBAScreen() throws {
        var indexed = 0
        for row in Corpus.gifs.filter(\.expectOK) {
            let bytes = try MediaBytes(contentsOfFile: row.path)
            guard let info = try? ImageProcessor.scanGIF(bytes), let blank = info.screenBlank else { continue }
            let decoder = try GIFDecoder(bytes: bytes, limits: .default)
            var rgba = GIFCompositor(width: info.width, height: info.height)
            var indices = GIFCompositor(
                width: info.width, height: info.height, palette: info.globalPalette, blank: blank)
            var frame = 0
            while let next = try? decoder.next() {
                rgba.draw(next)
                var rows = 0
                indices.draw(next) { _ in rows += 1 }
                #expect(rows == info.height)
                let a = PixelImage(width: info.width, height: info.height, channels: 4, pixels: rgba.canvas)
                let b = PixelImage(width: info.width, height: info.height, channels: 4, pixels: indices.rgba)
                #expect(frameHash(a) == frameHash(b), "\(row.file) frame \(frame)")
                frame += 1
            }
            indexed += 1
        }
        #expect(indexed >= 20, "only \(indexed) corpus GIFs use one palette")
    }

    /// Re-encoded at the same size, every frame a viewer shows is the source's (identical
    /// consecutive frames merged), and the total duration is kept.
    @Test(arguments: [
        "giflib-pics/fire.gif", "gif-edge-cases/pillow__dispose_prev.gif",
        "gif-edge-cases/pillow__dispose_none.gif", "gif-edge-cases/pillow__missing_background.gif",
        "gif-edge-cases/pillow__transparent_dispose.gif", "gif-edge-cases/image-gif__moon_impact.gif",
        "gif-edge-cases/pillow__duplicate_frame.gif", "giflib-pics/welcome2.gif",
    ])
    func roundTripKeepsEveryShownFrame(_ file: String) throws {
        let source = try MediaBytes(contentsOfFile: Corpus.root + "/" + file)
        let info = try ImageProcessor.scanGIF(source)
        let rendition = try ImageProcessor.render(source, spec: RenditionSpec(maxSide: 4096))
        #expect(rendition.kind == .gif, "\(rendition.actions)")
        #expect(rendition.width == info.width && rendition.height == info.height)
        let output = MediaBytes(rendition.data)
        let again = try ImageProcessor.scanGIF(output)
        #expect(again.duration == info.duration && again.loopCount == info.loopCount)
        #expect(again.frames == rendition.frames && rendition.frames <= info.frames)
        func distinct(_ frames: [PixelImage]) -> [String] {
            frames.map(frameHash).reduce(into: []) { if $0.last != $1 { $0.append($1) } }
        }
        let expected = distinct(try ImageProcessor.compositeGIF(source))
        #expect(distinct(try ImageProcessor.compositeGIF(output)) == expected, "\(file)")
    }

    @Test func downscaledAnimationKeepsFramesDurationAndTransparency() throws {
        let source = try MediaBytes(contentsOfFile: Corpus.root + "/gif-edge-cases/pillow__chi.gif")
        let info = try ImageProcessor.scanGIF(source)
        let rendition = try ImageProcessor.render(source, spec: RenditionSpec(maxSide: 160))
        #expect(rendition.kind == .gif && rendition.frames > 1, "\(rendition.actions)")
        #expect(rendition.width == 160 && rendition.height == 120)
        let output = MediaBytes(rendition.data)
        let again = try ImageProcessor.scanGIF(output)
        #expect(again.duration == info.duration && again.frames == rendition.frames)
        #expect((rendition.posterFrame ?? .max) < rendition.frames)

        // A transparent source pixel stays transparent.
        let transparent = try MediaBytes(contentsOfFile: Corpus.root + "/gif-edge-cases/pillow__transparent.gif")
        let sourceFrame = try #require(try ImageProcessor.compositeGIF(transparent).first)
        #expect(sourceFrame.pixels[3] == 0, "the corner is transparent in the source")
        let small = try ImageProcessor.render(transparent, spec: RenditionSpec(maxSide: 100))
        let shown = try #require(try ImageProcessor.compositeGIF(MediaBytes(small.data)).first)
        #expect(shown.pixels[3] == 0, "and in the output")
        #expect(shown.pixels.enumerated().contains { $0.offset % 4 == 3 && $0.element == 255 })
    }

    @Test func ditheringIsOptionalAndKeepsTheAnimation() throws {
        let source = try MediaBytes(contentsOfFile: Corpus.root + "/gif-edge-cases/image-gif__moon_impact.gif")
        var spec = RenditionSpec(maxSide: 80)
        let plain = try ImageProcessor.render(source, spec: spec)
        spec.gifDither = true
        let dithered = try ImageProcessor.render(source, spec: spec)
        #expect(dithered.data != plain.data, "dithering changes the pixels")
        let info = try ImageProcessor.scanGIF(source)
        let again = try ImageProcessor.scanGIF(MediaBytes(dithered.data))
        #expect(again.duration == info.duration && again.frames == dithered.frames && again.loopCount == info.loopCount)
        #expect(dithered.width == plain.width && dithered.height == plain.height)
    }

    @Test func budgetsDropFramesThenShrink() throws {
        let source = try MediaBytes(contentsOfFile: Corpus.root + "/gif-edge-cases/pillow__iss634.gif")
        let info = try ImageProcessor.scanGIF(source)
        var spec = RenditionSpec(maxSide: 245)
        spec.gifMaxFrames = 10
        let fewer = try ImageProcessor.render(source, spec: spec)
        #expect(fewer.kind == .gif && fewer.frames <= 10 && fewer.actions.first?.contains("dropped") == true)
        #expect(try ImageProcessor.scanGIF(MediaBytes(fewer.data)).duration == info.duration, "duration kept")

        spec = RenditionSpec(maxSide: 245)
        spec.gifMaxBytes = 20_000
        let small = try ImageProcessor.render(source, spec: spec)
        #expect(small.kind == .gif && small.data.count <= 20_000, "\(small.data.count) bytes")
        #expect(!small.actions.isEmpty)
        #expect(try ImageProcessor.scanGIF(MediaBytes(small.data)).duration == info.duration)
    }

    @Test func limitsTripBeforeDecoding() throws {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Corpus.root + "/gif-edge-cases/pillow__chi.gif")))
        var frames = DecodeLimits()
        frames.maxFrames = 5
        let clock = threadCPUTime()
        let tooMany = failure { try ImageProcessor.scanGIF(MediaBytes(bytes), limits: frames) }
        #expect(tooMany?.code == .tooManyFrames && tooMany?.limit?.rawValue == "max_frames")
        var total = DecodeLimits()
        total.maxTotalFramePixels = 100_000
        #expect(failure { try ImageProcessor.scanGIF(MediaBytes(bytes), limits: total) }?.code == .tooManyPixels)
        // A logical screen of 65535 x 65535 is refused from the header.
        bytes[6] = 0xFF
        bytes[7] = 0xFF
        bytes[8] = 0xFF
        bytes[9] = 0xFF
        let bomb = failure { try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec()) }
        #expect(bomb?.code == .tooManyPixels || bomb?.code == .dimensionsTooLarge)
        #expect(threadCPUTime() - clock < .milliseconds(500), "CPU time spent refusing them")
    }

    @Test(arguments: Corpus.gifs.filter(\.expectOK).map(\.file))
    func truncationsAndFlippedBytesNeverCrash(_ file: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Corpus.root + "/" + file)))
        var cuts = [6, 13, 20, bytes.count / 3, bytes.count / 2, bytes.count - 2, bytes.count - 1].filter {
            $0 > 0 && $0 < bytes.count
        }
        cuts = Array(Set(cuts)).sorted()
        for cut in cuts {
            let error = failure {
                try ImageProcessor.render(MediaBytes(Array(bytes.prefix(cut))), spec: RenditionSpec(maxSide: 32))
            }
            if let error {
                #expect([.truncated, .corruptData, .dimensionsTooLarge, .tooManyPixels].contains(error.code))
                #expect(error.message.hasPrefix("gif: ") && !error.message.hasPrefix("gif: gif:"), "\(error.message)")
            }
        }
        var partial = RenditionSpec(maxSide: 32)
        partial.gifAllowPartial = true
        _ = try? ImageProcessor.render(MediaBytes(Array(bytes.prefix(bytes.count * 2 / 3))), spec: partial)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<12 {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            var flipped = bytes
            flipped[Int(state >> 33) % bytes.count] ^= UInt8(truncatingIfNeeded: state >> 20) | 1
            _ = try? ImageProcessor.render(MediaBytes(flipped), spec: RenditionSpec(maxSide: 32))
        }
    }
}
