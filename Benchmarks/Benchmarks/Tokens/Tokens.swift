import AttacheStore
import Benchmark
import Foundation

/// Scoped access tokens (run from Benchmarks/: `swift package benchmark --target Tokens`).
/// One core; each iteration verifies one token string end to end (base64url decode, key lookup,
/// HMAC-SHA256, constant-time compare, expiry, attachment and scope checks).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        maxDuration: .seconds(5))

    let ring = KeyRing.generate().rotated()
    let now = StoreConfiguration.unixNow()
    let ids = (0..<1024).map { i in AttachmentID(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) })! }
    let tokens = ids.map { ring.issue(for: $0, ttl: 3600, now: now).token }

    Benchmark("token verify (check)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var i = 0
        for _ in benchmark.scaledIterations {
            blackHole(try ring.check(tokens[i & 1023], opens: ids[i & 1023], now: now).get())
            i &+= 1
        }
    }

    Benchmark("token verify (tampered, refused)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let tampered = tokens.map { String($0.dropLast(10)) + "AAAAAAAAAA" }
        var i = 0
        for _ in benchmark.scaledIterations {
            blackHole(ring.check(tampered[i & 1023], opens: ids[i & 1023], now: now))
            i &+= 1
        }
    }

    Benchmark("token issue", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var i = 0
        for _ in benchmark.scaledIterations {
            blackHole(ring.issue(for: ids[i & 1023], ttl: 600, now: now))
            i &+= 1
        }
    }
}
