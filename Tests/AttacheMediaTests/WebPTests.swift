import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// WebP inputs (made by libwebp's own tools: `Tests/Fixtures/webp/make.sh`) converted to what a
/// device takes: JPEG, or PNG where there is alpha; animations and bombs refused with types.
@Suite("WebP")
struct WebPTests {
    static let directory = Fixtures.root + "/webp"

    static func file(_ name: String) throws -> [UInt8] {
        try #require(FileManager.default.contents(atPath: directory + "/" + name)).map { $0 }
    }

    @Test("still WebP files become JPEG, or PNG with alpha, fitting the size asked")
    func stills() throws {
        let cases: [(String, MediaKind, Int, Int)] = [
            ("lossy.webp", .jpeg, 200, 134), ("lossless-opaque.webp", .jpeg, 64, 48),
            ("lossless-alpha.webp", .png, 120, 80), ("lossy-alpha.webp", .png, 120, 80),
        ]
        for (name, kind, width, height) in cases {
            let rendition = try ImageProcessor.render(MediaBytes(Self.file(name)), spec: RenditionSpec(maxSide: 200))
            #expect(rendition.kind == kind && rendition.width == width && rendition.height == height, "\(name)")
            #expect(rendition.source.kind == .webp && !rendition.keptSource)
            let again = try ImageProcessor.inspect(MediaBytes(rendition.data))
            #expect(again.kind == kind && again.width == width && again.height == height)
        }
    }

    @Test("pixels come out as stored: a flat colour exactly, alpha kept")
    func pixels() throws {
        let flat = try ImageProcessor.decode(MediaBytes(Self.file("lossless-opaque.webp"))).image
        #expect(flat.channels == 3 && Array(flat.pixels.prefix(3)) == [30, 160, 90])
        let alpha = try ImageProcessor.decode(MediaBytes(Self.file("lossless-alpha.webp"))).image
        #expect(alpha.channels == 4 && alpha.width == 120)
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(alpha.pixels[((y * 120 + x) * 4)..<((y * 120 + x) * 4 + 4)]) }
        #expect(pixel(10, 10) == [255, 40, 40, 255])
        #expect(pixel(100, 10)[3] == 128 && pixel(100, 10)[2] == 255)
        #expect(pixel(100, 70)[3] == 0)
    }

    @Test("an animation becomes an animated GIF with every frame and its timing and loop")
    func animations() throws {
        let rendition = try ImageProcessor.render(
            MediaBytes(Self.file("moving-alpha.webp")), spec: RenditionSpec(maxSide: 80))
        #expect(rendition.kind == .gif && rendition.width == 80 && rendition.height == 60)
        #expect(rendition.frames == 12 && rendition.source.frames == 12 && rendition.source.kind == .webp)
        let gif = try ImageProcessor.inspect(MediaBytes(rendition.data))
        // 12 frames of 70 ms: 84 cs; played three times = repeated twice.
        #expect(gif.kind == .gif && gif.frames == 12 && gif.duration == 84 && gif.loopCount == 2, "\(gif)")
        // Transparent where the canvas is clear, red where the square is.
        let first = try ImageProcessor.decode(MediaBytes(rendition.data)).image
        #expect(first.channels == 4 && first.pixels[3] == 0)
        let at = (30 * 80 + 10) * 4
        #expect(first.pixels[at] > 200 && first.pixels[at + 1] < 60 && first.pixels[at + 3] == 255)
        // Over the frame budget: frames dropped evenly, the whole time kept.
        var spec = RenditionSpec(maxSide: 80)
        spec.gifMaxFrames = 4
        let fewer = try ImageProcessor.render(MediaBytes(Self.file("moving-alpha.webp")), spec: spec)
        let fewerInfo = try ImageProcessor.inspect(MediaBytes(fewer.data))
        #expect(fewer.frames == 4 && fewerInfo.duration == 84 && !fewer.actions.isEmpty)
        // Past every byte budget: a still of the first frame (PNG: it has transparency).
        spec.gifMaxBytes = 10
        let still = try ImageProcessor.render(MediaBytes(Self.file("moving-alpha.webp")), spec: spec)
        #expect(still.kind == .png && still.frames == 1 && still.actions.last?.contains("still") == true)
        let asked = try ImageProcessor.renderStill(MediaBytes(Self.file("moving-alpha.webp")), spec: spec)
        #expect(asked.kind == .png && asked.width == 80 && asked.height == 60)
        let probed = try ImageProcessor.probe(MediaBytes(Self.file("moving-alpha.webp")))
        #expect(probed.frames == 12 && probed.width == 160)
    }

    @Test("an animation, a bomb declared in the header and cut files get typed errors")
    func refusals() throws {
        func code(_ bytes: [UInt8]) -> AttacheError.Code? {
            do {
                _ = try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: 200))
                return nil
            } catch { return error.code }
        }
        #expect(code(try Self.file("animated.webp")) == nil)
        // An animation's canvas said to be 16384 x 16384: refused from the VP8X chunk.
        var canvas = try Self.file("moving-alpha.webp")
        #expect(Array(canvas[12..<16]) == Array("VP8X".utf8))
        for i in 0..<3 { canvas[24 + i] = i < 2 ? 0xFF : 0x3F }
        for i in 0..<3 { canvas[27 + i] = i < 2 ? 0xFF : 0x3F }
        let refusedCanvas = code(canvas)
        #expect(
            refusedCanvas == .tooManyPixels || refusedCanvas == .corruptData, "\(String(describing: refusedCanvas))")
        let moving = try Self.file("moving-alpha.webp")
        for cut in stride(from: 16, to: moving.count, by: 23) {
            let cutCode = code(Array(moving.prefix(cut)))
            #expect(cutCode == .truncated, "animation cut at \(cut): \(String(describing: cutCode))")
        }
        // A lossless header claiming 16384 x 16384 pixels, over a few bytes: refused from the
        // header, before anything that size is allocated.
        var bomb = try Self.file("lossless-opaque.webp")
        #expect(Array(bomb[12..<16]) == Array("VP8L".utf8) && bomb[20] == 0x2F)
        let bits = UInt32(16383) | UInt32(16383) << 14 | UInt32(bomb[24] >> 4 & 1) << 28
        for i in 0..<4 { bomb[21 + i] = UInt8(truncatingIfNeeded: bits >> (8 * UInt32(i))) }
        let refused = code(bomb)
        #expect(refused == .tooManyPixels || refused == .dimensionsTooLarge, "\(String(describing: refused))")
        // Every cut of the lossy photo past the RIFF header: truncated.
        let lossy = try Self.file("lossy.webp")
        for cut in stride(from: 16, to: lossy.count, by: 97) {
            let cutCode = code(Array(lossy.prefix(cut)))
            #expect(cutCode == .truncated, "cut at \(cut): \(String(describing: cutCode))")
        }
    }

    @Test("the sniffer takes RIFF WEBP as webp")
    func sniffed() throws {
        #expect(Sniffer.sniff(try Self.file("lossy.webp").prefix(64)) == .accepted(.webp))
    }
}
