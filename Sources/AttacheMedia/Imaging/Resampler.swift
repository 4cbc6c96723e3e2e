internal import AttacheBase

/// Receives decoded rows of `width * channels` bytes, top to bottom.
protocol RowSink {
    /// Consumes the next row.
    mutating func push(_ row: UnsafePointer<UInt8>)
}

/// Produces decoded rows of `rowWidth * channels` bytes.
protocol RowSource {
    /// Pixels per row delivered.
    var rowWidth: Int { get }
    /// Rows delivered.
    var rowCount: Int { get }
    /// Channels per pixel.
    var channels: Int { get }
    /// Pushes every row, top to bottom, into `sink`.
    func decodeRows(into sink: inout some RowSink) throws(AttacheError)
}

/// A row-streaming, separable downscaler: integer box pre-shrink, then Lanczos-3.
///
/// Rows are pushed one at a time; memory is a few rows of the input width plus a ring of
/// `taps` rows of the output width, so it does not grow with the input height. Pixels are
/// carried as `SIMD4<Float>`, with colour premultiplied by alpha so transparent pixels do not
/// bleed dark fringes into their neighbours.
final class Resampler: RowSink {
    let inWidth: Int
    let inHeight: Int
    let outWidth: Int
    let outHeight: Int
    let channels: Int

    private let boxX: Int
    private let boxY: Int
    private let boxedWidth: Int
    private let horizontal: FilterTable
    private let vertical: FilterTable
    private let ringSize: Int

    private let converted: UnsafeMutablePointer<SIMD4<Float>>
    private let boxSum: UnsafeMutablePointer<SIMD4<Float>>
    private let inverseBoxWidth: UnsafeMutablePointer<Float>
    private let ring: UnsafeMutablePointer<SIMD4<Float>>
    private let column: UnsafeMutablePointer<SIMD4<Float>>
    private let rows: UnsafeMutablePointer<UnsafePointer<SIMD4<Float>>>

    private var rowsPushed = 0
    private var rowsInBox = 0
    private var boxedRows = 0
    private var rowsWritten = 0

    /// The output, `outWidth * outHeight * channels` bytes, complete once every row is pushed.
    private(set) var output: [UInt8]

    /// Whether every input row has been pushed and every output row written.
    var isComplete: Bool { rowsWritten == outHeight }

    /// - Parameter lanczosReserve: the factor left for Lanczos after the integer box shrink
    ///   (2 by default; 1 lets the box do every whole factor, faster and a little softer).
    init(inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int, lanczosReserve: Double = 2) {
        precondition(inWidth > 0 && inHeight > 0 && outWidth > 0 && outHeight > 0)
        precondition((1...4).contains(channels))
        self.inWidth = inWidth
        self.inHeight = inHeight
        self.outWidth = outWidth
        self.outHeight = outHeight
        self.channels = channels
        let scaleX = Double(inWidth) / Double(outWidth)
        let scaleY = Double(inHeight) / Double(outHeight)
        // Box-shrink by whole factors while at least 2x is left for Lanczos.
        boxX = max(1, Int(scaleX / lanczosReserve))
        boxY = max(1, Int(scaleY / lanczosReserve))
        boxedWidth = (inWidth + boxX - 1) / boxX
        let boxedHeight = (inHeight + boxY - 1) / boxY
        horizontal = FilterTable(inSize: boxedWidth, outSize: outWidth, scale: scaleX / Double(boxX))
        vertical = FilterTable(inSize: boxedHeight, outSize: outHeight, scale: scaleY / Double(boxY))
        ringSize = vertical.stride + 1
        // Padded with zeros past the row: every output pixel runs `horizontal.stride` taps (the
        // weights past its own taps are zero), so the loop count never changes between pixels.
        converted = .allocate(capacity: inWidth + horizontal.stride)
        converted.initialize(repeating: .zero, count: inWidth + horizontal.stride)
        boxSum = .allocate(capacity: boxedWidth)
        boxSum.initialize(repeating: .zero, count: boxedWidth)
        inverseBoxWidth = .allocate(capacity: boxedWidth)
        for j in 0..<boxedWidth {
            let covered = min(inWidth, (j + 1) * boxX) - j * boxX
            inverseBoxWidth[j] = 1 / Float(covered)
        }
        ring = .allocate(capacity: ringSize * outWidth)
        column = .allocate(capacity: outWidth)
        rows = .allocate(capacity: vertical.stride)
        output = [UInt8](repeating: 0, count: outWidth * outHeight * channels)
    }

    deinit {
        converted.deallocate()
        boxSum.deallocate()
        inverseBoxWidth.deallocate()
        ring.deallocate()
        column.deallocate()
        rows.deallocate()
    }

    /// Makes the resampler ready for another image of the same size (the filter tables and
    /// buffers are kept).
    func reset() {
        rowsPushed = 0
        rowsInBox = 0
        boxedRows = 0
        rowsWritten = 0
        boxSum.update(repeating: .zero, count: boxedWidth)
    }

