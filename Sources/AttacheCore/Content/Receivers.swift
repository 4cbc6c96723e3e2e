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

/// Who a picture field is for.
public enum Receiver: String, Hashable, Sendable, CaseIterable {
    case ios, android, web, icon

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
    public var typeMember: TypeMember?
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
            default: nil
            }
        case .cleverTapMediaType:
            switch kind {
            case .gif: "gif"
            case .jpeg, .png: "image"
            default:
                switch kind.category {
                case .audio: "audio"
                case .video: "video"
                case .image: nil
                }
            }
        }
    }
}

extension NotificationContent {
    /// What kind of body this is.
    public var shape: PayloadShape {
        if case .object = root["message"] ?? .null { return .fcm }
        if let messages = root["messages"], case .object = messages,
            messages["apple_push"] != nil || messages["android_push"] != nil || messages["web_push"] != nil
        {
            return .braze
        }
        if root["app_id"]?.stringValue != nil,
            root["contents"] != nil || root["headings"] != nil || root["template_id"] != nil
        {
            return .oneSignal
        }
        if case .object = root["notification"] ?? .null, root["audience"] != nil || root["device_types"] != nil {
            return .airship
        }
        if case .object = root["content"]?["platform_specific"] ?? .null { return .cleverTap }
        return .apns
    }

    /// The fields of a multi-platform body that name pictures, in the order listed here (none
    /// for an APNs payload); docs/receivers.md has the table.
    public var receiverFields: [ReceiverField] {
        var rules: [(path: [String], receiver: Receiver, type: TypeMember?)] = []
        func add(_ path: [String], _ receiver: Receiver, type: TypeMember? = nil) {
            rules.append((path, receiver, type))
        }
        switch shape {
        case .apns: return []
        case .fcm:
            add(["message", "notification", "image"], .android)
            add(["message", "android", "notification", "image"], .android)
            add(["message", "apns", "fcm_options", "image"], .ios)
            add(["message", "webpush", "notification", "image"], .web)
            add(["message", "webpush", "headers", "image"], .web)
        case .oneSignal:
            for key in ["big_picture", "huawei_big_picture", "adm_big_picture"] { add([key], .android) }
            add(["chrome_web_image"], .web)
            for key in ["large_icon", "huawei_large_icon"] { add([key], .icon) }
            if case .object(let members) = root["ios_attachments"] ?? .null {
                for member in members { add(["ios_attachments", member.key], .ios) }
            }
        case .braze:
            let apple = ["messages", "apple_push"]
            add(
                apple + ["asset_url"], .ios,
                type: TypeMember(path: apple + ["asset_file_type"], spelling: .brazeFileType))
            add(["messages", "android_push", "extra", "appboy_image_url"], .android)
            add(["messages", "android_push", "push_icon_image_url"], .icon)
            add(["messages", "web_push", "large_image_url"], .web)
            add(["messages", "web_push", "image_url"], .icon)
        case .airship:
            add(["notification", "ios", "media_attachment", "url"], .ios)
            add(["notification", "android", "style", "big_picture"], .android)
            add(["notification", "amazon", "style", "big_picture"], .android)
            add(["notification", "web", "image", "url"], .web)
            add(["notification", "web", "icon", "url"], .icon)
        case .cleverTap:
            let platforms = ["content", "platform_specific"]
            let ios = platforms + ["ios"]
            add(
                ios + ["ct_mediaUrl"], .ios,
                type: TypeMember(path: ios + ["ct_mediaType"], spelling: .cleverTapMediaType))
            add(platforms + ["android", "background_image"], .android)
            add(platforms + ["android", "large_icon"], .icon)
            add(platforms + ["chrome", "image"], .web)
            add(platforms + ["chrome", "icon"], .icon)
            add(platforms + ["firefox", "icon"], .icon)
        }
        return rules.compactMap { rule in
            guard let url = value(at: rule.path)?.stringValue, Self.isRemote(url) else { return nil }
            let type = rule.type.flatMap { value(at: $0.path)?.stringValue != nil ? $0 : nil }
            return ReceiverField(path: rule.path, receiver: rule.receiver, url: url, typeMember: type)
        }
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

    /// An `http(s)` URL (a OneSignal `large_icon` may also name a drawable in the app).
    static func isRemote(_ url: String) -> Bool {
        url.hasPrefix("https://") || url.hasPrefix("http://")
    }

    /// The payload with the values at `edits`' paths replaced (every member on a path must
    /// exist) and top-level members removed; every other byte is kept. Edits must not nest
    /// inside one another.
    public func replacing(_ edits: [(path: [String], value: JSONValue)], removing: [String] = []) -> [UInt8] {
        var splices: [(range: Range<Int>, text: [UInt8])] = []
        for (path, value) in edits {
            guard let member = member(at: path), let range = member.sourceRange else { continue }
            splices.append((range, Array((JSONValue.quote(member.key) + ":" + value.text).utf8)))
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
        guard let range = member(at: path)?.sourceRange else { return nil }
        // Past the key (a string literal, escapes skipped), the colon and blanks.
        var index = range.lowerBound + 1
        while index < range.upperBound, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
        while index < range.upperBound, [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ":")].contains(bytes[index]) {
            index += 1
        }
        return Array(bytes[index..<range.upperBound])
    }
}
