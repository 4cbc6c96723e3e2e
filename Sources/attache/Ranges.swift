import ArgumentParser

/// Range checks for numeric options, each refusal naming the option and its range.
enum Ranges {
    /// The longest time-to-live accepted for objects and tokens: 100 years.
    static let maxTTL: Int64 = 100 * 365 * 86_400
    /// The longest payload deadline accepted: one hour.
    static let maxDeadlineMilliseconds: Int64 = 3_600_000

    /// Throws a ValidationError unless `value` is in `range`.
    static func check<T: Comparable>(_ value: T, _ range: ClosedRange<T>, _ option: String) throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
    }

    /// Throws unless `ttl` is at least a second and at most ``maxTTL``.
    static func check(ttl: Seconds, _ option: String) throws {
        try check(ttl.value, 1...maxTTL, option + " (seconds)")
    }
}
