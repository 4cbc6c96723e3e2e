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
        guard case .object(let members) = root else { return bytes }
        let member = Array((JSONValue.quote(key) + ":" + value.text).utf8)
        if let existing = members.first(where: { $0.key == key }), let range = existing.sourceRange {
            return Array(bytes[..<range.lowerBound]) + member + Array(bytes[range.upperBound...])
        }
        if let last = members.last?.sourceRange {
            return Array(bytes[..<last.upperBound]) + Array(",".utf8) + member + Array(bytes[last.upperBound...])
        }
        // An empty object: the closing brace is the last non-space byte.
        var close = bytes.count - 1
        while close > 0, bytes[close] != UInt8(ascii: "}") { close -= 1 }
        return Array(bytes[..<close]) + member + Array(bytes[close...])
    }
}
