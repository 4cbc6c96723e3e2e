import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// Video and audio checked by libavformat before anything is stored (`Tests/Fixtures/video`,
/// made by its make.sh with the ffmpeg CLI, and the Samples' clips).
@Suite("Container checks")
struct MediaContainerTests {
    static let directory = Fixtures.root + "/video"

    static func check(_ path: String, limits: ImageLimits = .default) throws(AttacheError) -> ContainerInfo {
        let bytes = try? MediaBytes(contentsOfFile: path)
        guard let bytes else { throw AttacheError(.ioError, "cannot read \(path)") }
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        return try MediaContainer.check(bytes, kind: kind, limits: limits)
    }

    static func code(_ path: String, limits: ImageLimits = .default) -> AttacheError.Code? {
        do {
            _ = try check(path, limits: limits)
            return nil
        } catch { return error.code }
    }

    @Test("an H.264/AAC MP4 is read: streams, size, rate, duration, where its index is")
    func playable() throws {
        let first = try Self.check(Self.directory + "/h264.mp4")
        #expect(first.videoCodec == "h264" && first.width == 160 && first.height == 120 && first.audioCodec == "aac")
        #expect(first.frameRate.map { abs($0 - 25) < 0.01 } == true && first.indexFirst)
        #expect(first.duration.map { abs($0 - 2) < 0.1 } == true, "\(String(describing: first.duration))")
        let last = try Self.check(Self.directory + "/h264-index-last.mp4")
        #expect(last.videoCodec == "h264" && !last.indexFirst)
    }

    @Test(
        "every sample clip and tone Attache accepts passes the check",
        arguments: [
            "clip.mp4", "clip.m4v", "clip.avi", "clip-mpeg1.mpg", "clip-mpeg2.mpg", "clip.m2v", "tone.mp3",
            "tone-frames.mp3", "tone.wav", "tone.aiff", "tone.aifc", "tone.m4a",
        ])
    func samples(name: String) throws {
        let info = try Self.check(Paths.samples + "/" + name)
        #expect(info.streams >= 1, "\(name): \(info)")
    }

    @Test("a cut MP4, codecs an iPhone cannot play, and limits get typed errors")
    func refusals() {
        // Cut after its index: the index points past the end; cut before it: no index at all.
        #expect(Self.code(Self.directory + "/cut-after-index.mp4") == .truncated)
        #expect(Self.code(Self.directory + "/cut-before-index.mp4") == .truncated)
        #expect(Self.code(Self.directory + "/vp9.mp4") == .unsupportedVariant)
        #expect(Self.code(Self.directory + "/opus.m4a") == .unsupportedVariant)
        // 40 streams, over the default 16.
        #expect(Self.code(Self.directory + "/many-streams.mp4") == .tooLarge)
        var wide = ImageLimits.default
        wide.maxStreams = 64
        // Within a wider limit it is read: 40 audio streams and no video, which a video kind needs.
        #expect(Self.code(Self.directory + "/many-streams.mp4", limits: wide) == .unsupportedVariant)
        var short = ImageLimits.default
        short.maxMediaSeconds = 1
        #expect(Self.code(Self.directory + "/h264.mp4", limits: short) == .tooLarge)
        var small = ImageLimits.default
        small.maxVideoPixels = 100 * 100
        #expect(Self.code(Self.directory + "/h264.mp4", limits: small) == .tooManyPixels)
        // Every cut of the MP4: a typed error or a whole check, never a crash.
        let whole = [UInt8](FileManager.default.contents(atPath: Self.directory + "/h264.mp4") ?? Data())
        #expect(whole.count > 1000)
        for cut in stride(from: 16, to: whole.count, by: max(1, whole.count / 41)) {
            do {
                _ = try MediaContainer.check(MediaBytes(Array(whole.prefix(cut))), kind: .mp4)
            } catch {
                #expect(error.code != .internalError, "cut at \(cut): \(error)")
            }
        }
    }
}
