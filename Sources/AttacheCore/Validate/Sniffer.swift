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
        let b = Array(bytes.prefix(prefixLength))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + magic.count && Array(b[offset..<offset + magic.count]) == magic
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .accepted(.jpeg) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .accepted(.png) }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .accepted(.gif) }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .refused("webp") }
        if starts(Array("BM".utf8)) && b.count >= 14 { return .refused("bmp") }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .refused("tiff") }
        if starts(Array("ftyp".utf8), at: 4) && b.count >= 12 {
            let brand = String(decoding: b[8..<12], as: UTF8.self)
            if ["heic", "heix", "hevc", "heim", "heis", "mif1", "msf1"].contains(brand) { return .refused("heic") }
            if ["avif", "avis"].contains(brand) { return .refused("avif") }
        }
        if starts([0x00, 0x00, 0x00, 0x0C, 0x6A, 0x50, 0x20, 0x20]) { return .refused("jpeg2000") }
        if starts([0xFF, 0x0A]) { return .refused("jpegxl") }
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
