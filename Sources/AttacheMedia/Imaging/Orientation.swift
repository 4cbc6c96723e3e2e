internal import AttacheBase

/// EXIF orientation (TIFF tag 0x0112): how stored pixels must be turned to display upright.
public enum Orientation: Int, Hashable, Sendable, CaseIterable {
    /// Stored upright.
    case up = 1
    /// Mirrored left-right.
    case upMirrored = 2
    /// Rotated 180°.
    case down = 3
    /// Mirrored top-bottom.
    case downMirrored = 4
    /// Mirrored along the main diagonal (transpose).
    case leftMirrored = 5
    /// Needs a 90° clockwise turn.
    case right = 6
    /// Mirrored along the anti-diagonal (transverse).
    case rightMirrored = 7
    /// Needs a 90° counter-clockwise turn.
    case left = 8

    /// Whether width and height swap on display.
    public var swapsDimensions: Bool { rawValue >= 5 }

    /// The orientation in an EXIF APP1 payload (`Exif\0\0` + TIFF). Anything unreadable is `.up`:
    /// broken metadata never fails an image.
    public static func fromExif(_ exif: UnsafeBufferPointer<UInt8>) -> Orientation {
        guard exif.count >= 14, exif.starts(with: Array("Exif".utf8)) else { return .up }
        let tiff = UnsafeBufferPointer(rebasing: exif[6...])
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return .up
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            let a = Int(tiff[at])
            let b = Int(tiff[at + 1])
            return little ? a | b << 8 : a << 8 | b
        }
        func u32(_ at: Int) -> Int? {
            guard let hi = u16(little ? at + 2 : at), let lo = u16(little ? at : at + 2) else { return nil }
            return hi << 16 | lo
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return .up }
        for i in 0..<count {
            let entry = ifd + 2 + 12 * i
            guard let tag = u16(entry) else { return .up }
            if tag == 0x0112 {
                guard let type = u16(entry + 2), type == 3, let value = u16(entry + 8) else { return .up }
                return Orientation(rawValue: value) ?? .up
            }
        }
        return .up
    }

    /// Where the orientation sends the axes: (x, y) of the result from (x, y) of the source,
    /// as a 2×2 matrix of -1, 0 and 1 (y pointing down).
    private var matrix: [Int] {
        switch self {
        case .up: [1, 0, 0, 1]
        case .upMirrored: [-1, 0, 0, 1]
        case .down: [-1, 0, 0, -1]
        case .downMirrored: [1, 0, 0, -1]
        case .leftMirrored: [0, 1, 1, 0]
        case .right: [0, -1, 1, 0]
        case .rightMirrored: [0, -1, -1, 0]
        case .left: [0, 1, -1, 0]
        }
    }

    /// The one orientation that does `steps` (orientations) one after another.
    static func composing(_ steps: [Int]) -> Orientation {
        var m = [1, 0, 0, 1]
        for step in steps {
            guard let b = Orientation(rawValue: step)?.matrix else { continue }
            m = [
                b[0] * m[0] + b[1] * m[2], b[0] * m[1] + b[1] * m[3], b[2] * m[0] + b[3] * m[2],
                b[2] * m[1] + b[3] * m[3],
            ]
        }
        return allCases.first { $0.matrix == m } ?? .up
    }

    /// Turns `image` so it displays upright.
    public func apply(to image: PixelImage) -> PixelImage {
        if self == .up { return image }
        let w = image.width
        let h = image.height
        let c = image.channels
        let (dw, dh) = swapsDimensions ? (h, w) : (w, h)
        var out = [UInt8](repeating: 0, count: image.pixels.count)
        let orientation = self
        out.withUnsafeMutableBufferPointer { dst in
            image.pixels.withUnsafeBufferPointer { src in
                for dy in 0..<dh {
                    for dx in 0..<dw {
                        let sx: Int
                        let sy: Int
                        switch orientation {
                        case .up: (sx, sy) = (dx, dy)
                        case .upMirrored: (sx, sy) = (w - 1 - dx, dy)
                        case .down: (sx, sy) = (w - 1 - dx, h - 1 - dy)
                        case .downMirrored: (sx, sy) = (dx, h - 1 - dy)
                        case .leftMirrored: (sx, sy) = (dy, dx)
                        case .right: (sx, sy) = (dy, h - 1 - dx)
                        case .rightMirrored: (sx, sy) = (w - 1 - dy, h - 1 - dx)
                        case .left: (sx, sy) = (w - 1 - dy, dx)
                        }
                        let s = (sy * w + sx) * c
                        let d = (dy * dw + dx) * c
                        for k in 0..<c { dst[d + k] = src[s + k] }
                    }
                }
            }
        }
        return PixelImage(width: dw, height: dh, channels: c, pixels: out)
    }
}
