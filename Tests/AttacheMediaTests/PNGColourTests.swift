import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// A PNG's other ways of naming its colours: `cICP` code points, `cHRM` chromaticities and
/// `gAMA`, taken in the order PNG's third edition gives (`cICP`, `iCCP`, `sRGB`, `cHRM`+`gAMA`).
@Suite("PNG cICP, cHRM and gAMA")
struct PNGColourTests {
    static func crc32(_ bytes: some Collection<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        func be(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
        return be(UInt32(data.count)) + body + be(crc32(body))
    }

    static func be32(_ value: Double) -> [UInt8] {
        let v = UInt32(value.rounded())
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) }
    }

    /// The Display P3 patches (`../colour/DisplayP3.png`) with their colour chunks replaced by
    /// `chunks`, put right after IHDR.
    static func patches(with chunks: [[UInt8]]) throws -> [UInt8] {
        let png = try #require(FileManager.default.contents(atPath: ICCTests.directory + "/DisplayP3.png")).map { $0 }
        var out = Array(png[0..<8])
        var at = 8
        while at + 12 <= png.count {
            let length = png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: png[at + 4..<at + 8], as: UTF8.self)
            let whole = Array(png[at..<at + 12 + length])
            if !["iCCP", "sRGB", "gAMA", "cHRM", "cICP"].contains(type) { out += whole }
            if type == "IHDR" { out += chunks.flatMap { $0 } }
            at += 12 + length
        }
        return out
    }

    static func meanAndMax(_ bytes: [UInt8]) throws -> (ImageInfo, Double, Double, [Int]) {
        let (image, info) = try ImageProcessor.decode(MediaBytes(bytes))
        let expected = try #require(ICCTests.expected["DisplayP3.png"])
        let got = ICCTests.patches(image)
        let differences = zip(got, expected).map { deltaE2000($0.0, $0.1) }
        return (info, differences.reduce(0, +) / Double(differences.count), differences.max()!, got[0])
    }

    static let p3: [Double] = [0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290]

    @Test("cICP Display P3 (12/13) is shown as lcms2 shows the profile: mean ΔE2000 ≤ 1, max ≤ 3")
    func cicp() throws {
        let png = try Self.patches(with: [Self.chunk("cICP", [12, 13, 0, 1])])
        let (info, mean, max, red) = try Self.meanAndMax(png)
        #expect(info.colourConverted && mean <= 1 && max <= 3, "mean \(mean), max \(max)")
        #expect(red[0] > 240 && red[1] < 30, "red \(red)")
        // cICP wins over an sRGB chunk beside it.
        let both = try Self.patches(with: [Self.chunk("sRGB", [0]), Self.chunk("cICP", [12, 13, 0, 1])])
        #expect(try Self.meanAndMax(both).1 <= 1)
    }

    @Test("cHRM with P3 primaries and gAMA 1/2.2 convert (a pure power curve beside sRGB's)")
    func chromaticities() throws {
        let chrm = Self.chunk(
            "cHRM", [6, 7, 0, 1, 2, 3, 4, 5].flatMap { Self.be32(Self.p3[$0] * 100_000) })
        let gama = Self.chunk("gAMA", Self.be32(45_455))
        let (info, mean, _, red) = try Self.meanAndMax(try Self.patches(with: [gama, chrm]))
        #expect(info.colourConverted && mean <= 2.5, "mean \(mean)")
        #expect(red[0] > 240 && red[1] < 40, "red \(red)")
        // With an sRGB chunk the pixels are sRGB: nothing is converted.
        let srgb = try Self.patches(with: [Self.chunk("sRGB", [0]), gama, chrm])
        #expect(try ImageProcessor.decode(MediaBytes(srgb)).info.colourConverted == false)
    }

    @Test("gAMA alone: 1/2.2 is taken as sRGB; 1.0 (linear light) brightens mid-grey as it should")
    func gammaAlone() throws {
        let usual = try Self.patches(with: [Self.chunk("gAMA", Self.be32(45_455))])
        #expect(try ImageProcessor.decode(MediaBytes(usual)).info.colourConverted == false)
        let linear = try Self.patches(with: [Self.chunk("gAMA", Self.be32(100_000))])
        let (image, info) = try ImageProcessor.decode(MediaBytes(linear))
        #expect(info.colourConverted)
        // Patch 7 is (200, 200, 200) in the file: linear 0.784 is sRGB 229.
        let grey = ICCTests.patches(image)[7]
        #expect(grey.allSatisfy { abs($0 - 229) <= 3 }, "grey \(grey)")
    }
}
