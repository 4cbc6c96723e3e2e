import AttacheBase
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// `attache batch`'s defaults are the service's but for the JPEG encoder: a campaign's picture is
/// prepared once, so the batch takes the thorough one (trellis quantisation).
@Suite(.enabled(if: inIsolatedChild)) struct BatchDefaultsTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory

    init() throws {
        server = try batchMediaServer()
        directory = try TemporaryDirectory()
    }

    /// The one item a batch over `url` with `extra` recorded.
    func batchItem(_ url: String, _ extra: [String], name: String) throws -> JSONValue {
        let list = directory.path + "/\(name).txt"
        try Data((url + "\n").utf8).write(to: URL(fileURLWithPath: list))
        let manifest = directory.path + "/\(name).manifest.jsonl"
        let result = try runChild(
            try attacheExecutable(),
            ["batch", "--allow-loopback", "--store", directory.path + "/store", "--manifest", manifest]
                + extra + [list])
        #expect(result.status == 0, "\(result.errorText)")
        let lines = try records(manifest)
        try #require(lines.count == 1 && lines[0].outcome == "attached", "\(lines.map(\.value))")
        guard case .array(let items)? = lines[0].value["items"], let item = items.first else {
            throw AttacheError(.internalError, "no item in \(lines[0].value)")
        }
        return item
    }

    @Test func aBatchWritesWithTheThoroughEncoderAndFewerBytesThanTheService() throws {
        let url = server.url("/portrait-progressive.jpg")
        let thorough = try batchItem(url, [], name: "default")
        let fast = try batchItem(url, ["--jpeg-encoder", "fast"], name: "fast")
        // The service's encoder: what `attache process` stores for the same media, byte for byte
        // (content-addressed: the same id).
        let payload = #"{"aps":{"alert":"x","mutable-content":1},"media-url":"\#(url)"}"#
        let processed = try runChild(
            try attacheExecutable(), ["process", "--allow-loopback", "--store", directory.path + "/store", "-"],
            input: Array(payload.utf8))
        #expect(processed.status == 0, "\(processed.errorText)")
        let mutated = try JSONParser.parse(processed.output)
        guard case .array(let block)? = mutated["attachments"] else {
            Issue.record("process attached nothing: \(processed.text)")
            return
        }
        let serviceID = try #require(block.first?["id"]?.stringValue)
        #expect(fast["id"]?.stringValue == serviceID, "--jpeg-encoder fast is the service's default")
        #expect(thorough["id"]?.stringValue != serviceID)
        // Fewer bytes, held to the same quality target's band (80: none more than 10 under it).
        let (small, large) = (try #require(thorough["bytes"]?.doubleValue), try #require(fast["bytes"]?.doubleValue))
        #expect(small < large * 0.99, "thorough \(small) bytes, fast \(large)")
        let score = try #require(thorough["score"]?.doubleValue)
        #expect(score >= 70, "the thorough picture scores \(score)")
    }
}
