public import AttacheBase

/// A strict RFC 8259 parser for notification payloads, with limits for hostile input.
///
/// Beyond the grammar it refuses, as `invalid_payload`, what readers disagree about: a member
/// name repeated in one object (JavaScript and Python keep the last, others the first, so a
/// mutated copy could mean different things to different readers) and bytes that are not
/// UTF-8 (RFC 8259 §8.1), instead of replacing them. A refused payload is passed through
/// unchanged.
public struct JSONParser {
    /// Largest input accepted (a push payload is at most 4 KB; 1 MiB leaves room for batches).
    public static let maxBytes = 1 << 20
    /// Deepest nesting accepted.
    public static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    /// Parses one JSON document (surrounding white space allowed).
    public static func parse(_ bytes: [UInt8]) throws(AttacheError) -> JSONValue {
        guard bytes.count <= maxBytes else {
            throw AttacheError(
                .invalidPayload, "the payload is larger than \(maxBytes) bytes", limit: .maxInputBytes)
        }
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ message: String) -> AttacheError {
        AttacheError(.invalidPayload, "\(message) at byte \(index)")
    }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func expect(_ byte: UInt8) throws(AttacheError) {
        guard current == byte else { throw error("expected '\(Character(UnicodeScalar(byte)))'") }
        index += 1
    }

    private mutating func literal(_ word: String, _ value: JSONValue) throws(AttacheError) -> JSONValue {
        let utf8 = Array(word.utf8)
        guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
            throw error("invalid literal")
        }
        index += utf8.count
        return value
    }

    private mutating func value() throws(AttacheError) -> JSONValue {
        switch current {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case .some(let c) where c == UInt8(ascii: "-") || (c >= 0x30 && c <= 0x39): return try number()
        case nil: throw error("unexpected end of input")
        default: throw error("unexpected character")
        }
    }

    private mutating func nest() throws(AttacheError) {
        depth += 1
        guard depth <= Self.maxDepth else {
            throw AttacheError(
                .invalidPayload, "nesting deeper than \(Self.maxDepth) at byte \(index)", limit: .maxJSONDepth)
        }
    }

    private mutating func object() throws(AttacheError) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var members: [JSONValue.Member] = []
        var names = Set<String>()
        skipSpace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            let start = index
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try string()
            guard names.insert(key).inserted else {
                index = start
                throw error("duplicate member name \(JSONValue.quote(key))")
            }
            skipSpace()
            try expect(UInt8(ascii: ":"))
            skipSpace()
            let valueStart = index
            let value = try value()
            members.append(
                JSONValue.Member(key: key, value: value, sourceRange: start..<index, valueStart: valueStart))
            skipSpace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }
    }

    private mutating func array() throws(AttacheError) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var values: [JSONValue] = []
        skipSpace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(values)
        }
        while true {
            skipSpace()
            values.append(try value())
            skipSpace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return .array(values)
        }
    }

    private mutating func number() throws(AttacheError) -> JSONValue {
        let start = index
        func digits() -> Int {
            let from = index
            while let c = current, c >= 0x30, c <= 0x39 { index += 1 }
            return index - from
        }
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            throw error("invalid number")
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("invalid number") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw error("invalid number") }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private mutating func string() throws(AttacheError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var run = index
        func flush(_ end: Int) throws(AttacheError) {
            guard end > run else { return }
            guard let text = String(validating: bytes[run..<end], as: UTF8.self) else {
                throw AttacheError(.invalidPayload, "a string holds bytes that are not UTF-8 after byte \(run)")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard let c = current else { throw error("unterminated string") }
            switch c {
            case UInt8(ascii: "\""):
                try flush(index)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flush(index)
                index += 1
                guard let escape = current else { throw error("unterminated escape") }
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard current == UInt8(ascii: "\\"), index + 1 < bytes.count,
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("lone surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("lone surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw error("lone surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid escape") }
                    scalars.append(scalar)
                default: throw error("invalid escape")
                }
                run = index
            case 0..<0x20:
                throw error("control character in string")
            default:
                index += 1
            }
        }
    }

    private mutating func hex4() throws(AttacheError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case 0x30...0x39: digit = UInt32(c - 0x30)
            case 0x41...0x46: digit = UInt32(c - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(c - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
