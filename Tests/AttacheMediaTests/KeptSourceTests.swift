import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// Never larger than it came: a source within every limit whose rendition would not be smaller
/// is stored as it was, with its metadata removed and its image data untouched.
@Suite struct KeptSourceTests {
    /// A JPEG segment: marker, length, payload.
    static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
    }

    /// A PNG chunk with its CRC.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc32(body))
    }

    static let gps = Array("GPSLatitude 48.8584 N, GPSLongitude 2.2945 E".utf8)

    /// `jpeg` with EXIF (GPS), XMP, a comment and an ICC profile segment after SOI, and a
    /// second image (as an iPhone's gain map is) after its end.
    static func tagged(jpeg: [UInt8]) -> [UInt8] {
        let exif = segment(0xE1, Array("Exif\0\0".utf8) + gps)
        let xmp = segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>creator</x:xmpmeta>".utf8))
        let comment = segment(0xFE, Array("taken at home".utf8))
        let icc = segment(0xE2, Array("ICC_PROFILE\0".utf8) + [1, 1] + Array(repeating: 7, count: 64))
        let trailer = [0xFF, 0xD8] + segment(0xE1, Array("Exif\0\0".utf8) + gps) + [0xFF, 0xD9]
        return Array(jpeg.prefix(2)) + exif + xmp + comment + icc + Array(jpeg.dropFirst(2)) + trailer
    }

    static func render(_ bytes: [UInt8], maxSide: Int = 4096) throws -> Rendition {
        try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: maxSide))
    }

    @Test("a JPEG within every limit keeps its scans, loses EXIF, XMP, comments and what follows its end")
    func aJPEGKeepsItsScansAndLosesItsMetadata() throws {
        let (image, _) = try ImageProcessor.decode(try MediaBytes(contentsOfFile: Paths.samples + "/gray.jpg"))
        // Compressed harder than a rendition would be: re-encoding (at a fixed quality or at the
        // default target) could only make it larger.
        let source = Self.tagged(jpeg: try Encoders.jpeg(image, quality: 10))
        let rendition = try Self.render(source)
        #expect(rendition.keptSource)
        let out = rendition.data
        #expect(out.count < source.count)
        #expect(!out.contains(subsequence: Self.gps), "no GPS")
        #expect(!out.contains(subsequence: Array("Exif".utf8)) && !out.contains(subsequence: Array("xmpmeta".utf8)))
        #expect(!out.contains(subsequence: Array("taken at home".utf8)))
        #expect(out.contains(subsequence: Array("ICC_PROFILE".utf8)), "the colour profile stays")
        #expect(Array(out.suffix(2)) == [0xFF, 0xD9] && out.filter { $0 == 0xD8 }.count >= 1)
        // The pixels are the source's, bit for bit.
        let before = try ImageProcessor.decode(MediaBytes(source)).image
        let after = try ImageProcessor.decode(MediaBytes(out)).image
        #expect(before.pixels == after.pixels)
    }

    @Test("a PNG within every limit keeps its chunks that show pixels and loses text, time and EXIF")
    func aPNGLosesTextTimeAndEXIF() throws {
        let sample = Array(try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/palette-transparent.png")))
        let ihdrEnd = 8 + 25
        let extra =
            Self.chunk("tEXt", Array("Comment\0".utf8) + Self.gps) + Self.chunk("tIME", [7, 234, 11, 24, 12, 0, 0])
            + Self.chunk("eXIf", Array("MM\0*".utf8) + Self.gps) + Self.chunk("zzZz", Self.gps)
        let source = Array(sample.prefix(ihdrEnd)) + extra + Array(sample.dropFirst(ihdrEnd)) + Self.gps
        let rendition = try Self.render(source)
        let out = rendition.data
        // A palette PNG re-encoded as RGBA would be larger than it came.
        #expect(rendition.keptSource)
        #expect(!out.contains(subsequence: Self.gps))
        #expect(!out.contains(subsequence: Array("tEXt".utf8)) && !out.contains(subsequence: Array("tIME".utf8)))
        #expect(out.count == sample.count, "the sample carries nothing but what shows its pixels")
        let before = try ImageProcessor.decode(MediaBytes(sample)).image
        let after = try ImageProcessor.decode(MediaBytes(out)).image
        #expect(before.pixels == after.pixels)
    }

    @Test("an animated GIF kept whole is never larger than it came and loses its comments and XMP")
    func aGIFLosesCommentsAndXMP() throws {
        let sample = Array(try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/animated-chi.gif")))
        var headerEnd = 13
        if sample[10] & 0x80 != 0 { headerEnd += 3 << (Int(sample[10] & 0x07) + 1) }
        let comment: [UInt8] = [0x21, 0xFE, UInt8(Self.gps.count)] + Self.gps + [0]
        let xmp: [UInt8] = [0x21, 0xFF, 11] + Array("XMP DataXMP".utf8) + [UInt8(Self.gps.count)] + Self.gps + [0]
        let source = Array(sample.prefix(headerEnd)) + comment + xmp + Array(sample.dropFirst(headerEnd))
        let rendition = try Self.render(source)
        #expect(rendition.data.count <= sample.count, "never larger than the source without its metadata")
        #expect(!rendition.data.contains(subsequence: Self.gps))
        // Stripping takes out what was added and nothing that shows: the same blocks as the
        // sample's own stripped, the same frames.
        let stripped = try #require(MetadataStripper.strip(MediaBytes(source), kind: .gif))
        #expect(stripped == MetadataStripper.strip(MediaBytes(sample), kind: .gif))
        #expect(!stripped.contains(subsequence: Self.gps) && stripped.contains(subsequence: Array("NETSCAPE2.0".utf8)))
        let before = try ImageProcessor.inspect(MediaBytes(sample))
        let after = try ImageProcessor.inspect(MediaBytes(stripped))
        #expect(
            before.frames == after.frames && before.duration == after.duration && before.loopCount == after.loopCount)
    }

    @Test("what must change is never kept: a downscale, an orientation, CMYK, an animated PNG")
    func onlyASourceThatFitsAsItIsIsKept() throws {
        let (image, _) = try ImageProcessor.decode(try MediaBytes(contentsOfFile: Paths.samples + "/gray.jpg"))
        let small = Self.tagged(jpeg: try Encoders.jpeg(image, quality: 40))
        #expect(!(try Self.render(small, maxSide: max(image.width, image.height) - 1).keptSource))
        for name in ["waterfall-rotated.jpg", "cmyk-adobe.jpg"] {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/" + name)))
            let rendition = try Self.render(bytes)
            #expect(!rendition.keptSource, "\(name)")
            #expect(!rendition.data.contains(subsequence: Array("Exif".utf8)), "\(name)")
        }
        // An animated PNG (acTL before the image data) is not kept as it is.
        let sample = Array(try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/palette-transparent.png")))
        let animated = Array(sample.prefix(33)) + Self.chunk("acTL", be32(1) + be32(0)) + Array(sample.dropFirst(33))
        #expect(MetadataStripper.strip(MediaBytes(animated), kind: .png) == nil)
        // An arithmetic-coded frame (SOF9) is not either.
        var arithmetic = try Encoders.jpeg(image, quality: 40)
        let sof = try #require(jpegMarkerOffset(arithmetic, 0xC0))
        arithmetic[sof + 1] = 0xC9
        #expect(MetadataStripper.strip(MediaBytes(arithmetic), kind: .jpeg) == nil)
    }
    @Test("a quality-30 JPEG at about its size never comes out larger, at any target and in any picture")
    func aLowQualitySourceIsNeverMadeLargerAtAnyTarget() throws {
        let photo = try ImageProcessor.decode(
            try MediaBytes(contentsOfFile: Paths.samples + "/portrait-progressive.jpg"),
            spec: RenditionSpec(maxSide: 900)
        ).image
        let source = try Encoders.jpeg(photo, quality: 30)
        #expect(try ImageProcessor.probe(MediaBytes(source)).jpegQuality == 30)
        for target in [60.0, 75.0, 85.0, 90.0] {
            var spec = RenditionSpec(maxSide: 1024, quality: .auto(target: target))
            spec.outputFormat = .jpeg
            var android = TargetSpec(.android)
            android.quality = .auto(target: target)
            let out = try MediaTransform.apply(
                try MediaValidator.validate(MediaBytes(source)), TransformRequest(spec: spec, targets: [android]))
            #expect(out.bytes.count <= source.count, "target \(target): \(out.bytes.count) > \(source.count)")
            let picture = try #require(try out.targets.first?.result.get())
            // Two thirds of the source's rows, never more bytes than the whole source.
            #expect(picture.data.count <= source.count, "target \(target): android \(picture.data.count)")
            // The IJG's 30 in the tables auto writes with (the search's lowest when that is under it).
            let tables = JPEGTables.automatic.resolved(for: android.quality)
            let ceiling = max(QualitySearch.lowest, tables.equivalent(ijg: 30))
            #expect(picture.quality <= ceiling, "target \(target): android at quality \(picture.quality)")
            // A band's floor the source's own quality does not reach is said so.
            if let score = picture.score, score < QualitySearch.band(target: target).lowerBound {
                #expect(picture.missed == "source_quality", "target \(target): \(score)")
            }
        }
        // Downscaled by more than half, the source's blocks shrink with it: no ceiling.
        #expect(QualityHint.ceiling(jpegQuality: 30, width: 400, sourceWidth: 900) == nil)
        #expect(QualityHint.ceiling(jpegQuality: 30, width: 451, sourceWidth: 900) == 30)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<($0 + subsequence.count)].elementsEqual(subsequence)
        }
    }

}
