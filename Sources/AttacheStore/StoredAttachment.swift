public import AttacheBase

/// What the store knows about one attachment.
public struct StoredAttachment: Hashable, Sendable {
    /// SHA-256 of the bytes.
    public var id: AttachmentID
    /// The kind decided from the bytes, or `sealed` for an encrypted object.
    public var kind: StoredKind
    /// Size in bytes.
    public var bytes: Int64
    /// Pixel width, for images.
    public var width: Int?
    /// Pixel height, for images.
    public var height: Int?
    /// Frame count, for images.
    public var frames: Int?
    /// When it was first stored (Unix seconds).
    public var created: Int64
    /// When it expires and becomes collectable (Unix seconds).
    public var expires: Int64
    /// Path relative to the store root: `objects/ab/cdef….jpg`.
    public var relativePath: String
    /// Animated GIF: when its poster frame starts, in seconds.
    public var posterTime: Double?
    /// A still's ThumbHash, base64 (the placeholder its entry carries).
    public var placeholder: String?
    /// The square a collapsed notification shows (x, y, width, height in 0…1), when not the
    /// centre one.
    public var clip: [Double]?
    /// The tenant it was first stored for (nil: none).
    public var tenant: String?

    init(row: ObjectRow) throws(AttacheError) {
        guard let id = AttachmentID(hex: row.id), let kind = StoredKind(rawValue: row.kind) else {
            throw AttacheError(.storeCorrupt, "catalog row \(row.id) has a bad id or kind \(row.kind)")
        }
        self.id = id
        self.kind = kind
        self.bytes = row.bytes
        self.width = row.width
        self.height = row.height
        self.frames = row.frames
        self.created = row.created
        self.expires = row.expires
        self.relativePath = ObjectLayout.relativePath(id: row.id, fileExtension: kind.fileExtension)
        self.posterTime = row.posterTime
        self.placeholder = row.placeholder
        self.tenant = row.tenant
        self.clip = row.clip.flatMap { text in
            let parts = text.split(separator: ",").compactMap { Double($0) }
            return parts.count == 4 ? parts : nil
        }
    }
}

/// What a stored object is: media of a kind decided from its bytes, or a sealed object (the
/// segmented ciphertext of a sealed payload's attachment, `ATS1…`), whose kind the store does
/// not know: it is served as `application/octet-stream` under the extension `ats`.
public enum StoredKind: Hashable, Sendable {
    case media(MediaKind)
    case sealed

    /// The catalog's spelling: the media kind's name, or `sealed`.
    public var rawValue: String {
        switch self {
        case .media(let kind): kind.rawValue
        case .sealed: "sealed"
        }
    }

    public init?(rawValue: String) {
        if rawValue == "sealed" {
            self = .sealed
        } else if let kind = MediaKind(rawValue: rawValue) {
            self = .media(kind)
        } else {
            return nil
        }
    }

    /// The file extension of the object and its URL.
    public var fileExtension: String {
        switch self {
        case .media(let kind): kind.fileExtension
        case .sealed: "ats"
        }
    }

    /// The MIME type it is served with.
    public var mimeType: String {
        switch self {
        case .media(let kind): kind.mimeType
        case .sealed: "application/octet-stream"
        }
    }

    /// The media kind, unless sealed.
    public var media: MediaKind? {
        if case .media(let kind) = self { kind } else { nil }
    }
}

/// Facts about the bytes given to ``AttachmentStore/put(_:metadata:source:ttl:)``.
public struct ObjectMetadata: Hashable, Sendable {
    /// The kind decided from the bytes (or sealed).
    public var kind: StoredKind
    /// Pixel width, for images.
    public var width: Int?
    /// Pixel height, for images.
    public var height: Int?
    /// Frame count, for images.
    public var frames: Int?
    /// Animated GIF: when its poster frame starts, in seconds.
    public var posterTime: Double?
    /// A still's ThumbHash, base64.
    public var placeholder: String? = nil
    /// The square a collapsed notification shows, when not the centre one.
    public var clip: [Double]? = nil

    /// Creates metadata.
    public init(kind: MediaKind, width: Int? = nil, height: Int? = nil, frames: Int? = nil, posterTime: Double? = nil) {
        self.kind = .media(kind)
        self.width = width
        self.height = height
        self.frames = frames
        self.posterTime = posterTime
    }
}

extension ObjectMetadata {
    /// A sealed object: no kind, no dimensions (they stay inside the seal).
    public static let sealed = {
        var metadata = ObjectMetadata(kind: .jpeg)
        metadata.kind = .sealed
        return metadata
    }()
}

/// Where stored bytes came from, so a repeated request can skip fetch and resize.
public struct SourceReference: Hashable, Sendable {
    /// The URL the media was fetched from.
    public var url: String
    /// A stable description of the rendition spec that produced the bytes.
    public var spec: String
    /// The origin's `ETag`, for a conditional re-fetch.
    public var etag: String?
    /// The origin's `Last-Modified`, for a conditional re-fetch.
    public var lastModified: String?
    /// What the maker said of the rendition that a reuse reports again (a receiver's picture:
    /// its crop, how it was placed, the encodes and quality that met the cap), in its words.
    public var note: String?

    /// Creates a reference.
    public init(url: String, spec: String, etag: String? = nil, lastModified: String? = nil, note: String? = nil) {
        self.url = url
        self.spec = spec
        self.etag = etag
        self.lastModified = lastModified
        self.note = note
    }
}

/// The file layout under a store root.
package enum ObjectLayout {
    package static func relativePath(id: String, fileExtension: String) -> String {
        let split = id.index(id.startIndex, offsetBy: 2)
        return "objects/\(id[..<split])/\(id[split...]).\(fileExtension)"
    }

    /// The directories objects are spread over, by the id's first byte: `00` … `ff`.
    package static let prefixes: [String] = (0..<256).map { byte in
        let digits = Array("0123456789abcdef")
        return String([digits[byte >> 4], digits[byte & 15]])
    }

    /// The smallest string above every id that starts with `prefix` (two hex digits).
    package static func upperBound(of prefix: String) -> String {
        guard let value = Int(prefix, radix: 16), value < 255 else { return "g" }
        return prefixes[value + 1]
    }
}
