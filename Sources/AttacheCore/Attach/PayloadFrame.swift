import AttacheBase
public import AttacheSeal

/// How the output payload is shaped around the attachment block: plain or sealed, and the
/// category rules.
public struct OutputShape: Sendable {
    /// The top-level member the attachment block is written to.
    public var key: String
    /// The seal, for a sealed payload.
    public var seal: Seal?
    /// Categories by kind, when configured.
    public var categories: CategorySet?

    /// What a sealed payload hides and shows.
    public struct Seal: Sendable {
        /// The device's key.
        public var recipient: SealRecipient
        /// The alert body shown until the device opens the seal.
        public var placeholder: String
        /// Top-level members moved into the seal (beside `aps.alert` and the block).
        public var members: [String]

        public init(recipient: SealRecipient, placeholder: String, members: [String]) {
            self.recipient = recipient
            self.placeholder = placeholder
            self.members = members
        }
    }

    public init(key: String, seal: Seal? = nil, categories: CategorySet? = nil) {
        self.key = key
        self.seal = seal
        self.categories = categories
    }

    /// The member a sealed payload carries its seal in.
    public static let sealMember = "encrypted-content"
    /// The member a payload may ask for its own seal with (`{"key": …, "kid": …}`); never
    /// written out.
    public static let sealRequestMember = "attache-seal"
}

/// Everything of the output payload except the attachment block's entries: its size for a
/// given size of entries, and the payload assembled around them.
struct PayloadFrame {
    /// Output size when the block's entries (with the commas between them) take `extra` bytes.
    let size: (Int) -> Int
    /// The output with these entries, or with no block at all (nil).
    let assemble: ([JSONValue]?) throws(SealError) -> [UInt8]
    /// True when actions were written.
    let hasActions: Bool

    /// The frame of `content` under `shape`, with the category for `kind` (the first
    /// attachment's kind category, nil when nothing is attached) and its actions if `actions`.
    /// `moved` are the top-level members a seal takes (the members the sources were found in).
    init(content: NotificationContent, shape: OutputShape, kind: String?, actions: Bool, moved: [String]) {
        var aps = content.root["aps"] ?? .object([])
        var changes: [(String, JSONValue?)] = [(OutputShape.sealRequestMember, nil)]
        var withActions = false
        if let categories = shape.categories, let category = categories.category(for: kind) {
            let existing = aps["category"]
            if existing == nil || categories.override == true {
                aps = aps.setting("category", to: .string(category))
            }
            let chosen = aps["category"]?.stringValue ?? category
            if actions, let list = categories.actions?[chosen], !list.isEmpty {
                changes.append(
                    (CategorySet.actionsMember, .raw("[" + list.map(\.jsonText).joined(separator: ",") + "]")))
                withActions = true
            }
        }
        hasActions = withActions
        let key = shape.key
        guard let seal = shape.seal else {
            if aps != content.root["aps"] ?? .object([]) { changes.append(("aps", aps)) }
            let empty = content.editing(changes + [(key, .array([]))]).count
            size = { empty + $0 }
            assemble = { entries in content.editing(changes + [(key, entries.map(JSONValue.array))]) }
            return
        }
        // The seal's plaintext: the alert, the moved members and the block.
        let (hidden, hiding) = Self.hide(
            content, aps: aps, key: key, placeholder: seal.placeholder, members: moved + seal.members)
        changes += hiding
        func plaintext(_ entries: [JSONValue]?) -> [UInt8] {
            let members = hidden + (entries.map { [(key, JSONValue.array($0))] } ?? [])
            return Array(JSONValue.object(members.map { .init(key: $0.0, value: $0.1) }).text.utf8)
        }
        let recipient = seal.recipient
        let plainEmpty = plaintext([]).count
        // The visible payload with an empty string as the seal: the seal's size adds to it.
        let visible = content.editing(changes + [(OutputShape.sealMember, .string(""))]).count - 2
        size = {
            visible
                + SealedEnvelope.jsonSize(
                    plaintextSize: plainEmpty + $0, suite: recipient.suite, keyID: recipient.keyID)
        }
        assemble = { entries throws(SealError) in
            let envelope = try PayloadSeal.seal(plaintext(entries), to: recipient)
            return content.editing(changes + [(OutputShape.sealMember, .raw(envelope.jsonText))])
        }
    }
}

extension PayloadFrame {
    /// What a seal takes from `content` (the alert, `members`, the block) and the changes that
    /// leave the visible payload: the placeholder alert, `mutable-content` 1, the members gone.
    static func hide(
        _ content: NotificationContent, aps: JSONValue, key: String, placeholder: String, members: [String]
    ) -> (hidden: [(String, JSONValue)], changes: [(String, JSONValue?)]) {
        var hidden: [(String, JSONValue)] = []
        var changes: [(String, JSONValue?)] = []
        if let alert = aps["alert"] { hidden.append(("aps", .object([.init(key: "alert", value: alert)]))) }
        var seen: Set<String> = ["aps", key, OutputShape.sealMember, OutputShape.sealRequestMember]
        for name in members where seen.insert(name).inserted {
            if let value = content.root[name] {
                hidden.append((name, value))
                changes.append((name, nil))
            }
        }
        var aps = aps.setting("alert", to: .object([.init(key: "body", value: .string(placeholder))]))
        aps = aps.setting("mutable-content", to: .number("1"))
        changes += [("aps", aps), (key, nil), (OutputShape.sealMember, nil), (OutputShape.sealRequestMember, nil)]
        return (hidden, changes)
    }

    /// The visible payload of a seal that could not be made: the placeholder alert, without
    /// anything the seal would have taken, and without a seal.
    static func withheld(
        _ content: NotificationContent, key: String, placeholder: String, members: [String]
    ) -> [UInt8] {
        let aps = content.root["aps"] ?? .object([])
        return content.editing(hide(content, aps: aps, key: key, placeholder: placeholder, members: members).changes)
    }
}

extension JSONValue {
    /// JSON text written as it is (a number's text is written verbatim).
    static func raw(_ text: String) -> JSONValue { .number(text) }

    /// An object with `key` set: replaced in place, or added last.
    func setting(_ key: String, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return .object([.init(key: key, value: value)]) }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index] = .init(key: key, value: value)
        } else {
            members.append(.init(key: key, value: value))
        }
        return .object(members)
    }
}
