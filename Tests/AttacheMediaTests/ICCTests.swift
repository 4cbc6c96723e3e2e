import AttacheBase
import AttacheTestSupport
import AttacheWork
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

/// Embedded ICC profiles: pixels converted to sRGB as lcms2 shows them, and profiles that are
/// broken, hostile or too big left unused without costing the image.
@Suite("ICC profiles")
struct ICCTests {
    static let directory = Fixtures.root + "/colour"
    static let names = [
        "DisplayP3.jpg", "DisplayP3.png", "AdobeRGB1998.jpg", "AdobeRGB1998.png", "ProPhotoRGB.jpg", "ProPhotoRGB.png",
        "SwappedRedAndGreen.jpg", "SwappedRedAndGreen.png", "CMYK.jpg",
    ]

    /// Each file's 16 patch centres as lcms2 converts them to sRGB (`Tests/Fixtures/colour/make.sh`).
    static let expected: [String: [[Int]]] = {
        let data = FileManager.default.contents(atPath: directory + "/expected.json") ?? Data()
        return (try? JSONSerialization.jsonObject(with: data) as? [String: [[Int]]]) ?? [:]
    }()

    static func patches(_ image: PixelImage) -> [[Int]] {
        (0..<16).map { i in
            let (x, y) = ((i % 4) * 8 + 4, (i / 4) * 8 + 4)
            let at = (y * image.width + x) * image.channels
            return [Int(image.pixels[at]), Int(image.pixels[at + 1]), Int(image.pixels[at + 2])]
        }
    }

    @Test("tagged photos come out as lcms2 shows them: mean ΔE2000 ≤ 1, max ≤ 3", arguments: names)
    func convertedLikeLCMS(name: String) throws {
        let expected = try #require(Self.expected[name], "expected.json names \(name)")
        let (image, info) = try ImageProcessor.decode(
            MediaBytes(contentsOfFile: Self.directory + "/" + name), spec: RenditionSpec(maxSide: 100))
        #expect(info.colourConverted && info.colourWarning == nil)
        let got = Self.patches(image)
        let differences = zip(got, expected).map { deltaE2000($0.0, $0.1) }
        let mean = differences.reduce(0, +) / Double(differences.count)
        #expect(mean <= 1.0 && differences.max()! <= 3.0, "\(name): mean \(mean), max \(differences.max()!)")
        print(
            "ICC \(name): mean ΔE2000 \((mean * 100).rounded() / 100), max \((differences.max()! * 100).rounded() / 100)"
        )
    }

