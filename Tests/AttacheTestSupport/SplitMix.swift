/// A small deterministic generator so failures reproduce.
public struct SplitMix: RandomNumberGenerator {
    public var state: UInt64

    /// A generator that always gives the same sequence for `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n`.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// `count` pseudo-random bytes, the same for the same seed.
public func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}
