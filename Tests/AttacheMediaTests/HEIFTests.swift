import AttacheBase
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheMedia

/// HEIC and AVIF inputs (made by heif-enc and avifenc: `Tests/Fixtures/heif/make.sh`) decoded by
/// libheif tile by tile and converted to what a device takes: JPEG, or PNG where there is alpha.
@Suite("HEIC and AVIF")
struct HEIFTests {
    static let directory = Fixtures.root + "/heif"

    static func file(_ name: String) throws -> [UInt8] {
        try #require(FileManager.default.contents(atPath: directory + "/" + name)).map { $0 }
    }

    static func render(_ bytes: [UInt8], maxSide: Int = 200) throws(AttacheError) -> Rendition {
        try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: maxSide))
    }

    static func code(_ bytes: [UInt8], limits: DecodeLimits = .default) -> AttacheError.Code? {
        do {
            _ = try ImageProcessor.render(MediaBytes(bytes), spec: RenditionSpec(maxSide: 200), limits: limits)
            return nil
        } catch { return error.code }
    }

    @Test(
        "every fixture becomes a JPEG, or a PNG with alpha, of the size asked",
        arguments: [
            ("photo.heic", MediaKind.heic, MediaKind.jpeg, 200, 134), ("thumbnail.heic", .heic, .jpeg, 200, 134),
            ("grid.heic", .heic, .jpeg, 200, 150), ("alpha.heic", .heic, .png, 120, 80),
            ("DisplayP3.heic", .heic, .jpeg, 32, 32), ("photo.avif", .avif, .jpeg, 200, 134),
            ("10bit.avif", .avif, .jpeg, 200, 134), ("12bit.avif", .avif, .jpeg, 200, 134),
            ("alpha.avif", .avif, .png, 120, 80), ("marks-grid-irot.avif", .avif, .jpeg, 150, 200),
            ("marks-imir.avif", .avif, .jpeg, 200, 150), ("DisplayP3.avif", .avif, .jpeg, 32, 32),
        ])
    func converted(name: String, source: MediaKind, output: MediaKind, width: Int, height: Int) throws {
        let bytes = try Self.file(name)
        #expect(Sniffer.sniff(bytes.prefix(Sniffer.prefixLength)) == .accepted(source))
        let rendition = try Self.render(bytes)
        #expect(rendition.kind == output && rendition.width == width && rendition.height == height, "\(name)")
        #expect(rendition.source.kind == source && !rendition.keptSource)
        let again = try ImageProcessor.inspect(MediaBytes(rendition.data))
        #expect(again.kind == output && again.width == width && again.height == height)
    }

    /// The colour at the centre of each quarter of a decoded image.
    static func quarters(_ image: PixelImage) -> [[Int]] {
        [(1, 1), (3, 1), (1, 3), (3, 3)].map { (qx, qy) in
            let at = ((qy * image.height / 4) * image.width + qx * image.width / 4) * image.channels
            return (0..<3).map { Int(image.pixels[at + $0]) }
        }
    }

    static func near(_ a: [Int], _ b: [Int]) -> Bool { zip(a, b).allSatisfy { abs($0 - $1) <= 8 } }

    @Test("a turned grid and a mirrored image are shown the way irot and imir say")
    func turned() throws {
        let (red, green, blue, white) = ([255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255])
        // Stored: red top left, green top right, blue bottom left, white bottom right.
        let turned = try ImageProcessor.decode(MediaBytes(Self.file("marks-grid-irot.avif"))).image
        #expect(turned.width == 192 && turned.height == 256)
        // Turned a quarter anticlockwise: green top left, white top right, red, blue below.
        for (got, want) in zip(Self.quarters(turned), [green, white, red, blue]) {
            #expect(Self.near(got, want), "turned: \(got) for \(want)")
        }
        let mirrored = try ImageProcessor.decode(MediaBytes(Self.file("marks-imir.avif"))).image
        for (got, want) in zip(Self.quarters(mirrored), [green, red, white, blue]) {
            #expect(Self.near(got, want), "mirrored: \(got) for \(want)")
        }
    }

    @Test("a thumbnail in the file is not what is shown: the primary image is")
    func thumbnailIgnored() throws {
        let plain = try ImageProcessor.decode(MediaBytes(Self.file("photo.heic"))).image
        let withThumbnail = try ImageProcessor.decode(MediaBytes(Self.file("thumbnail.heic"))).image
        #expect(plain.width == 400 && plain == withThumbnail)
    }

    @Test("an iOS 18-shaped photo (gain map with its own XMP, a tmap item) is its primary image")
    func gainMap() throws {
        let (image, info) = try ImageProcessor.decode(MediaBytes(Self.file("gainmap.heic")))
        #expect(info.kind == .heic && info.width == 256 && info.height == 192 && image.channels == 3)
        // The primary's gradient: red grows to the right, green downwards, blue 64 (the gain map
        // is a grey half-size image).
        let q = Self.quarters(image)
        #expect(q[1][0] > q[0][0] + 80 && q[2][1] > q[0][1] + 80 && abs(q[0][2] - 64) < 16, "\(q)")
        let rendition = try Self.render(try Self.file("gainmap.heic"), maxSide: 128)
        #expect(rendition.kind == .jpeg && rendition.width == 128 && rendition.height == 96)
    }

    @Test("10- and 12-bit files come out as 8 bits close to the 8-bit encoding")
    func deepColour() throws {
        let eight = try ImageProcessor.decode(MediaBytes(Self.file("photo.avif"))).image
        for name in ["10bit.avif", "12bit.avif"] {
            let deep = try ImageProcessor.decode(MediaBytes(Self.file(name))).image
            #expect(deep.width == eight.width && deep.channels == 3)
            let error = zip(deep.pixels, eight.pixels).reduce(0.0) { $0 + pow(Double($1.0) - Double($1.1), 2) }
            let psnr = 10 * log10(255 * 255 / (error / Double(deep.pixels.count)))
            #expect(psnr > 30, "\(name): PSNR \(psnr) against the 8-bit file")
        }
    }

    @Test("Display P3, by ICC profile (HEIC) or by nclx code points (AVIF), is shown as lcms2 shows it")
    func displayP3() throws {
        let expected = try #require(ICCTests.expected["DisplayP3.png"])
        for name in ["DisplayP3.heic", "DisplayP3.avif"] {
            let (image, info) = try ImageProcessor.decode(MediaBytes(Self.file(name)))
            #expect(info.colourConverted && info.colourWarning == nil, "\(name)")
            let differences = zip(ICCTests.patches(image), expected).map { deltaE2000($0.0, $0.1) }
            let mean = differences.reduce(0, +) / Double(differences.count)
            #expect(mean <= 1.0 && differences.max()! <= 3.0, "\(name): mean \(mean), max \(differences.max()!)")
        }
    }

    /// `bytes` with every `ispe` box saying `width` x `height`.
    static func claiming(_ bytes: [UInt8], width: UInt32, height: UInt32) -> [UInt8] {
        var out = bytes
        let tag = Array("ispe".utf8)
        var i = 4
        while i + 16 <= out.count {
            if Array(out[i..<i + 4]) == tag {
                for k in 0..<4 {
                    out[i + 8 + k] = UInt8(truncatingIfNeeded: width >> (24 - 8 * UInt32(k)))
                    out[i + 12 + k] = UInt8(truncatingIfNeeded: height >> (24 - 8 * UInt32(k)))
                }
            }
            i += 1
        }
        return out
    }

    @Test("bombs declared in the boxes are refused before decoding; cut files get typed errors")
    func refusals() throws {
        for name in ["photo.heic", "photo.avif", "grid.heic"] {
            let bomb = Self.claiming(try Self.file(name), width: 60_000, height: 60_000)
            let refused = Self.code(bomb)
            #expect(
                refused == .tooManyPixels || refused == .dimensionsTooLarge,
                "\(name): \(String(describing: refused))")
        }
        // Within the dimension limit but over the pixel limit.
        let wide = Self.code(Self.claiming(try Self.file("photo.avif"), width: 20_000, height: 20_000))
        #expect(wide == .tooManyPixels || wide == .dimensionsTooLarge, "\(String(describing: wide))")
        // A tight decoder-memory cap refuses what a tile needs, from the header.
        #expect(Self.code(try Self.file("photo.heic"), limits: DecodeLimits(maxDecoderMemory: 10_000)) != nil)
        for name in ["photo.heic", "grid.heic", "photo.avif", "alpha.avif"] {
            let whole = try Self.file(name)
            for cut in stride(from: 1, to: whole.count, by: max(1, whole.count / 61)) {
                let code = Self.code(Array(whole.prefix(cut)))
                #expect(code != .internalError, "\(name) cut at \(cut): \(String(describing: code))")
            }
        }
    }

    @Test("a grid of 1,024 tiles (1,025 items) is read; over the tile limit it is too_large (max_items)")
    func manyTiles() throws {
        let grid = try Self.file("grid-1024-tiles.heic")
        let rendition = try Self.render(grid, maxSide: 64)
        #expect(rendition.width == 64 && rendition.height == 64)
        var limits = DecodeLimits.default
        limits.maxTiles = 1_000
        let error = #expect(throws: AttacheError.self) {
            _ = try ImageProcessor.render(MediaBytes(grid), spec: RenditionSpec(maxSide: 64), limits: limits)
        }
        #expect(error?.code == .tooLarge && error?.limit == .maxItems, "\(String(describing: error))")
        limits.maxTiles = 480  // items: 1,025 > 2 x 480 + 64
        let items = #expect(throws: AttacheError.self) {
            _ = try ImageProcessor.render(MediaBytes(grid), spec: RenditionSpec(maxSide: 64), limits: limits)
        }
        #expect(items?.code == .tooLarge && items?.limit == .maxItems, "\(String(describing: items))")
    }

    @Test("a file cut anywhere is truncated (a top-level box ends past the end of the file)")
    func cutShort() throws {
        for name in ["photo.heic", "grid.heic", "photo.avif", "alpha.avif"] {
            let whole = try Self.file(name)
            for cut in stride(from: 40, to: whole.count, by: max(1, whole.count / 31)) {
                let code = Self.code(Array(whole.prefix(cut)))
                #expect(code == .truncated, "\(name) cut at \(cut): \(String(describing: code))")
            }
        }
    }

    @Test("a grid larger than its tiles cover, or tiles whose size is not the grid's, is corrupt_data")
    func gridsThatDisagree() throws {
        let grid = try Self.file("grid.heic")
        // The grid (in idat: 2×2 tiles, 400×300) and the primary item's ispe say 400×500; the
        // tiles (256×192) cover 512×384.
        let at = try #require((0..<grid.count - 4).first { Array(grid[$0..<$0 + 4]) == Array("idat".utf8) })
        var taller = grid
        (taller[at + 10], taller[at + 11]) = (0x01, 0xF4)
        let ispe = try #require((0..<grid.count - 4).first { Array(grid[$0..<$0 + 4]) == Array("ispe".utf8) })
        (taller[ispe + 14], taller[ispe + 15]) = (0x01, 0xF4)
        #expect(Self.code(taller) == .corruptData)
        // The tiles' ispe says 256×256: the pictures decoded are 256×192.
        let tile = try #require(
            (ispe + 4..<grid.count - 4).first { Array(grid[$0..<$0 + 4]) == Array("ispe".utf8) })
        var lying = grid
        (lying[tile + 14], lying[tile + 15]) = (0x01, 0x00)
        let code = Self.code(lying)
        #expect(code == .corruptData, "\(String(describing: code))")
    }

    @Test("an AV1 picture dav1d refuses is decoded by aom instead")
    func fallbackDecoder() throws {
        // 7000 x 7000 monochrome: dav1d 1.0 gives up on it, aom decodes it (using about 700 MB,
        // so the decoder-memory cap is raised for it).
        let bytes = MediaBytes(try Self.file("gray-7000-dav1d-refuses.avif"))
        let info = try ImageProcessor.inspect(bytes, limits: DecodeLimits(maxDecoderMemory: 1 << 30))
        #expect(info.kind == .avif && info.width == 7000 && info.height == 7000)
        // At the default cap it is refused from the header, before any decoding.
        #expect(Self.code(bytes.buffer.map { $0 }) == .decoderMemoryExceeded)
    }

    @Test("a passed deadline stops the decode with timed_out")
    func deadline() throws {
        let deadline = WorkDeadline.none
        deadline.cancel()
        let bytes = MediaBytes(try Self.file("grid.heic"))
        let error = #expect(throws: AttacheError.self) {
            _ = try ImageProcessor.decode(
                bytes, kind: .heic, spec: RenditionSpec(), limits: .default, deadline: deadline)
        }
        #expect(error?.code == .timedOut)
    }

    @Test("the sniffer tells AVIF from HEIC by brands, the general mif1 brand by the compatible ones")
    func sniffed() {
        func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
            let size = 16 + 4 * compatible.count
            return [0, 0, 0, UInt8(size)] + Array("ftyp\(major)".utf8) + [0, 0, 0, 0]
                + compatible.flatMap { Array($0.utf8) }
        }
        #expect(Sniffer.sniff(ftyp("mif1", ["mif1", "avif"])) == .accepted(.avif))
        #expect(Sniffer.sniff(ftyp("mif1", ["mif1", "heic"])) == .accepted(.heic))
        #expect(Sniffer.sniff(ftyp("heix", [])) == .accepted(.heic))
        #expect(Sniffer.sniff(ftyp("avis", ["avif"])) == .accepted(.avif))
        if case .refused = Sniffer.sniff(ftyp("mif1", ["mif1", "jpeg"])) {
        } else {
            Issue.record("mif1 with JPEG items")
        }
    }
}

