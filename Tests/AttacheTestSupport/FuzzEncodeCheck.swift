import AttacheMedia
import CAttacheCodecs

extension FuzzChecks {
    /// The JPEG encoders on any pixels: the first six bytes give the size (1–320 a side), grey
    /// or colour, the quality, the tables, the chroma and how often each pixel byte repeats
    /// (1–8: flat runs, long runs of empty blocks); the rest are the pixels, repeated to fill
    /// the picture. Both encoders' progressive scans, as the shim writes them, are the file
    /// libjpeg writes from the same coefficients; every file reads back; and a fast encode's
    /// held coefficients read back to the pixels its file does.
    public static func encode(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard bytes.count >= 6 else { return }
        let width = 1 + (Int(bytes[0]) | Int(bytes[1] & 1) << 8) % 320
        let height = 1 + (Int(bytes[2]) | Int(bytes[3] & 1) << 8) % 320
        let channels = bytes[4] & 1 == 0 ? 1 : 3
        let tables = Int32((bytes[4] >> 1) % 3)
        let chroma = Int32((bytes[4] >> 3) % 3)
        let quality = 1 + Int32(bytes[5] % 100)
        let repeats = 1 << Int(bytes[4] >> 6)
        let source = bytes.count > 6 ? Array(bytes[6...]) : [0]
        let pixels = (0..<width * height * channels).map { source[$0 / repeats % source.count] }
        let image = PixelImage(width: width, height: height, channels: channels, pixels: pixels)
        let name = "\(width)x\(height)x\(channels) q\(quality) tables \(tables) chroma \(chroma)"
        for flags in [Int32(ATT_JPEG_PROGRESSIVE), Int32(ATT_JPEG_TRELLIS)] {
            let shim = try encoded(image, quality, tables, chroma, flags, name)
            // The same bytes or a finding: libjpeg's file needs no read-back of its own.
            let libjpeg = try encoded(
                image, quality, tables, chroma, flags | Int32(ATT_JPEG_LIBJPEG_SCANS), name, readBack: false)
            guard shim.file == libjpeg.file else {
                throw FuzzFinding("\(name) flags \(flags): the shim's scans are not libjpeg's file")
            }
            guard let held = shim.held else { continue }
            guard held == shim.readBack else {
                throw FuzzFinding("\(name): the held read-back differs from the file's")
            }
        }
    }

    /// `image` encoded with `flags` (held where the encoder holds its coefficients): the file,
    /// its pixels read back from the file, and from the held coefficients (nil if none; the
    /// held read-back starts from 0x5A, not zero, so every byte must be written). Without
    /// `readBack`, the file alone (no pixels). `name` heads a finding's message.
    public static func encoded(
        _ image: PixelImage, _ quality: Int32, _ tables: Int32, _ chroma: Int32, _ flags: Int32, _ name: String,
        readBack: Bool = true
    ) throws(FuzzFinding) -> (file: [UInt8], readBack: [UInt8], held: [UInt8]?) {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        var held: OpaquePointer?
        let stride = image.width * image.channels
        let status = image.pixels.withUnsafeBufferPointer { p in
            att_jpeg_encode_held(
                p.baseAddress, UInt32(image.width), UInt32(image.height), stride, Int32(image.channels), quality,
                tables, chroma, flags, &output, &length, &held, &error)
        }
        defer {
            att_free(output)
            att_jpeg_held_free(held)
        }
        guard status == 0, let output else { throw FuzzFinding("\(name) flags \(flags): encode failed (\(status))") }
        let file = Array(UnsafeBufferPointer(start: output, count: length))
        guard readBack else { return (file, [], nil) }
        var pixels = [UInt8](repeating: 0, count: stride * image.height)
        guard
            att_jpeg_decode_into(
                output, length, UInt32(image.width), UInt32(image.height), Int32(image.channels), &pixels, stride,
                &error) == 0
        else { throw FuzzFinding("\(name) flags \(flags): the file does not read back") }
        guard let held else { return (file, pixels, nil) }
        var fromHeld = [UInt8](repeating: 0x5A, count: stride * image.height)
        guard
            att_jpeg_held_decode(
                held, UInt32(image.width), UInt32(image.height), Int32(image.channels), &fromHeld, stride, &error) == 0
        else {
            let reason = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw FuzzFinding("\(name) flags \(flags): the held coefficients do not read back: \(reason)")
        }
        return (file, pixels, fromHeld)
    }
}
