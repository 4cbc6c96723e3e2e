public import AttacheBase
public import AttacheMedia

/// The request bodies a push backend sends to every platform at once, told apart by their own
/// members: an FCM HTTP v1 message (`{"message": {…}}`), a OneSignal create-notification body
/// (`app_id` with `contents`, `headings` or `template_id`), a Braze `/messages/send` body
/// (`messages` with `apple_push`, `android_push` or `web_push`), an Airship `/api/push` body
/// (a `notification` object beside `audience` or `device_types`) or a CleverTap campaign body
/// (`content` with `platform_specific`); anything else is an APNs payload, as before.
public enum PayloadShape: String, Sendable {
    case apns
    case fcm
    case oneSignal = "onesignal"
    case braze
    case airship
    case cleverTap = "clevertap"
}

/// Who a picture field is for: iOS (the attachment rendition) or a receiver of a picture made
/// for it (``TargetSpec/Target``). The two are linked both ways by switches the compiler checks
/// whole (``target`` and ``init(_:)``), so a new picture receiver cannot be added to one and
/// forgotten in the other.
public enum Receiver: String, Hashable, Sendable, CaseIterable {
    case ios, android, web, icon

    /// The receiver of the pictures made for `target`.
    public init(_ target: TargetSpec.Target) {
        switch target {
        case .android: self = .android
        case .web: self = .web
        case .icon: self = .icon
        }
    }

    /// The target rendition made for this receiver (nil for iOS: the attachment rendition).
    public var target: TargetSpec.Target? {
        switch self {
        case .ios: nil
        case .android: .android
        case .web: .web
        case .icon: .icon
        }
    }
}

/// One field of a multi-platform body that names a picture: where it is, whom it is for, and
/// the URL it holds.
public struct ReceiverField: Hashable, Sendable {
    /// Member names from the top level down.
    public var path: [String]
    public var receiver: Receiver
    public var url: String
    /// A member beside the URL that names the file's type in the sender's words (Braze's
    /// `asset_file_type`, CleverTap's `ct_mediaType`): rewritten with the picture written.
    public var typeMember: TypeMember? = nil
    /// Thumbnail options the sender wrote beside the URL (Airship's `options`, as on the APNs
    /// side): its `time` chooses a video's poster, the frame every picture of it is cut from.
    public var options = ThumbnailOptions()
}

/// A member naming a picture's file type, and how the sender spells types.
public struct TypeMember: Hashable, Sendable {
    public var path: [String]
    public var spelling: Spelling

    public enum Spelling: Hashable, Sendable {
        /// Braze `asset_file_type`: aif, gif, jpg, m4a, mp3, mp4, png, wav.
        case brazeFileType
        /// CleverTap `ct_mediaType`: image, gif, audio, video.
        case cleverTapMediaType
    }

    /// The word for `kind`, or nil when the sender has none (the field then keeps its URL).
    public func word(for kind: MediaKind) -> String? {
        switch spelling {
        case .brazeFileType:
            switch kind {
            case .jpeg: "jpg"
            case .png: "png"
            case .gif: "gif"
            case .mp4, .m4v: "mp4"
            case .m4a: "m4a"
            case .mp3: "mp3"
            case .wav: "wav"
            case .aiff, .aifc: "aif"
            case .webp, .heic, .avif, .jxl: nil
            case .mpeg, .mpeg2, .avi, .mov, .webm, .ogg, .flac: nil
            }
        case .cleverTapMediaType:
            switch kind {
            case .gif: "gif"
            case .jpeg, .png: "image"
            case .webp, .heic, .avif, .jxl: nil
            case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: "audio"
            case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: "video"
            }
        }
    }
}

/// One sender, both sides of it: where its APNs payloads name media (the rules every payload is
/// read with, ``SourceRule/defaults``) and its multi-platform send body with its fields, their
/// receivers and type members (``SendShape/all``). A sender is one row of ``all``; the docs'
/// tables (command-line.md's conventions, receivers.md's send bodies) are checked against it.
public struct Sender: Sendable {
    /// The name reported as an attachment's `convention`.
    public var name: String
    /// Where its APNs payloads name media, in the order they are read.
    public var apns: [SourceRule]
    /// Its send body; nil for a sender that has none Attache reads.
    public var body: SendShape?

    init(_ name: String, apns paths: [[String]], optionsKey: String? = nil, body: SendShape? = nil) {
        self.name = name
        self.apns = paths.map { SourceRule(name: name, path: $0, optionsKey: optionsKey) }
        self.body = body
    }

