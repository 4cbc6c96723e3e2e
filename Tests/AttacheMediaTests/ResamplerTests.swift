import AttacheBase
import CAttacheCodecs
import Testing

@testable import AttacheMedia

/// The resampler's C loops (resample.c): their vector form (AVX2 and FMA, where the processor
/// has them) against their portable form, and the byte conversions at their edges.
@Suite struct ResamplerTests {
    /// A picture of `channels` channels whose samples follow no pattern (a fixed seed).
    static func noise(width: Int, height: Int, channels: Int, seed start: UInt64) -> [UInt8] {
        var seed = start
        return (0..<(width * height * channels)).map { _ in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
    }

    /// `pixels` pushed row by row through a resampler in the loops' `vectorized` form or not.
    static func resample(
        _ pixels: [UInt8], _ size: (Int, Int), to out: (Int, Int), channels: Int, vectorized: Bool
    ) -> [UInt8] {
        let resampler = Resampler(
            inWidth: size.0, inHeight: size.1, outWidth: out.0, outHeight: out.1, channels: channels,
            vectorized: vectorized)
        pixels.withUnsafeBufferPointer { p in
            for y in 0..<size.1 { resampler.push(p.baseAddress! + y * size.0 * channels) }
        }
        #expect(resampler.isComplete)
        return resampler.output
    }

    @Test(
        "the vector and portable loops make the same picture, within a rounding step",
        arguments: [1, 2, 3, 4])
    func sameBothWays(channels: Int) {
        // Odd sizes, so every loop ends with its tail; down by 3.3 (box, then Lanczos) and by 1.4.
        let size = (997, 613)
        let pixels = Self.noise(width: size.0, height: size.1, channels: channels, seed: UInt64(channels))
        for out in [(301, 185), (712, 437)] {
            let vector = Self.resample(pixels, size, to: out, channels: channels, vectorized: true)
            let portable = Self.resample(pixels, size, to: out, channels: channels, vectorized: false)
            #expect(vector.count == out.0 * out.1 * channels)
            let steps = zip(vector, portable).map { abs(Int($0) - Int($1)) }
            #expect(steps.max() ?? 0 <= 1, "\(channels) channels to \(out)")
            // Sums in another order round differently only where a sample lies on a half.
            #expect(steps.filter { $0 != 0 }.count * 100 <= steps.count, "\(channels) channels to \(out)")
        }
    }

    @Test("floats to RGB bytes: clamped, rounded to the nearest, halves to even, in both forms")
    func narrow() {
        // Ten pixels, so the vector form takes four at a time and leaves a tail.
        let samples: [Float] = [-5, 0.5, 1.5, 2.5, 254.5, 300, 127.49, 127.5, 3.5000002, 0, -0.4, 255.4]
        var floats: [Float] = []
        var expected: [UInt8] = []
        for pixel in 0..<10 {
            for channel in 0..<3 {
                let value = samples[(pixel * 3 + channel) % samples.count]
                floats.append(value)
                expected.append(UInt8(max(0, min(255, value)).rounded(.toNearestOrEven)))
            }
            floats.append(1000)  // the fourth lane, dropped
        }
        for vectorized: Int32 in [0, 1] {
            var bytes = [UInt8](repeating: 0xAA, count: 30 + 4)
            att_resample_narrow_rgb(vectorized, floats, 10, &bytes)
            #expect(Array(bytes[..<30]) == expected, "form \(vectorized)")
            #expect(bytes[30...].allSatisfy { $0 == 0xAA }, "form \(vectorized) wrote past the row")
        }
    }

    @Test("RGB bytes to floats, the fourth lane zero, in both forms")
    func widen() {
        let bytes = Self.noise(width: 11, height: 1, channels: 3, seed: 7)
        var expected: [Float] = []
        for x in 0..<11 { expected += [Float(bytes[3 * x]), Float(bytes[3 * x + 1]), Float(bytes[3 * x + 2]), 0] }
        for vectorized: Int32 in [0, 1] {
            var floats = [Float](repeating: -1, count: 44 + 4)
            att_resample_widen_rgb(vectorized, bytes, 11, &floats)
            #expect(Array(floats[..<44]) == expected, "form \(vectorized)")
            #expect(floats[44...].allSatisfy { $0 == -1 }, "form \(vectorized) wrote past the row")
        }
    }
}