/// `--format`: what still renditions are written as.
@Suite("Output formats")
struct OutputFormatTests {
    static func render(_ path: String, _ format: RenditionSpec.OutputFormat) throws -> Rendition {
        var spec = RenditionSpec(maxSide: 100)
        spec.outputFormat = format
        return try ImageProcessor.render(MediaBytes(contentsOfFile: path), spec: spec)
    }

    @Test(
        "auto keeps Apple's types, jpeg makes every opaque still a JPEG, webp makes every still a WebP",
        arguments: [
            ("heif/photo.heic", MediaKind.jpeg, MediaKind.jpeg, true),
            ("heif/alpha.avif", .png, .png, true),
            ("colour/DisplayP3.png", .png, .jpeg, false),
            ("webp/lossless-alpha.webp", .png, .png, true),
            ("jxl/photo.jxl", .jpeg, .jpeg, false),
        ])
    func formats(name: String, auto: MediaKind, jpeg: MediaKind, alphaOrConverted: Bool) throws {
        let path = Fixtures.root + "/" + name
        #expect(try Self.render(path, .auto).kind == auto, "\(name)")
        #expect(try Self.render(path, .jpeg).kind == jpeg, "\(name)")
        let webp = try Self.render(path, .webp)
        #expect(webp.kind == .webp && !webp.keptSource, "\(name)")
        // The WebP decodes again at its size, with the same transparency.
        let (image, info) = try ImageProcessor.decode(MediaBytes(webp.data))
        #expect(info.kind == .webp && image.width == webp.width && image.height == webp.height)
        #expect(image.hasAlpha == (auto == .png && name.contains("alpha")), "\(name): alpha \(image.hasAlpha)")
    }

    @Test("animations stay animated GIF whatever the format")
    func animations() throws {
        let gif = try Self.render(Fixtures.root + "/webp/moving-alpha.webp", .webp)
        #expect(gif.kind == .gif && gif.frames == 12)
    }
}
