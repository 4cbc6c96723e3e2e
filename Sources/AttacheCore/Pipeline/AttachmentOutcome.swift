/// What happened to one attachment source: attached, or failed with a stable reason.
public struct AttachmentOutcome: Sendable {
    /// The URL from the payload.
    public var url: String
    /// The convention that found it.
    public var convention: String
    /// The attachment block entry, when attached.
    public var attachment: AttachmentDescriptor?
    /// The failure, when not attached (`timed_out` when the deadline passed first).
    public var error: AttacheError?
    /// True when the stored rendition was reused (no fetch, no transform).
    public var cached = false
    /// Non-fatal findings, e.g. a `Content-Type` or URL extension that disagrees with the bytes.
    public var warnings: [String] = []
    /// Milliseconds spent per stage.
    public var timings = StageTimings()

    /// `attached`, or the error code.
    public var reason: String { attachment != nil ? "attached" : error?.code.rawValue ?? "unknown" }
}

/// Milliseconds per stage for one attachment.
public struct StageTimings: Hashable, Sendable {
    public var fetch: Double = 0
    public var validate: Double = 0
    public var transform: Double = 0
    public var store: Double = 0
}

/// One entry of the attachment block added to the payload.
public struct AttachmentDescriptor: Hashable, Sendable {
    /// The stored object's id (SHA-256 of its bytes).
    public var id: String
    /// The signed store URL, ending in the kind's extension.
    public var url: String
    /// The kind's UTI.
    public var type: String
    public var bytes: Int64
    public var width: Int?
    public var height: Int?
    public var frames: Int?
    /// `UNNotificationAttachment` options.
    public var thumbnail: ThumbnailOptions

    /// The block entry; `full` false leaves out the optional fields (sizes and options).
    func json(full: Bool) -> JSONValue {
        var members: [JSONValue.Member] = [
            .init(key: "id", value: .string(id)),
            .init(key: "url", value: .string(url)),
            .init(key: "type", value: .string(type)),
        ]
        guard full else { return .object(members) }
        members.append(.init(key: "bytes", value: .number(String(bytes))))
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
