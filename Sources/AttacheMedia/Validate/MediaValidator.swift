public import AttacheBase
internal import Foundation

/// Media whose kind is decided from its bytes and whose size fits its kind's cap: what the
/// transform takes. The kind travels with the bytes, so no later stage sniffs again.
public struct ValidatedMedia: Sendable {
    /// The bytes, as fetched.
    public let bytes: MediaBytes
    /// The kind found in the first bytes.
    public let kind: MediaKind

    fileprivate init(bytes: MediaBytes, kind: MediaKind) {
        self.bytes = bytes
        self.kind = kind
    }
}

/// The validate stage: the real type from the bytes (never from a URL or header) and the byte
/// cap of its category, before anything is decoded.
public enum MediaValidator {
    /// Validates `bytes`.
    /// - Parameters:
    ///   - sniffedKind: the kind the fetch's early check already found in the first bytes;
    ///     nil sniffs them here.
    ///   - limits: the byte cap of each category.
    /// - Throws: `empty_input`, `unsupported_type`, `truncated` (too few bytes to tell the
    ///   type) or `too_large` with the category's limit.
    public static func validate(
        _ bytes: MediaBytes, sniffedKind: MediaKind? = nil, limits: MediaLimits = MediaLimits()
    ) throws(AttacheError) -> ValidatedMedia {
        let kind: MediaKind
        if let sniffedKind {
            kind = sniffedKind
        } else {
            kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        }
        try limits.check(
            kind, bytes: Int64(bytes.count),
            animated: Sniffer.isAnimation(bytes.prefix(Sniffer.prefixLength), kind: kind))
        return ValidatedMedia(bytes: bytes, kind: kind)
    }

    /// Disagreements between the bytes and what the URL or `Content-Type` claimed: warnings
    /// only, since the bytes decide.
    public static func mismatches(kind: MediaKind, contentType: String?, url: String) -> [String] {
        var warnings: [String] = []
        if let type = contentType.map(mediaType), !type.isEmpty, type != kind.mimeType,
            !(typeAliases[kind]?.contains(type) ?? false),
            !["application/octet-stream", "binary/octet-stream"].contains(type)
        {
            warnings.append("Content-Type \(type) but the bytes are \(kind.rawValue)")
        }
        let path = url.split(separator: "?").first.map(String.init) ?? url
        if let slash = path.lastIndex(of: "/"), let dot = path[slash...].lastIndex(of: ".") {
            let ext = path[path.index(after: dot)...].lowercased()
            let same = extensionAliases[kind] ?? [kind.fileExtension]
            if !ext.isEmpty, ext.count <= 5, !same.contains(ext) {
                warnings.append("the URL says .\(ext) but the bytes are \(kind.rawValue)")
            }
        }
        return warnings
    }

    /// `image/png; charset=…` → `image/png`, lowercased.
    private static func mediaType(_ header: String) -> String {
        let type = header.split(separator: ";").first ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased()
    }

    private static let typeAliases: [MediaKind: Set<String>] = [
        .jpeg: ["image/jpg", "image/pjpeg"], .png: ["image/x-png"], .mp3: ["audio/mp3", "audio/mpeg3"],
        .wav: ["audio/x-wav", "audio/wave", "audio/vnd.wave"], .aiff: ["audio/x-aiff"], .aifc: ["audio/x-aiff"],
        .m4a: ["audio/m4a", "audio/x-m4a"], .mp4: ["application/mp4"], .m4v: ["video/mp4"],
        .avi: ["video/avi", "video/msvideo"], .mpeg: ["video/mpg"], .mpeg2: ["video/mpg"],
    ]

    private static let extensionAliases: [MediaKind: Set<String>] = [
        .jpeg: ["jpg", "jpeg", "jpe"], .mpeg: ["mpg", "mpeg"], .mpeg2: ["mpg", "mpeg", "m2v", "vob"],
        .aiff: ["aif", "aiff"], .aifc: ["aif", "aifc"],
    ]
}
