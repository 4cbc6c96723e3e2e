internal import AttacheBase

/// Maps RGBA pixels onto a source palette. A colour that is in the palette maps to itself
/// (exact table); any other colour maps to the nearest of the four palette colours nearest to
/// its 15-bit bucket, found once per bucket and palette. Alpha below 128 maps to the
/// transparent index.
final class GIFPalette {
    /// RGB triples, transparent slot included.
    let colors: [UInt8]
    let transparent: Int?
    /// Per 15-bit bucket, 1 + the bucket's entry in `candidates`, or 0 before it is filled.
    private var slots: [UInt16]
    /// Four SIMD4 per filled bucket: the candidates' red, green, blue, and lane << 8 | palette
    /// index (so the smallest of distance << 10 | that names the first nearest candidate).
    private var candidates: UnsafeMutablePointer<SIMD4<Int32>>
    private var filledBuckets = 0
    private var candidateCapacity = 256
    private var exactKeys: [Int32]
    private var exactValues: [UInt8]
    private static let candidateCount = 4

    /// Uses `source` (a frame's palette) with its transparent index, or adds one when there is
    /// room; a full palette without one has no transparency.
    init(source: [UInt8], transparent: Int?) {
        var colors = source
        let count = source.count / 3
        if let transparent, transparent < count {
            self.transparent = transparent
        } else if count < 256 {
            colors += [0, 0, 0]
            self.transparent = count
        } else {
            self.transparent = nil
        }
        self.colors = colors
        slots = [UInt16](repeating: 0, count: 32_768)
        candidates = .allocate(capacity: candidateCapacity * 4)
        exactKeys = [Int32](repeating: -1, count: 1024)
        exactValues = [UInt8](repeating: 0, count: 1024)
        for i in 0..<(colors.count / 3) where i != self.transparent {
            let key = Int32(colors[i * 3]) << 16 | Int32(colors[i * 3 + 1]) << 8 | Int32(colors[i * 3 + 2])
            var slot = Int((UInt32(bitPattern: key) &* 2_654_435_761) >> 22)
            while exactKeys[slot] != -1 && exactKeys[slot] != key { slot = (slot + 1) & 1023 }
            if exactKeys[slot] == -1 {
                exactKeys[slot] = key
                exactValues[slot] = UInt8(i)
            }
        }
    }

    deinit { candidates.deallocate() }

    var count: Int { colors.count / 3 }

    /// Maps `count` RGBA pixels to indices; returns the mean squared error per opaque pixel.
    /// `exact` first looks each colour up in the palette itself (worth it when the pixels
    /// come straight from source frames, not from a resize).
    @discardableResult
    func map(
        _ rgba: UnsafePointer<UInt8>, count: Int, into out: UnsafeMutablePointer<UInt8>, exact: Bool = true
    )
        -> Double
    {
        let transparentIndex = UInt8(truncatingIfNeeded: transparent ?? 0)
        let hasTransparent = transparent != nil
        var error = 0
        var opaque = 0
        for i in 0..<count {
            let p = rgba + i * 4
            if p[3] < 128, hasTransparent {
                out[i] = transparentIndex
                continue
            }
            opaque += 1
            if exact, let index = exactIndex(Int(p[0]), Int(p[1]), Int(p[2])) {
                out[i] = index
                continue
            }
            let bucket = Int(p[0] >> 3) << 10 | Int(p[1] >> 3) << 5 | Int(p[2] >> 3)
            let (r, g, b) = (Int32(p[0]), Int32(p[1]), Int32(p[2]))
            var slot = Int(slots[bucket])
            if slot == 0 { slot = fill(bucket) }
            // The nearest of the bucket's four candidates, all four at once (ties: the first).
            let c = candidates + (slot - 1) * 4
            let dr = c[0] &- r
            let dg = c[1] &- g
            let db = c[2] &- b
            let (r2, g2, b2) = (dr &* dr, dg &* dg, db &* db)
            let keys = (3 &* r2 &+ 4 &* g2 &+ 2 &* b2) &<< 10 | c[3]
            let least = keys.min()
            let plain = (r2 &+ g2 &+ b2).replacing(with: 0, where: keys .!= SIMD4(repeating: least))
            let (index, distance) = (UInt8(truncatingIfNeeded: least), Int(plain.wrappedSum()))
            out[i] = index
            error += distance
        }
        return opaque == 0 ? 0 : Double(error) / Double(opaque * 3)
    }

