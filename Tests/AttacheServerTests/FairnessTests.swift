import AttacheBase
import AttacheCore
import AttacheTestSupport
import AttacheWork
import Foundation
import Synchronization
import Testing

@testable import AttacheMedia
@testable import AttacheServer

/// A light payload beside many heavy ones, through the service: it is chosen next, not queued
/// behind them — at the door (a place in the pipeline) and on the cores (a heavy decode gives
/// way at its next checkpoint) — while the heavy decodes hold at most one place per core. Every
/// assertion is about the order things happened in, never how long they took.
@Suite(.enabled(if: inIsolatedChild)) struct FairnessTests {
    /// A noisy 4000×3000 JPEG: a heavy decode (one per URL: the store never has it yet).
    static func heavyPhoto() throws -> [UInt8] {
        var random = SplitMix(seed: 7)
        let (width, height) = (4000, 3000)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for index in pixels.indices { pixels[index] = UInt8(truncatingIfNeeded: random.next() >> 56) }
        return try Encoders.jpeg(PixelImage(width: width, height: height, channels: 3, pixels: pixels), quality: 90)
    }

    @Test("a tiny payload posted after sixteen heavy ones is answered before most of them")
    func aTinyPayloadPassesHeavyOnes() async throws {
        let heavy = try Self.heavyPhoto()
        let media = try TestHTTPServer()
        media.route("/heavy.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: heavy) }
        media.route("/tiny.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: sampleJPEG) }
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"

        final class Order: Sendable {
            let list = Mutex<[String]>([])
            func withLock<T>(_ body: (inout [String]) -> T) -> T { list.withLock { body(&$0) } }
        }
        let order = Order()
        var posts: [Task<Int, any Error>] = []
        for index in 0..<16 {
            posts.append(
                Task {
                    let body = payload(image: media.url("/heavy.jpg?n=\(index)"))
                    let answer = try await curl("POST", post, headers: ServiceTests.auth, body: body)
                    order.withLock { $0.append("heavy-\(index)") }
                    return answer.status
                })
        }
        // The heavy decodes are under way (their places taken) before the tiny one comes.
        func gauge(_ name: String) async throws -> Int {
            let answer = try await curl("GET", service.base + "/metrics")
            let line = answer.text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return line.flatMap { Int($0.split(separator: " ").last!) } ?? -1
        }
        #expect(await eventually { try await gauge("attache_pipeline_decodes_heavy") >= 1 }, "no heavy decode began")
        #expect(try await gauge("attache_pipeline_decodes_heavy") <= PipelineWorkers.count, "one heavy place per core")
        #expect(order.withLock { $0.count } < 16, "the heavy payloads were all done before the tiny one came")

        let tiny = try await curl(
            "POST", post, headers: ServiceTests.auth, body: payload(image: media.url("/tiny.jpg")))
        let before = order.withLock { list in
            list.append("tiny")
            return list.count - 1
        }
        print("fairness: the tiny payload was answered after \(before) of 16 heavy ones")
        #expect(tiny.status == 200 && tiny.headers["attache-attached"] == "1", "\(tiny.text)")
        for task in posts { #expect(try await task.value == 200) }
        #expect(before <= 8, "the tiny payload came after \(before) of 16 heavy ones: \(order.withLock { $0 })")
        // Nothing is left waiting or holding memory once they are all answered.
        #expect(await eventually { try await gauge("attache_pipeline_decode_memory_bytes") == 0 })
        #expect(try await gauge("attache_pipeline_decode_memory_limit_bytes") == PipelineWorkers.memory)
    }
}