    private init(topLevel keys: [String]) {
        self.name = "top level"
        self.apns = keys.map { SourceRule(name: $0, path: [$0]) }
        self.body = nil
    }

    /// The senders, APNs side and send body: the APNs rules are read in this order, the send
    /// bodies tried in it.
    public static let all: [Sender] = [
        Sender(topLevel: ["my-attachment", "attachment-url", "media-url", "image"]),
        Sender("fcm", apns: [["fcm_options", "image"]], body: .fcm),
        Sender("braze", apns: [["ab", "att", "url"]], body: .braze),
        Sender("onesignal", apns: [["att", "*"]], body: .oneSignal),
        Sender("airship", apns: [["com.urbanairship.media_attachment", "url"]], optionsKey: "options", body: .airship),
        Sender("clevertap", apns: [["ct_mediaUrl"]], body: .cleverTap),
        Sender("batch", apns: [["com.batch", "at", "u"]]),
    ]
}

/// One sender's send body: what tells it apart, and the fields that name its pictures. The
/// senders are tried in ``all``'s order; docs/receivers.md's table is checked against it.
public struct SendShape: Sendable {
    /// One field naming a picture: its path (`*` stands for every member of an object), whom it
    /// is for, and the member beside it naming the file's type, if the sender has one.
    public struct Field: Sendable {
        public var path: [String]
        public var receiver: Receiver
        public var type: (path: [String], spelling: TypeMember.Spelling)?
        /// The member beside the URL holding thumbnail options (Airship's `options`).
        public var optionsKey: String?

        init(
            _ path: [String], _ receiver: Receiver, type: (path: [String], spelling: TypeMember.Spelling)? = nil,
            optionsKey: String? = nil
        ) {
            (self.path, self.receiver, self.type, self.optionsKey) = (path, receiver, type, optionsKey)
        }
    }

    /// A map of strings the app reads on one platform (FCM's `android.data`, Braze's `extra`),
    /// where a receiver's placeholder is written as `attache_thumbhash`.
    public struct DataMap: Sendable {
        public var path: [String]
        /// The map this one replaces on its platform when present (FCM's `message.data`, which
        /// `android.data` and `webpush.data` override): its members are copied into a new one.
        public var overrides: [String]? = nil
    }

    public var shape: PayloadShape
    /// The sender's name, for reports.
    public var name: String
    /// What tells the body apart, in words (reports and docs).
    public var toldBy: String
    /// Whether a body's top level carries this sender's marks.
    let matches: @Sendable (JSONValue) -> Bool
    public var fields: [Field]
    /// Where the Android and web pictures' placeholders go: every map whose platform object the
    /// body has, else the first (made). A sender with no per-platform map has none: a map every
    /// platform reads (OneSignal's `data`) would put them in the iOS payload too.
    public var placeholderMaps: [Receiver: [DataMap]] = [:]
    /// The member holding the iOS part, not counted in the body's room (it has its own 4 KB).
    public var iosPart: [String]? = nil

    /// The send shapes in the order they are tried: a body that carries the marks of several is
    /// read as the first, and its report says which others it also matched. Each is its
    /// sender's body in ``Sender/all``.
    public static let all: [SendShape] = Sender.all.compactMap(\.body)

    static let fcm = SendShape(
        shape: .fcm, name: "FCM HTTP v1", toldBy: "a top-level `message` object",
        matches: { if case .object = $0["message"] ?? .null { true } else { false } },
        fields: [
            Field(["message", "notification", "image"], .android),
            Field(["message", "android", "notification", "image"], .android),
            Field(["message", "apns", "fcm_options", "image"], .ios),
            Field(["message", "webpush", "notification", "image"], .web),
            Field(["message", "webpush", "headers", "image"], .web),
        ],
        placeholderMaps: [
            .android: [DataMap(path: ["message", "android", "data"], overrides: ["message", "data"])],
            .web: [DataMap(path: ["message", "webpush", "data"], overrides: ["message", "data"])],
        ], iosPart: ["message", "apns"])

    static let braze = SendShape(
        shape: .braze, name: "Braze", toldBy: "`messages` with `apple_push`, `android_push` or `web_push`",
        matches: { root in
            guard let messages = root["messages"], case .object = messages else { return false }
            return messages["apple_push"] != nil || messages["android_push"] != nil || messages["web_push"] != nil
        },
        fields: [
            Field(
                ["messages", "apple_push", "asset_url"], .ios,
                type: (["messages", "apple_push", "asset_file_type"], .brazeFileType)),
            Field(["messages", "android_push", "extra", "appboy_image_url"], .android),
            Field(["messages", "android_push", "push_icon_image_url"], .icon),
            Field(["messages", "web_push", "large_image_url"], .web),
            Field(["messages", "web_push", "image_url"], .icon),
        ],
        placeholderMaps: [
            .android: [DataMap(path: ["messages", "android_push", "extra"])],
            .web: [DataMap(path: ["messages", "web_push", "extra"])],
        ], iosPart: ["messages", "apple_push"])