    @Test("red stays red under a profile that swaps red and green")
    func swappedChannels() throws {
        for name in ["SwappedRedAndGreen.jpg", "SwappedRedAndGreen.png"] {
            let bytes = try MediaBytes(contentsOfFile: Self.directory + "/" + name)
            let red = Self.patches(try ImageProcessor.decode(bytes, spec: RenditionSpec(maxSide: 100)).image)[0]
            #expect(red[0] > 230 && red[1] < 40 && red[2] < 40, "\(name): red patch \(red)")
            let rendition = try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: 16))
            #expect(rendition.source.colourConverted)
        }
    }

    // MARK: Hostile profiles (JPEG APP2 chunks built here)

    /// `jpeg` with its APP2 segments replaced by `chunks` (each a whole segment payload).
    static func jpeg(_ jpeg: [UInt8], app2 chunks: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        for chunk in chunks {
            let length = chunk.count + 2
            out += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + chunk
        }
        var at = 2
        while at + 4 <= jpeg.count, jpeg[at] == 0xFF, jpeg[at + 1] != 0xDA {
            let length = Int(jpeg[at + 2]) << 8 | Int(jpeg[at + 3])
            if jpeg[at + 1] != 0xE2 { out += jpeg[at..<(at + 2 + length)] }
            at += 2 + length
        }
        return out + jpeg[at...]
    }

    static func iccChunk(_ sequence: Int, of count: Int, _ data: some Collection<UInt8>) -> [UInt8] {
        Array("ICC_PROFILE".utf8) + [0, UInt8(sequence), UInt8(count)] + data
    }

    @Test(
        "the direct matrix-shaper path agrees with lcms2's general one",
        arguments: [
            "DisplayP3", "AdobeRGB1998", "ProPhotoRGB", "SwappedRedAndGreen",
        ])
    func directPathAgreesWithLCMS(name: String) throws {
        let profile = try Self.fixtureProfile(name)
        // Every 8th level of each channel, and the extremes: 35,937 colours.
        let levels = Array(stride(from: 0, through: 255, by: 8)) + [255]
        var pixels: [UInt8] = []
        for r in levels { for g in levels { for b in levels { pixels += [UInt8(r), UInt8(g), UInt8(b)] } } }
        var error = att_error()
        let fast = try #require(att_icc_new(profile, profile.count, 3, 1, &error))
        let general = try #require(att_icc_new(profile, profile.count, 3, 0, &error))
        defer {
            att_icc_free(fast)
            att_icc_free(general)
        }
        var (a, b) = (pixels, pixels)
        att_icc_apply(fast, &a, pixels.count / 3)
        att_icc_apply(general, &b, pixels.count / 3)
        let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 2, "\(name): channels differ by up to \(worst)")
        #expect(a != pixels, "converted")
    }

    /// The profile embedded in a fixture JPEG.
    static func fixtureProfile(_ name: String = "AdobeRGB1998") throws -> [UInt8] {
        let bytes = try #require(FileManager.default.contents(atPath: directory + "/\(name).jpg")).map { $0 }
        var at = 2
        var profile: [UInt8] = []
        while at + 4 <= bytes.count, bytes[at] == 0xFF, bytes[at + 1] != 0xDA {
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if bytes[at + 1] == 0xE2 { profile += bytes[(at + 4 + 14)..<(at + 2 + length)] }
            at += 2 + length
        }
        return profile
    }

    func decode(_ bytes: [UInt8]) throws -> ImageInfo {
        try ImageProcessor.decode(MediaBytes(bytes), spec: RenditionSpec(maxSide: 100)).info
    }

    @Test("a broken, hostile or oversized profile is not used; the image still decodes")
    func hostileProfiles() throws {
        let base = try #require(FileManager.default.contents(atPath: Self.directory + "/AdobeRGB1998.jpg")).map { $0 }
        let profile = try Self.fixtureProfile()
        #expect(profile.count > 400)
        // Whole, in two chunks given out of order: reassembled by sequence number and used.
        let half = profile.count / 2
        let reordered = Self.jpeg(
            base, app2: [Self.iccChunk(2, of: 2, profile[half...]), Self.iccChunk(1, of: 2, profile[..<half])])
        #expect(try decode(reordered).colourConverted)

        var absurd = profile
        absurd.replaceSubrange(128..<132, with: [0xFF, 0xFF, 0xFF, 0xFF])  // tag count
        let cases: [(String, [[UInt8]], Bool)] = [
            ("truncated", [Self.iccChunk(1, of: 1, profile.prefix(200))], true),
            ("absurd tag count", [Self.iccChunk(1, of: 1, absurd)], true),
            ("not a profile", [Self.iccChunk(1, of: 1, [UInt8](repeating: 0x41, count: 3000))], true),
            ("a chunk missing", [Self.iccChunk(1, of: 2, profile[..<half])], false),
            (
                "a chunk twice",
                [Self.iccChunk(1, of: 2, profile[..<half]), Self.iccChunk(1, of: 2, profile[..<half])], false
            ),
            ("sequence 0", [Self.iccChunk(0, of: 1, profile)], false),
            ("over 1 MiB", (1...17).map { Self.iccChunk($0, of: 17, [UInt8](repeating: 7, count: 65_000)) }, false),
        ]
        for (name, chunks, warned) in cases {
            let info = try decode(Self.jpeg(base, app2: chunks))
            #expect(!info.colourConverted, "\(name)")
            #expect((info.colourWarning != nil) == warned, "\(name): \(String(describing: info.colourWarning))")
        }
        // The transform stage says so in the item's warnings; the rendition is made all the same.
        let broken = Self.jpeg(base, app2: [Self.iccChunk(1, of: 1, profile.prefix(200))])
        let transformed = try MediaTransform.apply(
            MediaValidator.validate(MediaBytes(broken)),
            TransformRequest(
                spec: RenditionSpec(maxSide: 16),
                deadline: WorkDeadline(budget: nil)))
        #expect(transformed.warnings.count == 1 && transformed.warnings[0].hasPrefix("ICC profile not used"))
        #expect(transformed.width == 16)
        // A CMYK file with an RGB profile: converted as if untagged, and said so.
        let cmyk = try #require(FileManager.default.contents(atPath: Self.directory + "/CMYK.jpg")).map { $0 }
        let mismatched = try decode(Self.jpeg(cmyk, app2: [Self.iccChunk(1, of: 1, profile)]))
        #expect(!mismatched.colourConverted && mismatched.colourWarning?.contains("not a CMYK profile") == true)
        #expect(try decode(cmyk).colourConverted)
        // A grey profile on colour pixels is not used either.
        var grey = profile
        grey.replaceSubrange(16..<20, with: Array("GRAY".utf8))
        let info = try decode(Self.jpeg(base, app2: [Self.iccChunk(1, of: 1, grey)]))
        #expect(!info.colourConverted && info.colourWarning != nil)
    }
}