    /// Maps with Floyd–Steinberg error diffusion over a `width`-pixel-wide image: each opaque
    /// pixel's quantisation error is spread to its right and lower neighbours. Transparent
    /// pixels take and pass on no error.
    func mapDithered(_ rgba: UnsafePointer<UInt8>, width: Int, height: Int, into out: UnsafeMutablePointer<UInt8>) {
        let transparentIndex = UInt8(truncatingIfNeeded: transparent ?? 0)
        var current = [SIMD4<Int32>](repeating: .zero, count: width + 2)
        var next = [SIMD4<Int32>](repeating: .zero, count: width + 2)
        var pixel = [UInt8](repeating: 255, count: 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = y * width + x
                let p = rgba + i * 4
                if p[3] < 128, transparent != nil {
                    out[i] = transparentIndex
                    continue
                }
                let e = current[x + 1] / 16
                let r = max(0, min(255, Int32(p[0]) + e[0]))
                let g = max(0, min(255, Int32(p[1]) + e[1]))
                let b = max(0, min(255, Int32(p[2]) + e[2]))
                pixel[0] = UInt8(r)
                pixel[1] = UInt8(g)
                pixel[2] = UInt8(b)
                var index: UInt8 = 0
                _ = pixel.withUnsafeBufferPointer { map($0.baseAddress!, count: 1, into: &index, exact: false) }
                out[i] = index
                let q = Int(index) * 3
                let error = SIMD4(r - Int32(colors[q]), g - Int32(colors[q + 1]), b - Int32(colors[q + 2]), 0)
                current[x + 2] &+= error &* 7
                next[x] &+= error &* 3
                next[x + 1] &+= error &* 5
                next[x + 2] &+= error
            }
            swap(&current, &next)
            for k in next.indices { next[k] = .zero }
        }
    }

    @inline(__always)
    private func exactIndex(_ r: Int, _ g: Int, _ b: Int) -> UInt8? {
        let key = Int32(r << 16 | g << 8 | b)
        return exactKeys.withUnsafeBufferPointer { keys in
            var slot = Int((UInt32(bitPattern: key) &* 2_654_435_761) >> 22)
            while keys[slot] != -1 {
                if keys[slot] == key { return exactValues[slot] }
                slot = (slot + 1) & 1023
            }
            return nil
        }
    }

    /// `rgba` (RGBA at `target`) as indices into a median-cut palette of its own, dithered or not.
    static func quantize(
        _ rgba: [UInt8], target: (width: Int, height: Int), dither: Bool
    ) -> (indices: [UInt8], palette: GIFPalette) {
        let pixels = target.width * target.height
        let palette = rgba.withUnsafeBufferPointer { medianCut($0.baseAddress!, count: pixels) }
        var indices = [UInt8](repeating: 0, count: pixels)
        rgba.withUnsafeBufferPointer { source in
            indices.withUnsafeMutableBufferPointer { out in
                if dither {
                    palette.mapDithered(
                        source.baseAddress!, width: target.width, height: target.height, into: out.baseAddress!)
                } else {
                    _ = palette.map(source.baseAddress!, count: pixels, into: out.baseAddress!, exact: false)
                }
            }
        }
        return (indices, palette)
    }

    /// A palette of at most 255 colours (plus a transparent slot) for `count` RGBA pixels:
    /// median cut over a 15-bit histogram, each box's colour the mean of its pixels.
    static func medianCut(_ rgba: UnsafePointer<UInt8>, count: Int) -> GIFPalette {
        var histogram = [Int32](repeating: 0, count: 32_768)
        var sums = [SIMD4<Int64>](repeating: .zero, count: 32_768)
        for i in 0..<count where rgba[i * 4 + 3] >= 128 {
            let p = rgba + i * 4
            let bucket = Int(p[0] >> 3) << 10 | Int(p[1] >> 3) << 5 | Int(p[2] >> 3)
            histogram[bucket] += 1
            sums[bucket] &+= SIMD4(Int64(p[0]), Int64(p[1]), Int64(p[2]), 0)
        }
        var boxes: [[Int]] = [(0..<32_768).filter { histogram[$0] > 0 }]
        func channel(_ bucket: Int, _ c: Int) -> Int {
            c == 0 ? bucket >> 10 : c == 1 ? (bucket >> 5) & 31 : bucket & 31
        }
        while boxes.count < 255 {
            // Split the box with the most pixels times its widest range.
            var pick = -1
            var score = 0
            var axis = 0
            for (b, box) in boxes.enumerated() where box.count > 1 {
                var low = [31, 31, 31]
                var high = [0, 0, 0]
                var pixels = 0
                for bucket in box {
                    pixels += Int(histogram[bucket])
                    for c in 0..<3 {
                        low[c] = min(low[c], channel(bucket, c))
                        high[c] = max(high[c], channel(bucket, c))
                    }
                }
                let ranges = (0..<3).map { high[$0] - low[$0] }
                let widest = ranges.indices.max { ranges[$0] < ranges[$1] }!
                if pixels * (ranges[widest] + 1) > score {
                    score = pixels * (ranges[widest] + 1)
                    pick = b
                    axis = widest
                }
            }
            guard pick >= 0 else { break }
            let sorted = boxes[pick].sorted { channel($0, axis) < channel($1, axis) }
            let total = sorted.reduce(0) { $0 + Int(histogram[$1]) }
            var running = 0
            var cut = 1
            for (k, bucket) in sorted.enumerated() {
                running += Int(histogram[bucket])
                if running * 2 >= total {
                    cut = max(1, min(sorted.count - 1, k + 1))
                    break
                }
            }
            boxes[pick] = Array(sorted[..<cut])
            boxes.append(Array(sorted[cut...]))
        }
        var colors: [UInt8] = []
        for box in boxes {
            var sum = SIMD4<Int64>.zero
            var n: Int64 = 0
            for bucket in box {
                sum &+= sums[bucket]
                n += Int64(histogram[bucket])
            }
            guard n > 0 else { continue }
            colors += [UInt8(sum[0] / n), UInt8(sum[1] / n), UInt8(sum[2] / n)]
        }
        if colors.isEmpty { colors = [0, 0, 0] }
        return GIFPalette(source: colors, transparent: nil)
    }

    /// The palette colours nearest to the centre of a bucket.
    private func fill(_ bucket: Int) -> Int {
        let r = (bucket >> 10) << 3 | 4
        let g = ((bucket >> 5) & 31) << 3 | 4
        let b = (bucket & 31) << 3 | 4
        var best = [(distance: Int, index: Int)](repeating: (Int.max, 0), count: Self.candidateCount)
        colors.withUnsafeBufferPointer { c in
            for i in 0..<(c.count / 3) where i != transparent {
                let dr = Int(c[i * 3]) - r
                let dg = Int(c[i * 3 + 1]) - g
                let db = Int(c[i * 3 + 2]) - b
                let distance = 3 * dr * dr + 4 * dg * dg + 2 * db * db
                if distance < best[Self.candidateCount - 1].distance {
                    var k = Self.candidateCount - 1
                    while k > 0 && best[k - 1].distance > distance {
                        best[k] = best[k - 1]
                        k -= 1
                    }
                    best[k] = (distance, i)
                }
            }
        }
        let first = best[0].index
        var entry = [SIMD4<Int32>](repeating: .zero, count: 4)
        for k in 0..<Self.candidateCount {
            let index = best[k].distance == Int.max ? first : best[k].index
            for c in 0..<3 { entry[c][k] = Int32(colors[index * 3 + c]) }
            entry[3][k] = Int32(k << 8 | index)
        }
        if filledBuckets == candidateCapacity {
            let grown = UnsafeMutablePointer<SIMD4<Int32>>.allocate(capacity: candidateCapacity * 8)
            grown.moveInitialize(from: candidates, count: filledBuckets * 4)
            candidates.deallocate()
            candidates = grown
            candidateCapacity *= 2
        }
        (candidates + filledBuckets * 4).initialize(from: entry, count: 4)
        filledBuckets += 1
        slots[bucket] = UInt16(filledBuckets)
        return filledBuckets
    }

    /// The RGBA a decoder shows for `index` (transparent → alpha 0).
    @inline(__always)
    func rgba(_ index: UInt8, into p: UnsafeMutablePointer<UInt8>) {
        let i = Int(index)
        if i == transparent {
            p[0] = 0
            p[1] = 0
            p[2] = 0
            p[3] = 0
        } else {
            p[0] = colors[i * 3]
            p[1] = colors[i * 3 + 1]
            p[2] = colors[i * 3 + 2]
            p[3] = 255
        }
    }
}
