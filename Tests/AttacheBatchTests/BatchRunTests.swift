import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// A loopback media host for batches: the sample files, a 404, a lie, and a host that never
/// answers.
func batchMediaServer() throws -> TestHTTPServer {
    let server = try TestHTTPServer()
    for name in ["gray.jpg", "palette-transparent.png", "animated-chi.gif", "tone.mp3", "portrait-progressive.jpg"] {
        let body = Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!)
        server.route("/" + name) { _, c in c.respond(body: body) }
    }
    server.route("/missing.jpg") { _, c in c.respond(status: 404, reason: "Not Found") }
    server.route("/text.jpg") { _, c in c.respond(body: Array("<html>not an image</html>".utf8)) }
    server.route("/hang.jpg") { _, c in
        _ = c.timeUntilClientCloses(limit: .seconds(60))
        c.close()
    }
    return server
}

/// Reads a manifest's records.
func records(_ path: String) throws -> [ManifestRecord] {
    var out: [ManifestRecord] = []
    try BatchManifest.scan(path) { record, _ in if let record { out.append(record) } }
    return out
}

/// Batches against a loopback host; run alone in a child process with the network suites.
@Suite(.enabled(if: inIsolatedChild)) struct BatchRunTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory

    init() throws {
        server = try batchMediaServer()
        directory = try TemporaryDirectory()
    }

    /// A URL list naming `names` on the server, in order.
    func urlList(_ names: [String]) throws -> String {
        let path = directory.path + "/urls.txt"
        let text = "# a campaign\n" + names.map { server.url("/" + $0) }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func hostileItemsInTheMiddleFailAloneAndARerunDoesNothingTwice() async throws {
        let names = [
            "gray.jpg", "missing.jpg", "palette-transparent.png", "text.jpg", "hang.jpg", "animated-chi.gif",
            "tone.mp3", "portrait-progressive.jpg",
        ]
        let input = try BatchInput(path: try urlList(names))
        var configuration = PipelineConfiguration()
        configuration.deadline = .seconds(8)
        let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
        let pipeline = Pipeline(configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()), store: store)
        let manifestPath = directory.path + "/out.manifest.jsonl"
        var seen: [Int] = []
        do {
            let manifest = try BatchManifest(path: manifestPath)
            let output = try BatchOutput(path: directory.path + "/out.jsonl", recordedEnd: nil)
            let progress = try await BatchRunner(pipeline: pipeline, jobs: 3).run(
                input, manifest: manifest, output: output
            ) { seen.append($0.done) }
            #expect(progress.done == names.count && progress.skipped == 0)
            #expect(progress.failed == 3)
        }
        #expect(seen == Array(1...names.count) + [names.count], "one call per item, one at the end")
        let lines = try records(manifestPath)
        #expect(lines.count == names.count)
        let byURL = Dictionary(uniqueKeysWithValues: lines.map { ($0.value["url"]!.stringValue!, $0) })
        func record(_ name: String) throws -> ManifestRecord { try #require(byURL[server.url("/" + name)]) }
        #expect(try record("missing.jpg").code == "http_status")
        #expect(try record("text.jpg").code == "unsupported_type")
        #expect(
            try record("hang.jpg").code == "too_slow", "a host that sends nothing is dropped by the fetch's own limit")
        for name in ["gray.jpg", "palette-transparent.png", "animated-chi.gif", "tone.mp3", "portrait-progressive.jpg"]
        {
            let line = try record(name)
            #expect(line.outcome == "attached", "\(name): \(line.value.text)")
            let id = try #require(line.attachments.first.flatMap(AttachmentID.init(hex:)))
            #expect(try store.attachment(id) != nil)
            #expect(line.bytesIn == Int64(FileManager.default.contents(atPath: Paths.samples + "/" + name)!.count))
            #expect(line.bytesOut > 0)
        }
        let photo = try record("portrait-progressive.jpg").value["items"]
        guard case .array(let entries)? = photo, let entry = entries.first else {
            Issue.record("no items")
            return
        }
        #expect(entry["source_width"]?.doubleValue != nil && entry["width"]?.doubleValue != nil)
        // One payload per item in the JSONL output, each naming its attachment.
        let payloads = try String(contentsOfFile: directory.path + "/out.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(payloads.count == names.count)
        #expect(
            lines.last?.outputEnd
                == Int64(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/out.jsonl")).count))

        // The summary counts what the manifest says.
        let summary = try BatchSummary(manifest: manifestPath, run: nil)
        #expect(summary.items == names.count)
        #expect(summary.outcomes == ["attached": 5, "failed": 3])
        #expect(summary.codes == ["http_status": 1, "unsupported_type": 1, "too_slow": 1])
        #expect(summary.bytesOut == lines.reduce(0) { $0 + $1.bytesOut })

        // Again: everything is recorded, so nothing is fetched or written.
        let requests = server.count("/gray.jpg")
        let manifest = try BatchManifest(path: manifestPath)
        let output = try BatchOutput(path: directory.path + "/out.jsonl", recordedEnd: manifest.outputEnd)
        let again = try await BatchRunner(pipeline: pipeline, jobs: 3).run(input, manifest: manifest, output: output)
        #expect(again.done == 0 && again.skipped == names.count)
        #expect(server.count("/gray.jpg") == requests)
        #expect(try records(manifestPath).count == names.count)
        #expect(
            try String(contentsOfFile: directory.path + "/out.jsonl", encoding: .utf8).split(separator: "\n").count
                == names.count)
    }
}