extension ICCTests {
    /// An RGB profile of a few hundred bytes whose A2B0 (lut16) declares 255³ grid points and
    /// 15 outputs: 497 MB of table that is not in the file.
    static func amplifyingProfile() -> [UInt8] {
        func u32(_ v: UInt32) -> [UInt8] {
            [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
        }
        func text(_ s: String) -> [UInt8] { Array(s.utf8) }
        var tag = text("mft2") + u32(0) + [3, 15, 255, 0]
        for row in 0..<3 { for column in 0..<3 { tag += u32(row == column ? 0x1_0000 : 0) } }
        tag += [0, 2, 0, 2]  // two input and two output table entries
        tag += [UInt8](repeating: 0, count: 12)  // the input tables
        tag += [UInt8](repeating: 0x55, count: 200)  // the start of a table that never ends
        var header = u32(UInt32(144 + tag.count)) + u32(0) + u32(0x0210_0000) + text("mntrRGB XYZ ")
        header += [UInt8](repeating: 0, count: 12) + text("acsp") + [UInt8](repeating: 0, count: 24)
        header += u32(0) + u32(0x0000_F6D6) + u32(0x0001_0000) + u32(0x0000_D32D)
        header += [UInt8](repeating: 0, count: 128 - header.count)
        return header + u32(1) + text("A2B0") + u32(144) + u32(UInt32(tag.count)) + tag
    }

    @Test("a profile that declares a table far larger than itself is refused before lcms2 allocates it")
    func amplifyingTable() throws {
        let profile = Self.amplifyingProfile()
        #expect(profile.count < 420)
        var error = att_error()
        #expect(att_icc_new(profile, profile.count, 3, 1, &error) == nil)
        let message = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(message.contains("more than 16 MiB"), "\(message)")
        // In a JPEG: the image decodes, the profile is not used, and the warning says why.
        let base = try #require(FileManager.default.contents(atPath: Self.directory + "/AdobeRGB1998.jpg")).map { $0 }
        let info = try decode(Self.jpeg(base, app2: [Self.iccChunk(1, of: 1, profile)]))
        #expect(!info.colourConverted && info.colourWarning?.contains("more than 16 MiB") == true)
    }
}

/// CIEDE2000 between two sRGB colours (D65).
func deltaE2000(_ a: [Int], _ b: [Int]) -> Double {
    func lab(_ c: [Int]) -> (Double, Double, Double) {
        func linear(_ v: Int) -> Double {
            let x = Double(v) / 255
            return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4)
        }
        let (r, g, b) = (linear(c[0]), linear(c[1]), linear(c[2]))
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
        func f(_ t: Double) -> Double { t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116 }
        return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
    }
    let (l1, a1, b1) = lab(a)
    let (l2, a2, b2) = lab(b)
    let c1 = (a1 * a1 + b1 * b1).squareRoot()
    let c2 = (a2 * a2 + b2 * b2).squareRoot()
    let cMean = (c1 + c2) / 2
    let g = 0.5 * (1 - (pow(cMean, 7) / (pow(cMean, 7) + pow(25, 7))).squareRoot())
    let (a1p, a2p) = ((1 + g) * a1, (1 + g) * a2)
    let (c1p, c2p) = ((a1p * a1p + b1 * b1).squareRoot(), (a2p * a2p + b2 * b2).squareRoot())
    func hue(_ b: Double, _ a: Double) -> Double {
        if a == 0 && b == 0 { return 0 }
        let h = atan2(b, a) * 180 / .pi
        return h < 0 ? h + 360 : h
    }
    let (h1p, h2p) = (hue(b1, a1p), hue(b2, a2p))
    let dL = l2 - l1
    let dC = c2p - c1p
    var dh = 0.0
    if c1p * c2p != 0 {
        dh = h2p - h1p
        if dh > 180 { dh -= 360 } else if dh < -180 { dh += 360 }
    }
    let dH = 2 * (c1p * c2p).squareRoot() * sin(dh * .pi / 360)
    let lMean = (l1 + l2) / 2
    let cpMean = (c1p + c2p) / 2
    var hMean = h1p + h2p
    if c1p * c2p != 0 {
        if abs(h1p - h2p) <= 180 {
            hMean /= 2
        } else {
            hMean = (h1p + h2p < 360) ? (h1p + h2p + 360) / 2 : (h1p + h2p - 360) / 2
        }
    }
    let t =
        1 - 0.17 * cos((hMean - 30) * .pi / 180) + 0.24 * cos(2 * hMean * .pi / 180)
        + 0.32 * cos((3 * hMean + 6) * .pi / 180) - 0.20 * cos((4 * hMean - 63) * .pi / 180)
    let dTheta = 30 * exp(-pow((hMean - 275) / 25, 2))
    let rc = 2 * (pow(cpMean, 7) / (pow(cpMean, 7) + pow(25, 7))).squareRoot()
    let sl = 1 + 0.015 * pow(lMean - 50, 2) / (20 + pow(lMean - 50, 2)).squareRoot()
    let sc = 1 + 0.045 * cpMean
    let sh = 1 + 0.015 * cpMean * t
    let rt = -sin(2 * dTheta * .pi / 180) * rc
    return (pow(dL / sl, 2) + pow(dC / sc, 2) + pow(dH / sh, 2) + rt * (dC / sc) * (dH / sh)).squareRoot()
}
