internal import AttacheBase

/// The identity of a stored attachment: the SHA-256 of its bytes, written as 64 lowercase hex
/// digits. Two stores of the same bytes share one id and one object.
public struct AttachmentID: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Wraps a 32-byte digest; `nil` for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses 64 hex digits (either case); `nil` for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            guard let high = Self.nibble(utf8[2 * i]), let low = Self.nibble(utf8[2 * i + 1]) else {
                return nil
            }
            out[i] = high << 4 | low
        }
        self.bytes = out
    }

    /// 64 lowercase hex digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The hex form.
    public var description: String { hex }

    /// Orders ids by their bytes.
    public static func < (lhs: AttachmentID, rhs: AttachmentID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
