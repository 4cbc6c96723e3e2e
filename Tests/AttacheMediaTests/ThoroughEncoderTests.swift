import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// `--jpeg-encoder thorough`: each block's coefficients chosen by trellis quantisation and written
/// through libjpeg's coefficient API. Its files are JPEGs every decoder reads, the size and
/// sampling asked for, fewer bytes than the fast encoder's at a quality number for a slightly
/// lower score, and `auto` aims its first guess so that its pictures score as the fast one's.
struct ThoroughEncoderTests {
    static func photo(_ name: String, side: Int = 768) throws -> PixelImage {
        let bytes = MediaBytes(try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/" + name)))
        return try ImageProcessor.decode(bytes, spec: RenditionSpec(maxSide: side, quality: .fixed(85))).image
    }

    @Test func aPhotoTakesFewerBytesAtAQualityForALittleOfItsScore() throws {
        for name in ["waterfall-rotated.jpg", "portrait-progressive.jpg"] {
            let image = try Self.photo(name)
            let judge = try #require(try QualitySearch.Judge(image))
            let fast = try Encoders.jpeg(image, quality: 80, tables: .robidoux)
            let thorough = try Encoders.jpeg(image, quality: 80, tables: .robidoux, trellis: true)
            #expect(QualityTests.lumaSampling(thorough) == 0x22, "\(name): 4:2:0 as asked")
            let (fastScore, thoroughScore) = (try judge.score(fast, .jpeg), try judge.score(thorough, .jpeg))
            print("thorough: \(name) \(thorough.count) bytes (\(thoroughScore)) against \(fast.count) (\(fastScore))")
            #expect(Double(thorough.count) < Double(fast.count) * 0.95, "\(name)")
            #expect(thoroughScore > fastScore - 4 && thoroughScore < fastScore + 1, "\(name)")
            // The same pixels read back by libjpeg at the size written.
            let decoded = try ImageProcessor.decode(MediaBytes(thorough), spec: RenditionSpec(maxSide: 4000)).image
            #expect(decoded.width == image.width && decoded.height == image.height)
        }
    }

    /// Gray, 4:4:4 and sizes that are no multiple of a block or an MCU: each read back close to
    /// its pixels at a high quality (the edges repeated as libjpeg repeats them).
    @Test func grayFullChromaAndOddSizesReadBackClose() throws {
        let colour = QualityTests.picture(width: 37, height: 23, busy: false)
        let gray = PixelImage(width: 50, height: 17, channels: 1, pixels: (0..<(50 * 17)).map { UInt8(($0 % 50) * 5) })
        for (image, full) in [(colour, false), (colour, true), (gray, false)] {
            let data = try Encoders.jpeg(image, quality: 95, fullChroma: full, trellis: true)
            let back = try ImageProcessor.decode(MediaBytes(data), spec: RenditionSpec(maxSide: 4000)).image
            #expect(back.width == image.width && back.height == image.height && back.channels == image.channels)
            let error = zip(back.pixels, image.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 255
            #expect(error <= 12, "\(image.width)x\(image.height)x\(image.channels) full \(full): off by \(error)")
            if image.channels == 3 { #expect(QualityTests.lumaSampling(data) == (full ? 0x11 : 0x22)) }
        }
    }

    /// Luma's lowest frequencies are rounded, not chosen: they carry a flat area's slope across
    /// the block, and zeroing them left 8 × 8 steps in skies that the blocking gate refused (the
    /// search then stepped four qualities up). A cloudy sky shows no more blocking with the
    /// thorough encoder than with the fast one at the same quality (choosing them read 0.16–0.31
    /// levels more here), for fewer bytes.
    @Test func aSkyShowsNoMoreBlockingThanWithTheFastEncoder() throws {
        let sky = QualityTests.picture(width: 1024, height: 683, busy: false, clouds: 20)
        let judge = try #require(try QualitySearch.Judge(sky))
        for quality in [70, 76, 80, 84] {
            let fast = try Encoders.jpeg(sky, quality: quality, tables: .jpegli)
            let thorough = try Encoders.jpeg(sky, quality: quality, tables: .jpegli, trellis: true)
            _ = try judge.score(fast, .jpeg)
            let fastBlocking = judge.lastBlocking
            _ = try judge.score(thorough, .jpeg)
            #expect(fastBlocking > 0.5, "at \(quality) the sky is gated: \(fastBlocking)")
            #expect(
                judge.lastBlocking <= fastBlocking + 0.1, "at \(quality): \(judge.lastBlocking), fast \(fastBlocking)")
            #expect(thorough.count < fast.count, "at \(quality): \(thorough.count) bytes, fast \(fast.count)")
        }
    }

    /// The thorough encoder writes its coefficients as progressive scans (a band of frequencies
    /// of one component each, with its own Huffman table) and as one baseline scan, and keeps
    /// the smaller: a photo is progressive (SOF2), colour or grey; a picture of a few blocks,
    /// where each scan's header and table cost more than they save, stays baseline (SOF0).
    /// Both read back at their size.
    @Test func aPhotoIsWrittenAsProgressiveScansAndATinyPictureAsOneScan() throws {
        let photo = try Self.photo("waterfall-rotated.jpg")
        let grey = PixelImage(
            width: photo.width, height: photo.height, channels: 1,
            pixels: stride(from: 0, to: photo.pixels.count, by: 3).map { photo.pixels[$0 + 1] })
        let tiny = QualityTests.picture(width: 24, height: 16, busy: true)
        for (name, image, progressive) in [("photo", photo, true), ("grey photo", grey, true), ("tiny", tiny, false)] {
            let data = try Encoders.jpeg(image, quality: 80, tables: .jpegli, trellis: true)
            let bytes = [UInt8](data)
            #expect((jpegMarkerOffset(bytes, 0xC2) != nil) == progressive, "\(name): SOF2")
            #expect((jpegMarkerOffset(bytes, 0xC0) != nil) == !progressive, "\(name): SOF0")
            let back = try ImageProcessor.decode(MediaBytes(data), spec: RenditionSpec(maxSide: 4000)).image
            #expect(back.width == image.width && back.height == image.height && back.channels == image.channels)
        }
        // Trellis and the scans together: well under the fast encoder's bytes at the quality,
        // for a little of its score.
        let judge = try #require(try QualitySearch.Judge(photo))
        let thorough = try Encoders.jpeg(photo, quality: 80, tables: .jpegli, trellis: true)
        let fast = try Encoders.jpeg(photo, quality: 80, tables: .jpegli)
        let (thoroughScore, fastScore) = (try judge.score(thorough, .jpeg), try judge.score(fast, .jpeg))
        #expect(thoroughScore > fastScore - 4, "\(thoroughScore) against \(fastScore)")
        print("thorough, progressive: \(thorough.count) bytes (\(thoroughScore)) against \(fast.count) (\(fastScore))")
        #expect(Double(thorough.count) < Double(fast.count) * 0.93, "\(thorough.count) against \(fast.count)")
    }

    /// With `auto`, the thorough encoder's first guess aims ``JPEGEncoder/scoreLoss`` higher:
    /// its picture lands in the band at about the fast one's score, in fewer bytes.
    @Test func autoAimsTheThoroughEncoderAtTheSameScore() throws {
        let image = try Self.photo("waterfall-rotated.jpg", side: 1024)
        let (fast, fastChoice) = try QualitySearch.encode(image, as: .jpeg, quality: .auto(target: 80))
        let (thorough, thoroughChoice) = try QualitySearch.encode(
            image, as: .jpeg, quality: .auto(target: 80), hint: QualityHint(encoder: .thorough))
        print("thorough: auto \(thorough.count) bytes \(thoroughChoice); fast \(fast.count) bytes \(fastChoice)")
        #expect(thoroughChoice.quality > fastChoice.quality, "the first guess aims higher")
        let (fastScore, thoroughScore) = (try #require(fastChoice.score), try #require(thoroughChoice.score))
        #expect(QualitySearch.band(target: 80).contains(thoroughScore))
        #expect(abs(thoroughScore - fastScore) < 2.5, "\(thoroughScore) against \(fastScore)")
        // A fixed quality is untouched by the hint's encoder only when it is fast.
        let fixed = try QualitySearch.encode(image, as: .jpeg, quality: .fixed(85)).data
        #expect(fixed == (try Encoders.jpeg(image, quality: 85)))
    }
}
