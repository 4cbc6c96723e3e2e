import AttacheBase
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheMedia

/// Every animated source answers one shape (``AnimationSource``), and what is made of it follows
/// one set of rules whatever its format.
@Suite struct AnimationTests {
    static func sources() throws -> [(name: String, bytes: MediaBytes)] {
        [
            ("gif", try MediaBytes(contentsOfFile: Corpus.root + "/gif-edge-cases/pillow__iss634.gif")),
            ("webp", MediaBytes(try WebPTests.file("moving-alpha.webp"))),
            ("jxl", MediaBytes(try JXLTests.file("animated.jxl"))),
        ]
    }

    @Test("each animated kind is read by its animation source, and a still WebP by none")
    func registry() throws {
        for (name, bytes) in try Self.sources() {
            let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
            let type = try #require(ImageProcessor.animation(kind, bytes), "\(name)")
            let source = try ImageProcessor.openAnimation(type, bytes, limits: .default, deadline: .none)
            #expect(source.info.kind == kind && source.info.frames > 1, "\(name)")
            // The shape's frames agree with what its header said.
            var (frames, duration) = (0, 0)
            try source.forEachFrame { (_, delay) in
                (frames, duration) = (frames + 1, duration + delay)
                return true
            }
            #expect(frames == source.info.frames && duration == source.info.duration, "\(name)")
            if kind == .gif { #expect(ImageProcessor.stillDecoder(kind) == nil, "a GIF is always an animation") }
        }
        let still = MediaBytes(try WebPTests.file("lossy.webp"))
        #expect(ImageProcessor.animation(.webp, still) == nil)
        #expect(ImageProcessor.stillDecoder(.webp) != nil)
    }

    @Test("past every byte budget, any animation becomes a still of its poster frame")
    func oneFallbackRule() throws {
        for (name, bytes) in try Self.sources() {
            var spec = RenditionSpec(maxSide: 80)
            spec.gifMaxBytes = 10
            let rendition = try ImageProcessor.render(bytes, spec: spec)
            #expect([.png, .jpeg].contains(rendition.kind) && rendition.frames == 1, "\(name): \(rendition.kind)")
            #expect(rendition.actions.last?.contains("a still of frame") == true, "\(name): \(rendition.actions)")
            let canvas = try ImageProcessor.probe(bytes)
            #expect(
                max(rendition.width, rendition.height) == min(80, max(canvas.width, canvas.height)),
                "\(name): the still is at the side allowed")
            let decoded = try ImageProcessor.decode(MediaBytes(rendition.data)).image
            #expect(decoded.width == rendition.width && decoded.height == rendition.height)
            // The same still `renderStill` makes.
            let asked = try ImageProcessor.renderStill(bytes, spec: spec)
            #expect(asked.kind == rendition.kind && asked.data == rendition.data, "\(name)")
        }
    }

    @Test("with video off, an animation over the budgets is attached as its still, not refused")
    func stillWithoutVideo() throws {
        for (name, bytes) in try Self.sources() {
            var spec = RenditionSpec(maxSide: 80)
            spec.gifMaxBytes = 10
            spec.video.enabled = false
            let media = try MediaValidator.validate(bytes, limits: MediaLimits().forSources)
            let out = try MediaTransform.apply(media, TransformRequest(spec: spec))
            #expect([.png, .jpeg].contains(out.kind) && out.frames == 1, "\(name): \(out.kind)")
        }
    }

    @Test("an animation's first frame is what decode gives, at the size asked")
    func firstFrame() throws {
        for (name, bytes) in try Self.sources() {
            let (image, info) = try ImageProcessor.decode(bytes, spec: RenditionSpec(maxSide: 40))
            #expect(max(image.width, image.height) == 40 && image.channels == 4, "\(name)")
            #expect(info.frames > 1, "\(name)")
        }
    }
}
