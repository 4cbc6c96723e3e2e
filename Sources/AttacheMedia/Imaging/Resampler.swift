internal import AttacheBase
internal import CAttacheCodecs

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
/// bleed dark fringes into their neighbours. The inner loops (the two filters, and RGB bytes to
/// floats and back) are C (resample.c), in a vector form with AVX2 and FMA where the processor
/// has them.
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
    private let rows: UnsafeMutablePointer<UnsafePointer<Float>?>
    /// The C loops' form: 1 vectorized (AVX2 and FMA) where the processor has it, 0 portable.
    private let form: Int32

    private var rowsPushed = 0
    private var rowsInBox = 0
    private var boxedRows = 0
    private var rowsWritten = 0

    /// The output, `outWidth * outHeight * channels` bytes, complete once every row is pushed.
    private(set) var output: [UInt8]

    /// Whether every input row has been pushed and every output row written.
    var isComplete: Bool { rowsWritten == outHeight }

    /// - Parameters:
    ///   - lanczosReserve: the factor left for Lanczos after the integer box shrink (2 by
    ///     default; 1 lets the box do every whole factor, faster and a little softer).
    ///   - vectorized: the loops' vector form where the processor has it (tests compare it with
    ///     the portable form).
    init(
        inWidth: Int, inHeight: Int, outWidth: Int, outHeight: Int, channels: Int, lanczosReserve: Double = 2,
        vectorized: Bool = true
    ) {
        precondition(inWidth > 0 && inHeight > 0 && outWidth > 0 && outHeight > 0)
        precondition((1...4).contains(channels))
        self.inWidth = inWidth
        self.inHeight = inHeight
        self.outWidth = outWidth
        self.outHeight = outHeight
        self.channels = channels
        form = vectorized ? 1 : 0
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
            att_resample_widen_rgb(form, row, width, Self.floats(dst))
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
                att_resample_row(
                    form, Self.floats(src), starts.baseAddress, weights.baseAddress, horizontal.stride, outWidth,
                    Self.floats(slot))
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
            for t in 0..<count { rows[t] = UnsafePointer(Self.floats(ring + ((start + t) % ringSize) * width)) }
            // Per pixel, the taps summed in registers: each ring row is read once, column written once.
            att_resample_column(
                form, rows, weights.baseAddress! + y * vertical.stride, count, 4 * width, Self.floats(column))
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
                att_resample_narrow_rgb(form, Self.floats(column), width, dst)
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

    /// The floats of `pixels`, for the C loops.
    @inline(__always)
    private static func floats(_ pixels: UnsafeMutablePointer<SIMD4<Float>>) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer(pixels).assumingMemoryBound(to: Float.self)
    }

    @inline(__always)
    private static func clamp(_ v: Float) -> Float { v < 0 ? 0 : (v > 255 ? 255 : v) }

    /// Rounded to the nearest byte. Adding 1.5 × 2^23 leaves the rounded integer in the low
    /// mantissa bits, with none of the range checks of a float-to-integer conversion.
    @inline(__always)
    private static func byte(_ v: Float) -> UInt8 { UInt8(truncatingIfNeeded: (clamp(v) + 12_582_912).bitPattern) }
}
