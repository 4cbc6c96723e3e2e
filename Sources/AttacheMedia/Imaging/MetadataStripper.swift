import AttacheBase

/// A source file with its metadata removed and its compressed image data untouched: what is
/// stored when the source already fits every limit and a re-encoded rendition would not be
/// smaller (``ImageProcessor``'s `kept_source`).
///
/// Both walkers keep what a decoder needs to show the image as it was, by an allowlist (never
/// by a list of what to drop, so a segment or chunk no one knows about yet never leaves):
/// - JPEG: frame, table, restart and scan segments, `APP0` `JFIF`, `APP2` `ICC_PROFILE` and
///   `APP14` `Adobe` (how the components are coded); everything else — `APP1` EXIF and XMP
///   (GPS, camera, time), `APP2` MPF, `APP13` IPTC, `COM` — goes, and so does whatever follows
///   the end of the image (an iPhone's gain map, with EXIF of its own).
/// - PNG: the critical chunks and the ones that say how to show the pixels (`tRNS`, `gAMA`,
///   `cHRM`, `sRGB`, `iCCP`, `cICP`, `sBIT`, `bKGD`, `pHYs`); text, time, `eXIf` and every other
///   chunk go, and so does whatever follows `IEND`.
///
/// nil when the file is not one a device is sure to show as the rendition would be: an
/// arithmetic-coded, lossless or CMYK JPEG, an animated PNG, or a structure that does not walk.
enum MetadataStripper {
    static func strip(_ bytes: MediaBytes, kind: MediaKind) -> [UInt8]? {
        let raw = UnsafeRawBufferPointer(bytes.buffer)
        switch kind {
        case .jpeg: return jpeg(raw)
        case .png: return png(raw)
        case .gif: return gif(raw)
        // Never a rendition's source kind kept as it came.
        case .webp, .heic, .avif, .jxl: return nil
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: return nil
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: return nil
        }
    }

    static func jpeg(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        let n = bytes.count
        guard n > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var out: [UInt8] = [0xFF, 0xD8]
        out.reserveCapacity(n)
        var i = 2
        var sawFrame = false
        // Down to the last two bytes: a file that ends with its end-of-image marker, as most
        // do, ends here.
        while i + 2 <= n {
            guard bytes[i] == 0xFF else { return nil }
            var marker = bytes[i + 1]
            // Fill bytes before a marker.
            while marker == 0xFF, i + 2 < n {
                i += 1
                marker = bytes[i + 1]
            }
            if marker == 0xD9 {
                out += [0xFF, 0xD9]
                return sawFrame ? out : nil
            }
            guard i + 4 <= n else { return nil }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 2, i + 2 + length <= n else { return nil }
            let segment = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + 2 + length)])
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(i + 4)..<(i + 2 + length)])
            switch marker {
            case 0xC0, 0xC1, 0xC2:
                // Huffman baseline, extended or progressive, 8-bit, grey or YCbCr only.
                guard payload.count >= 6, payload[0] == 8, payload[5] == 1 || payload[5] == 3 else { return nil }
                sawFrame = true
                out += segment
            case 0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                return nil
            case 0xC4, 0xDB, 0xDD, 0xCC, 0xDC:
                out += segment
            case 0xE0 where startsWith(payload, "JFIF\0"), 0xE2 where startsWith(payload, "ICC_PROFILE\0"),
                0xEE where startsWith(payload, "Adobe"):
                out += segment
            case 0xDA:
                // The scan: its header, then entropy-coded data up to the next marker that is
                // not a stuffed byte or a restart.
                guard sawFrame else { return nil }
                out += segment
                var j = i + 2 + length
                while j + 1 < n {
                    if bytes[j] == 0xFF {
                        let next = bytes[j + 1]
                        if next != 0x00, next != 0xFF, !(0xD0...0xD7).contains(next) { break }
                    }
                    j += 1
                }
                guard j + 1 < n else { return nil }
                out += UnsafeRawBufferPointer(rebasing: bytes[(i + 2 + length)..<j])
                i = j
                continue
            default:
                // APP1 (EXIF, XMP), other APPn, COM, and anything unknown.
                break
            }
            i += 2 + length
        }
        return nil
    }

    static func png(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count > 8, bytes.prefix(8).elementsEqual(signature) else { return nil }
        var out = signature
        out.reserveCapacity(bytes.count)
        var i = 8
        while i + 12 <= bytes.count {
            let length = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length <= bytes.count - i - 12 else { return nil }
            let type = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(i + 4)..<(i + 8)]), as: UTF8.self)
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + 12 + length)])
            if type == "acTL" { return nil }
            if keptChunks.contains(type) { out += chunk }
            i += 12 + length
            if type == "IEND" { return out }
        }
        return nil
    }

    /// A GIF without comment extensions and application extensions other than the loop count
    /// (`NETSCAPE2.0`, `ANIMEXTS1.0`) and the colour profile (`ICCRGBG1`): XMP and the rest go,
    /// and so does whatever follows the trailer.
    static func gif(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        let n = bytes.count
        guard n >= 13,
            bytes.prefix(6).elementsEqual(Array("GIF89a".utf8)) || bytes.prefix(6).elementsEqual(Array("GIF87a".utf8))
        else { return nil }
        var i = 13
        if bytes[10] & 0x80 != 0 { i += 3 << (Int(bytes[10] & 0x07) + 1) }
        guard i <= n else { return nil }
        var out = Array(bytes[0..<i])
        out.reserveCapacity(n)
        /// The end of the data sub-blocks starting at `at` (after their terminator), or nil.
        func subBlocksEnd(_ at: Int) -> Int? {
            var j = at
            while j < n {
                let size = Int(bytes[j])
                if size == 0 { return j + 1 }
                j += 1 + size
            }
            return nil
        }
        while i < n {
            switch bytes[i] {
            case 0x3B:
                out.append(0x3B)
                return out
            case 0x2C:
                guard i + 10 <= n else { return nil }
                var j = i + 10
                if bytes[i + 9] & 0x80 != 0 { j += 3 << (Int(bytes[i + 9] & 0x07) + 1) }
                guard j < n, let end = subBlocksEnd(j + 1) else { return nil }
                out += UnsafeRawBufferPointer(rebasing: bytes[i..<end])
                i = end
            case 0x21:
                guard i + 2 < n, let end = subBlocksEnd(i + 2) else { return nil }
                let label = bytes[i + 1]
                var keep = label == 0xF9 || label == 0x01
                if label == 0xFF, i + 3 + 11 <= n, bytes[i + 2] == 11 {
                    let name = String(
                        decoding: UnsafeRawBufferPointer(rebasing: bytes[(i + 3)..<(i + 14)]), as: UTF8.self)
                    keep = ["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"].contains(name)
                }
                if keep { out += UnsafeRawBufferPointer(rebasing: bytes[i..<end]) }
                i = end
            default:
                return nil
            }
        }
        return nil
    }

    /// PNG chunks that carry pixels or say how to show them.
    static let keptChunks: Set<String> = [
        "IHDR", "PLTE", "IDAT", "IEND", "tRNS", "gAMA", "cHRM", "sRGB", "iCCP", "cICP", "sBIT", "bKGD", "pHYs",
    ]

    private static func startsWith(_ bytes: UnsafeRawBufferPointer, _ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        return bytes.count >= p.count && bytes.prefix(p.count).elementsEqual(p)
    }
}
