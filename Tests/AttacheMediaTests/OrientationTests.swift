import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheMedia

@Suite("EXIF orientation is applied, never copied")
struct OrientationTests {
    static let spec = RenditionSpec(maxSide: 240)

    static func upright(_ name: String) throws -> PixelImage {
        try ImageProcessor.decode(MediaBytes(contentsOfFile: Corpus.root + "/exif-orientation/" + name), spec: spec)
            .image
    }

    @Test("every orientation 0-8 displays like orientation 1", arguments: ["Landscape", "Portrait"], 0...8)
    func displaysUpright(shape: String, orientation: Int) throws {
        let reference = try Self.upright("\(shape)_1.jpg")
        let image = try Self.upright("\(shape)_\(orientation).jpg")
        #expect(image.width == (shape == "Landscape" ? 240 : 160))
        #expect(image.height == (shape == "Landscape" ? 160 : 240))
        #expect(meanAbsoluteDifference(image, reference) < 8, "\(shape)_\(orientation) is not upright")
    }

    @Test("a mirrored image is detected as different (the comparison can fail)")
    func comparisonDiscriminates() throws {
        let reference = try Self.upright("Landscape_1.jpg")
        let mirrored = Orientation.upMirrored.apply(to: reference)
        #expect(meanAbsoluteDifference(mirrored, reference) > 20)
    }

    @Test("orientation is read from EXIF and the output carries no EXIF")
    func outputHasNoExif() throws {
        let bytes = try MediaBytes(contentsOfFile: Corpus.root + "/exif-orientation/Landscape_6.jpg")
        #expect(try ImageProcessor.inspect(bytes).orientation == .right)
        let rendition = try ImageProcessor.render(bytes, spec: Self.spec)
        #expect((rendition.width, rendition.height) == (240, 160))
        #expect(!containsSubsequence(rendition.data, Array("Exif".utf8)))
        #expect(try ImageProcessor.inspect(MediaBytes(rendition.data)).orientation == .up)
    }

    @Test("all eight transforms are distinct and invert the stored layout")
    func transforms() {
        // 3x2 image with distinct pixels.
        let image = PixelImage(width: 3, height: 2, channels: 1, pixels: [1, 2, 3, 4, 5, 6])
        let expected: [Orientation: [UInt8]] = [
            .up: [1, 2, 3, 4, 5, 6], .upMirrored: [3, 2, 1, 6, 5, 4], .down: [6, 5, 4, 3, 2, 1],
            .downMirrored: [4, 5, 6, 1, 2, 3], .leftMirrored: [1, 4, 2, 5, 3, 6], .right: [4, 1, 5, 2, 6, 3],
            .rightMirrored: [6, 3, 5, 2, 4, 1], .left: [3, 6, 2, 5, 1, 4],
        ]
        for (orientation, pixels) in expected {
            let turned = orientation.apply(to: image)
            #expect(turned.pixels == pixels, "\(orientation)")
            #expect(turned.width == (orientation.swapsDimensions ? 2 : 3))
        }
    }
}

func containsSubsequence(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
        if Array(haystack[i..<i + needle.count]) == needle { return true }
    }
    return false
}
