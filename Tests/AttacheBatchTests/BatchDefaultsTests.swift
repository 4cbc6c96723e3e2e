import AttacheBase
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// `attache batch`'s defaults are the service's but for the JPEG encoder: a campaign's picture is
/// prepared once, so the batch takes the thorough one (trellis quantisation).
extension BatchRunTests {
    /// The one item `attache batch` with `extra` recorded for `name` on the server.
    func batchItem(_ name: String, _ extra: [String], manifest: String) throws -> JSONValue {
        let manifest = directory.path + "/" + manifest
        let result = try runChild(
            try attacheExecutable(),
            ["batch", "--allow-loopback", "--store", directory.path + "/store", "--manifest", manifest]
                + extra + [try urlList([name])])
        #expect(result.status == 0, "\(result.errorText)")
        let lines = try records(manifest)
        try #require(lines.count == 1 && lines[0].outcome == "attached", "\(lines.map(\.value))")
        guard case .array(let items)? = lines[0].value["items"], let item = items.first else {
            throw AttacheError(.internalError, "no item in \(lines[0].value)")
        }
        return item
    }

    @Test func aBatchWritesWithTheThoroughEncoderAndFewerBytesThanTheService() throws {
        let thorough = try batchItem("portrait-progressive.jpg", [], manifest: "default.jsonl")
        let fast = try batchItem("portrait-progressive.jpg", ["--jpeg-encoder", "fast"], manifest: "fast.jsonl")
        // The service's encoder: what `attache process` stores for the same media, byte for byte
        // (content-addressed: the same id).
        let payload =
            #"{"aps":{"alert":"x","mutable-content":1},"media-url":"\#(server.url("/portrait-progressive.jpg"))"}"#
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
