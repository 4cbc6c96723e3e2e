import AttacheBase
import AttacheTestSupport
import CAttacheCodecs
import Testing

@testable import AttacheMedia

/// A candidate read back from the coefficients its progressive file was written from
/// (`jpeg_held.c`): the pixels a decode of the file gives, to the byte, for every chroma, grey,
/// sizes that end mid-block and mid-MCU, and qualities from coarse to 100.
struct HeldReadBackTests {
    /// The encode's file and its read-back both ways: from the file, and from the held
    /// coefficients (nil when the encoder held none).
    static func readBacks(
        _ image: PixelImage, quality: Int32, tables: Int32, chroma: Int32, flags: Int32
    ) throws -> (file: [UInt8], held: [UInt8]?) {
        let encoded = try FuzzChecks.encoded(
            image, quality, tables, chroma, flags, "\(image.width)x\(image.height) q\(quality)")
        return (encoded.readBack, encoded.held)
    }

    @Test func theHeldReadBackIsTheFilesPixels() throws {
        let photo = try ThoroughEncoderTests.photo("waterfall-rotated.jpg", side: 400)
        let pictures = [
            ("photo", photo), ("grey photo", ScanWriterTests.grey(photo)),
            ("saturated", SharpChromaTests.saturated(width: 203, height: 157)),
        ]
        let settings: [(tables: Int32, chroma: Int32)] = [
            (Int32(ATT_JPEG_TABLES_JPEGLI), Int32(ATT_JPEG_CHROMA_SHARP)),
            (Int32(ATT_JPEG_TABLES_ROBIDOUX), Int32(ATT_JPEG_CHROMA_HALF)),
            (Int32(ATT_JPEG_TABLES_IJG), Int32(ATT_JPEG_CHROMA_FULL)),
        ]
        var held = 0
        for (name, picture) in pictures {
            let crops = [
                picture, picture.cropped(x: 1, y: 2, width: picture.width - 3, height: picture.height - 5),
                picture.cropped(x: 5, y: 3, width: 17, height: 9), picture.cropped(x: 0, y: 0, width: 1, height: 1),
                picture.cropped(x: 7, y: 0, width: 9, height: picture.height),
            ]
            for image in crops {
                for quality: Int32 in [30, 80, 100] {
                    for setting in picture.channels == 1 ? Array(settings.prefix(1)) : settings {
                        let (file, fromHeld) = try Self.readBacks(
                            image, quality: quality, tables: setting.tables, chroma: setting.chroma,
                            flags: Int32(ATT_JPEG_PROGRESSIVE))
                        let shape = "\(name) \(image.width)x\(image.height) q\(quality) \(setting)"
                        try #require(fromHeld != nil, "\(shape): the fast encoder's progressive scans hold it")
                        let differing = zip(file, fromHeld ?? []).filter { $0 != $1 }.count
                        #expect(differing == 0, "\(shape): \(differing) bytes differ")
                        held += 1
                    }
                }
            }
        }
        #expect(held == 5 * 3 * 7)
    }

    /// One baseline scan (a fixed quality's) and the thorough encoder hold nothing: their read-back
    /// is the file's.
    @Test func otherEncodesAreReadBackFromTheirFiles() throws {
        let photo = try ThoroughEncoderTests.photo("waterfall-rotated.jpg", side: 200)
        for flags in [Int32(0), Int32(ATT_JPEG_TRELLIS)] {
            let (_, fromHeld) = try Self.readBacks(
                photo, quality: 80, tables: Int32(ATT_JPEG_TABLES_JPEGLI), chroma: Int32(ATT_JPEG_CHROMA_SHARP),
                flags: flags)
            #expect(fromHeld == nil, "flags \(flags)")
        }
    }

    /// The search scores its candidates from what it held: the same score and the same file as
    /// reading each back from its file.
    @Test func theSearchScoresWhatItHeld() throws {
        let photo = try ThoroughEncoderTests.photo("waterfall-rotated.jpg", side: 400)
        let judge = try #require(try QualitySearch.Judge(photo))
        for quality in [45, 80, 95] {
            let (data, held) = try QualitySearch.encodeHeld(
                photo, .jpeg, quality, tables: .jpegli, fullChroma: false, trellis: false, progressive: true)
            let kept = try #require(held)
            let fromFile = try judge.score(data, .jpeg)
            let blockingFromFile = judge.lastBlocking
            #expect(try judge.score(data, .jpeg, held: kept) == fromFile, "q\(quality)")
            #expect(judge.lastBlocking == blockingFromFile, "q\(quality)")
        }
    }
}
