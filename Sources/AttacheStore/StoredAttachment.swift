public import AttacheBase

/// What the store knows about one attachment.
public struct StoredAttachment: Hashable, Sendable {
    /// SHA-256 of the bytes.
    public var id: AttachmentID
    /// The kind decided from the bytes.
    public var kind: MediaKind
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

    init(row: ObjectRow) throws(AttacheError) {
        guard let id = AttachmentID(hex: row.id), let kind = MediaKind(rawValue: row.kind) else {
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
    }
}

/// Facts about the bytes given to ``AttachmentStore/put(_:metadata:source:ttl:)``.
public struct ObjectMetadata: Hashable, Sendable {
    /// The kind decided from the bytes.
    public var kind: MediaKind
    /// Pixel width, for images.
    public var width: Int?
    /// Pixel height, for images.
    public var height: Int?
    /// Frame count, for images.
    public var frames: Int?
    /// Animated GIF: when its poster frame starts, in seconds.
    public var posterTime: Double?

    /// Creates metadata.
    public init(kind: MediaKind, width: Int? = nil, height: Int? = nil, frames: Int? = nil, posterTime: Double? = nil) {
        self.kind = kind
        self.width = width
        self.height = height
        self.frames = frames
        self.posterTime = posterTime
    }
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

    /// Creates a reference.
    public init(url: String, spec: String, etag: String? = nil, lastModified: String? = nil) {
        self.url = url
        self.spec = spec
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// The file layout under a store root.
enum ObjectLayout {
    static func relativePath(id: String, fileExtension: String) -> String {
        let split = id.index(id.startIndex, offsetBy: 2)
        return "objects/\(id[..<split])/\(id[split...]).\(fileExtension)"
    }
}
