import AttacheBase
import AttacheTestSupport
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

/// jpegli's quantisation tables, which `auto` writes: luma and chroma apart, steeper (not only
/// coarser) as the quality falls, chroma halved at 4:2:0, on a quality scale where a number
/// gives about the score Robidoux's tables give at it, in fewer bytes.
struct JpegliTablesTests {
    static func tables(_ quality: Int32, halfChroma: Bool) -> (luma: [UInt32], chroma: [UInt32]) {
        var luma = [UInt32](repeating: 0, count: 64)
        var chroma = [UInt32](repeating: 0, count: 64)
        att_jpeg_jpegli_tables(quality, halfChroma ? 1 : 0, &luma, &chroma)
        return (luma, chroma)
    }

    @Test func stepsFallAsTheQualityRisesAndSteepenAsItFalls() {
        var previous = Self.tables(1, halfChroma: true)
        for quality in Int32(2)...100 {
            let current = Self.tables(quality, halfChroma: true)
            #expect(zip(current.luma, previous.luma).allSatisfy { $0 <= $1 }, "luma at \(quality)")
            #expect(zip(current.chroma, previous.chroma).allSatisfy { $0 <= $1 }, "chroma at \(quality)")
            #expect((current.luma + current.chroma).allSatisfy { (1...255).contains($0) }, "at \(quality)")
            previous = current
        }
        // The highest frequency against a low one jpegli sets (u + v = 3; the lower ones are
        // Robidoux's): a steeper table at a lower quality.
        let (high, low) = (Self.tables(90, halfChroma: true).luma, Self.tables(50, halfChroma: true).luma)
        #expect(Double(low[63]) / Double(low[3]) > Double(high[63]) / Double(high[3]) * 1.2, "\(low) \(high)")
        // The six lowest luma steps are no coarser than Robidoux's at the quality (its table there,
        // scaled as libjpeg scales it).
        for quality in [30, 50, 80, 95] {
            let luma = Self.tables(Int32(quality), halfChroma: true).luma
            let scale = Double(quality < 50 ? 5000 / quality : 200 - 2 * quality) / 100
            for (k, base) in [(0, 16.0), (1, 16), (2, 16), (8, 16), (9, 17), (16, 16)] {
                #expect(Double(luma[k]) <= (base * scale + 0.5).rounded(.down), "quality \(quality), step \(k)")
            }
        }
        // Chroma at 4:2:0 about half its 4:4:4 steps; luma the same for both.
        let (half, full) = (Self.tables(80, halfChroma: true), Self.tables(80, halfChroma: false))
        #expect(half.luma == full.luma)
        let ratio = Double(half.chroma.reduce(0, +)) / Double(full.chroma.reduce(0, +))
        #expect(abs(ratio - 0.5) < 0.02, "\(ratio)")
    }

    /// On the sample photos, jpegli's tables at a quality number score within a few points of
    /// Robidoux's at it (the scale the search's first guess is made on), and reach Robidoux's score
    /// at 80 in fewer bytes (read along jpegli's own curve of quality against score).
    @Test func aPhotoReachesRobidouxsScoreInFewerBytes() throws {
        var (robidouxBytes, jpegliBytes) = (0.0, 0.0)
        for name in ["waterfall-rotated.jpg", "portrait-progressive.jpg"] {
            let image = try ThoroughEncoderTests.photo(name, side: 1024)
            let judge = try #require(try QualitySearch.Judge(image))
            let robidoux = try Encoders.jpeg(image, quality: 80, tables: .robidoux)
            let target = try judge.score(robidoux, .jpeg)
            var curve: [(score: Double, bytes: Double)] = []
            for quality in stride(from: 60, through: 95, by: 5) {
                let data = try Encoders.jpeg(image, quality: quality, tables: .jpegli)
                curve.append((try judge.score(data, .jpeg), Double(data.count)))
                if quality == 80 { #expect(abs(curve.last!.score - target) < 4, "\(name): \(curve.last!) \(target)") }
            }
            curve.sort { $0.score < $1.score }
            let above = try #require(curve.firstIndex { $0.score >= target }, "\(name): \(curve)")
            let below = try #require(above > 0 ? curve[above - 1] : nil, "\(name): \(curve)")
            let t = (target - below.score) / (curve[above].score - below.score)
            let bytes = below.bytes + t * (curve[above].bytes - below.bytes)
            print("jpegli: \(name) \(Int(bytes)) bytes at Robidoux's 80 (\(target)), Robidoux \(robidoux.count)")
            (robidouxBytes, jpegliBytes) = (robidouxBytes + Double(robidoux.count), jpegliBytes + bytes)
        }
        #expect(jpegliBytes < robidouxBytes * 0.99, "\(jpegliBytes) against \(robidouxBytes)")
    }
}
