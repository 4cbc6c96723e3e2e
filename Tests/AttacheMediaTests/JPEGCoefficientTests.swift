import AttacheBase
import AttacheTestSupport
import AttacheWork
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

/// The compact coefficient store (jpeg_coefficients.c): a multi-scan JPEG decodes to libjpeg's
/// own pixels, at every scale, holding a fraction of libjpeg's whole-image arrays.
@Suite("Multi-scan JPEG coefficients, packed")
struct JPEGCoefficientTests {
    /// The corpus JPEGs that decode, rewritten by jpegtran (the coefficients unchanged) as
    /// progressive files with libjpeg's scan script (spectral selection and successive
    /// approximation), as sequential files with one scan per component, and as progressive
    /// files whose scans stop before the coefficients are whole (the DC's last bit and the
    /// first five AC's two lowest never sent), which libjpeg decodes with block smoothing.
    static let multiScan: [(name: String, path: String)] = {
        Corpus.rows.filter { $0.format == "JPEG" && $0.expectOK }.flatMap { row -> [(String, String)] in
            let name = URL(fileURLWithPath: row.file).lastPathComponent
            let progressive = [("\(name) progressive", row.path)]
            // The scan scripts name three components.
            return row.note.contains("3 comp")
                ? progressive + [("\(name) a scan per component", row.path), ("\(name) unrefined", row.path)]
                : progressive
        }
    }()

    /// The jpegtran scan scripts of the variants that take one.
    static let scripts = [
        "a scan per component": "0;\n1;\n2;\n",
        "unrefined": "0,1,2: 0 0 0 1;\n0: 1 5 0 2;\n1: 1 5 0 2;\n2: 1 5 0 2;\n",
    ]

    /// The file `source` rewritten by jpegtran as `variant` says.
    static func rewritten(_ name: String, _ source: String) throws -> MediaBytes {
        let arguments = ["-copy", "all"]
        if name.hasSuffix("progressive") {
            return MediaBytes(try VideoTests.run("jpegtran", arguments + ["-progressive", source]))
        }
        let variant = try #require(scripts.first { name.hasSuffix($0.key) })
        let directory = try TemporaryDirectory()
        let script = directory.path + "/scans.txt"
        try variant.value.write(toFile: script, atomically: true, encoding: .utf8)
        return MediaBytes(try VideoTests.run("jpegtran", arguments + ["-scans", script, source]))
    }

    /// Every row of the file at `numerator`/8, its coefficients kept as `coefficients` says.
    static func pixels(
        _ bytes: MediaBytes, numerator: Int, coefficients: JPEGDecoder.Coefficients
    ) throws(AttacheError) -> (
        pixels: [UInt8], decoder: JPEGDecoder
    ) {
        let decoder = try JPEGDecoder(bytes: bytes, limits: .default, deadline: .none, coefficients: coefficients)
        try decoder.start(scaleNumerator: numerator)
        var rows = RowCollector(width: decoder.outputWidth, height: decoder.outputHeight, channels: decoder.channels)
        try decoder.decodeRows(into: &rows)
        return (rows.pixels, decoder)
    }

    @Test(
        "a multi-scan file decodes to libjpeg's own pixels at 1/8, 1/4, 3/8 and 1",
        arguments: multiScan.map { [$0.name, $0.path] })
    func samePixels(_ file: [String]) throws {
        let bytes = try Self.rewritten(file[0], file[1])
        for numerator in [1, 2, 3, 8] {
            let dense = try Self.pixels(bytes, numerator: numerator, coefficients: .libjpeg)
            let packed = try Self.pixels(bytes, numerator: numerator, coefficients: .compact)
            #expect(!dense.decoder.compactCoefficients)
            #expect(packed.decoder.compactCoefficients)
            // Compared first: a failure names the file, not megabytes of both decodes.
            #expect(packed.pixels == dense.pixels ? true : false, "\(file[0]) at \(numerator)/8")
            #expect(packed.decoder.coefficientPeak > 0)
            #expect(packed.decoder.coefficientPeak <= packed.decoder.coefficientBytes)
        }
    }

    @Test("every packing this CPU runs writes the same bytes and gives every value back")
    func packingsAgree() {
        // Blocks from empty to full, values from the extremes to ±1, nonzero where a seeded
        // generator says with a chance that differs from block to block.
        var generator = SplitMix(seed: 0x5EED)
        var blocks = [Int16](repeating: 0, count: 64 * 4096)
        for b in 0..<4096 {
            let chance = b == 0 ? 0 : b == 1 ? 64 : Int(generator.next() % 65)
            for k in 0..<64 where Int(generator.next() % 64) < chance {
                let value: Int16 =
                    switch generator.next() % 4 {
                    case 0: Int16.min
                    case 1: Int16.max
                    default: Int16(truncatingIfNeeded: Int(generator.next() % 4001) - 2000) | 1
                    }
                blocks[b * 64 + k] = value
            }
        }
        let ways = blocks.withUnsafeBufferPointer { att_coef_packings_agree($0.baseAddress, 4096) }
        // Scalar always; SSSE3 on every x86-64 machine this runs on; AVX-512 where the CPU says so.
        #expect(ways >= 1)
        #if arch(x86_64)
        let flags = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let compress = ["avx512f", "avx512bw", "avx512_vbmi2"].allSatisfy {
            flags.split(whereSeparator: \.isWhitespace).contains(Substring($0))
        }
        #expect(ways == (compress ? 3 : 2))
        #endif
    }

