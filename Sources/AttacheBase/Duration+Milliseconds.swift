extension Duration {
    /// The duration in milliseconds, with fractions (for timings in reports and logs).
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// Whole milliseconds, rounded down (for libcurl's millisecond options).
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
