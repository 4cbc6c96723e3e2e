import AttacheBase
import AttacheTestSupport
import CAttacheCodecs
import Testing

@testable import AttacheMedia

/// The progressive scans the shim writes from libjpeg's coefficients (`jpeg_scan_writer.c`, for
/// `auto`'s fast encodes and the thorough encoder's): byte for byte the file libjpeg writes with
/// the same scans (`ATT_JPEG_LIBJPEG_SCANS`), for both encoders, every chroma, grey, sizes that
/// end mid-block and mid-MCU, and qualities from coarse to 100 (coefficients of every size).
struct ScanWriterTests {
    static func encode(
        _ image: PixelImage, quality: Int32, tables: Int32, chroma: Int32, flags: Int32
    ) throws
        -> [UInt8]
    {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = image.pixels.withUnsafeBufferPointer { p in
            att_jpeg_encode(
                p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * image.channels,
                Int32(image.channels), quality, tables, chroma, flags, &output, &length, &error)
        }
        try #require(status == 0, "\(image.width)x\(image.height) q\(quality) flags \(flags)")
        defer { att_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    static func grey(_ image: PixelImage) -> PixelImage {
        PixelImage(
            width: image.width, height: image.height, channels: 1,
            pixels: stride(from: 0, to: image.pixels.count, by: 3).map { image.pixels[$0 + 1] })
    }

    @Test func theShimsScansAreTheFileLibjpegWrites() throws {
        let photo = try ThoroughEncoderTests.photo("waterfall-rotated.jpg", side: 400)
        let pictures = [
            ("photo", photo), ("grey photo", Self.grey(photo)),
            ("saturated", SharpChromaTests.saturated(width: 203, height: 157)),
        ]
        let settings: [(tables: Int32, chroma: Int32)] = [
            (Int32(ATT_JPEG_TABLES_JPEGLI), Int32(ATT_JPEG_CHROMA_SHARP)),
            (Int32(ATT_JPEG_TABLES_ROBIDOUX), Int32(ATT_JPEG_CHROMA_HALF)),
            (Int32(ATT_JPEG_TABLES_IJG), Int32(ATT_JPEG_CHROMA_FULL)),
        ]
        var progressive = 0
        for (name, picture) in pictures {
            let crops = [
                picture, picture.cropped(x: 1, y: 2, width: picture.width - 3, height: picture.height - 5),
                picture.cropped(x: 5, y: 3, width: 17, height: 9), picture.cropped(x: 0, y: 0, width: 1, height: 1),
                picture.cropped(x: 7, y: 0, width: 9, height: picture.height),
            ]
            for image in crops {
                for quality: Int32 in [30, 80, 100] {
                    for setting in picture.channels == 1 ? Array(settings.prefix(1)) : settings {
                        // Trellis at full size and one crop: the rest are the same shapes again.
                        let trellis = image.width == picture.width || image.width == 17
                        for flags in [Int32(ATT_JPEG_PROGRESSIVE)] + (trellis ? [Int32(ATT_JPEG_TRELLIS)] : []) {
                            let shim = try Self.encode(
                                image, quality: quality, tables: setting.tables, chroma: setting.chroma, flags: flags)
                            let libjpeg = try Self.encode(
                                image, quality: quality, tables: setting.tables, chroma: setting.chroma,
                                flags: flags | Int32(ATT_JPEG_LIBJPEG_SCANS))
                            #expect(
                                shim == libjpeg,
                                "\(name) \(image.width)x\(image.height) q\(quality) \(setting) flags \(flags)")
                            if jpegMarkerOffset(shim, 0xC2) != nil { progressive += 1 }
                        }
                    }
                }
            }
        }
        // Every fast encode is progressive (the thorough one keeps a baseline scan where smaller).
        #expect(progressive >= 5 * 3 * 7)
    }
}

extension ScanWriterTests {
    /// A flat picture with a few busy blocks: its AC scans code runs of empty blocks longer than
    /// an EOBRUN can say (32,767 blocks), which the writer must end and start again where libjpeg
    /// does. 2,304 × 1,792 is 64,512 luma blocks (16,128 of each chroma at 4:2:0).
    @Test func runsOfEmptyBlocksLongerThanAnEOBRunAreTheFileLibjpegWrites() throws {
        let (width, height) = (2304, 1792)
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        // Three busy blocks (raster order 5, 40,000 and 64,000 of the luma's), the rest one flat grey.
        for block in [5, 40_000, 64_000] {
            let (x, y) = (block % (width / 8) * 8, block / (width / 8) * 8)
            for dy in 0..<8 {
                for dx in 0..<8 {
                    let at = ((y + dy) * width + x + dx) * 3
                    pixels[at] = UInt8((dx * 37 + dy * 91) & 0xFF)
                    pixels[at + 1] = UInt8((dx * 53 + dy * 17) & 0xFF)
                    pixels[at + 2] = UInt8((dx * 11 + dy * 71) & 0xFF)
                }
            }
        }
        let colour = PixelImage(width: width, height: height, channels: 3, pixels: pixels)
        let settings = (tables: Int32(ATT_JPEG_TABLES_JPEGLI), chroma: Int32(ATT_JPEG_CHROMA_SHARP))
        for image in [colour, Self.grey(colour)] {
            for flags in [Int32(ATT_JPEG_PROGRESSIVE), Int32(ATT_JPEG_TRELLIS)] {
                let shim = try Self.encode(
                    image, quality: 80, tables: settings.tables, chroma: settings.chroma, flags: flags)
                let libjpeg = try Self.encode(
                    image, quality: 80, tables: settings.tables, chroma: settings.chroma,
                    flags: flags | Int32(ATT_JPEG_LIBJPEG_SCANS))
                // Compared first: a failure names the sizes, not 60,000 bytes of each file.
                let same = shim == libjpeg
                #expect(
                    same, "\(image.channels) channels, flags \(flags): \(shim.count) against \(libjpeg.count) bytes")
                #expect(jpegMarkerOffset(shim, 0xC2) != nil, "progressive, so that the runs are coded")
            }
        }
    }
}

extension ScanWriterTests {
    /// The encode fuzz target's property (`FuzzChecks.encode`: the shim's scans are libjpeg's
    /// file for both encoders, every file reads back, the held read-back is the file's) on 60
    /// seeded inputs: every size from 1 px to 320 a side, grey and colour, every table and
    /// chroma, qualities 1–100, noise and flat runs.
    @Test func theEncodeFuzzPropertyHoldsOnSeededPictures() throws {
        var random = SplitMix(seed: 70)
        for _ in 0..<60 {
            let settings = (0..<6).map { _ in UInt8(random.below(256)) }
            let pixels = randomBytes(1 + random.below(3000), seed: random.next())
            #expect(throws: Never.self) { try FuzzChecks.encode(settings + pixels) }
        }
    }
}
