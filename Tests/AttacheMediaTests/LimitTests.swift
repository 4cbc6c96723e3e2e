import AttacheBase
import AttacheTestSupport
import AttacheWork
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

@Suite("Limits trip from the header, before any large allocation")
struct LimitTests {
    /// The CPU time `body` spent on this thread (a busy machine does not inflate it).
    static func elapsed(_ body: () -> Void) -> Duration {
        let start = threadCPUTime()
        body()
        return threadCPUTime() - start
    }

    /// Pillow's hopper.jpg with its SOF patched to declare `width` x `height`.
    static func hopper(declaring width: Int, _ height: Int) throws -> (bytes: [UInt8], sof: Int) {
        var bytes = try Corpus.bytes("jpeg-variants/pillow__hopper.jpg")
        let sof = try #require(jpegMarkerOffset(bytes, 0xC0))
        patch16(&bytes, at: sof + 5, height)
        patch16(&bytes, at: sof + 7, width)
        return (bytes, sof)
    }

    @Test("a JPEG declaring 30000x30000 is refused as too_many_pixels in milliseconds")
    func jpegPixelBomb() throws {
        var (bytes, sof) = try Self.hopper(declaring: 30000, 30000)
        var error: AttacheError?
        let time = Self.elapsed { error = failure { try ImageProcessor.render(MediaBytes(bytes)) } }
        #expect(error?.code == .tooManyPixels)
        #expect(error?.limit?.rawValue == "max_pixels")
        #expect(time < .milliseconds(50))
        patch16(&bytes, at: sof + 5, 60000)
        let wide = failure { try ImageProcessor.inspect(MediaBytes(bytes)) }
        #expect(wide?.code == .dimensionsTooLarge)
        #expect(wide?.limit?.rawValue == "max_dimension")
    }

    @Test("a PNG IHDR of 100000x100000 is refused as dimensions_too_large; 20000x20000 as too_many_pixels")
    func pngBombs() {
        let huge = failure { try ImageProcessor.inspect(MediaBytes(pngHeaderOnly(width: 100_000, height: 100_000))) }
        #expect(huge?.code == .dimensionsTooLarge)
        let many = failure { try ImageProcessor.inspect(MediaBytes(pngHeaderOnly(width: 20_000, height: 20_000))) }
        #expect(many?.code == .tooManyPixels)
        #expect(many?.limit?.rawValue == "max_pixels")
        // Within limits the same header-only file fails later, for lack of image data.
        let small = failure { try ImageProcessor.inspect(MediaBytes(pngHeaderOnly(width: 20, height: 20))) }
        #expect(small?.code == .corruptData || small?.code == .truncated)
    }

    @Test("a raised pixel limit lets a large header through to the next check")
    func limitsAreConfigurable() throws {
        let bytes = try Self.hopper(declaring: 3000, 3000).bytes
        let strict = DecodeLimits(maxPixels: 1_000_000)
        #expect(failure { try ImageProcessor.inspect(MediaBytes(bytes), limits: strict) }?.code == .tooManyPixels)
        let error = failure { try ImageProcessor.inspect(MediaBytes(bytes)) }
        #expect(error?.code != .tooManyPixels)
    }

    @Test("progressive JPEG coefficients count against the decoder-memory cap")
    func decoderMemory() throws {
        let bytes = try MediaBytes(Fixtures.bytes("progressive.jpg"))
        #expect(try ImageProcessor.inspect(bytes).isProgressive)
        let error = failure { try ImageProcessor.inspect(bytes, limits: DecodeLimits(maxDecoderMemory: 100_000)) }
        #expect(error?.code == .decoderMemoryExceeded)
        #expect(error?.limit?.rawValue == "max_decoder_memory")
    }

    @Test("a JPEG refused from its header closes its decoder")
    func refusedJPEGIsClosed() throws {
        let bytes = try MediaBytes(Fixtures.bytes("progressive.jpg"))
        let strict = DecodeLimits(maxPixels: 1_000)
        let before = att_jpeg_open_decoders()
        for _ in 0..<2_000 {
            #expect(
                failure { _ = try JPEGDecoder(bytes: bytes, limits: strict, deadline: .none) }?.code == .tooManyPixels)
        }
        // Other suites open and close JPEG decoders at the same time: a few may be open.
        #expect(att_jpeg_open_decoders() - before < 100)
    }

    @Test("progressive scans beyond the limit are refused")
    func scanLimit() throws {
        let bytes = try MediaBytes(Fixtures.bytes("progressive.jpg"))
        let error = failure { try ImageProcessor.inspect(bytes, limits: DecodeLimits(maxScans: 3)) }
        #expect(error?.code == .tooManyScans)
        #expect(error?.limit?.rawValue == "max_scans")
    }

    @Test("interlaced PNG buffers count against the decoder-memory cap")
    func interlacedPNG() throws {
        let bytes = try MediaBytes(contentsOfFile: Corpus.root + "/pngsuite/basi6a08.png")
        #expect(try ImageProcessor.inspect(bytes).isProgressive)
        let error = failure { try ImageProcessor.inspect(bytes, limits: DecodeLimits(maxDecoderMemory: 1000)) }
        #expect(error?.code == .decoderMemoryExceeded)
    }

    @Test("12-bit and lossless JPEG are unsupported_variant")
    func unsupportedJPEG() throws {
        let original = try Corpus.bytes("jpeg-variants/pillow__hopper.jpg")
        let sof = try #require(jpegMarkerOffset(original, 0xC0))
        var twelveBit = original
        twelveBit[sof + 4] = 12
        #expect(failure { try ImageProcessor.inspect(MediaBytes(twelveBit)) }?.code == .unsupportedVariant)
        var lossless = original
        lossless[sof + 1] = 0xC3
        #expect(failure { try ImageProcessor.inspect(MediaBytes(lossless)) }?.code == .unsupportedVariant)
    }

    @Test("a passed deadline stops decoding with timed_out")
    func deadline() throws {
        let bytes = try MediaBytes(contentsOfFile: Corpus.root + "/exif-orientation/Landscape_1.jpg")
        let error = failure { try ImageProcessor.inspect(bytes, timeBudget: .nanoseconds(1)) }
        #expect(error?.code == .timedOut)
    }
}
