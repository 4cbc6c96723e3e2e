import Foundation

/// `800ms`, `30s`, `5m`, `2h`, `7d` or a bare number of seconds: the one way every setting,
/// request term and command option writes a duration, its digits read by the one number
/// grammar (``DecimalText``).
public enum DurationText {
    public static func parse(_ text: String) -> Duration? {
        var text = Substring(text.trimmingCharacters(in: .whitespaces))
        if text.hasSuffix("ms") {
            guard let value = DecimalText.integer(text.dropLast(2), as: Int64.self), value >= 0 else { return nil }
            return .milliseconds(value)
        }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            text = text.dropLast()
        }
        guard let value = DecimalText.integer(text, as: Int64.self), value >= 0 else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: unit)
        return overflow ? nil : .seconds(seconds)
    }

    public static func format(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if ms % 1000 != 0 { return "\(ms)ms" }
        let s = ms / 1000
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where s >= size && s % size == 0 {
            return "\(s / size)\(unit)"
        }
        return "\(s)s"
    }
}
