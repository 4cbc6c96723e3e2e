public import AttacheBase
internal import AttacheSeal
internal import AttacheStore

/// One entry of the attachment block added to the payload.
public struct AttachmentDescriptor: Hashable, Sendable {
    /// The stored object's id (SHA-256 of its bytes).
    public var id: String
    /// The signed store URL, ending in the kind's extension.
    public var url: String
    /// The kind's UTI.
    public var type: String
    /// Size of the stored object.
    public var bytes: Int64
    /// Pixel width and height, for images.
    public var width: Int?
    public var height: Int?
    /// Frames, for images.
    public var frames: Int?
    /// `UNNotificationAttachment` options.
    public var thumbnail: ThumbnailOptions
    /// The media's kind (decides the category).
    public var kind: MediaKind
    /// For a sealed payload: how to open the stored object (its key, the plaintext's hash).
    public var seal: SealedObject?
    /// The small rendition of an image (the device's fallback), when one was made.
    public var small: SmallRendition?
    /// The picture's ThumbHash (base64 without padding; an animation's or a video's, its
    /// poster's): the placeholder the device draws when neither rendition arrives; the first
    /// thing left out when the payload would not fit.
    public var placeholder: String? = nil

    /// The entry's member for ``placeholder``: two characters, as APNs' own compact keys, so
    /// that a picture's placeholder costs at most 40 bytes of the 4 KB (`,"th":"` and `"` beside
    /// an opaque picture's 32 characters at most). Reports and `resize --json`, which have no
    /// such budget, spell it `thumbhash`.
    public static let placeholderMember = "th"

    /// How a device opens a sealed attachment; travels only inside `encrypted-content`.
    public struct SealedObject: Hashable, Sendable {
        /// The object's 256-bit key.
        public var key: [UInt8]
        /// SHA-256 of the plaintext (lowercase hex).
        public var sha256: String
    }

    /// A small rendition (longest side ≤ ``PipelineConfiguration/smallSide``): the same kind,
    /// or for a video its poster (a JPEG, with its own `type`).
    public struct SmallRendition: Hashable, Sendable {
        public var url: String
        public var bytes: Int64
        public var width: Int?
        public var height: Int?
        public var seal: SealedObject?
        /// The UTI when it is not the entry's (a video's poster: `public.jpeg`).
        public var type: String? = nil

        var json: JSONValue {
            var members: [JSONValue.Member] = [
                .init(key: "url", value: .string(url)), .init(key: "bytes", value: .number(String(bytes))),
            ]
            if let type { members.append(.init(key: "type", value: .string(type))) }
            if let width { members.append(.init(key: "width", value: .number(String(width)))) }
            if let height { members.append(.init(key: "height", value: .number(String(height)))) }
            if let seal { members += seal.members }
            return .object(members)
        }
    }

    /// The block entry; `full` false leaves out the optional fields (sizes and options),
    /// `small` false the small rendition. A sealed entry always has its key, hash and size.
    public func json(full: Bool, small withSmall: Bool = true, placeholder withPlaceholder: Bool = true) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "id", value: .string(id)),
            .init(key: "url", value: .string(url)),
            .init(key: "type", value: .string(type)),
        ]
        if withPlaceholder, let placeholder {
            members.append(.init(key: Self.placeholderMember, value: .string(placeholder)))
        }
        if let seal { members += [.init(key: "bytes", value: .number(String(bytes)))] + seal.members }
        if withSmall, let small { members.append(.init(key: "small", value: small.json)) }
        guard full else { return .object(members) }
        if seal == nil { members.append(.init(key: "bytes", value: .number(String(bytes)))) }
        if let width { members.append(.init(key: "width", value: .number(String(width)))) }
        if let height { members.append(.init(key: "height", value: .number(String(height)))) }
        if let frames { members.append(.init(key: "frames", value: .number(String(frames)))) }
        var options: [JSONValue.Member] = [.init(key: "typeHint", value: .string(type))]
        if let hidden = thumbnail.hidden { options.append(.init(key: "thumbnailHidden", value: .bool(hidden))) }
        if let rect = thumbnail.clippingRect, rect.count == 4 {
            let fields = zip(["X", "Y", "Width", "Height"], rect).map {
                JSONValue.Member(key: $0.0, value: .number(Self.format($0.1)))
            }
            options.append(.init(key: "thumbnailClippingRect", value: .object(fields)))
        }
        if let time = thumbnail.time { options.append(.init(key: "thumbnailTime", value: .number(Self.format(time)))) }
        members.append(.init(key: "options", value: .object(options)))
        return .object(members)
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

extension AttachmentDescriptor.SealedObject {
    var members: [JSONValue.Member] {
        [.init(key: "key", value: .string(Base64.encode(key))), .init(key: "sha256", value: .string(sha256))]
    }
}

extension AttachmentDescriptor {
    /// The entry for a stored attachment, served at `<baseURL>/<token>/<id>.<ext>`.
    init(_ stored: StoredAttachment, kind: MediaKind, token: String, baseURL: String, thumbnail: ThumbnailOptions) {
        var thumbnail = thumbnail
        if thumbnail.time == nil { thumbnail.time = stored.posterTime }
        // The sender's rect wins; else the square on the subject, when it is not the centre one.
        if thumbnail.clippingRect == nil { thumbnail.clippingRect = stored.clip }
        self.init(
            id: stored.id.hex, url: Self.url(stored, token: token, baseURL: baseURL),
            type: kind.uti, bytes: stored.bytes, width: stored.width, height: stored.height,
            frames: stored.frames, thumbnail: thumbnail, kind: kind)
        placeholder = stored.placeholder
    }

    /// `<baseURL>/<token>/<id>.<ext>`.
    static func url(_ stored: StoredAttachment, token: String, baseURL: String) -> String {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        return "\(base)/\(token)/\(stored.id.hex).\(stored.kind.fileExtension)"
    }
}

extension AttachmentDescriptor {
    /// The size of the smallest entry an attachment served from `baseURL` can have: optional
    /// fields left out, a 64-digit id, a token, and the shortest extension and type of any kind.
    static func smallestEntrySize(baseURL: String, sealed: Bool = false) -> Int {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        let id = String(repeating: "0", count: 64)
        let token = String(repeating: "A", count: AccessToken.encodedLength)
        let ext = MediaKind.allCases.map(\.fileExtension).min { $0.utf8.count < $1.utf8.count }!
        let type = MediaKind.allCases.map(\.uti).min { $0.utf8.count < $1.utf8.count }!
        let entry = AttachmentDescriptor(
            id: id, url: "\(base)/\(token)/\(id).\(ext)", type: type, bytes: 0, width: nil, height: nil, frames: nil,
            thumbnail: ThumbnailOptions(), kind: .jpeg,
            seal: sealed ? SealedObject(key: Array(repeating: 0, count: 32), sha256: id) : nil)
        return entry.json(full: false, small: false).text.utf8.count
    }
}