    static let oneSignal = SendShape(
        shape: .oneSignal, name: "OneSignal", toldBy: "`app_id` with `contents`, `headings` or `template_id`",
        matches: { root in
            root["app_id"]?.stringValue != nil
                && (root["contents"] != nil || root["headings"] != nil || root["template_id"] != nil)
        },
        fields: ["big_picture", "huawei_big_picture", "adm_big_picture"].map { Field([$0], .android) }
            + [Field(["chrome_web_image"], .web)]
            + ["large_icon", "huawei_large_icon"].map { Field([$0], .icon) }
            + [Field(["ios_attachments", "*"], .ios)])

    static let airship = SendShape(
        shape: .airship, name: "Airship", toldBy: "a `notification` object beside `audience` or `device_types`",
        matches: { root in
            guard case .object = root["notification"] ?? .null else { return false }
            return root["audience"] != nil || root["device_types"] != nil
        },
        fields: [
            Field(["notification", "ios", "media_attachment", "url"], .ios, optionsKey: "options"),
            Field(["notification", "android", "style", "big_picture"], .android),
            Field(["notification", "amazon", "style", "big_picture"], .android),
            Field(["notification", "web", "image", "url"], .web),
            Field(["notification", "web", "icon", "url"], .icon),
        ],
        placeholderMaps: [
            .android: [
                DataMap(path: ["notification", "android", "extra"]),
                DataMap(path: ["notification", "amazon", "extra"]),
            ],
            .web: [DataMap(path: ["notification", "web", "extra"])],
        ], iosPart: ["notification", "ios"])

    static let cleverTap: SendShape = {
        let platforms = ["content", "platform_specific"]
        return SendShape(
            shape: .cleverTap, name: "CleverTap", toldBy: "`content` with `platform_specific`",
            matches: { if case .object = $0["content"]?["platform_specific"] ?? .null { true } else { false } },
            fields: [
                Field(
                    platforms + ["ios", "ct_mediaUrl"], .ios,
                    type: (platforms + ["ios", "ct_mediaType"], .cleverTapMediaType)),
                Field(platforms + ["android", "background_image"], .android),
                Field(platforms + ["android", "large_icon"], .icon),
                Field(platforms + ["chrome", "image"], .web),
                Field(platforms + ["chrome", "icon"], .icon),
                Field(platforms + ["firefox", "icon"], .icon),
            ])
    }()

    /// The send shape of `shape` (nil for APNs).
    public static func of(_ shape: PayloadShape) -> SendShape? { all.first { $0.shape == shape } }
}

/// What a body was read as, and why when it could have been read otherwise.
public struct ShapeReading: Sendable {
    public var shape: PayloadShape
    /// Said in the report when the body carried another shape's marks too.
    public var note: String?
}

extension NotificationContent {
    /// What kind of body this is.
    public var shape: PayloadShape { shapeReading.shape }

    /// The shape read, with a note when the body carries the marks of another: a top-level
    /// `aps` makes an APNs payload whatever else it holds (no send body has one: a `message`
    /// or `notification` beside it is the app's own key); otherwise the first send shape in
    /// ``SendShape/all``'s order whose marks it carries, and the others it matched are named.
    public var shapeReading: ShapeReading {
        let matched = SendShape.all.filter { $0.matches(root) }
        func marks(_ shapes: [SendShape]) -> String {
            shapes.map { "\($0.name) (\($0.toldBy))" }.joined(separator: ", ")
        }
        if root["aps"] != nil {
            let note =
                matched.isEmpty
                ? nil
                : "read as an APNs payload (it has a top-level aps, which no send body has); the members that "
                    + "look like \(marks(matched)) are the app's own keys"
            return ShapeReading(shape: .apns, note: note)
        }
        guard let first = matched.first else { return ShapeReading(shape: .apns, note: nil) }
        let others = matched.dropFirst()
        let note =
            others.isEmpty
            ? nil
            : "read as \(first.name) (\(first.toldBy)), the first of "
                + SendShape.all.map(\.name).joined(separator: ", ")
                + " to match; it also has the marks of \(marks(Array(others))), whose fields were not read"
        return ShapeReading(shape: first.shape, note: note)
    }

