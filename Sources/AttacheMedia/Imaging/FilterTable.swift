internal import AttacheBase
import Foundation

/// Precomputed Lanczos-3 weights for resampling one axis from `inSize` to `outSize` samples.
///
/// Output sample `i` is centred at `(i + 0.5) * scale` in input coordinates (sample `j`
/// covers `[j, j + 1)`), so the table also describes the remaining reduction after an
/// integer box pre-shrink (pass `scale` in pre-shrunk units). Taps that fall outside the
/// input are dropped and the rest renormalised, so edges are not darkened.
struct FilterTable {
    /// First input sample of each output sample.
    let starts: [Int]
    /// Number of taps of each output sample.
    let counts: [Int]
    /// `stride` weights per output sample; unused trailing slots are zero.
    let weights: [Float]
    /// Weights stored per output sample (the largest tap count).
    let stride: Int

    static let support = 3.0

    static func lanczos3(_ x: Double) -> Double {
        let ax = abs(x)
        if ax < 1e-9 { return 1 }
        if ax >= support { return 0 }
        let px = Double.pi * x
        return support * sin(px) * sin(px / support) / (px * px)
    }

    init(inSize: Int, outSize: Int, scale: Double) {
        let filterScale = max(scale, 1)
        let radius = Self.support * filterScale
        var starts = [Int](repeating: 0, count: outSize)
        var counts = [Int](repeating: 0, count: outSize)
        var rows: [[Float]] = []
        rows.reserveCapacity(outSize)
        var widest = 1
        for i in 0..<outSize {
            let center = (Double(i) + 0.5) * scale
            let first = max(Int((center - radius).rounded(.down)), 0)
            let end = min(Int((center + radius).rounded(.up)), inSize)
            var taps: [Double] = []
            var sum = 0.0
            for j in first..<max(end, first + 1) where j < inSize {
                let w = Self.lanczos3((Double(j) + 0.5 - center) / filterScale)
                taps.append(w)
                sum += w
            }
            if taps.isEmpty || abs(sum) < 1e-12 {
                // Degenerate (cannot happen for sane sizes): take the nearest sample.
                let nearest = min(max(Int(center), 0), inSize - 1)
                starts[i] = nearest
                counts[i] = 1
                rows.append([1])
                continue
            }
            // Trim zero taps at both ends so the inner loops do no useless work.
            var lo = 0
            var hi = taps.count
            while hi - lo > 1, taps[lo] == 0 { lo += 1 }
            while hi - lo > 1, taps[hi - 1] == 0 { hi -= 1 }
            starts[i] = first + lo
            counts[i] = hi - lo
            rows.append(taps[lo..<hi].map { Float($0 / sum) })
            widest = max(widest, hi - lo)
        }
        var weights = [Float](repeating: 0, count: outSize * widest)
        for (i, row) in rows.enumerated() {
            for (t, w) in row.enumerated() { weights[i * widest + t] = w }
        }
        self.starts = starts
        self.counts = counts
        self.weights = weights
        self.stride = widest
    }
}
