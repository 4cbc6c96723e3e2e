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

    static func check(_ path: String, limits: DecodeLimits = .default) throws(AttacheError) -> ContainerInfo {
        let bytes = try? MediaBytes(contentsOfFile: path)
        guard let bytes else { throw AttacheError(.ioError, "cannot read \(path)") }
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        return try MediaContainer.check(bytes, kind: kind, limits: limits)
    }

    static func code(_ path: String, limits: DecodeLimits = .default) -> AttacheError.Code? {
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
        var wide = DecodeLimits.default
        wide.maxStreams = 64
        // Within a wider limit it is read: 40 audio streams and no video, which a video kind needs.
        #expect(Self.code(Self.directory + "/many-streams.mp4", limits: wide) == .unsupportedVariant)
        var short = DecodeLimits.default
        short.maxMediaSeconds = 1
        #expect(Self.code(Self.directory + "/h264.mp4", limits: short) == .tooLarge)
        var small = DecodeLimits.default
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

    /// The top-level boxes of ISO media (or the children of one box's payload): type and range.
    static func boxes(_ data: [UInt8], in range: Range<Int>) -> [(type: String, range: Range<Int>)] {
        var found: [(String, Range<Int>)] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            let size = data[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, at + size <= range.upperBound else { break }
            found.append((String(decoding: data[at + 4..<at + 8], as: UTF8.self), at..<at + size))
            at += size
        }
        return found
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = payload.count + 8
        return [UInt8(size >> 24 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            + Array(type.utf8) + payload
    }

    @Test("sample tables declaring 0x7FFFFFFF entries in a 6 KB MP4 are corrupt_data, refused before they are paid")
    func tablesThatLie() throws {
        let whole = [UInt8](try #require(FileManager.default.contents(atPath: Self.directory + "/h264.mp4")))
        // The entry count's offset after each box's type: full-box header, then (stsz) a sample size.
        for (type, offset) in [("stsz", 12), ("stco", 8), ("stts", 8), ("stsc", 8)] {
            let at = try #require((0..<whole.count - 4).first { Array(whole[$0..<$0 + 4]) == Array(type.utf8) })
            var lying = whole
            for k in 0..<4 { lying[at + offset + k] = k == 0 ? 0x7F : 0xFF }
            let heap = heapInUse()
            let error = #expect(throws: AttacheError.self) {
                _ = try MediaContainer.check(MediaBytes(lying), kind: .mp4)
            }
            #expect(error?.code == .corruptData, "\(type): \(String(describing: error))")
            // The table declares 2^31 entries (2 GiB and more); the heap is the process's, where
            // other suites allocate beside this one, so the bound is an eighth of the smallest
            // declared size, not the few bytes this check holds.
            let grown = heapInUse() - heap
            #expect(grown < 256 << 20, "\(type): \(grown >> 20) MB kept, of a declared 2 GiB or more")
        }
    }

    @Test("an AIFF whose COMM chunk says 0xFFFFFFFF frames over 1,000 bytes of sound is corrupt_data")
    func aiffFramesThatLie() throws {
        func be(_ value: UInt32) -> [UInt8] {
            (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32($0))) }
        }
        func aiff(frames: UInt32) -> [UInt8] {
            // Mono, 16-bit, 8000 Hz (an 80-bit extended float), 500 frames of silence.
            let comm =
                Array("COMM".utf8) + be(18) + [0, 1] + be(frames) + [0, 16]
                + [0x40, 0x0B, 0xFA, 0, 0, 0, 0, 0, 0, 0]
            let ssnd = Array("SSND".utf8) + be(8 + 1000) + be(0) + be(0) + [UInt8](repeating: 0, count: 1000)
            return Array("FORM".utf8) + be(UInt32(4 + comm.count + ssnd.count)) + Array("AIFF".utf8) + comm + ssnd
        }
        let info = try MediaContainer.check(MediaBytes(aiff(frames: 500)), kind: .aiff)
        #expect(info.duration.map { abs($0 - 0.0625) < 0.01 } == true, "\(String(describing: info.duration))")
        let error = #expect(throws: AttacheError.self) {
            _ = try MediaContainer.check(MediaBytes(aiff(frames: 0xFFFF_FFFF)), kind: .aiff)
        }
        #expect(error?.code == .corruptData, "\(String(describing: error))")
    }

    @Test("an MP4 whose moov declares 2,000 tracks is refused by their count, before libavformat reads them")
    func tracksCountedFirst() throws {
        let whole = [UInt8](FileManager.default.contents(atPath: Self.directory + "/h264.mp4") ?? Data())
        let top = Self.boxes(whole, in: 0..<whole.count)
        let moov = try #require(top.first { $0.type == "moov" })
        let children = Self.boxes(whole, in: moov.range.lowerBound + 8..<moov.range.upperBound)
        let trak = try #require(children.first { $0.type == "trak" })
        var inner: [UInt8] = []
        for child in children where child.type != "trak" { inner += whole[child.range] }
        for _ in 0..<2000 { inner += whole[trak.range] }
        var forged: [UInt8] = []
        for box in top { forged += box.type == "moov" ? Self.box("moov", inner) : Array(whole[box.range]) }
        #expect(forged.count > 2000 * trak.range.count)
        do {
            _ = try MediaContainer.check(MediaBytes(forged), kind: .mp4)
            Issue.record("2,000 tracks were accepted")
        } catch {
            #expect(error.code == .tooLarge && error.limit == .maxStreams, "\(error)")
            #expect(error.message.contains("2000 tracks"), "\(error.message)")
        }
    }

    @Test("frames the decoder could not hold within max_decoder_memory are refused from the header's size")
    func decoderMemoryFromTheHeader() throws {
        // 160×120 H.264: six frames of 1.5 bytes a pixel, 172,800 bytes.
        var small = DecodeLimits.default
        small.maxDecoderMemory = 100_000
        do {
            _ = try Self.check(Self.directory + "/h264.mp4", limits: small)
            Issue.record("a decoder over its memory cap was accepted")
        } catch {
            #expect(error.code == .decoderMemoryExceeded && error.limit == .maxDecoderMemory, "\(error)")
            #expect(error.message.contains("160x120 h264 frames"), "\(error.message)")
        }
        small.maxDecoderMemory = 200_000
        let info = try Self.check(Self.directory + "/h264.mp4", limits: small)
        #expect(info.decoderBytes == 160 * 120 * 3 / 2 * 6)
    }

    @Test("an MP4 whose header says it is short is measured by its packets: longer than the limit, too_large")
    func durationFromThePackets() throws {
        // Every duration the header gives (mvhd, tkhd, mdhd) set to one unit: 2 s of packets.
        var whole = [UInt8](FileManager.default.contents(atPath: Self.directory + "/h264.mp4") ?? Data())
        func patch(_ range: Range<Int>) {
            for child in Self.boxes(whole, in: range.lowerBound + 8..<range.upperBound) {
                let body = child.range.lowerBound + 8
                let version = whole[body]
                // version 0: created, modified (4 each), then timescale and duration (mvhd,
                // mdhd); tkhd: created, modified, track id, reserved, then duration.
                let at: Int? =
                    switch child.type {
                    case "mvhd", "mdhd": body + 4 + (version == 1 ? 16 : 8) + 4
                    case "tkhd": body + 4 + (version == 1 ? 16 : 8) + 8
                    default: nil
                    }
                if let at {
                    let width = version == 1 ? 8 : 4
                    for k in 0..<width { whole[at + k] = k == width - 1 ? 1 : 0 }
                }
                if ["trak", "mdia"].contains(child.type) { patch(child.range) }
            }
        }
        let moov = try #require(Self.boxes(whole, in: 0..<whole.count).first { $0.type == "moov" })
        patch(moov.range)
        var short = DecodeLimits.default
        short.maxMediaSeconds = 1.5
        do {
            let info = try MediaContainer.check(MediaBytes(whole), kind: .mp4, limits: short)
            Issue.record("2 s of packets passed a 1.5 s limit: \(info)")
        } catch {
            #expect(error.code == .tooLarge && error.limit == .maxMediaSeconds, "\(error)")
        }
        short.maxMediaSeconds = 3
        _ = try MediaContainer.check(MediaBytes(whole), kind: .mp4, limits: short)
    }
}
