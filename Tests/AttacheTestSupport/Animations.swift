import AttacheBase
import CAttacheCodecs

/// An animated GIF written with giflib: `frames` full-screen frames of a diagonal gradient that
/// moves one step a frame (256 colours, so every frame is real decode, resample and palette
/// work, while the file stays small because gradients compress well).
public func gradientAnimation(width: Int, height: Int, frames: Int, delay: Int = 4) throws -> [UInt8] {
    var palette: [UInt8] = []
    for i in 0..<256 { palette += [UInt8(i), UInt8(255 - i), UInt8(truncatingIfNeeded: i * 7)] }
    var error = att_error()
    guard
        let encoder = palette.withUnsafeBufferPointer({
            att_gif_encoder_new(Int32(width), Int32(height), 0, $0.baseAddress, 256, &error)
        })
    else { throw AttacheError(.internalError, "gif encoder: \(error.status)") }
    defer { att_gif_encoder_free(encoder) }
    var indices = [UInt8](repeating: 0, count: width * height)
    for frame in 0..<frames {
        for y in 0..<height {
            for x in 0..<width { indices[y * width + x] = UInt8(truncatingIfNeeded: (x + y) / 4 + frame * 3) }
        }
        let status = indices.withUnsafeBufferPointer {
            att_gif_encoder_add(
                encoder, 0, 0, Int32(width), Int32(height), $0.baseAddress, nil, 0, Int32(delay), 1, -1, &error)
        }
        guard status == 0 else { throw AttacheError(.internalError, "gif encoder frame \(frame)") }
    }
    var size = 0
    guard let bytes = att_gif_encoder_finish(encoder, &size, &error) else {
        throw AttacheError(.internalError, "gif encoder finish")
    }
    defer { att_free(bytes) }
    return Array(UnsafeBufferPointer(start: bytes, count: size))
}
