import AttacheBase
import AttacheTestSupport
import Crypto
import Foundation
import Synchronization
import Testing

@testable import AttacheStore
@testable import AttacheStoreShared

/// The shared store past a few hundred objects, against the real PostgreSQL and radosgw: 10,000
/// objects (uploaded and recorded in bulk, each hashing to its id), `attache store verify`
/// exact and clean, an orphan at the very end of the key space found and collected by
/// `attache gc`, and the peak resident size of both the same at 1,000 and at 10,000 objects.
@Suite(.enabled(if: SharedServers.available, Comment(rawValue: SharedServers.missing))) struct SharedScaleTests {
    /// Uploads `count` objects of 200–700 random bytes from `start` (4 at once) and records their
    /// rows in bulk; returns their ids.
    static func fill(_ store: AttachmentStore, fresh: SharedServers.Fresh, from start: Int, count: Int) throws {
        let shared = try #require(store.backend as? SharedBackend)
        let rows = Mutex<[String]>([])
        let failure = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let lanes = (0..<4).map { lane in
            Thread {
                for index in stride(from: start + lane, to: start + count, by: 4) {
                    let bytes = randomBytes(200 + index % 500, seed: UInt64(index) + 1)
                    let id = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
                    do {
                        try bytes.withUnsafeBytes {
                            try shared.blobs.put(key: SharedBackend.objectKey(id, "jpg"), bytes: $0)
                        }
                    } catch {
                        failure.withLock { $0 = error }
                        break
                    }
                    rows.withLock {
                        $0.append("('\(id)', 'jpeg', 'jpg', \(bytes.count), 1, 1, 1, 0, 4000000000, 0, NULL)")
                    }
                }
                done.signal()
            }
        }
        for lane in lanes { lane.start() }
        for _ in lanes { done.wait() }
        if let error = failure.withLock({ $0 }) { throw error }
        let all = rows.withLock { $0 }
        for chunk in stride(from: 0, to: all.count, by: 1000) {
            let values = all[chunk..<min(all.count, chunk + 1000)].joined(separator: ",")
            _ = try fresh.sql("INSERT INTO attache_object VALUES \(values)")
        }
        _ = try fresh.sql("UPDATE attache_totals SET objects = (SELECT count(*) FROM attache_object) WHERE one = 1")
    }

    /// Runs `attache` with `arguments` under a Python parent that reports its peak resident size.
    static func attache(
        _ arguments: [String], fresh: SharedServers.Fresh
    ) throws -> (
        status: Int32, output: String, peakMB: Double
    ) {
        let script =
            "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            + "print('peak_kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"
        let result = try runChild(
            "python3", ["-c", script, try attacheExecutable()] + arguments + fresh.arguments,
            environment: fresh.childEnvironment, outputs: .merged)
        let output = result.text
        let peak = output.split(separator: "\n").last { $0.hasPrefix("peak_kb ") }.flatMap { Double($0.dropFirst(8)) }
        return (result.status, output, (peak ?? 0) / 1024)
    }

    @Test("10,000 objects: verify exact and clean, an orphan at the end of the key space collected, memory flat")
    func tenThousandObjects() throws {
        let fresh = try SharedServers.fresh()
        let store = try AttachmentStore.open(try fresh.configuration())
        try Self.fill(store, fresh: fresh, from: 0, count: 1000)
        let small = try Self.attache(["store", "verify", "--json"], fresh: fresh)
        #expect(small.status == 0 && small.output.contains(#""objects":1000,"#), "\(small.output)")
        let smallGC = try Self.attache(["gc", "--json", "--dry-run"], fresh: fresh)
        #expect(smallGC.status == 0, "\(smallGC.output)")

        try Self.fill(store, fresh: fresh, from: 1000, count: 9000)
        let large = try Self.attache(["store", "verify", "--json"], fresh: fresh)
        #expect(large.status == 0, "\(large.output)")
        #expect(large.output.contains(#""clean":true,"objects":10000,"#), "\(large.output)")
        #expect(large.output.contains(#""corrupt":0,"missing":0,"orphans":0"#), "\(large.output)")
        #expect(large.output.contains(#""hashed":10000"#), "every object read back and hashed: \(large.output)")

        // An orphan at the very end of the key space (the last prefix, the last id).
        let shared = try #require(store.backend as? SharedBackend)
        let last = String(repeating: "f", count: 64)
        try [UInt8](repeating: 1, count: 100).withUnsafeBytes {
            try shared.blobs.put(key: SharedBackend.objectKey(last, "jpg"), bytes: $0)
        }
        let found = try Self.attache(["store", "verify", "--json", "--sample", "0.01"], fresh: fresh)
        #expect(found.output.contains(#""problem":"orphan","id":"\#(last)""#), "\(found.output.suffix(600))")
        #expect(found.output.contains(#""objects":10000,"#) && found.output.contains(#""orphans":1"#))
        let young = try Self.attache(["gc", "--json"], fresh: fresh)
        #expect(young.output.contains(#""orphans":0"#), "a fresh upload is not an orphan yet: \(young.output)")
        let gc = try Self.attache(["gc", "--json", "--min-orphan-age", "0"], fresh: fresh)
        #expect(gc.status == 0 && gc.output.contains(#""orphans":1"#), "\(gc.output)")
        #expect(!(try shared.blobs.exists(key: SharedBackend.objectKey(last, "jpg"))))
        let after = try Self.attache(["store", "verify", "--json", "--sample", "0.1"], fresh: fresh)
        #expect(
            after.output.contains(#""clean":true,"objects":10000,"#) && after.output.contains(#""orphans":0"#),
            "\(after.status): \(after.output.suffix(800))")
        let hashed = try #require(after.output.firstMatch(of: /"hashed":([0-9]+)/)?.1).flatMap { Int($0) }
        #expect((500...1500).contains(hashed ?? 0), "about a tenth hashed: \(String(describing: hashed))")

        // Flat: ten times the objects, about the same peak (a few MB of pages at most).
        #expect(large.peakMB < small.peakMB * 1.25 + 8, "verify: \(small.peakMB) MB at 1k, \(large.peakMB) MB at 10k")
        #expect(gc.peakMB < smallGC.peakMB * 1.25 + 8, "gc: \(smallGC.peakMB) MB at 1k, \(gc.peakMB) MB at 10k")
        print(
            "shared store scale: peak RSS of verify \(Int(small.peakMB)) MB at 1,000 objects, \(Int(large.peakMB)) MB "
                + "at 10,000; of gc \(Int(smallGC.peakMB)) MB at 1,000, \(Int(gc.peakMB)) MB at 10,000")
    }
}
