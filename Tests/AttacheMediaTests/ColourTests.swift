import AttacheBase
import AttacheTestSupport
import AttacheWork
import Testing

@testable import AttacheMedia

@Suite("Colour, alpha and metadata")
struct ColourTests {
    @Test("Adobe CMYK decodes to the same colours as its RGB twin")
    func cmyk() throws {
        let spec = RenditionSpec(maxSide: 100)
        let cmyk = try ImageProcessor.decode(
            MediaBytes(contentsOfFile: Corpus.root + "/jpeg-variants/pillow__pil_sample_cmyk.jpg"), spec: spec
        ).image
        let rgb = try ImageProcessor.decode(
            MediaBytes(contentsOfFile: Corpus.root + "/jpeg-variants/pillow__pil_sample_rgb.jpg"), spec: spec
        ).image
        #expect(cmyk.channels == 3)
        #expect(meanAbsoluteDifference(cmyk, rgb) < 12)
    }

    @Test("grayscale JPEG stays one channel through resize and encode")
    func grayStaysGray() throws {
        let bytes = try MediaBytes(contentsOfFile: Corpus.root + "/jpeg-variants/pillow__hopper_gray.jpg")
        let rendition = try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: 64))
        let decoder = try JPEGDecoder(bytes: MediaBytes(rendition.data), limits: .default, deadline: .none)
        #expect(decoder.isGray)
    }

    @Test("transparent edges get no dark fringe (alpha is premultiplied)")
    func noDarkFringe() throws {
        // Left half opaque white, right half fully transparent black.
        var pixels = [UInt8]()
        for _ in 0..<64 {
            for x in 0..<64 { pixels += x < 32 ? [255, 255, 255, 255] : [0, 0, 0, 0] }
        }
        let png = try Encoders.png(PixelImage(width: 64, height: 64, channels: 4, pixels: pixels), level: 6)
        let small = try ImageProcessor.decode(MediaBytes(png), spec: RenditionSpec(maxSide: 13)).image
        #expect(small.channels == 4)
        var sawPartial = false
        for y in 0..<small.height {
            for x in 0..<small.width {
                let p = small.pixel(x: x, y: y)
                let alpha = p[p.startIndex + 3]
                if alpha > 0 && alpha < 255 { sawPartial = true }
                if alpha > 0 {
                    #expect(p.prefix(3).allSatisfy { $0 >= 250 }, "dark fringe at \(x),\(y): \(Array(p))")
                }
            }
        }
        #expect(sawPartial, "the edge should be partly transparent after resampling")
    }

    @Test("a flat colour stays exactly flat after resampling")
    func flatStaysFlat() {
        let colour: [UInt8] = [200, 100, 7]
        let pixels = (0..<(301 * 199 * 3)).map { colour[$0 % 3] }
        let resampler = Resampler(inWidth: 301, inHeight: 199, outWidth: 40, outHeight: 27, channels: 3)
        pixels.withUnsafeBufferPointer { p in
            for y in 0..<199 { resampler.push(p.baseAddress! + y * 301 * 3) }
        }
        #expect(resampler.isComplete)
        #expect(resampler.output.enumerated().allSatisfy { $0.element == colour[$0.offset % 3] })
    }

    @Test("EXIF GPS and every other marker are stripped from the output")
    func stripsMetadata() throws {
        let original = try Corpus.bytes("jpeg-variants/pillow__exif_gps.jpg")
        #expect(containsSubsequence(original, Array("Exif".utf8)))
        let rendition = try ImageProcessor.render(MediaBytes(original))
        #expect(!containsSubsequence(rendition.data, Array("Exif".utf8)))
        // Only SOI, APP0 (JFIF), DQT, SOF0, DHT, SOS: no APP1-APP15 or COM.
        var i = 2
        while i + 4 <= rendition.data.count, rendition.data[i] == 0xFF, rendition.data[i + 1] != 0xDA {
            let marker = rendition.data[i + 1]
            #expect(!(0xE1...0xEF).contains(marker) && marker != 0xFE, "marker \(marker)")
            i += 2 + Int(rendition.data[i + 2]) << 8 + Int(rendition.data[i + 3])
        }
    }

    @Test("opaque RGBA PNG output drops the alpha channel; translucent keeps it")
    func pngChannels() throws {
        let opaque = try Encoders.png(
            PixelImage(width: 2, height: 1, channels: 4, pixels: [1, 2, 3, 255, 4, 5, 6, 255]), level: 6)
        let decoded = try ImageProcessor.render(MediaBytes(opaque))
        #expect(decoded.data[25] == 2, "colour type should be RGB")
        let translucent = try Encoders.png(
            PixelImage(width: 2, height: 1, channels: 4, pixels: [1, 2, 3, 255, 4, 5, 6, 9]), level: 6)
        #expect(try ImageProcessor.render(MediaBytes(translucent)).data[25] == 6, "colour type should be RGBA")
    }
}
