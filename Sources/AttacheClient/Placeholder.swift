public import Foundation

/// The picture's placeholder, drawn from the ThumbHash its attachment entry carries
/// (`th`, base64): a blurred picture of its colours and shape, made on the device with no
/// network at all — the rung of the ladder between the small rendition and the text alone.
public enum Placeholder {
    /// The decoded placeholder: RGBA pixels, at most 32 px a side, in the picture's aspect ratio.
    public struct Image: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var rgba: [UInt8]
    }

    /// The hash of a base64 text (standard or URL-safe alphabet, padded or not); nil when it is
    /// not one.
    public static func hash(base64 text: String) -> [UInt8]? {
        var normal = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while normal.count % 4 != 0 { normal += "=" }
        guard let data = Data(base64Encoded: normal), data.count >= 5 else { return nil }
        return Array(data)
    }

    /// The reference decoder (`thumbHashToRGBA`); nil for bytes too short to be a hash.
    public static func decode(_ hash: [UInt8]) -> Image? {
        guard hash.count >= 5 else { return nil }
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        let lDC = Double(header24 & 63) / 63
        let pDC = Double((header24 >> 6) & 63) / 31.5 - 1
        let qDC = Double((header24 >> 12) & 63) / 31.5 - 1
        let lScale = Double((header24 >> 18) & 31) / 31
        let hasAlpha = header24 >> 23 != 0
        let pScale = Double((header16 >> 3) & 63) / 63
        let qScale = Double((header16 >> 9) & 63) / 63
        let landscape = header16 >> 15 != 0
        let lx = max(3, landscape ? (hasAlpha ? 5 : 7) : header16 & 7)
        let ly = max(3, landscape ? header16 & 7 : (hasAlpha ? 5 : 7))
        guard !hasAlpha || hash.count >= 6 else { return nil }
        let aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
        let aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0

        let start = hasAlpha ? 6 : 5
        var index = 0
        var short = false
        func channel(_ nx: Int, _ ny: Int, _ scale: Double) -> [Double] {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy > 0 ? 0 : 1
                while cx * ny < nx * (ny - cy) {
                    let at = start + (index >> 1)
                    guard at < hash.count else {
                        short = true
                        return ac
                    }
                    let nibble = (Int(hash[at]) >> ((index & 1) << 2)) & 15
                    ac.append((Double(nibble) / 7.5 - 1) * scale)
                    index += 1
                    cx += 1
                }
            }
            return ac
        }
        let lAC = channel(lx, ly, lScale)
        let pAC = channel(3, 3, pScale * 1.25)
        let qAC = channel(3, 3, qScale * 1.25)
        let aAC = hasAlpha ? channel(5, 5, aScale) : []
        guard !short else { return nil }

        let ratio = aspectRatio(hash)
        let w = Int((ratio > 1 ? 32 : 32 * ratio).rounded(.toNearestOrAwayFromZero))
        let h = Int((ratio > 1 ? 32 / ratio : 32).rounded(.toNearestOrAwayFromZero))
        var rgba = [UInt8](repeating: 0, count: w * h * 4)
        var fx = [Double](repeating: 0, count: max(lx, hasAlpha ? 5 : 3))
        var fy = [Double](repeating: 0, count: max(ly, hasAlpha ? 5 : 3))
        var i = 0
        for y in 0..<h {
            for x in 0..<w {
                var (l, p, q, a) = (lDC, pDC, qDC, aDC)
                for cx in fx.indices { fx[cx] = cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double(cx)) }
                for cy in fy.indices { fy[cy] = cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double(cy)) }
                l += factors(lAC, lx, ly, fx, fy)
                p += factors(pAC, 3, 3, fx, fy)
                q += factors(qAC, 3, 3, fx, fy)
                if hasAlpha { a += factors(aAC, 5, 5, fx, fy) }
                let b = l - 2.0 / 3.0 * p
                let r = (3 * l - b + q) / 2
                let g = r - q
                // As a Uint8Array takes a number: clamped, then cut to a whole byte.
                for (k, value) in [r, g, b, a].enumerated() { rgba[i + k] = UInt8(max(0, 255 * min(1, value))) }
                i += 4
            }
        }
        return Image(width: w, height: h, rgba: rgba)
    }

    /// A channel's varying factors at one pixel: the triangle of cosine products the encoder
    /// kept (`cx × ny < nx × (ny − cy)`, the mean left out), each counted twice along y.
    private static func factors(_ ac: [Double], _ nx: Int, _ ny: Int, _ fx: [Double], _ fy: [Double]) -> Double {
        var (sum, j) = (0.0, 0)
        for cy in 0..<ny {
            var cx = cy > 0 ? 0 : 1
            let fy2 = fy[cy] * 2
            while cx * ny < nx * (ny - cy) {
                sum += ac[j] * fx[cx] * fy2
                cx += 1
                j += 1
            }
        }
        return sum
    }

    /// The aspect ratio the hash says, width over height (to its 1/7 steps).
    public static func aspectRatio(_ hash: [UInt8]) -> Double {
        let header = Int(hash[3])
        let hasAlpha = hash[2] & 0x80 != 0
        let landscape = hash[4] & 0x80 != 0
        let lx = landscape ? (hasAlpha ? 5 : 7) : header & 7
        let ly = landscape ? header & 7 : (hasAlpha ? 5 : 7)
        return Double(max(1, lx)) / Double(max(1, ly))
    }

    /// The placeholder as a PNG file (RGBA, stored deflate blocks): what
    /// `UNNotificationAttachment` takes when the picture could not come.
    public static func png(_ image: Image) -> Data {
        var raw: [UInt8] = []
        raw.reserveCapacity(image.height * (image.width * 4 + 1))
        for y in 0..<image.height {
            raw.append(0)
            raw += image.rgba[(y * image.width * 4)..<((y + 1) * image.width * 4)]
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let last: UInt8 = offset + count == raw.count ? 1 : 0
            zlib += [last, UInt8(count & 255), UInt8(count >> 8), UInt8(~count & 255), UInt8((~count >> 8) & 255)]
            zlib += raw[offset..<(offset + count)]
            offset += count
        } while offset < raw.count
        zlib += bigEndian(adler32(raw))
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ body: [UInt8]) {
            let typed = Array(type.utf8) + body
            png += bigEndian(UInt32(body.count)) + typed + bigEndian(crc32(typed))
        }
        chunk("IHDR", bigEndian(UInt32(image.width)) + bigEndian(UInt32(image.height)) + [8, 6, 0, 0, 0])
        chunk("IDAT", zlib)
        chunk("IEND", [])
        return Data(png)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 255), UInt8((value >> 8) & 255), UInt8(value & 255)]
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 255)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}