    /// The fields of a multi-platform body that name pictures, in the order its sender lists
    /// them (none for an APNs payload); docs/receivers.md has the table. Every string is read,
    /// so that what cannot be fetched (another scheme, a relative path) is reported, except a
    /// large icon's resource name (no scheme and no `/`: a drawable in the app) and an empty one.
    public var receiverFields: [ReceiverField] {
        guard let sender = SendShape.of(shape) else { return [] }
        var found: [ReceiverField] = []
        for field in sender.fields {
            for path in expand(field.path[...], prefix: []) {
                guard let url = value(at: path)?.stringValue, !url.isEmpty else { continue }
                if field.receiver == .icon, Self.isResourceName(url) { continue }
                // A type member beside the URL is written whatever it held before (the pair agree).
                let type = field.type.flatMap { type in
                    value(at: type.path) != nil ? TypeMember(path: type.path, spelling: type.spelling) : nil
                }
                let options = field.optionsKey.flatMap { value(at: path.dropLast() + [$0]) }
                found.append(
                    ReceiverField(
                        path: path, receiver: field.receiver, url: url, typeMember: type,
                        options: options.map(Self.thumbnailOptions) ?? ThumbnailOptions()))
            }
        }
        return found
    }

    /// The paths `pattern` names in this body (`*`: each member of the object there).
    private func expand(_ pattern: ArraySlice<String>, prefix: [String]) -> [[String]] {
        guard let head = pattern.first else { return [prefix] }
        guard head == "*" else { return expand(pattern.dropFirst(), prefix: prefix + [head]) }
        guard case .object(let members) = value(at: prefix) ?? .null else { return [] }
        return members.flatMap { expand(pattern.dropFirst(), prefix: prefix + [$0.key]) }
    }

    /// A name without a scheme or a path: an icon resource in the app (OneSignal's `large_icon`
    /// may name a drawable), not something to fetch.
    static func isResourceName(_ text: String) -> Bool {
        !text.contains(":") && !text.contains("/")
    }

    /// The APNs payload inside an FCM message (`message.apns.payload`), when there is one.
    public var apnsPath: [String]? {
        shape == .fcm && value(at: ["message", "apns", "payload"]) != nil ? ["message", "apns", "payload"] : nil
    }

    /// The value at `path` (the first member of each name).
    public func value(at path: [String]) -> JSONValue? {
        var value: JSONValue? = root
        for key in path { value = value?[key] }
        return value
    }

    /// The sender's focal point: `"attache-focus": {"x": 0.5, "y": 0.2}` at the top level.
    public var focus: FocalPoint? {
        guard let focus = root[Self.focusMember], let x = focus["x"]?.doubleValue, let y = focus["y"]?.doubleValue
        else { return nil }
        return FocalPoint(x: x, y: y)
    }

    /// The member a sender names its focal point in (never written out).
    public static let focusMember = "attache-focus"

    /// The report's note for an `attache-focus` that is not a point.
    static let focusNote =
        "attache-focus is not {\"x\": 0 to 1, \"y\": 0 to 1}: the crops are placed by the picture's own subject"

    /// The payload with the values at `edits`' paths replaced (every member on a path must
    /// exist) and top-level members removed; every other byte is kept, the keys' spelling and
    /// the spacing around each colon among them. Edits must not nest inside one another.
    public func replacing(_ edits: [(path: [String], value: JSONValue)], removing: [String] = []) -> [UInt8] {
        var splices: [(range: Range<Int>, text: [UInt8])] = []
        for (path, value) in edits {
            guard let range = member(at: path)?.valueRange else { continue }
            splices.append((range, Array(value.text.utf8)))
        }
        var out = bytes
        for splice in splices.sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            out.replaceSubrange(splice.range, with: splice.text)
        }
        guard !removing.isEmpty, let edited = try? NotificationContent(bytes: out) else { return out }
        return edited.editing(removing.map { ($0, nil) })
    }

    /// The member at `path` (its last key), with where it was in the source.
    func member(at path: [String]) -> JSONValue.Member? {
        guard let last = path.last else { return nil }
        guard case .object(let members) = value(at: Array(path.dropLast())) ?? .null else { return nil }
        return members.first { $0.key == last }
    }

    /// The source bytes of the value at `path` (a member's value as it was written).
    func valueBytes(at path: [String]) -> [UInt8]? {
        guard let range = member(at: path)?.valueRange else { return nil }
        return Array(bytes[range])
    }
}
