public import AttacheBase
import Foundation

/// A picture as a screen draws it: the part a platform shows, at the size it shows it.
public struct DisplayCopy: Sendable {
    /// The pixels drawn (RGB, or RGBA where the picture is transparent).
    public var image: PixelImage
    /// `image` encoded: JPEG, or PNG where it is transparent.
    public var kind: MediaKind
    public var data: [UInt8]

    /// The pixels a platform draws a copy from: `bytes` decoded upright (a still; an
    /// animation's first frame; a video's frame at `time`, its first without one), as RGB or RGBA.
    public static func picture(
        _ bytes: MediaBytes, time: Double? = nil, limits: DecodeLimits = .default
    ) throws(AttacheError) -> PixelImage {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        let picture: PixelImage
        if kind.category == .video {
            picture = try MediaPoster.frame(bytes, at: time, maxSide: 0, limits: limits).image
        } else {
            var spec = RenditionSpec()
            spec.maxSide = 4096
            picture = try ImageProcessor.decode(bytes, spec: spec, limits: limits).image
        }
        return picture.channels < 3 ? colour(picture) : picture
    }

    /// `picture` with `crop` cut from it (x, y, width and height in 0…1; nil: all of it), then
    /// the centre of that cut at `width` × `height`'s shape (as CSS `object-fit: cover` and the
    /// platforms' own centre cuts do), scaled to exactly `width` × `height` and encoded.
    public init(
        _ picture: PixelImage, crop: [Double]? = nil, width: Int, height: Int, quality: Int = 85
    ) throws(AttacheError) {
        guard width > 0, height > 0, width <= 4096, height <= 4096 else {
            throw AttacheError(.invalidInput, "a display copy is 1 to 4096 pixels a side, not \(width)×\(height)")
        }
        let part = Self.cut(picture, crop ?? [0, 0, 1, 1], aspect: Double(width) / Double(height))
        let drawn = try ImageProcessor.resampleImage(part, target: (width, height)).droppingOpaqueAlpha()
        image = drawn
        if drawn.hasAlpha {
            (kind, data) = (.png, try Encoders.png(drawn, level: 6))
        } else {
            (kind, data) = (.jpeg, try Encoders.jpeg(drawn, quality: quality))
        }
    }

    /// `data` as a `data:` URI.
    public var dataURI: String { "data:\(kind.mimeType);base64," + Data(data).base64EncodedString() }

    /// Gray (and gray with alpha) as RGB (RGBA), so every copy has the same channels.
    static func colour(_ image: PixelImage) -> PixelImage {
        let alpha = image.channels == 2
        var out = [UInt8]()
        out.reserveCapacity(image.width * image.height * (alpha ? 4 : 3))
        for index in stride(from: 0, to: image.pixels.count, by: image.channels) {
            let g = image.pixels[index]
            out += [g, g, g]
            if alpha { out.append(image.pixels[index + 1]) }
        }
        return PixelImage(width: image.width, height: image.height, channels: alpha ? 4 : 3, pixels: out)
    }

    /// The part `crop` names, then its centre at `aspect` (width over height).
    static func cut(_ image: PixelImage, _ crop: [Double], aspect: Double) -> PixelImage {
        let crop = crop.count == 4 ? crop : [0, 0, 1, 1]
        func clamped(_ v: Double) -> Double { min(1, max(0, v.isFinite ? v : 0)) }
        let (cx, cy) = (clamped(crop[0]), clamped(crop[1]))
        let (cw, ch) = (min(1 - cx, clamped(crop[2])), min(1 - cy, clamped(crop[3])))
        var x = Int((cx * Double(image.width)).rounded())
        var y = Int((cy * Double(image.height)).rounded())
        var w = max(1, min(image.width - x, Int((cw * Double(image.width)).rounded())))
        var h = max(1, min(image.height - y, Int((ch * Double(image.height)).rounded())))
        if Double(w) / Double(h) > aspect {
            let narrower = max(1, Int((Double(h) * aspect).rounded()))
            x += (w - narrower) / 2
            w = narrower
        } else {
            let shorter = max(1, Int((Double(w) / aspect).rounded()))
            y += (h - shorter) / 2
            h = shorter
        }
        guard x != 0 || y != 0 || w != image.width || h != image.height else { return image }
        let c = image.channels
        var pixels = [UInt8]()
        pixels.reserveCapacity(w * h * c)
        for row in y..<(y + h) {
            let start = (row * image.width + x) * c
            pixels += image.pixels[start..<(start + w * c)]
        }
        return PixelImage(width: w, height: h, channels: c, pixels: pixels)
    }
}
