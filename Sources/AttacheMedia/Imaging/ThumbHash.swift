import Foundation

/// A picture's placeholder in about 20 bytes: ThumbHash (Evan Wallace's format, 2023) — its
/// average colour, its low frequencies of luma and chroma, its aspect ratio and whether it has
/// alpha — so a device can draw a blurred stand-in with no network at all. The bytes are the
/// reference implementation's (`rgbaToThumbHash`) for the same pixels, to its rounding.
public enum ThumbHash {
    /// The longest side the hash is taken from (the format's limit).
    public static let maxSide = 100

    /// The hash of `image` (1 to 4 channels), from a box-filtered copy at most 100 px a side.
    public static func make(_ image: PixelImage) -> [UInt8] {
        let (width, height, rgba) = Self.small(image)
        return encode(width: width, height: height, rgba: rgba)
    }

    /// An area-average copy of `image` at most ``maxSide`` a side, as RGBA (width, height, pixels).
    public static func small(_ image: PixelImage) -> (Int, Int, [UInt8]) {
        let scale = min(1, Double(maxSide) / Double(max(image.width, image.height)))
        let width = max(1, Int((Double(image.width) * scale).rounded()))
        let height = max(1, Int((Double(image.height) * scale).rounded()))
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        let channels = image.channels
        image.pixels.withUnsafeBufferPointer { source in
            // Each output row: its source rows summed per column first, then the columns per cell.
            var columns = [Int](repeating: 0, count: image.width * 4)
            for y in 0..<height {
                let y0 = y * image.height / height
                let y1 = max(y0 + 1, (y + 1) * image.height / height)
                for i in columns.indices { columns[i] = 0 }
                for sy in y0..<y1 {
                    let row = sy * image.width * channels
                    switch channels {
                    case 3:
                        for x in 0..<image.width {
                            let at = row + x * 3
                            columns[x * 4] += Int(source[at])
                            columns[x * 4 + 1] += Int(source[at + 1])
                            columns[x * 4 + 2] += Int(source[at + 2])
                        }
                    case 4:
                        for x in 0..<image.width {
                            let at = row + x * 4
                            columns[x * 4] += Int(source[at])
                            columns[x * 4 + 1] += Int(source[at + 1])
                            columns[x * 4 + 2] += Int(source[at + 2])
                            columns[x * 4 + 3] += Int(source[at + 3])
                        }
                    default:
                        for x in 0..<image.width {
                            let at = row + x * channels
                            let v = Int(source[at])
                            columns[x * 4] += v
                            columns[x * 4 + 1] += v
                            columns[x * 4 + 2] += v
                            columns[x * 4 + 3] += channels == 2 ? Int(source[at + 1]) : 0
                        }
                    }
                }
                let opaque = channels == 1 || channels == 3
                for x in 0..<width {
                    let x0 = x * image.width / width
                    let x1 = max(x0 + 1, (x + 1) * image.width / width)
                    var sum = (0, 0, 0, 0)
                    for sx in x0..<x1 {
                        sum.0 += columns[sx * 4]
                        sum.1 += columns[sx * 4 + 1]
                        sum.2 += columns[sx * 4 + 2]
                        sum.3 += columns[sx * 4 + 3]
                    }
                    let count = (y1 - y0) * (x1 - x0)
                    let out = (y * width + x) * 4
                    rgba[out] = UInt8((sum.0 + count / 2) / count)
                    rgba[out + 1] = UInt8((sum.1 + count / 2) / count)
                    rgba[out + 2] = UInt8((sum.2 + count / 2) / count)
                    rgba[out + 3] = opaque ? 255 : UInt8((sum.3 + count / 2) / count)
                }
            }
        }
        return (width, height, rgba)
    }

    /// The reference encoder: RGBA pixels of at most 100 × 100 to the hash's bytes.
    public static func encode(width w: Int, height h: Int, rgba: [UInt8]) -> [UInt8] {
        precondition(w > 0 && h > 0 && w <= maxSide && h <= maxSide && rgba.count == w * h * 4)
        var (avgR, avgG, avgB, avgA) = (0.0, 0.0, 0.0, 0.0)
        for i in 0..<(w * h) {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            avgR += alpha / 255 * Double(rgba[i * 4])
            avgG += alpha / 255 * Double(rgba[i * 4 + 1])
            avgB += alpha / 255 * Double(rgba[i * 4 + 2])
            avgA += alpha
        }
        if avgA > 0 {
            avgR /= avgA
            avgG /= avgA
            avgB /= avgA
        }
        let hasAlpha = avgA < Double(w * h)
        let lLimit = hasAlpha ? 5.0 : 7.0
        let lx = max(1, Int((lLimit * Double(w) / Double(max(w, h))).rounded()))
        let ly = max(1, Int((lLimit * Double(h) / Double(max(w, h))).rounded()))
        var l = [Double](repeating: 0, count: w * h)
        var p = l
        var q = l
        var a = l
        for i in 0..<(w * h) {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = avgR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = avgG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = avgB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }

        func channel(_ values: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var dc = 0.0
            var ac: [Double] = []
            var scale = 0.0
            var fx = [Double](repeating: 0, count: w)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<w { f += values[x + y * w] * fx[x] * fy }
                    }
                    f /= Double(w * h)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }

        let lc = channel(l, max(3, lx), max(3, ly))
        let pc = channel(p, 3, 3)
        let qc = channel(q, 3, 3)
        let ac = hasAlpha ? channel(a, 5, 5) : (dc: 1.0, ac: [Double](), scale: 1.0)

        // JavaScript's Math.round: halves go up.
        func round(_ value: Double) -> Int { Int((value + 0.5).rounded(.down)) }
        let landscape = w > h
        let header24 =
            round(63 * lc.dc) | round(31.5 + 31.5 * pc.dc) << 6 | round(31.5 + 31.5 * qc.dc) << 12
            | round(31 * lc.scale) << 18 | (hasAlpha ? 1 : 0) << 23
        let header16 =
            (landscape ? ly : lx) | round(63 * pc.scale) << 3 | round(63 * qc.scale) << 9 | (landscape ? 1 : 0) << 15
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16), UInt8(header16 & 255),
            UInt8(header16 >> 8),
        ]
        if hasAlpha { hash.append(UInt8(round(15 * ac.dc) | round(15 * ac.scale) << 4)) }
        var odd = false
        for values in [lc.ac, pc.ac, qc.ac] + (hasAlpha ? [ac.ac] : []) {
            for f in values {
                let u = UInt8(round(15 * f))
                if odd { hash[hash.count - 1] |= u << 4 } else { hash.append(u) }
                odd.toggle()
            }
        }
        return hash
    }
}