    @Test("a photo's coefficients take a fraction of libjpeg's arrays, within the bound said before")
    func photoHoldsLess() throws {
        let bytes = try Self.rewritten("Landscape_1.jpg progressive", Corpus.root + "/exif-orientation/Landscape_1.jpg")
        let dense = try JPEGDecoder(bytes: bytes, limits: .default, deadline: .none, coefficients: .libjpeg)
        let (_, packed) = try Self.pixels(bytes, numerator: 2, coefficients: .compact)
        // 1800x1200 at 4:2:0: 50,850 blocks of 128 bytes; 430 KB of file.
        #expect(dense.coefficientBytes > 6_000_000)
        #expect(packed.coefficientBytes < dense.coefficientBytes / 10 * 6, "the bound from the file's length")
        #expect(packed.coefficientPeak <= packed.coefficientBytes)
        #expect(packed.coefficientPeak < dense.coefficientBytes / 3, "held: \(packed.coefficientPeak)")
    }

    @Test("small files keep libjpeg's arrays by default; large ones are packed")
    func threshold() throws {
        let small = try JPEGDecoder(
            bytes: MediaBytes(Fixtures.bytes("progressive.jpg")), limits: .default, deadline: .none)
        #expect(small.coefficientBytes > 0 && small.coefficientBytes < JPEGDecoder.Coefficients.compactFrom)
        #expect(!small.compactCoefficients)
        let large = try Self.largePhoto()
        let decoder = try JPEGDecoder(bytes: large, limits: .default, deadline: .none)
        #expect(decoder.compactCoefficients)
        let dense = try JPEGDecoder(bytes: large, limits: .default, deadline: .none, coefficients: .libjpeg)
        #expect(dense.coefficientBytes >= JPEGDecoder.Coefficients.compactFrom)
        #expect(decoder.coefficientBytes <= dense.coefficientBytes / 4 * 3)
    }

    /// A progressive 3600 x 2400 photo (the corpus photo four times, 16 MB of libjpeg arrays).
    static func largePhoto() throws -> MediaBytes {
        let photo = try JPEGDecoder(
            bytes: MediaBytes(contentsOfFile: Corpus.root + "/exif-orientation/Landscape_1.jpg"), limits: .default,
            deadline: .none)
        let (pixels, _) = try Self.pixels(
            MediaBytes(contentsOfFile: Corpus.root + "/exif-orientation/Landscape_1.jpg"), numerator: 8,
            coefficients: .libjpeg)
        let (w, h) = (photo.width, photo.height)
        var tiled = [UInt8](repeating: 0, count: 4 * w * h * 3)
        for y in 0..<(2 * h) {
            for x in 0..<(2 * w) {
                let from = ((y % h) * w + (x % w)) * 3
                let to = (y * 2 * w + x) * 3
                tiled[to] = pixels[from]
                tiled[to + 1] = pixels[from + 1]
                tiled[to + 2] = pixels[from + 2]
            }
        }
        let baseline = try Encoders.jpeg(
            PixelImage(width: 2 * w, height: 2 * h, channels: 3, pixels: tiled), quality: 90)
        let directory = try TemporaryDirectory()
        try Data(baseline).write(to: URL(fileURLWithPath: directory.path + "/large.jpg"))
        return MediaBytes(try VideoTests.run("jpegtran", ["-progressive", directory.path + "/large.jpg"]))
    }

    @Test("a cut or corrupted progressive file is refused alike with its coefficients packed")
    func damagedAlike() throws {
        let whole = try VideoTests.run("jpegtran", ["-progressive", Corpus.root + "/exif-orientation/Landscape_1.jpg"])
        var random = SplitMix(seed: 0x5EED)
        var variants: [[UInt8]] = [Array(whole.prefix(whole.count / 2)), Array(whole.prefix(whole.count - 3))]
        for _ in 0..<12 {
            var damaged = whole
            for _ in 0..<4 {
                let at = 2_000 + Int(random.next() % UInt64(whole.count - 2_000))
                damaged[at] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            }
            variants.append(damaged)
        }
        for variant in variants {
            let input = MediaBytes(variant)
            let dense = Result { () throws(AttacheError) in
                try Self.pixels(input, numerator: 2, coefficients: .libjpeg).pixels
            }
            let packed = Result { () throws(AttacheError) in
                try Self.pixels(input, numerator: 2, coefficients: .compact).pixels
            }
            switch (dense, packed) {
            case (.success(let a), .success(let b)): #expect(a == b)
            case (.failure(let a), .failure(let b)): #expect(a.code == b.code, "\(a) / \(b)")
            default: Issue.record("dense \(dense) against packed \(packed)")
            }
        }
    }
}
