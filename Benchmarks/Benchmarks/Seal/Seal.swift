import AttacheCore
import AttacheFetch
import AttacheSeal
import AttacheStore
import Benchmark
import Crypto
import Foundation

/// Sealed notifications (run from Benchmarks/: `swift package benchmark --target Seal`).
///
/// - `process, alert only`: `Pipeline.process` on a 1.6 KB alert-only payload, unsealed (it
///   passes through) and sealed to a P-256 or X25519 key: the difference is what sealing adds
///   on top of `attache process` (parse, frame, HPKE, JSON).
/// - `HPKE seal`: the seal alone on a 3 KB plaintext.
/// - `segment decrypt`: opening a 4 MiB sealed attachment (64 KiB segments), whole and as a
///   stream of 64 KiB pieces, one core.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(5))

    let root = FileManager.default.temporaryDirectory.appendingPathComponent("attache-seal-bench-\(getpid())").path
    let store = try! AttachmentStore(StoreConfiguration(root: root))
    let pipeline = Pipeline(configuration: PipelineConfiguration(), fetcher: Fetcher(policy: FetchPolicy()), store: store)
    let body = String(repeating: "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", count: 26)
    let payload = Array(
        #"{"aps":{"alert":{"title":"Your order","subtitle":"Shipped","body":"\#(body)"},"mutable-content":1,"sound":"default"},"order":{"id":123456,"items":3}}"#
            .utf8)
    let p256 = try! SealRecipient(p256: P256.KeyAgreement.PrivateKey().publicKey, keyID: "device-1")
    let x25519 = try! SealRecipient(x25519: Curve25519.KeyAgreement.PrivateKey().publicKey, keyID: "device-2")

    Benchmark("process, alert only, unsealed") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(await pipeline.process(payload)) }
    }
    Benchmark("process, alert only, sealed P-256") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(await pipeline.process(payload, sealTo: p256)) }
    }
    Benchmark("process, alert only, sealed X25519") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(await pipeline.process(payload, sealTo: x25519)) }
    }

    let plaintext = [UInt8](repeating: 0x41, count: 3000)
    Benchmark("HPKE seal, 3 KB, P-256") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try PayloadSeal.seal(plaintext, to: p256)) }
    }

    let key = SymmetricKey(size: .bits256)
    let attachment = [UInt8](repeating: 0x5A, count: 4 << 20)
    let sealed = try! SegmentEncryptor.seal(attachment, key: key)
    Benchmark(
        "segment decrypt, 4 MiB whole", configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .one)
    ) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try SegmentDecryptor.open(sealed, key: key)) }
    }
    // As the kit gets it: the body in 64 KiB pieces, each piece's plaintext handed on.
    Benchmark(
        "segment decrypt, 4 MiB streamed", configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .one)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            var decryptor = SegmentDecryptor(key: key)
            var offset = 0
            while offset < sealed.count {
                let end = min(sealed.count, offset + 65_536)
                blackHole(try decryptor.append(sealed[offset..<end]))
                offset = end
            }
            blackHole(try decryptor.finish())
        }
    }
}
