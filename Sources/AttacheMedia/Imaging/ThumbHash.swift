import Foundation

/// A picture's placeholder in about 20 bytes: ThumbHash (Evan Wallace's format, 2023) — its
/// average colour, its low frequencies of luma and chroma, its aspect ratio and whether it has
/// alpha — so a device can draw a blurred stand-in with no network at all. The bytes are the
/// reference implementation's (`rgbaToThumbHash`) for the same pixels, to its rounding.
public enum ThumbHash {
    /// The longest side the hash is taken from (the format's limit).
    public static let maxSide = 100

    /// A hash as entries and reports write it: base64 without padding.
    public static func text(_ hash: [UInt8]) -> String {
        Data(hash).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

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
        let opaque = channels == 1 || channels == 3
        // Each output row: its source rows summed per column first, then the columns per cell.
        var columns = [UInt32](repeating: 0, count: image.width * 4)
        image.pixels.withUnsafeBufferPointer { pixels in
            columns.withUnsafeMutableBufferPointer { sums in
                rgba.withUnsafeMutableBufferPointer { out in
                    guard let source = pixels.baseAddress, let column = sums.baseAddress, let target = out.baseAddress
                    else { return }
                    for y in 0..<height {
                        let y0 = y * image.height / height
                        let y1 = max(y0 + 1, (y + 1) * image.height / height)
                        column.update(repeating: 0, count: image.width * 4)
                        for sy in y0..<y1 {
                            var at = source + sy * image.width * channels
                            var sum = column
                            switch channels {
                            case 3:
                                for _ in 0..<image.width {
                                    sum[0] &+= UInt32(at[0])
                                    sum[1] &+= UInt32(at[1])
                                    sum[2] &+= UInt32(at[2])
                                    at += 3
                                    sum += 4
                                }
                            case 4:
                                for _ in 0..<image.width {
                                    sum[0] &+= UInt32(at[0])
                                    sum[1] &+= UInt32(at[1])
                                    sum[2] &+= UInt32(at[2])
                                    sum[3] &+= UInt32(at[3])
                                    at += 4
                                    sum += 4
                                }
                            default:
                                for _ in 0..<image.width {
                                    let v = UInt32(at[0])
                                    sum[0] &+= v
                                    sum[1] &+= v
                                    sum[2] &+= v
                                    if channels == 2 { sum[3] &+= UInt32(at[1]) }
                                    at += channels
                                    sum += 4
                                }
                            }
                        }
                        for x in 0..<width {
                            let x0 = x * image.width / width
                            let x1 = max(x0 + 1, (x + 1) * image.width / width)
                            var total: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
                            var cell = column + x0 * 4
                            for _ in x0..<x1 {
                                total = (total.0 &+ cell[0], total.1 &+ cell[1], total.2 &+ cell[2], total.3 &+ cell[3])
                                cell += 4
                            }
                            let count = UInt32((y1 - y0) * (x1 - x0))
                            let pixel = target + (y * width + x) * 4
                            pixel[0] = UInt8((total.0 + count / 2) / count)
                            pixel[1] = UInt8((total.1 + count / 2) / count)
                            pixel[2] = UInt8((total.2 + count / 2) / count)
                            pixel[3] = opaque ? 255 : UInt8((total.3 + count / 2) / count)
                        }
                    }
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

        let lc = channel(l, max(3, lx), max(3, ly), width: w, height: h)
        let pc = channel(p, 3, 3, width: w, height: h)
        let qc = channel(q, 3, 3, width: w, height: h)
        let ac = hasAlpha ? channel(a, 5, 5, width: w, height: h) : (dc: 1.0, ac: [Double](), scale: 1.0)

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

    /// One channel's DCT: its mean, its varying factors scaled to 0…1, and their scale.
    private static func channel(
        _ values: [Double], _ nx: Int, _ ny: Int, width w: Int, height h: Int
    ) -> (dc: Double, ac: [Double], scale: Double) {
        var dc = 0.0
        var ac: [Double] = []
        var scale = 0.0
        // The same cosines the reference encoder takes, each made once rather than once per factor.
        let fxs = (0..<nx).map { cx in (0..<w).map { x in cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
        }
        var fys = [Double](repeating: 0, count: h)
        for cy in 0..<ny {
            for y in 0..<h { fys[y] = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5)) }
            var cx = 0
            while cx * ny < nx * (ny - cy) {
                var f = 0.0
                let fx = fxs[cx]
                for y in 0..<h {
                    let fy = fys[y]
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
}