    func push(_ row: UnsafePointer<UInt8>) {
        guard rowsPushed < inHeight else { return }
        rowsPushed += 1
        if boxX == 1 && boxY == 1 {
            convert(row, into: converted)
            filterRow(converted)
            return
        }
        if channels == 1 || channels == 3 {
            accumulateOpaque(row)
        } else {
            convert(row, into: converted)
            // Horizontal box: sum runs of boxX pixels into boxSum (accumulated over boxY rows).
            var x = 0
            for j in 0..<boxedWidth {
                var acc = SIMD4<Float>.zero
                let end = min(x + boxX, inWidth)
                while x < end {
                    acc += converted[x]
                    x += 1
                }
                boxSum[j] += acc
            }
        }
        endBoxRow()
    }

    /// Pushes a row of `inWidth` palette indices, each standing for `colors[index]`
    /// (premultiplied RGBA, 0–255): a paletted image needs no per-pixel conversion.
    func push(indices row: UnsafePointer<UInt8>, colors: UnsafePointer<SIMD4<Float>>) {
        guard rowsPushed < inHeight else { return }
        rowsPushed += 1
        if boxX == 1 && boxY == 1 {
            for x in 0..<inWidth { converted[x] = colors[Int(row[x])] }
            filterRow(converted)
            return
        }
        var x = 0
        var j = 0
        if boxX == 2 {
            // The common halving, unrolled.
            while x + 2 <= inWidth {
                boxSum[j] += colors[Int(row[x])] + colors[Int(row[x + 1])]
                x += 2
                j += 1
            }
        }
        while j < boxedWidth {
            var acc = SIMD4<Float>.zero
            let end = min(x + boxX, inWidth)
            while x < end {
                acc += colors[Int(row[x])]
                x += 1
            }
            boxSum[j] += acc
            j += 1
        }
        endBoxRow()
    }

    /// Counts a row into the vertical box; when the box is full, filters its mean.
    private func endBoxRow() {
        rowsInBox += 1
        if rowsInBox == boxY || rowsPushed == inHeight {
            let inverseRows = 1 / Float(rowsInBox)
            for j in 0..<boxedWidth {
                converted[j] = boxSum[j] * (inverseBoxWidth[j] * inverseRows)
                boxSum[j] = .zero
            }
            rowsInBox = 0
            filterRow(converted)
        }
    }

    /// Adds a gray or RGB row into `boxSum`, summing each run of `boxX` pixels in integers.
    private func accumulateOpaque(_ row: UnsafePointer<UInt8>) {
        let width = inWidth
        var x = 0
        if channels == 1 {
            for j in 0..<boxedWidth {
                let end = min(x + boxX, width)
                var g: UInt32 = 0
                while x < end {
                    g &+= UInt32(row[x])
                    x += 1
                }
                boxSum[j][0] += Float(g)
            }
            return
        }
        // Each pixel is read as four bytes (the fourth is the next pixel's red, masked off per
        // box), except the row's last, which would read past the row.
        let wholeEnd = width - 1
        for j in 0..<boxedWidth {
            let end = min(x + boxX, width)
            var acc = SIMD4<Int32>.zero
            while x < min(end, wholeEnd) {
                acc &+= SIMD4<Int32>(
                    truncatingIfNeeded: UnsafeRawPointer(row + 3 * x).loadUnaligned(as: SIMD4<UInt8>.self))
                x += 1
            }
            if x < end {
                let p = row + 3 * x
                acc &+= SIMD4(Int32(p[0]), Int32(p[1]), Int32(p[2]), 0)
                x += 1
            }
            boxSum[j] += SIMD4(Float(acc[0]), Float(acc[1]), Float(acc[2]), 0)
        }
    }

    /// Widens a row of bytes into premultiplied `SIMD4<Float>` pixels.
    private func convert(_ row: UnsafePointer<UInt8>, into dst: UnsafeMutablePointer<SIMD4<Float>>) {
        let width = inWidth
        switch channels {
        case 1:
            for x in 0..<width { dst[x] = SIMD4(Float(row[x]), 0, 0, 0) }
        case 2:
            for x in 0..<width {
                let a = Float(row[2 * x + 1])
                dst[x] = SIMD4(Float(row[2 * x]) * (a * (1 / 255)), 0, 0, a)
            }
        case 3:
            for x in 0..<width {
                dst[x] = SIMD4(Float(row[3 * x]), Float(row[3 * x + 1]), Float(row[3 * x + 2]), 0)
            }
        default:
            for x in 0..<width {
                let p = row + 4 * x
                let a = Float(p[3])
                let f = a * (1 / 255)
                dst[x] = SIMD4(Float(p[0]) * f, Float(p[1]) * f, Float(p[2]) * f, a)
            }
        }
    }

