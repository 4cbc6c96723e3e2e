import AttacheBase
import CAttacheCodecs
import Testing

@testable import AttacheMedia

/// 4:2:0 chroma sharpened for the decoder's fancy upsampling (`jpeg_chroma.c`), what `auto`'s
/// encodes (Robidoux's tables) write: the same luma as libjpeg's own 4:2:0 to the bit, the
/// colour of saturated edges closer to the source, and any size of picture.
struct SharpChromaTests {
    /// Flat orange with saturated discs in thin dark outlines, over a soft gradient: colour
    /// edges that 4:2:0 smears (the kind of artwork that went to 4:4:4).
    static func saturated(width: Int, height: Int) -> PixelImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        let discs: [(x: Double, y: Double, r: Double, rgb: (Double, Double, Double))] = [
            (0.2, 0.3, 0.12, (220, 20, 30)), (0.55, 0.25, 0.09, (20, 60, 230)),
            (0.8, 0.6, 0.15, (30, 200, 60)), (0.35, 0.75, 0.07, (200, 30, 210)),
            (0.65, 0.82, 0.05, (250, 230, 20)),
        ]
        let scale = Double(min(width, height))
        for y in 0..<height {
            for x in 0..<width {
                var rgb = (250.0, 140.0 + 30 * Double(y) / Double(height), 20.0)
                for disc in discs {
                    let (dx, dy) = (Double(x) - disc.x * Double(width), Double(y) - disc.y * Double(height))
                    let d = (dx * dx + dy * dy).squareRoot()
                    let radius = disc.r * scale
                    if d <= radius - 2 { rgb = disc.rgb } else if d <= radius { rgb = (40, 25, 20) }
                }
                let i = (y * width + x) * 3
                (pixels[i], pixels[i + 1], pixels[i + 2]) = (UInt8(rgb.0), UInt8(rgb.1), UInt8(rgb.2))
            }
        }
        return PixelImage(width: width, height: height, channels: 3, pixels: pixels)
    }

    static func encode(
        _ image: PixelImage, quality: Int32 = 80, tables: Int32 = Int32(ATT_JPEG_TABLES_ROBIDOUX), chroma: Int32
    ) throws -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = image.pixels.withUnsafeBufferPointer { p in
            att_jpeg_encode(
                p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * 3, 3, quality, tables, chroma,
                0, &output, &length, &error)
        }
        try #require(status == 0, "\(image.width)x\(image.height)")
        defer { att_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    static func decode(_ data: [UInt8], _ image: PixelImage, channels: Int32) throws -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: image.width * image.height * Int(channels))
        var error = att_error()
        let status = pixels.withUnsafeMutableBufferPointer { out in
            att_jpeg_decode_into(
                data, data.count, UInt32(image.width), UInt32(image.height), channels, out.baseAddress,
                image.width * Int(channels), &error)
        }
        try #require(status == 0)
        return pixels
    }

    /// Only the chroma changes: decoded as grey (the luma component alone), the sharpened file
    /// and libjpeg's own 4:2:0 are the same pixels, at sizes that end mid-block and mid-MCU and
    /// one pixel wide or high; decoded in colour they are the picture's size.
    @Test func theLumaIsLibjpegsOwn() throws {
        for (width, height) in [(256, 192), (257, 191), (1, 1), (1, 37), (29, 1), (17, 9), (33, 47)] {
            let image = Self.saturated(width: width, height: height)
            let plain = try Self.encode(image, chroma: Int32(ATT_JPEG_CHROMA_HALF))
            let sharp = try Self.encode(image, chroma: Int32(ATT_JPEG_CHROMA_SHARP))
            #expect(QualityTests.lumaSampling(sharp) == 0x22, "\(width)x\(height): written 4:2:0")
            #expect(
                try Self.decode(plain, image, channels: 1) == Self.decode(sharp, image, channels: 1),
                "\(width)x\(height)")
            #expect(try Self.decode(sharp, image, channels: 3).count == width * height * 3)
        }
    }

    /// Saturated edges come back closer to the source: a higher score than libjpeg's 4:2:0 at
    /// the same quality, by more than the bytes it adds are worth (about 0.1 of a point a
    /// percent at these qualities); on a photo-like picture no lower.
    @Test func saturatedEdgesScoreHigher() throws {
        let artwork = Self.saturated(width: 512, height: 384)
        let judge = try #require(try QualitySearch.Judge(artwork))
        for quality: Int32 in [70, 85] {
            let plain = try Self.encode(artwork, quality: quality, chroma: Int32(ATT_JPEG_CHROMA_HALF))
            let sharp = try Self.encode(artwork, quality: quality, chroma: Int32(ATT_JPEG_CHROMA_SHARP))
            let (before, after) = (try judge.score(plain, .jpeg), try judge.score(sharp, .jpeg))
            let bytes = Double(sharp.count) / Double(plain.count)
            #expect(after - before >= 2 && bytes < 1.1, "quality \(quality): \(before) → \(after), \(bytes)× the bytes")
        }
        let photo = QualityTests.picture(width: 512, height: 384, busy: true)
        let photoJudge = try #require(try QualitySearch.Judge(photo))
        let plain = try photoJudge.score(Self.encode(photo, chroma: Int32(ATT_JPEG_CHROMA_HALF)), .jpeg)
        let sharp = try photoJudge.score(Self.encode(photo, chroma: Int32(ATT_JPEG_CHROMA_SHARP)), .jpeg)
        #expect(sharp >= plain - 0.25, "\(plain) → \(sharp)")
    }

    /// `auto` writes it (jpegli's tables; Robidoux's when asked); a fixed quality keeps libjpeg's
    /// own 4:2:0 with the IJG's tables, byte for byte.
    @Test func autoWritesItAndAFixedQualityDoesNot() throws {
        let artwork = Self.saturated(width: 320, height: 240)
        #expect(JPEGTables.automatic.resolved(for: .default) == .jpegli)
        let jpegli = try Encoders.jpeg(artwork, quality: 80, tables: .jpegli)
        let sharp = Int32(ATT_JPEG_CHROMA_SHARP)
        #expect(jpegli == (try Self.encode(artwork, tables: Int32(ATT_JPEG_TABLES_JPEGLI), chroma: sharp)))
        let robidoux = try Encoders.jpeg(artwork, quality: 80, tables: .robidoux)
        #expect(robidoux == (try Self.encode(artwork, chroma: sharp)))
        let ijg = try Self.encode(artwork, tables: Int32(ATT_JPEG_TABLES_IJG), chroma: Int32(ATT_JPEG_CHROMA_HALF))
        #expect(try Encoders.jpeg(artwork, quality: 80) == ijg)
    }
}
