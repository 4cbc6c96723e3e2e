public import AttacheBase

/// Builds one JSON object with keys in insertion order, for line-oriented output (reports,
/// manifests, the service's envelopes).
public struct JSONLine: Sendable {
    private var parts: [String] = []

    /// An empty object.
    public init() {}

    /// Adds a string member (`null` for nil).
    public mutating func add(_ key: String, _ value: String?) {
        parts.append("\(Self.quote(key)):\(value.map(Self.quote) ?? "null")")
    }

    /// Adds an integer member (`null` for nil).
    public mutating func add(_ key: String, _ value: Int?) {
        parts.append("\(Self.quote(key)):\(value.map(String.init) ?? "null")")
    }

    /// Adds a number member.
    public mutating func add(_ key: String, _ value: Double) {
        parts.append("\(Self.quote(key)):\(value)")
    }

    /// Adds a boolean member.
    public mutating func add(_ key: String, _ value: Bool) {
        parts.append("\(Self.quote(key)):\(value)")
    }

    /// Adds an object member (`null` for nil).
    public mutating func add(_ key: String, object: JSONLine?) {
        parts.append("\(Self.quote(key)):\(object?.text ?? "null")")
    }

    /// Adds already-encoded JSON.
    public mutating func addRaw(_ key: String, _ json: String) {
        parts.append("\(Self.quote(key)):\(json)")
    }

    /// The object's text.
    public var text: String { "{" + parts.joined(separator: ",") + "}" }

    /// `string` as a JSON string literal.
    public static func quote(_ string: String) -> String { JSONValue.quote(string) }

    /// An error as `{"code", "message", "limit"?, "detail"?}`.
    public static func error(_ error: AttacheError) -> JSONLine {
        var object = JSONLine()
        object.add("code", error.code.rawValue)
        object.add("message", error.message)
        if let limit = error.limit { object.add("limit", limit.rawValue) }
        if let detail = error.detail { object.add("detail", detail) }
        return object
    }
}
