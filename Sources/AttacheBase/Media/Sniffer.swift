import Foundation

/// Identifies media from its first bytes.
public enum Sniffer {
    /// The result of looking at a file's first bytes.
    public enum Verdict: Hashable, Sendable {
        /// A kind Attache accepts.
        case accepted(MediaKind)
        /// A recognised type Attache refuses, by name (`webp`, `html`, …).
        case refused(String)
        /// The bytes so far are the start of an accepted signature, but too few to decide.
        case needMoreBytes
        /// Nothing recognisable.
        case unknown
    }

    /// How many leading bytes ``sniff(_:)`` may look at.
    public static let prefixLength = 64

    /// Classifies `bytes` (a file's prefix; ``prefixLength`` bytes are enough).
    public static func sniff(_ bytes: some Collection<UInt8>) -> Verdict {
        if let kind = commonImage(bytes) { return .accepted(kind) }
        let b = Array(bytes.prefix(prefixLength))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + magic.count && b[offset..<offset + magic.count].elementsEqual(magic)
        }
        if starts(Array("RIFF".utf8)) && b.count >= 12 {
            switch String(decoding: b[8..<12], as: UTF8.self) {
            case "WEBP": return .accepted(.webp)
            case "WAVE": return .accepted(.wav)
            case "AVI ": return .accepted(.avi)
            default: return .refused("riff")
            }
        }
        if starts(Array("FORM".utf8)) && b.count >= 12 {
            switch String(decoding: b[8..<12], as: UTF8.self) {
            case "AIFF": return .accepted(.aiff)
            case "AIFC": return .accepted(.aifc)
            default: return .refused("iff")
            }
        }
        if starts(Array("ID3".utf8)) && b.count >= 10 && b[3] < 0xFF && b[4] < 0xFF { return .accepted(.mp3) }
        if let mpeg = mpegName(b) { return mpeg }
        if let audio = frameSyncName(b) { return audio }
        if starts(Array("BM".utf8)) && b.count >= 14 { return .refused("bmp") }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .refused("tiff") }
        if starts(Array("ftyp".utf8), at: 4) && b.count >= 12 {
            let brand = String(decoding: b[8..<12], as: UTF8.self)
            if let heif = heifKind(major: brand, b) { return heif }
            if ["M4A ", "M4B ", "M4P "].contains(brand) { return .accepted(.m4a) }
            if ["M4V ", "M4VH", "M4VP"].contains(brand) { return .accepted(.m4v) }
            if brand == "qt  " { return .accepted(.mov) }
            if brand.hasPrefix("3g") { return .refused("3gpp") }
            if ["isom", "iso2", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "dash", "MSNV", "f4v "]
                .contains(brand)
            {
                return .accepted(.mp4)
            }
            return .refused("iso-media (\(brand.trimmingCharacters(in: .whitespaces)))")
        }
        if starts([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) { return .refused("jpeg2000") }
        // JPEG XL: a bare codestream, or the ISO media container's signature box.
        if starts([0xFF, 0x0A]) && b.count >= 3 { return .accepted(.jxl) }
        if starts([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .accepted(.jxl) }
        // Matroska/WebM (EBML), Ogg pages, FLAC: read to be transcoded.
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return .accepted(.webm) }
        if starts(Array("OggS".utf8)) && b.count >= 5 && b[4] == 0 { return .accepted(.ogg) }
        if starts(Array("fLaC".utf8)) { return .accepted(.flac) }
        if starts(Array("%PDF".utf8)) { return .refused("pdf") }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return .refused("zip") }
        if starts([0x1F, 0x8B]) { return .refused("gzip") }
        if let markup = markupName(b) { return .refused(markup) }
        let magics: [[UInt8]] = [
            [0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("GIF8".utf8),
        ]
        if magics.contains(where: { b.count < $0.count && $0.starts(with: b) }) { return .needMoreBytes }
        return .unknown
    }

    /// Whether a file of `kind` whose first bytes are `bytes` is an animation that may become
    /// a video: every GIF (its frames are counted later), and a WebP whose `VP8X` header sets
    /// the animation flag.
    public static func isAnimation(_ bytes: some Collection<UInt8>, kind: MediaKind) -> Bool {
        switch kind {
        case .gif: return true
        case .webp:
            let b = Array(bytes.prefix(21))
            return b.count == 21 && b[12..<16].elementsEqual("VP8X".utf8) && b[20] & 0x02 != 0
        // A JPEG XL animation is told by its own header when it is decoded.
        case .jpeg, .png, .heic, .avif, .jxl: return false
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: return false
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: return false
        }
    }

    /// HEIF by its brands: AV1 (`avif`, `avis`) is AVIF, HEVC (`heic`, `heix`, …) is HEIC; a
    /// file that names only the general `mif1`/`msf1` brand is told by its compatible brands.
    private static func heifKind(major: String, _ b: [UInt8]) -> Verdict? {
        let heic: Set = ["heic", "heix", "hevc", "hevx", "heim", "heis"]
        let avif: Set = ["avif", "avis"]
        if avif.contains(major) { return .accepted(.avif) }
        if heic.contains(major) { return .accepted(.heic) }
        guard ["mif1", "msf1", "miaf"].contains(major) else { return nil }
        // The ftyp box: size, 'ftyp', major brand, minor version, then compatible brands.
        let size = b.count >= 4 ? Int(b[0]) << 24 | Int(b[1]) << 16 | Int(b[2]) << 8 | Int(b[3]) : 0
        var compatible: [String] = []
        var at = 16
        while at + 4 <= min(size, b.count) {
            compatible.append(String(decoding: b[at..<at + 4], as: UTF8.self))
            at += 4
        }
        if compatible.contains(where: avif.contains) { return .accepted(.avif) }
        if compatible.contains(where: heic.contains) { return .accepted(.heic) }
        return .refused("heif (\(major))")
    }

    /// MPEG-1/2 program streams (pack header) and video elementary streams (sequence header).
    private static func mpegName(_ b: [UInt8]) -> Verdict? {
        guard b.count >= 5, b[0] == 0, b[1] == 0, b[2] == 1 else { return nil }
        switch b[3] {
        case 0xBA:
            // MPEG-2 packs start '01', MPEG-1 packs '0010'.
            if b[4] & 0xC0 == 0x40 { return .accepted(.mpeg2) }
            if b[4] & 0xF0 == 0x20 { return .accepted(.mpeg) }
            return .refused("mpeg (bad pack header)")
        case 0xB3:
            // A sequence extension (00 00 01 B5) after the header marks MPEG-2 video.
            for i in 4..<max(4, b.count - 3) where b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1 && b[i + 3] == 0xB5 {
                return .accepted(.mpeg2)
            }
            return .accepted(.mpeg)
        default:
            return nil
        }
    }

    /// An MPEG audio frame header: MP3 (layer III) is accepted; ADTS AAC and other layers are not.
    private static func frameSyncName(_ b: [UInt8]) -> Verdict? {
        guard b.count >= 4, b[0] == 0xFF, b[1] & 0xE0 == 0xE0 else { return nil }
        let version = (b[1] >> 3) & 0x3
        let layer = (b[1] >> 1) & 0x3
        if b[1] & 0xF6 == 0xF0 { return .refused("aac") }
        let bitrate = b[2] >> 4
        let sampleRate = (b[2] >> 2) & 0x3
        guard version != 1, layer != 0, bitrate != 0xF, bitrate != 0, sampleRate != 3 else { return nil }
        return layer == 1 ? .accepted(.mp3) : .refused("mpeg audio layer \(4 - Int(layer))")
    }

    /// `html`, `svg` or `xml` for text that starts like markup (after a BOM and white space).
    private static func markupName(_ b: [UInt8]) -> String? {
        var i = 0
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        while i < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[i]) { i += 1 }
        guard i < b.count, b[i] == UInt8(ascii: "<") else { return nil }
        let text = String(decoding: b[i...], as: UTF8.self).lowercased()
        if text.hasPrefix("<svg") { return "svg" }
        if text.hasPrefix("<?xml") { return text.contains("<svg") ? "svg" : "xml" }
        if text.hasPrefix("<!doctype html") || text.hasPrefix("<html") || text.hasPrefix("<head")
            || text.hasPrefix("<body") || text.hasPrefix("<!--")
        {
            return "html"
        }
        return "markup"
    }

    /// JPEG, PNG and GIF from the first eight bytes without allocating (the fetch calls this
    /// for every transfer).
    private static func commonImage(_ bytes: some Collection<UInt8>) -> MediaKind? {
        var head = SIMD8<UInt8>(repeating: 0)
        var count = 0
        for byte in bytes.prefix(8) {
            head[count] = byte
            count += 1
        }
        if count >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF { return .jpeg }
        if count == 8 && head == SIMD8(0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A) { return .png }
        if count >= 6 && head[0] == 0x47 && head[1] == 0x49 && head[2] == 0x46 && head[3] == 0x38
            && (head[4] == 0x37 || head[4] == 0x39) && head[5] == 0x61
        {
            return .gif
        }
        return nil
    }

    /// The accepted kind of `bytes`, or a typed error naming what they are.
    public static func kind(of bytes: some Collection<UInt8>) throws(AttacheError) -> MediaKind {
        if bytes.isEmpty { throw AttacheError(.emptyInput, "no bytes") }
        switch sniff(bytes) {
        case .accepted(let kind): return kind
        case .refused(let name): throw AttacheError(.unsupportedType, "\(name) is not an accepted type")
        case .needMoreBytes: throw AttacheError(.truncated, "too few bytes to identify the type")
        case .unknown: throw AttacheError(.unsupportedType, "unrecognised data")
        }
    }
}
