import AttacheBase
import CAttacheCodecs

/// One frame for ``writeGIF(width:height:palette:frames:)``.
public struct GIFTestFrame {
    public var left: Int, top: Int, width: Int, height: Int
    /// Palette indices, `width * height` of them.
    public var indices: [UInt8]
    public var delay: Int
    public var disposal: Int
    /// The transparent index, or -1.
    public var transparent: Int

    public init(
        left: Int, top: Int, width: Int, height: Int, indices: [UInt8], delay: Int, disposal: Int, transparent: Int
    ) {
        (self.left, self.top, self.width, self.height) = (left, top, width, height)
        self.indices = indices
        self.delay = delay
        self.disposal = disposal
        self.transparent = transparent
    }
}

/// A GIF written with giflib: a looping screen with a global palette (RGB triples) and frames.
public func writeGIF(width: Int, height: Int, palette: [UInt8], frames: [GIFTestFrame]) throws -> [UInt8] {
    var error = att_error()
    guard
        let encoder = palette.withUnsafeBufferPointer({
            att_gif_encoder_new(Int32(width), Int32(height), 0, $0.baseAddress, Int32(palette.count / 3), &error)
        })
    else { throw AttacheError(.internalError, "gif encoder: \(error.status)") }
    defer { att_gif_encoder_free(encoder) }
    for frame in frames {
        let status = frame.indices.withUnsafeBufferPointer {
            att_gif_encoder_add(
                encoder, Int32(frame.left), Int32(frame.top), Int32(frame.width), Int32(frame.height), $0.baseAddress,
                nil, 0, Int32(frame.delay), Int32(frame.disposal), Int32(frame.transparent), &error)
        }
        guard status == 0 else { throw AttacheError(.internalError, "gif encoder frame: \(error.status)") }
    }
    var size = 0
    guard let bytes = att_gif_encoder_finish(encoder, &size, &error) else {
        throw AttacheError(.internalError, "gif encoder finish")
    }
    defer { att_free(bytes) }
    return Array(UnsafeBufferPointer(start: bytes, count: size))
}

/// An animated GIF of `frames` full-screen frames of a diagonal gradient that moves a step a
/// frame (256 colours, so every frame is real decode, resample and palette work, while the
/// file stays small because gradients compress well).
public func gradientAnimation(width: Int, height: Int, frames: Int, delay: Int = 4) throws -> [UInt8] {
    var palette: [UInt8] = []
    for i in 0..<256 { palette += [UInt8(i), UInt8(255 - i), UInt8(truncatingIfNeeded: i * 7)] }
    let list = (0..<frames).map { frame in
        var indices = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width { indices[y * width + x] = UInt8(truncatingIfNeeded: (x + y) / 4 + frame * 3) }
        }
        return GIFTestFrame(
            left: 0, top: 0, width: width, height: height, indices: indices, delay: delay, disposal: 1,
            transparent: -1)
    }
    return try writeGIF(width: width, height: height, palette: palette, frames: list)
}
