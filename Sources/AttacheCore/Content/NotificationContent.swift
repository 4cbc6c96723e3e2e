public import AttacheBase

/// A notification payload: the whole JSON document, its source bytes, and typed views of what
/// the pipeline needs (`aps.mutable-content`, attachment sources).
public struct NotificationContent: Sendable {
    /// The payload as parsed (member order and number spelling kept).
    public let root: JSONValue
    /// The payload exactly as received.
    public let bytes: [UInt8]

    /// Parses a payload; it must be a JSON object.
    public init(bytes: [UInt8]) throws(AttacheError) {
        let root = try JSONParser.parse(bytes)
        guard case .object = root else { throw AttacheError(.invalidPayload, "the payload is not a JSON object") }
        self.root = root
        self.bytes = bytes
    }

    /// Whether `aps.mutable-content` is the number 1, as iOS reads it (not `"1"`, `true` or
    /// `1.0`): only then may a service extension (or Attache) change the content; otherwise
    /// the payload passes through unchanged, as on a device.
    public var isMutable: Bool {
        root["aps"]?["mutable-content"] == .number("1")
    }

    /// The payload with `key` set to `value` at the top level: every other byte of the source is
    /// kept as it was. An existing member named `key` is replaced in place; otherwise the new
    /// member goes last.
    public func setting(_ key: String, to value: JSONValue) -> [UInt8] {
        editing([(key, value)])
    }

    /// The payload with top-level members replaced (a value) or removed (nil), and members not
    /// present added last; a later change of the same member wins. Every byte outside the
    /// members changed is kept: each member kept is written after the separator that preceded
    /// it in the source, so a removed member takes its comma with it.
    public func editing(_ changes: [(String, JSONValue?)]) -> [UInt8] {
        guard case .object(let members) = root else { return bytes }
        var order: [String] = []
        var latest: [String: JSONValue?] = [:]
        for (key, value) in changes {
            if !latest.keys.contains(key) { order.append(key) }
            latest[key] = .some(value)
        }
        func text(_ key: String, _ value: JSONValue) -> [UInt8] {
            Array((JSONValue.quote(key) + ":" + value.text).utf8)
        }
        let present = Set(members.map(\.key))
        let added = order.compactMap { key in present.contains(key) ? nil : latest[key]!.map { text(key, $0) } }
        let ranges = members.compactMap(\.sourceRange)
        guard let first = ranges.first, let last = ranges.last, ranges.count == members.count else {
            // An empty object: the new members go before the closing brace.
            var close = bytes.count - 1
            while close > 0, bytes[close] != UInt8(ascii: "}") { close -= 1 }
            guard !added.isEmpty else { return bytes }
            return Array(bytes[..<close]) + Array(added.joined(separator: [UInt8(ascii: ",")])) + Array(bytes[close...])
        }
        var out = Array(bytes[..<first.lowerBound])
        var emitted = false
        for (index, member) in members.enumerated() {
            let piece: [UInt8]
            if let change = latest[member.key] {
                guard let value = change else { continue }
                // The key and the spacing around its colon as they were; the value anew.
                if let valueStart = member.valueStart {
                    piece = Array(bytes[ranges[index].lowerBound..<valueStart]) + Array(value.text.utf8)
                } else {
                    piece = text(member.key, value)
                }
            } else {
                piece = Array(bytes[ranges[index]])
            }
            if emitted { out += bytes[ranges[index - 1].upperBound..<ranges[index].lowerBound] }
            out += piece
            emitted = true
        }
        for member in added {
            if emitted { out.append(UInt8(ascii: ",")) }
            out += member
            emitted = true
        }
        return out + Array(bytes[last.upperBound...])
    }
}
