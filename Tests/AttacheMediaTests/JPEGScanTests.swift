import AttacheBase
import AttacheTestSupport
import AttacheWork
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

/// A progressive file's scans read by the shim (jpeg_scans.c) rather than by libjpeg: the same
/// coefficients, so libjpeg's own pixels, and the same refusals of damaged files.
@Suite("Progressive scans read by the shim")
struct JPEGScanTests {
    /// The corpus JPEGs that decode, rewritten by jpegtran as progressive files (libjpeg's scan
    /// script: spectral selection and successive approximation), without restart markers, with
    /// one every row of MCUs and with one every five MCUs.
    static let files: [(name: String, path: String)] = {
        Corpus.rows.filter { $0.format == "JPEG" && $0.expectOK }.flatMap { row -> [(String, String)] in
            let name = URL(fileURLWithPath: row.file).lastPathComponent
            return ["none", "1", "5B"].map { ("\(name), restarts \($0)", row.path) }
        }
    }()

    static func progressive(_ name: String, _ source: String) throws -> MediaBytes {
        var arguments = ["-copy", "all", "-progressive"]
        if let restart = name.split(separator: " ").last, restart != "none" {
            arguments += ["-restart", String(restart)]
        }
        return MediaBytes(try VideoTests.run("jpegtran", arguments + [source]))
    }

    /// Every row at `numerator`/8, or the error's code.
    static func decode(
        _ bytes: MediaBytes, numerator: Int, scans: JPEGDecoder.Scans,
        coefficients: JPEGDecoder.Coefficients = .automatic
    ) -> (pixels: [UInt8], failure: AttacheError.Code?, shim: Int32) {
        do throws(AttacheError) {
            let decoder = try JPEGDecoder(
                bytes: bytes, limits: .default, deadline: .none, coefficients: coefficients, scans: scans)
            do throws(AttacheError) {
                try decoder.start(scaleNumerator: numerator)
                var rows = RowCollector(
                    width: decoder.outputWidth, height: decoder.outputHeight, channels: decoder.channels)
                try decoder.decodeRows(into: &rows)
                return (rows.pixels, nil, decoder.shimScans)
            } catch {
                return ([], error.code, decoder.shimScans)
            }
        } catch {
            return ([], error.code, 0)
        }
    }

    @Test(
        "the shim reads a progressive file's scans to libjpeg's own pixels",
        arguments: files.map { [$0.name, $0.path] })
    func samePixels(_ file: [String]) throws {
        let bytes = try Self.progressive(file[0], file[1])
        for numerator in [1, 2, 8] {
            for coefficients: JPEGDecoder.Coefficients in [.libjpeg, .compact] {
                let libjpeg = Self.decode(bytes, numerator: numerator, scans: .libjpeg, coefficients: coefficients)
                let shim = Self.decode(bytes, numerator: numerator, scans: .shim, coefficients: coefficients)
                #expect(libjpeg.failure == nil && shim.failure == nil)
                #expect(libjpeg.shim == 0)
                #expect(shim.shim == 1, "the shim read the scans of \(file[0])")
                #expect(shim.pixels == libjpeg.pixels ? true : false, "\(file[0]) at \(numerator)/8, \(coefficients)")
            }
        }
    }

    @Test("a damaged progressive file decodes or fails the same way whoever reads its scans")
    func damagedFilesAlike() throws {
        var generator = SplitMix(seed: 0x5CA5)
        var byShim = (decoded: 0, refused: 0)
        for (name, path) in [
            ("Landscape_3.jpg, restarts none", Corpus.root + "/exif-orientation/Landscape_3.jpg"),
            ("pillow__hopper.jpg, restarts 5B", Corpus.root + "/jpeg-variants/pillow__hopper.jpg"),
        ] {
            let file = try Self.progressive(name, path)
            let original = file.prefix(file.count)
            // Damage after the first scan's header: the shim is offered the file from there.
            let firstScan = (0..<original.count - 1).first { original[$0] == 0xFF && original[$0 + 1] == 0xDA }!
            for trial in 0..<120 {
                var bytes = original
                let at = firstScan + Int(generator.next() % UInt64(original.count - firstScan))
                switch trial % 4 {
                case 0: bytes.removeSubrange(at...)
                case 1: bytes[at] ^= UInt8(1) << (generator.next() % 8)
                case 2: bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                default:
                    for _ in 0...(generator.next() % 4) {
                        let where_ = firstScan + Int(generator.next() % UInt64(original.count - firstScan))
                        bytes[where_] = generator.next() % 2 == 0 ? 0xFF : UInt8(truncatingIfNeeded: generator.next())
                    }
                }
                let input = MediaBytes(bytes)
                let libjpeg = Self.decode(input, numerator: 2, scans: .libjpeg)
                let shim = Self.decode(input, numerator: 2, scans: .shim)
                #expect(shim.failure == libjpeg.failure, "\(name), trial \(trial)")
                #expect(shim.pixels == libjpeg.pixels ? true : false, "the pixels of \(name), trial \(trial)")
                if shim.shim == 1 { byShim.decoded += 1 }
                if shim.shim == 2 { byShim.refused += 1 }
            }
        }
        // Both ways of ending were the shim's in some trials, not only libjpeg's.
        #expect(byShim.decoded >= 10 && byShim.refused >= 10, "\(byShim)")
    }

    @Test("a file the shim cannot hand back is left to libjpeg: a sequential file with a scan per component")
    func sequentialLeftToLibjpeg() throws {
        let bytes = try JPEGCoefficientTests.rewritten(
            "Landscape_1.jpg a scan per component", Corpus.root + "/exif-orientation/Landscape_1.jpg")
        let shim = Self.decode(bytes, numerator: 2, scans: .shim)
        #expect(shim.failure == nil && shim.shim == 0)
        #expect(shim.pixels == Self.decode(bytes, numerator: 2, scans: .libjpeg).pixels ? true : false)
    }
}
