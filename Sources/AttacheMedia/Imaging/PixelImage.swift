internal import AttacheBase

/// An 8-bit interleaved image: 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA) channels.
public struct PixelImage: Hashable, Sendable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Channels per pixel.
    public var channels: Int
    /// Row-major pixels, `width * channels` bytes a row, no padding.
    public var pixels: [UInt8]

    /// Creates an image; `pixels.count` must be `width * height * channels`.
    public init(width: Int, height: Int, channels: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * channels, "pixel buffer size mismatch")
        self.width = width
        self.height = height
        self.channels = channels
        self.pixels = pixels
    }

    /// Whether the last channel is alpha.
    public var hasAlpha: Bool { channels == 2 || channels == 4 }

    /// The bytes of pixel (x, y).
    public func pixel(x: Int, y: Int) -> ArraySlice<UInt8> {
        let start = (y * width + x) * channels
        return pixels[start..<start + channels]
    }

    /// A copy without the alpha channel when every pixel is opaque; otherwise `self`.
    public func droppingOpaqueAlpha() -> PixelImage {
        guard hasAlpha else { return self }
        let stride = channels
        let opaque = pixels.withUnsafeBufferPointer { p -> Bool in
            var i = stride - 1
            while i < p.count {
                if p[i] != 255 { return false }
                i += stride
            }
            return true
        }
        guard opaque else { return self }
        let out = channels - 1
        var result = [UInt8](repeating: 0, count: width * height * out)
        result.withUnsafeMutableBufferPointer { dst in
            pixels.withUnsafeBufferPointer { src in
                for i in 0..<(width * height) {
                    for c in 0..<out { dst[i * out + c] = src[i * stride + c] }
                }
            }
        }
        return PixelImage(width: width, height: height, channels: out, pixels: result)
    }
}
