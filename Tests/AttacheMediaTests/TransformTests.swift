import AttacheBase
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheMedia

/// The transform stage's one entry point.
@Suite struct TransformTests {
    /// A deadline that passed less than a second ago (a negative budget whose whole seconds are
    /// 0) is a deadline in the past, not a trap; so are longer-past and huge ones.
    @Test func budgetsAlreadySpentAreDeadlinesInThePast() {
        for budget: Duration in [.milliseconds(-1), .nanoseconds(-1), .milliseconds(-999), .seconds(-3), .zero] {
            #expect(WorkDeadline(budget: budget).hasExpired, "\(budget)")
            #expect(WorkDeadline(.now + budget).hasExpired, "\(budget)")
        }
        #expect(!WorkDeadline(budget: .seconds(60)).hasExpired)
        #expect(!WorkDeadline(budget: .seconds(Int64.max / 2)).hasExpired)
    }

    @Test func eachKindTakesItsPath() throws {
        let deadline = WorkDeadline.none
        for (name, kind) in [("gray.jpg", MediaKind.jpeg), ("palette-transparent.png", .png), ("tone.wav", .wav)] {
            let bytes = try MediaBytes(contentsOfFile: Paths.samples + "/" + name)
            let validated = try MediaValidator.validate(bytes)
            #expect(validated.kind == kind)
            let out = try MediaTransform.apply(
                validated, TransformRequest(spec: RenditionSpec(maxSide: 64), deadline: deadline))
            #expect(out.kind == kind)
            if kind.category == .image {
                #expect(max(out.width ?? 0, out.height ?? 0) == 64 && out.frames == 1)
                #expect(try Sniffer.kind(of: out.bytes.prefix(Sniffer.prefixLength)) == kind)
            } else {
                #expect(out.bytes === bytes, "audio is stored as validated, not copied")
            }
        }
    }

    /// The small rendition: same kind, longest side as asked, upright like the rendition (the
    /// rotated sample's shape is kept), decodable; none for an image already that small.
    @Test func aSmallRenditionComesFromTheSamePixels() throws {
        let cases = [
            ("waterfall-rotated.jpg", MediaKind.jpeg), ("rgba-interlaced.png", .png), ("animated-chi.gif", .gif),
        ]
        for (name, kind) in cases {
            let path = Paths.samples + "/" + name
            let validated = try MediaValidator.validate(try MediaBytes(contentsOfFile: path))
            let out = try MediaTransform.apply(
                validated, TransformRequest(spec: RenditionSpec(maxSide: 400), smallSide: 16))
            let small = try #require(out.small, "\(path)")
            #expect(max(small.width, small.height) == 16, "\(path)")
            #expect((small.width >= small.height) == ((out.width ?? 0) >= (out.height ?? 0)), "\(path)")
            let info = try ImageProcessor.inspect(small.bytes)
            #expect(info.kind == kind && info.width == small.width && info.height == small.height && info.frames == 1)
            let none = try MediaTransform.apply(
                validated, TransformRequest(spec: RenditionSpec(maxSide: 12), smallSide: 16))
            #expect(none.small == nil)
        }
    }

    @Test func theKindFromTheFetchIsTrustedAndTheCapChecked() throws {
        let bytes = try MediaBytes(contentsOfFile: Paths.samples + "/gray.jpg")
        #expect(try MediaValidator.validate(bytes, sniffedKind: .jpeg).kind == .jpeg)
        var limits = MediaLimits()
        limits.imageBytes = 100
        let error = failure { try MediaValidator.validate(bytes, sniffedKind: .jpeg, limits: limits) }
        #expect(error?.code == .tooLarge && error?.limit == .maxImageBytes)
        #expect(failure { try MediaValidator.validate(MediaBytes([UInt8]())) }?.code == .emptyInput)
        #expect(failure { try MediaValidator.validate(MediaBytes(Array("<html>".utf8))) }?.code == .unsupportedType)
    }

    @Test func aCancelledDeadlineStopsEveryKindOfImage() throws {
        let gif = MediaBytes(try gradientAnimation(width: 64, height: 48, frames: 60))
        for bytes in [try MediaBytes(contentsOfFile: Paths.samples + "/portrait-progressive.jpg"), gif] {
            let deadline = WorkDeadline.none
            deadline.cancel()
            #expect(deadline.hasExpired)
            let error = failure {
                try MediaTransform.apply(
                    MediaValidator.validate(bytes),
                    TransformRequest(
                        spec: RenditionSpec(maxSide: 32),
                        deadline: deadline))
            }
            #expect(error?.code == .timedOut)
        }
    }

    /// A GIF render given a tenth of the CPU the whole render takes stops with `timed_out`
    /// after a few frames, not all of them: the CPU time it took is at most its budget plus the
    /// work between two checks. (The budget is wall-clock time, so a busy machine only stops it
    /// sooner; the whole render is measured first, so a fast machine does not finish in time.)
    @Test func aGIFRenderStopsBetweenFramesAtItsDeadline() throws {
        let gif = MediaBytes(try gradientAnimation(width: 256, height: 192, frames: 120))
        let fullStart = threadCPUTime()
        let full = try ImageProcessor.render(gif, spec: RenditionSpec(maxSide: 64))
        let fullCPU = threadCPUTime() - fullStart
        #expect(full.frames == 120)
        let budget = max(fullCPU / 10, .milliseconds(1))
        let cpuStart = threadCPUTime()
        let error = failure {
            try ImageProcessor.render(gif, spec: RenditionSpec(maxSide: 64), timeBudget: budget)
        }
        let cpu = threadCPUTime() - cpuStart
        #expect(error?.code == .timedOut, "the whole render took \(fullCPU) of CPU; the budget was \(budget)")
        #expect(cpu < budget + .milliseconds(20), "ran \(cpu) of CPU on a \(budget) budget")
    }
}
