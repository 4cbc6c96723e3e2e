import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore

/// Builds one JSON object with keys in insertion order, for line-oriented output.
struct JSONLine {
    private var parts: [String] = []

    mutating func add(_ key: String, _ value: String?) {
        parts.append("\(Self.quote(key)):\(value.map(Self.quote) ?? "null")")
    }

    mutating func add(_ key: String, _ value: Int?) {
        parts.append("\(Self.quote(key)):\(value.map(String.init) ?? "null")")
    }

    mutating func add(_ key: String, _ value: Double) {
        parts.append("\(Self.quote(key)):\(value)")
    }

    mutating func add(_ key: String, _ value: Bool) {
        parts.append("\(Self.quote(key)):\(value)")
    }

    mutating func add(_ key: String, object: JSONLine?) {
        parts.append("\(Self.quote(key)):\(object?.text ?? "null")")
    }

    /// Adds already-encoded JSON.
    mutating func addRaw(_ key: String, _ json: String) {
        parts.append("\(Self.quote(key)):\(json)")
    }

    var text: String { "{" + parts.joined(separator: ",") + "}" }

    static func quote(_ string: String) -> String { JSONValue.quote(string) }
}