    /// Lanczos along the row into the ring, then emits every output row now complete.
    private func filterRow(_ src: UnsafeMutablePointer<SIMD4<Float>>) {
        let slot = ring + (boxedRows % ringSize) * outWidth
        horizontal.weights.withUnsafeBufferPointer { weights in
            horizontal.starts.withUnsafeBufferPointer { starts in
                let stride = horizontal.stride
                for x in 0..<outWidth {
                    let s = src + starts[x]
                    let w = weights.baseAddress! + x * stride
                    var acc = SIMD4<Float>.zero
                    for t in 0..<stride { acc += s[t] * w[t] }
                    slot[x] = acc
                }
            }
        }
        boxedRows += 1
        while rowsWritten < outHeight,
            vertical.starts[rowsWritten] + vertical.counts[rowsWritten] <= boxedRows
        {
            emitRow(rowsWritten)
            rowsWritten += 1
        }
    }

    private func emitRow(_ y: Int) {
        let start = vertical.starts[y]
        let count = vertical.counts[y]
        let width = outWidth
        vertical.weights.withUnsafeBufferPointer { weights in
            let w = weights.baseAddress! + y * vertical.stride
            for t in 0..<count { rows[t] = UnsafePointer(ring + ((start + t) % ringSize) * width) }
            // Per pixel, sum the taps in a register: each ring row is read once, column is
            // written once.
            switch count {
            case 1:
                let r0 = rows[0]
                let w0 = w[0]
                for x in 0..<width { column[x] = r0[x] * w0 }
            default:
                // Two taps per sweep over the row: the column stays in L1, the rows stream.
                let (r0, r1, w0, w1) = (rows[0], rows[1], w[0], w[1])
                for x in 0..<width { column[x] = r0[x] * w0 + r1[x] * w1 }
                var t = 2
                while t + 1 < count {
                    let (ra, rb, wa, wb) = (rows[t], rows[t + 1], w[t], w[t + 1])
                    for x in 0..<width { column[x] += ra[x] * wa + rb[x] * wb }
                    t += 2
                }
                if t < count {
                    let (ra, wa) = (rows[t], w[t])
                    for x in 0..<width { column[x] += ra[x] * wa }
                }
            }
        }
        let channels = channels
        output.withUnsafeMutableBufferPointer { out in
            let dst = out.baseAddress! + y * width * channels
            switch channels {
            case 1:
                for x in 0..<width { dst[x] = Self.byte(column[x][0]) }
            case 2:
                for x in 0..<width {
                    let v = column[x]
                    let a = Self.clamp(v[3])
                    dst[2 * x] = a > 0 ? Self.byte(v[0] * 255 / a) : 0
                    dst[2 * x + 1] = Self.byte(a)
                }
            case 3:
                // Four bytes stored a pixel (the fourth is overwritten by the next pixel's red);
                // the last pixel is stored alone so the store stays inside the row.
                for x in 0..<(width - 1) {
                    UnsafeMutableRawPointer(dst + 3 * x).storeBytes(of: Self.bytes(column[x]), as: SIMD4<UInt8>.self)
                }
                let v = column[width - 1]
                dst[3 * width - 3] = Self.byte(v[0])
                dst[3 * width - 2] = Self.byte(v[1])
                dst[3 * width - 1] = Self.byte(v[2])
            default:
                for x in 0..<width {
                    let v = column[x]
                    let a = Self.clamp(v[3])
                    if a > 0 {
                        let f = 255 / a
                        dst[4 * x] = Self.byte(v[0] * f)
                        dst[4 * x + 1] = Self.byte(v[1] * f)
                        dst[4 * x + 2] = Self.byte(v[2] * f)
                    } else {
                        dst[4 * x] = 0
                        dst[4 * x + 1] = 0
                        dst[4 * x + 2] = 0
                    }
                    dst[4 * x + 3] = Self.byte(a)
                }
            }
        }
    }

    @inline(__always)
    private static func clamp(_ v: Float) -> Float { v < 0 ? 0 : (v > 255 ? 255 : v) }

    /// Rounded to the nearest byte. Adding 1.5 × 2^23 leaves the rounded integer in the low
    /// mantissa bits, with none of the range checks of a float-to-integer conversion.
    @inline(__always)
    private static func byte(_ v: Float) -> UInt8 { UInt8(truncatingIfNeeded: (clamp(v) + 12_582_912).bitPattern) }

    /// ``byte(_:)`` for four lanes at once.
    @inline(__always)
    private static func bytes(_ v: SIMD4<Float>) -> SIMD4<UInt8> {
        let low = v.replacing(with: 0, where: v .< 0)
        let clamped = low.replacing(with: 255, where: low .> 255)
        return SIMD4<UInt8>(truncatingIfNeeded: unsafeBitCast(clamped + 12_582_912, to: SIMD4<UInt32>.self))
    }
}
