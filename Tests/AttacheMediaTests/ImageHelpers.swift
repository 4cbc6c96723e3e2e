@testable import AttacheMedia

/// Mean absolute difference of two same-sized images' RGB (or gray) samples.
func meanAbsoluteDifference(_ a: PixelImage, _ b: PixelImage) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.channels == b.channels)
    var total = 0
    for i in 0..<a.pixels.count { total += abs(Int(a.pixels[i]) - Int(b.pixels[i])) }
    return Double(total) / Double(a.pixels.count)
}

/// Replaces the 16-bit big-endian value at `offset`.
func patch16(_ bytes: inout [UInt8], at offset: Int, _ value: Int) {
    bytes[offset] = UInt8(value >> 8)
    bytes[offset + 1] = UInt8(value & 0xFF)
}

/// Offset of the first JPEG marker `marker` (0xC0 for SOF0...), or nil.
func jpegMarkerOffset(_ bytes: [UInt8], _ marker: UInt8) -> Int? {
    var i = 2
    while i + 4 <= bytes.count, bytes[i] == 0xFF {
        if bytes[i + 1] == marker { return i }
        i += 2 + Int(bytes[i + 2]) << 8 + Int(bytes[i + 3])
    }
    return nil
}

/// A PNG holding only IHDR (with a correct CRC) and IEND.
func pngHeaderOnly(width: UInt32, height: UInt32, colorType: UInt8 = 2) -> [UInt8] {
    func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc32(body))
    }
    let ihdr = be32(width) + be32(height) + [8, colorType, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IEND", [])
}

func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
