/// Where a payload names its media: a rule per sender convention, and what a rule finds.
public struct SourceRule: Hashable, Sendable {
    /// A short name reported with each attachment (`fcm`, `onesignal`, …).
    public var name: String
    /// Member names from the top level down; `*` stands for every member of an object. A
    /// string found there is a URL; an array yields each string in it.
    public var path: [String]
    /// For object-shaped conventions (Airship): the member, beside the URL, holding options.
    public var optionsKey: String?

    public init(name: String, path: [String], optionsKey: String? = nil) {
        self.name = name
        self.path = path
        self.optionsKey = optionsKey
    }

    /// Parses `name=a/b/c` (the CLI's `--source` form; `/` separates members).
    public init?(argument: String) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else { return nil }
        let path = argument[argument.index(after: equals)...].split(separator: "/").map(String.init)
        guard !path.isEmpty else { return nil }
        self.init(name: String(argument[..<equals]), path: path)
    }

    /// The conventions of the common senders, in the order they are read: every sender's APNs
    /// side in ``Sender/all``.
    public static let defaults: [SourceRule] = Sender.all.flatMap(\.apns)
}

/// One media URL found in a payload.
public struct AttachmentSource: Hashable, Sendable {
    /// The URL as written in the payload.
    public var url: String
    /// The rule that found it.
    public var convention: String
    /// Thumbnail options the sender asked for (Airship `options`): hidden, clipping rect, time.
    public var options: ThumbnailOptions
    /// The top-level member of an APNs payload it was named in (a seal takes that member);
    /// nil for a send body's field.
    public var member: String?

    public init(
        url: String, convention: String, options: ThumbnailOptions = ThumbnailOptions(), member: String? = nil
    ) {
        self.url = url
        self.convention = convention
        self.options = options
        self.member = member
    }
}

/// `UNNotificationAttachment` thumbnail options carried into the attachment block.
public struct ThumbnailOptions: Hashable, Sendable {
    /// Hide the thumbnail.
    public var hidden: Bool?
    /// Normalised clipping rectangle (x, y, width, height in 0…1).
    public var clippingRect: [Double]?
    /// Seconds into an animated image or video to take the thumbnail from.
    public var time: Double?

    public init(hidden: Bool? = nil, clippingRect: [Double]? = nil, time: Double? = nil) {
        self.hidden = hidden
        self.clippingRect = clippingRect
        self.time = time
    }
}

extension NotificationContent {
    /// Every media URL the rules find, in rule order, each URL once.
    public func sources(using rules: [SourceRule] = SourceRule.defaults) -> [AttachmentSource] {
        var found: [AttachmentSource] = []
        var seen = Set<String>()
        for rule in rules {
            for (value, parent) in Self.values(at: rule.path[...], in: root, parent: nil) {
                let options = rule.optionsKey.flatMap { parent?[$0] }.map(Self.thumbnailOptions) ?? ThumbnailOptions()
                let urls: [String]
                switch value {
                case .string(let url): urls = [url]
                case .array(let items): urls = items.compactMap(\.stringValue)
                default: urls = []
                }
                for url in urls where !url.isEmpty && seen.insert(url).inserted {
                    found.append(
                        AttachmentSource(url: url, convention: rule.name, options: options, member: rule.path.first))
                }
            }
        }
        return found
    }

    /// Values at `path` with the object holding each (for options beside the URL).
    private static func values(
        at path: ArraySlice<String>, in value: JSONValue, parent: JSONValue?
    ) -> [(JSONValue, JSONValue?)] {
        guard let head = path.first else { return [(value, parent)] }
        guard case .object(let members) = value else { return [] }
        let matching = head == "*" ? members : members.filter { $0.key == head }.prefix(1).map { $0 }
        return matching.flatMap { values(at: path.dropFirst(), in: $0.value, parent: value) }
    }

    /// Airship-style options: `{"crop": {"x","y","width","height"}, "time": s, "hidden": b}`.
    static func thumbnailOptions(_ value: JSONValue) -> ThumbnailOptions {
        var options = ThumbnailOptions()
        if case .bool(let hidden) = value["hidden"] { options.hidden = hidden }
        options.time = value["time"]?.doubleValue
        if let crop = value["crop"] {
            let parts = ["x", "y", "width", "height"].compactMap { crop[$0]?.doubleValue }
            if parts.count == 4, parts.allSatisfy({ (0...1).contains($0) }) { options.clippingRect = parts }
        }
        return options
    }
}
