import AttacheBase
public import AttacheMedia

/// The request bodies a push backend sends to every platform at once, told apart by their own
/// members: an FCM HTTP v1 message (`{"message": {…}}`), a OneSignal create-notification body
/// (`app_id` with `contents`, `headings` or `template_id`) or a Braze `/messages/send` body
/// (`messages` with `apple_push`, `android_push` or `web_push`); anything else is an APNs
/// payload, as before.
public enum PayloadShape: String, Sendable {
    case apns
    case fcm
    case oneSignal = "onesignal"
    case braze
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
        return .apns
    }

    /// The fields of a multi-platform body that name pictures, in the order listed here (none
    /// for an APNs payload).
    ///
    /// FCM v1: `message.notification.image` (Android, and any platform without its own
    /// field), `message.android.notification.image` (Android), `message.apns.fcm_options.image`
    /// (iOS), `message.webpush.notification.image` and `message.webpush.headers.image` (web).
    /// OneSignal: `big_picture`, `huawei_big_picture`, `adm_big_picture` (Android),
    /// `chrome_web_image` (web), `large_icon`, `huawei_large_icon` (icon), every URL in
    /// `ios_attachments` (iOS). Braze: `messages.web_push.large_image_url` (web) and
    /// `messages.web_push.image_url` (shown 1:1: the icon).
    public var receiverFields: [ReceiverField] {
        let paths: [([String], Receiver)]
        switch shape {
        case .apns: return []
        case .fcm:
            paths = [
                (["message", "notification", "image"], .android),
                (["message", "android", "notification", "image"], .android),
                (["message", "apns", "fcm_options", "image"], .ios),
                (["message", "webpush", "notification", "image"], .web),
                (["message", "webpush", "headers", "image"], .web),
            ]
        case .oneSignal:
            var list: [([String], Receiver)] = [
                (["big_picture"], .android), (["huawei_big_picture"], .android), (["adm_big_picture"], .android),
                (["chrome_web_image"], .web), (["large_icon"], .icon), (["huawei_large_icon"], .icon),
            ]
            if case .object(let members) = root["ios_attachments"] ?? .null {
                for member in members { list.append((["ios_attachments", member.key], .ios)) }
            }
            paths = list
        case .braze:
            paths = [
                (["messages", "web_push", "large_image_url"], .web), (["messages", "web_push", "image_url"], .icon),
            ]
        }
        return paths.compactMap { path, receiver in
            guard let url = value(at: path)?.stringValue, Self.isRemote(url) else { return nil }
            return ReceiverField(path: path, receiver: receiver, url: url)
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
