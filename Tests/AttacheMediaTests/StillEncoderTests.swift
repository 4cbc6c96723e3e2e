import AttacheBase
import Testing

@testable import AttacheMedia

/// The output formats' encoders behind one registry: each writes its own format, each format has
/// one encoder, and a lossy one's encodes read back to be scored.
@Suite struct StillEncoderTests {
    /// A smooth colour gradient with a few hard edges, `channels` a pixel.
    static func picture(channels: Int) -> PixelImage {
        let (width, height) = (96, 64)
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let edge: UInt8 = (x / 16 + y / 16) % 2 == 0 ? 40 : 0
                let rgb = [UInt8(x * 2) &+ edge, UInt8(y * 3), UInt8((x + y) % 256)]
                pixels += channels == 4 ? rgb + [UInt8(128 + x)] : rgb
            }
        }
        return PixelImage(width: width, height: height, channels: channels, pixels: pixels)
    }

    @Test("every encoder writes the format it says, and one encoder writes each")
    func eachEncoderWritesItsFormat() throws {
        let kinds = StillEncoders.all.map { $0.kind }
        #expect(Set(kinds).count == kinds.count && Set(kinds) == [.jpeg, .png, .webp])
        for encoder in StillEncoders.all {
            let data = try encoder.encode(Self.picture(channels: 3), quality: 80, options: EncodeOptions())
            #expect(try Sniffer.kind(of: data) == encoder.kind, "\(encoder.kind)")
            #expect(StillEncoders.of(encoder.kind) == encoder)
        }
        #expect(StillEncoders.of(.gif) == nil && StillEncoders.lossy(.png) == nil)
        // What a still is written as has an encoder, whatever the spec asks.
        for format in [RenditionSpec.OutputFormat.auto, .jpeg, .webp] {
            for channels in [3, 4] {
                let kind = ImageProcessor.outputKind(
                    source: .heic, image: Self.picture(channels: channels), format: format)
                #expect(StillEncoders.of(kind) != nil, "\(format) \(channels)")
            }
        }
    }

    @Test("a lossy encoder's encodes read back and score higher with quality")
    func lossyEncodesReadBackAndScore() throws {
        for encoder in [JPEGOutput.self, WebPOutput.self] as [any LossyEncoder.Type] {
            let image = Self.picture(channels: 3)
            let judge = try #require(try QualitySearch.Judge(image))
            let low = try judge.score(try encoder.encode(image, quality: 30, options: EncodeOptions()), encoder.kind)
            let high = try judge.score(try encoder.encode(image, quality: 95, options: EncodeOptions()), encoder.kind)
            #expect(high > low + 5, "\(encoder.kind): \(low) at 30, \(high) at 95")
        }
        // WebP keeps alpha, so its read-back does; JPEG's has none.
        #expect(WebPOutput.readBackChannels(of: Self.picture(channels: 4)) == 4)
        #expect(JPEGOutput.readBackChannels(of: Self.picture(channels: 4)) == 3)
    }
}
