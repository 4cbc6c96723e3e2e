public import AttacheCore

/// What a notification says on one platform: its title, subtitle, body and action buttons, read
/// from the members that platform's sender documents. Every value is plain text to the page.
public struct PreviewText: Hashable, Sendable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var actions: [String] = []

    public var isEmpty: Bool { title == nil && subtitle == nil && body == nil && actions.isEmpty }

    /// The platforms a preview draws.
    public enum Platform: String, CaseIterable, Sendable {
        case ios, android, web
    }

    /// What `payload` (read as `shape`) says on `platform`; nil when it sends nothing there.
    public static func read(_ payload: JSONValue, shape: PayloadShape, platform: Platform) -> PreviewText? {
        switch (shape, platform) {
        case (.apns, .ios): return apns(payload)
        case (.apns, _): return nil
        case (.fcm, _):
            let message = payload["message"]
            let common = fields(message?["notification"], title: "title", body: "body")
            switch platform {
            case .ios:
                guard message?["apns"] != nil || common != nil else { return nil }
                // The APNs payload's own alert, else the message's notification; its actions either way.
                let own = (message?["apns"]?["payload"]).flatMap(apns)
                guard var text = own?.title == nil && own?.body == nil ? common ?? own : own else { return nil }
                text.actions = own?.actions ?? []
                return text
            case .android:
                return fields(message?["android"]?["notification"], title: "title", body: "body") ?? common
            case .web:
                let web = message?["webpush"]?["notification"]
                guard var text = fields(web, title: "title", body: "body") ?? common else { return nil }
                text.actions = titles(web?["actions"], key: "title")
                return text
            }
        case (.braze, _):
            let messages = payload["messages"]
            switch platform {
            case .ios:
                guard let push = messages?["apple_push"] else { return nil }
                var text = alert(push["alert"]) ?? PreviewText()
                text.title = text.title ?? push["title"]?.stringValue
                return text
            case .android: return fields(messages?["android_push"], title: "title", body: "alert")
            case .web: return fields(messages?["web_push"], title: "title", body: "alert")
            }
        case (.oneSignal, _):
            var text = PreviewText()
            text.title = localized(payload["headings"])
            text.body = localized(payload["contents"])
            if platform == .ios { text.subtitle = localized(payload["subtitle"]) }
            text.actions = titles(payload["buttons"], key: "text")
            if platform == .web, case .array = payload["web_buttons"] {
                text.actions = titles(payload["web_buttons"], key: "text")
            }
            return text.isEmpty ? nil : text
        case (.airship, _):
            let notification = payload["notification"]
            let common = notification?["alert"]?.stringValue
            switch platform {
            case .ios:
                let ios = notification?["ios"]
                var text = alert(ios?["alert"]) ?? PreviewText(body: common)
                text.title = text.title ?? ios?["title"]?.stringValue
                text.subtitle = text.subtitle ?? ios?["subtitle"]?.stringValue
                return text.isEmpty ? nil : text
            case .android, .web:
                let own = notification?[platform.rawValue]
                let text = PreviewText(
                    title: own?["title"]?.stringValue, body: own?["alert"]?.stringValue ?? common)
                return text.isEmpty ? nil : text
            }
        case (.cleverTap, _):
            return fields(payload["content"], title: "title", body: "body")
        }
    }

    /// An APNs payload's alert, and the actions Attache's categories wrote beside it.
    static func apns(_ payload: JSONValue) -> PreviewText? {
        guard let aps = payload["aps"] else { return nil }
        var text = alert(aps["alert"]) ?? PreviewText()
        text.actions = titles(payload["attache-actions"], key: "title")
        return text
    }

    /// `aps.alert` and its likes: a string (the body) or an object of title, subtitle and body.
    static func alert(_ value: JSONValue?) -> PreviewText? {
        switch value {
        case .string(let body)?: return PreviewText(body: body)
        case .object?:
            return PreviewText(
                title: value?["title"]?.stringValue, subtitle: value?["subtitle"]?.stringValue,
                body: value?["body"]?.stringValue)
        default: return nil
        }
    }

    static func fields(_ value: JSONValue?, title: String, body: String) -> PreviewText? {
        guard let value else { return nil }
        let text = PreviewText(title: value[title]?.stringValue, body: value[body]?.stringValue)
        return text.isEmpty ? nil : text
    }

    /// OneSignal's `{"en": "…", "de": "…"}`: English, else the first language given.
    static func localized(_ value: JSONValue?) -> String? {
        guard case .object(let members)? = value else { return value?.stringValue }
        return value?["en"]?.stringValue ?? members.lazy.compactMap(\.value.stringValue).first
    }

    static func titles(_ value: JSONValue?, key: String) -> [String] {
        guard case .array(let list)? = value else { return [] }
        return list.compactMap { $0[key]?.stringValue }
    }
}
