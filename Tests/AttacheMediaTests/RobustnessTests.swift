import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheMedia

@Suite("Truncated and corrupted input never crashes")
struct RobustnessTests {
    static let files = Corpus.jpegAndPNG.map(\.file)

    @Test("every truncation is refused with a typed error or decodes whole", arguments: files)
    func truncations(_ file: String) throws {
        let original = try Corpus.bytes(file)
        let fractions = [0.0, 0.1, 0.33, 0.5, 0.75, 0.9, 0.99]
        var lengths = Set(fractions.map { Int(Double(original.count) * $0) })
        lengths.formUnion([1, 2, 3, 7, 8, 20, max(0, original.count - 1)])
        for length in lengths.sorted() where length < original.count {
            let cut = MediaBytes(original.prefix(length))
            switch Result(catching: { () throws(AttacheError) in try ImageProcessor.inspect(cut) }) {
            case .success(let info):
                // A decode of a cut file is only acceptable when the cut lost nothing but
                // the end marker; it must still report the whole image.
                let whole = try? ImageProcessor.inspect(MediaBytes(original))
                #expect(whole?.width == info.width && whole?.height == info.height, "length \(length)")
            case .failure(let error):
                #expect(!error.code.rawValue.isEmpty)
            }
        }
    }

    @Test("flipped bytes are refused or decoded, never a crash", arguments: files)
    func flips(_ file: String) throws {
        let original = try Corpus.bytes(file)
        guard original.count > 16 else { return }
        var generator = SplitMix(seed: UInt64(truncatingIfNeeded: file.hashValue & 0x7fff_ffff) | 1)
        for _ in 0..<8 {
            var damaged = original
            for _ in 0..<4 {
                let at = Int(generator.next() % UInt64(damaged.count))
                damaged[at] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
            }
            let bytes = MediaBytes(damaged)
            let spec = RenditionSpec(maxSide: 32)
            switch Result(catching: { () throws(AttacheError) in try ImageProcessor.render(bytes, spec: spec) }) {
            case .success(let rendition):
                #expect(rendition.width >= 1 && rendition.height >= 1)
            case .failure(let error):
                #expect(!error.message.isEmpty)
            }
        }
    }
}
