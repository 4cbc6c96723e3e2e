import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

@Suite struct ValidateTests {
    static let media = Paths.samples

    static let expected: [(String, MediaKind?)] = [
        ("gray.jpg", .jpeg), ("palette-transparent.png", .png), ("tone.aiff", .aiff), ("tone.aifc", .aifc),
        ("tone.wav", .wav), ("tone.mp3", .mp3), ("tone-frames.mp3", .mp3), ("tone.m4a", .m4a),
        ("clip-mpeg1.mpg", .mpeg), ("clip-mpeg2.mpg", .mpeg2), ("clip.m2v", .mpeg2), ("clip.mp4", .mp4),
        ("clip.m4v", .m4v), ("clip.avi", .avi), ("tone.aac", nil), ("clip.mov", .mov), ("page-named-as.png", nil),
    ]

    @Test(arguments: expected.map(\.0))
    func everyKindFromARealFile(name: String) throws {
        let bytes = try #require(FileManager.default.contents(atPath: Self.media + "/" + name))
        let expected = Self.expected.first { $0.0 == name }!.1
        switch Sniffer.sniff(Array(bytes)) {
        case .accepted(let kind): #expect(kind == expected, "\(name) sniffed as \(kind)")
        case let other: #expect(expected == nil, "\(name): \(other)")
        }
    }

    @Test func categoriesAndCaps() {
        #expect(MediaKind.allCases.filter { $0.category == .image } == [.jpeg, .png, .gif, .webp, .heic, .avif, .jxl])
        #expect(Set(MediaKind.allCases.map(\.uti)).count == MediaKind.allCases.count)
        let limits = MediaLimits()
        #expect(limits.maxBytes(for: .jpeg) == 10_000_000)
        #expect(limits.maxBytes(for: .mp3) == 5_000_000)
        #expect(limits.maxBytes(for: .mp4) == 50_000_000)
    }

    @Test("a GIF or a WebP whose VP8X header says animation is an animation, read under the animation cap")
    func animationsAndTheirCap() throws {
        func bytes(_ path: String) throws -> [UInt8] {
            try #require(FileManager.default.contents(atPath: Paths.fixtures + path)).map { $0 }
        }
        let animated = try bytes("/webp/animated.webp")
        #expect(Sniffer.isAnimation(animated, kind: .webp))
        for still in ["/webp/lossy.webp", "/webp/lossy-alpha.webp", "/webp/lossless-alpha.webp"] {
            #expect(!Sniffer.isAnimation(try bytes(still), kind: .webp), "\(still)")
        }
        // The flag alone decides, and a header cut before it is not an animation.
        var flagOff = animated
        flagOff[20] &= ~0x02
        #expect(!Sniffer.isAnimation(flagOff, kind: .webp))
        #expect(!Sniffer.isAnimation(animated.prefix(20), kind: .webp))
        #expect(Sniffer.isAnimation(Array("GIF89a".utf8), kind: .gif))
        #expect(!Sniffer.isAnimation(animated, kind: .png))
        let sources = MediaLimits().forSources
        #expect(sources.maxBytes(for: .webp, animated: true) == 50_000_000)
        #expect(sources.maxBytes(for: .webp) == 10_000_000)
        #expect(MediaLimits().maxBytes(for: .gif, animated: true) == 10_000_000, "no animation cap unless asked")
    }

    /// The sniffer agrees with the corpus manifest's `format` column on every file.
    @Test func sniffAgreesWithTheManifest() throws {
        var disagreements: [String] = []
        #expect(Corpus.rows.count > 390, "the manifest was read")
        for row in Corpus.rows {
            let bytes = try Corpus.bytes(row.file)
            let sniffed: String
            switch Sniffer.sniff(bytes) {
            case .accepted(let kind): sniffed = kind.rawValue.uppercased()
            case .refused, .needMoreBytes, .unknown: sniffed = "unknown"
            }
            if sniffed != row.format { disagreements.append("\(row.file): manifest \(row.format), sniffed \(sniffed)") }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
    }
}
