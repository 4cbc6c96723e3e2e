import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// JPEG XL inputs (made by cjxl: `Tests/Fixtures/jxl/make.sh`) decoded by libjxl, rows streamed
/// into the resampler, and converted to JPEG, or PNG where there is alpha.
@Suite("JPEG XL")
struct JXLTests {
    static let directory = Fixtures.root + "/jxl"

    static func file(_ name: String) throws -> [UInt8] {
        try #require(FileManager.default.contents(atPath: directory + "/" + name)).map { $0 }
    }

    static func code(_ bytes: [UInt8]) -> AttacheError.Code? {
        do {
            _ = try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: 200))
            return nil
        } catch { return error.code }
    }

    @Test(
        "every still becomes a JPEG, or a PNG with alpha, and an animation a GIF, of the size asked",
        arguments: [
            ("photo.jxl", MediaKind.jpeg, 200, 134), ("turned.jxl", .jpeg, 200, 134), ("16bit.jxl", .jpeg, 200, 134),
            ("alpha.jxl", .png, 120, 80), ("DisplayP3-lossless.jxl", .jpeg, 32, 32),
            ("DisplayP3-lossy.jxl", .jpeg, 32, 32), ("animated.jxl", .gif, 64, 48),
        ])
    func converted(name: String, output: MediaKind, width: Int, height: Int) throws {
        let bytes = try Self.file(name)
        #expect(Sniffer.sniff(bytes.prefix(Sniffer.prefixLength)) == .accepted(.jxl))
        let rendition = try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: 200))
        #expect(rendition.kind == output && rendition.width == width && rendition.height == height, "\(name)")
        #expect(rendition.source.kind == .jxl && !rendition.keptSource)
    }

    @Test("an animation becomes an animated GIF: every frame, its colour, its timing and its loop")
    func animation() throws {
        // Two 64x48 frames of 100 ms, green then red, looping forever (make.sh).
        let bytes = MediaBytes(try Self.file("animated.jxl"))
        let probed = try ImageProcessor.probe(bytes)
        #expect(probed.kind == .jxl && probed.frames == 2 && probed.duration == 20 && probed.loopCount == 0)
        let rendition = try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: 200))
        #expect(rendition.kind == .gif && rendition.frames == 2)
        let out = try ImageProcessor.scanGIF(MediaBytes(rendition.data))
        #expect(out.frames == 2 && out.duration == 20 && out.loopCount == 0, "\(out)")
        let frames = try ImageProcessor.compositeGIF(MediaBytes(rendition.data))
        let centre = (24 * 64 + 32) * 4
        for (frame, expected) in zip(frames, [[30, 160, 90], [200, 60, 90]]) {
            let pixel = frame.pixels[centre..<centre + 3].map(Int.init)
            #expect(zip(pixel, expected).allSatisfy { abs($0 - $1) <= 2 }, "\(pixel) against \(expected)")
        }
        // As video (what an animation the budgets clip becomes): every frame, the whole time.
        if MediaEncoder.isAvailable {
            let video = try MediaEncoder.video(
                fromAnimation: bytes, kind: .jxl, spec: RenditionSpec(maxSide: 200), limits: .default, cap: 50_000_000)
            #expect(video.kind == .mp4 && video.frames == 2 && video.width == 64 && video.height == 48)
        }
        // A frame limit below its count is refused from the frame headers.
        var limits = DecodeLimits()
        limits.maxFrames = 1
        let refused = failure { try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: 200), limits: limits) }
        #expect(refused?.code == .tooManyFrames && refused?.limit == .maxFrames)
    }

    static func psnr(_ a: PixelImage, _ b: PixelImage) -> Double {
        let error = zip(a.pixels, b.pixels).reduce(0.0) { $0 + pow(Double($1.0) - Double($1.1), 2) }
        return 10 * log10(255 * 255 / max(1e-9, error / Double(a.pixels.count)))
    }

    @Test("the codestream's orientation is applied; 16-bit comes out as 8 bits; alpha is kept")
    func pixels() throws {
        let upright = try ImageProcessor.decode(MediaBytes(Self.file("photo.jxl"))).image
        let turned = try ImageProcessor.decode(MediaBytes(Self.file("turned.jxl")))
        #expect(turned.info.orientation == .right && turned.info.width == 267 && turned.info.height == 400)
        #expect(turned.image.width == upright.width && turned.image.height == upright.height)
        #expect(Self.psnr(turned.image, upright) > 25, "turned: PSNR \(Self.psnr(turned.image, upright))")
        let deep = try ImageProcessor.decode(MediaBytes(Self.file("16bit.jxl"))).image
        #expect(deep.channels == 3 && Self.psnr(deep, upright) > 30, "16-bit: PSNR \(Self.psnr(deep, upright))")
        let alpha = try ImageProcessor.decode(MediaBytes(Self.file("alpha.jxl"))).image
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(alpha.pixels[((y * 120 + x) * 4)..<((y * 120 + x) * 4 + 4)]) }
        #expect(alpha.channels == 4 && pixel(10, 10) == [255, 40, 40, 255] && pixel(100, 10)[3] == 128)
        #expect(pixel(100, 70)[3] == 0)
    }

    /// The lossy file's patches as libjxl decodes them, converted by lcms2 (`make.sh`).
    static let expectedLossy: [[Int]] = {
        let data = FileManager.default.contents(atPath: directory + "/expected.json") ?? Data()
        let all = (try? JSONSerialization.jsonObject(with: data) as? [String: [[Int]]]) ?? [:]
        return all["DisplayP3-lossy.jxl"] ?? []
    }()

    @Test("Display P3, lossless or lossy (XYB), comes out as lcms2 shows the decoded pixels")
    func displayP3() throws {
        for name in ["DisplayP3-lossless.jxl", "DisplayP3-lossy.jxl"] {
            let expected =
                name.contains("lossy") ? Self.expectedLossy : try #require(ICCTests.expected["DisplayP3.png"])
            #expect(expected.count == 16)
            let (image, info) = try ImageProcessor.decode(MediaBytes(Self.file(name)))
            #expect(info.colourConverted && info.colourWarning == nil, "\(name)")
            let differences = zip(ICCTests.patches(image), expected).map { deltaE2000($0.0, $0.1) }
            let mean = differences.reduce(0, +) / Double(differences.count)
            #expect(mean <= 1.0 && differences.max()! <= 3.0, "\(name): mean \(mean), max \(differences.max()!)")
        }
    }

    @Test("an 81 MP image is refused from its header; cut files are truncated, corrupt ones typed errors")
    func refusals() throws {
        #expect(Self.code(try Self.file("huge.jxl")) == .tooManyPixels)
        for name in ["photo.jxl", "16bit.jxl", "alpha.jxl"] {
            let whole = try Self.file(name)
            // Past the signature, a file cut anywhere is truncated (libjxl asks for more input).
            for cut in stride(from: 16, to: whole.count, by: max(1, whole.count / 61)) {
                let code = Self.code(Array(whole.prefix(cut)))
                #expect(code == .truncated, "\(name) cut at \(cut): \(String(describing: code))")
            }
            var flipped = whole
            for i in stride(from: 40, to: flipped.count, by: 37) { flipped[i] ^= 0x5A }
            #expect(Self.code(flipped) != .internalError, "\(name) with bytes flipped")
        }
    }
}
