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

    static func quote(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
