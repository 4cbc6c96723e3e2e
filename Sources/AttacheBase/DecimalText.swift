/// The one grammar of every number a request or a setting carries: decimal digits, a leading
/// `-` where negative numbers are meant, and for fractions one `.` between digits. Nothing
/// else reads as a number: no `+`, blanks, hexadecimal (`0x50`, `0x1.4p6`), exponents (`8e1`),
/// `inf`, `nan` or bytes after the digits (`80\u{0}`), however a language's parser would take
/// them.
public enum DecimalText {
    /// A whole number: `80`, `-5`.
    public static func integer<T: FixedWidthInteger>(_ text: some StringProtocol, as: T.Type = T.self) -> T? {
        guard isDecimal(text.utf8, fraction: false) else { return nil }
        return T(text, radix: 10)
    }

    /// A whole number or a decimal fraction: `80`, `0.35`, `-1.5`.
    public static func number(_ text: some StringProtocol) -> Double? {
        guard isDecimal(text.utf8, fraction: true) else { return nil }
        return Double(String(text))
    }

    private static func isDecimal(_ bytes: some Collection<UInt8>, fraction: Bool) -> Bool {
        var digits = bytes[...]
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        guard digits.count <= 40 else { return false }
        var seenDot = false
        var previousDigit = false
        for byte in digits {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): previousDigit = true
            case UInt8(ascii: ".") where fraction && !seenDot && previousDigit:
                seenDot = true
                previousDigit = false
            default: return false
            }
        }
        return previousDigit
    }
}
