import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheMedia

/// Random animations (seeded) written with giflib: the indexed screen must show exactly what
/// the RGBA screen shows, frame by frame, for every mix of disposal, transparency and
/// palette size the indexed screen accepts.
@Suite struct GIFScreenTests {
    static func animation(seed: UInt64) throws -> [UInt8] {
        var random = SplitMix(seed: seed)
        let width = 1 + random.below(40)
        let height = 1 + random.below(30)
        let colors = [2, 4, 16, 256][random.below(4)]
        let palette = (0..<(colors * 3)).map { _ in UInt8(random.below(256)) }
        // 0: every frame shares one transparent index; 1: some frames have none or another;
        // 2: none at all.
        let mode = random.below(3)
        let shared = random.below(colors)
        var frames: [GIFTestFrame] = []
        for _ in 0..<(1 + random.below(6)) {
            let left = random.below(width)
            let top = random.below(height)
            let w = 1 + random.below(width - left)
            let h = 1 + random.below(height - top)
            let transparent: Int =
                switch mode {
                case 0: shared
                case 1: random.below(3) == 0 ? -1 : random.below(colors)
                default: -1
                }
            let indices = (0..<(w * h)).map { _ in
                UInt8(transparent >= 0 && random.below(3) == 0 ? transparent : random.below(colors))
            }
            frames.append(
                GIFTestFrame(
                    left: left, top: top, width: w, height: h, indices: indices, delay: 5,
                    disposal: random.below(4), transparent: transparent))
        }
        return try writeGIF(width: width, height: height, palette: palette, frames: frames)
    }

    @Test func indexedScreenShowsWhatRGBAShows() throws {
        var indexed = 0
        for seed in UInt64(1)...300 {
            let bytes = MediaBytes(try Self.animation(seed: seed))
            let info = try ImageProcessor.scanGIF(bytes)
            guard info.screenBlank != nil else { continue }
            indexed += 1
            let decoder = try GIFDecoder(bytes: bytes, limits: .default)
            var rgba = GIFCompositor(width: info.width, height: info.height)
            var indices = GIFCompositor(screenOf: info)
            var frame = 0
            while let next = try decoder.next() {
                rgba.draw(next)
                indices.draw(next)
                let a = PixelImage(width: info.width, height: info.height, channels: 4, pixels: rgba.canvas)
                let b = PixelImage(width: info.width, height: info.height, channels: 4, pixels: indices.rgba)
                #expect(frameHash(a) == frameHash(b), "seed \(seed) frame \(frame)")
                frame += 1
            }
            #expect(frame == info.frames)
        }
        // Modes 0 and 2 always qualify, mode 1 when the palette has room for a blank index.
        #expect(indexed >= 200, "only \(indexed) of 300 animations used the indexed screen")
    }
}
