internal import AttacheSeal

/// A JSON value that keeps what a round trip must not lose: member order, duplicate keys and
/// the exact spelling of numbers. Parsed values also remember where they were in the source,
/// so untouched parts of a payload can be written back byte for byte.
public indirect enum JSONValue: Hashable, Sendable {
    /// Members in source order.
    case object([Member])
    case array([JSONValue])
    case string(String)
    /// The number as written (`1`, `1.0`, `1e3` stay distinct).
    case number(String)
    case bool(Bool)
    case null

    /// One object member.
    public struct Member: Hashable, Sendable {
        public var key: String
        public var value: JSONValue
        /// Byte range of the whole member (key through value) in the parsed source, if parsed.
        public var sourceRange: Range<Int>?
        /// Where the value starts in the parsed source (past the colon and the blanks after it).
        public var valueStart: Int?

        public init(key: String, value: JSONValue, sourceRange: Range<Int>? = nil, valueStart: Int? = nil) {
            self.key = key
            self.value = value
            self.sourceRange = sourceRange
            self.valueStart = valueStart
        }

        /// Byte range of the value alone in the parsed source, if parsed: what an edit of the
        /// value replaces, keeping the key's spelling and the spacing around the colon.
        public var valueRange: Range<Int>? {
            guard let sourceRange, let valueStart else { return nil }
            return valueStart..<sourceRange.upperBound
        }
    }

    /// The value of the first member named `key`, for objects.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The string, for strings.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number as a Double, for numbers; `true`/`false` as 1/0.
    public var doubleValue: Double? {
        switch self {
        case .number(let text): Double(text)
        case .bool(let value): value ? 1 : 0
        case .string(let text): Double(text)
        default: nil
        }
    }

    /// Compact JSON text.
    public var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                out += JSONValue.quote(member.key)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        case .array(let values):
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .string(let value): out += JSONValue.quote(value)
        case .number(let text): out += text
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        }
    }

    /// A JSON string literal.
    public static func quote(_ string: String) -> String { JSONString.quote(string) }
}
