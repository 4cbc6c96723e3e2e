import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

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
        // Debug builds beside other suites are slow; the hang is ended by the fetch's stall timer.
        configuration.deadline = .seconds(120)
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

extension BatchRunTests {
    @Test func itemsAnEarlierRunWasKilledWithComeAfterTheItemsNeverTried() async throws {
        let input = try BatchInput(path: try urlList(["gray.jpg", "missing.jpg", "tone.mp3", "text.jpg"]))
        let manifestPath = directory.path + "/order.manifest.jsonl"
        // Earlier runs started the first two and were killed before recording them: the first
        // in two runs, the second in one.
        try Data("urls.txt:2\nurls.txt:3\nurls.txt:2\n".utf8).write(
            to: URL(fileURLWithPath: manifestPath + ".started"))
        let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
        let pipeline = Pipeline(
            configuration: PipelineConfiguration(), fetcher: Fetcher(policy: loopbackPolicy()), store: store)
        let progress = try await BatchRunner(pipeline: pipeline, jobs: 1).run(
            input, manifest: try BatchManifest(path: manifestPath), output: nil)
        #expect(progress.done == 4 && progress.skipped == 0)
        #expect(try records(manifestPath).map(\.reference) == ["urls.txt:4", "urls.txt:5", "urls.txt:3", "urls.txt:2"])
    }
}

extension BatchRunTests {
    /// Three payloads: one naming an image, one not mutable, one not JSON.
    func payloads() -> [(name: String, text: String)] {
        let image = server.url("/gray.jpg")
        return [
            ("a.json", "{\"aps\":{\"alert\":\"hi\",\"mutable-content\":1},\n \"image\":\"\(image)\"}"),
            ("b.json", "{\"aps\":{\"alert\":\"plain\"}}"),
            ("c.json", "{\"aps\": nope"),
        ]
    }

    func runBatch(_ input: String, out: String) async throws -> [String: ManifestRecord] {
        let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
        let pipeline = Pipeline(
            configuration: PipelineConfiguration(), fetcher: Fetcher(policy: loopbackPolicy()), store: store)
        let manifest = try BatchManifest(path: out + ".manifest.jsonl")
        _ = try await BatchRunner(pipeline: pipeline, jobs: 2).run(
            try BatchInput(path: input), manifest: manifest, output: try BatchOutput(path: out, recordedEnd: nil))
        return Dictionary(uniqueKeysWithValues: try records(out + ".manifest.jsonl").map { ($0.reference, $0) })
    }

    @Test func aDirectoryOfPayloadsGivesADirectoryOfPayloads() async throws {
        let input = directory.path + "/campaign"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        for (name, text) in payloads() {
            try Data(text.utf8).write(to: URL(fileURLWithPath: input + "/" + name))
        }
        let lines = try await runBatch(input, out: directory.path + "/out")
        #expect(lines.mapValues(\.outcome) == ["a.json": "attached", "b.json": "unchanged", "c.json": "unreadable"])
        #expect(lines["c.json"]?.code == "invalid_payload")
        let a = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/out/a.json"))))
        guard case .array(let block)? = a["attachments"] else {
            Issue.record("no attachment block")
            return
        }
        #expect(block.first?["id"]?.stringValue == lines["a.json"]?.attachments.first)
        // Passed through byte for byte, as `attache process` does.
        for (name, text) in payloads().dropFirst() {
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/out/" + name)) == Data(text.utf8))
        }
    }

    @Test func aJSONLFileOfPayloadsGivesOnePayloadPerLine() async throws {
        let input = directory.path + "/campaign.jsonl"
        let text = payloads().map { $0.text.replacingOccurrences(of: "\n", with: "") }.joined(separator: "\n")
        try Data(text.utf8).write(to: URL(fileURLWithPath: input))
        let lines = try await runBatch(input, out: directory.path + "/out.jsonl")
        #expect(
            lines.mapValues(\.outcome) == [
                "campaign.jsonl:1": "attached", "campaign.jsonl:2": "unchanged", "campaign.jsonl:3": "unreadable",
            ])
        let written = try String(contentsOfFile: directory.path + "/out.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(written.count == 3)
        #expect(written.contains { $0.contains("\"attachments\"") })
    }
}

/// `attache batch` as a user runs it: killed and rerun, on a terminal and in a log.
@Suite(.enabled(if: inIsolatedChild)) struct BatchCommandTests {
    let server: TestHTTPServer
    let directory: TemporaryDirectory
    let urls: String
    let count = 30
    /// Each response waits for a permit the test hands out: the test decides how far a run can
    /// get, and kills it while the rest are in flight.
    let gate = Gate()

    init() throws {
        server = try batchMediaServer()
        directory = try TemporaryDirectory()
        // Distinct URLs (so each is fetched), a few of them failing.
        let jpeg = Array(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")!)
        let png = Array(FileManager.default.contents(atPath: Paths.samples + "/palette-transparent.png")!)
        var lines: [String] = []
        for index in 0..<count {
            let path = "/item/\(index)" + (index % 3 == 0 ? ".png" : ".jpg")
            let gate = self.gate
            if index % 7 == 3 {
                server.route(path) { _, c in
                    if gate.take(c) { c.respond(status: 404, reason: "Not Found") }
                }
            } else {
                let body = index % 3 == 0 ? png : jpeg
                server.route(path) { _, c in
                    if gate.take(c) { c.respond(body: body) }
                }
            }
            lines.append(server.url(path))
        }
        urls = directory.path + "/campaign.txt"
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: urls))
    }

    /// Starts `attache batch` on the campaign's URLs with `extra`.
    func batch(_ extra: [String] = [], outputs: ChildProcess.Outputs = .discarded) throws -> ChildProcess {
        try ChildProcess(
            try attacheExecutable(),
            [
                "batch", "--allow-loopback", "--store", directory.path + "/store", "--out",
                directory.path + "/out.jsonl",
                "--jobs", "2", "--deadline", "20s",
            ] + extra + [urls], outputs: outputs)
    }

    /// Runs a batch with `extra` to its end: its exit status and what it said on standard error.
    func batchSays(_ extra: [String] = []) throws -> (status: Int32, said: String) {
        let result = try batch(extra, outputs: .separate).wait()
        return (result.status, result.errorText)
    }

    func manifestLines() -> Int {
        let text = (try? String(contentsOfFile: directory.path + "/out.manifest.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").count
    }

    /// `--tenant ID --tenants FILE`: the service's row for that tenant holds the batch too — its
    /// media hosts and its store quota — and what it stores is counted as the tenant's.
    @Test func aBatchForATenantIsHeldToItsRowAndStoresAsItsOwn() throws {
        _ = gate.add(count * 4)
        let tenants = directory.path + "/tenants.json"
        try Data(
            """
            {"tenants": [
              {"id": "acme", "keys": ["sha256:\(String(repeating: "ab", count: 32))"], "storeMaxBytes": 1},
              {"id": "globex", "keys": ["sha256:\(String(repeating: "cd", count: 32))"],
               "sources": {"deny": ["127.0.0.1"]}}
            ]}
            """.utf8
        ).write(to: URL(fileURLWithPath: tenants))
        func run(_ name: String, _ tenant: [String]) throws -> [ManifestRecord] {
            let manifest = directory.path + "/\(name).manifest.jsonl"
            let result = try ChildProcess(
                try attacheExecutable(),
                [
                    "batch", "--allow-loopback", "--store", directory.path + "/store-\(name)", "--manifest", manifest,
                    "--jobs", "4", "--deadline", "20s",
                ] + tenant + [urls], outputs: .separate
            ).wait()
            #expect(result.status == 0 || result.status == 2, "\(name): \(result.errorText.suffix(800))")
            return try records(manifest)
        }
        func codes(_ records: [ManifestRecord]) -> [String: Int] {
            records.reduce(into: [:]) { $0[$1.code ?? "none", default: 0] += 1 }
        }
        // globex may not fetch from this host: every item, before a byte is fetched.
        let denied = try run("globex", ["--tenant", "globex", "--tenants", tenants])
        #expect(denied.count == count && codes(denied) == ["source_not_allowed": count], "\(codes(denied))")
        // acme's quota holds one byte: every picture it would store is refused as its quota's,
        // and the store keeps nothing of its.
        let held = try run("acme", ["--tenant", "acme", "--tenants", tenants])
        let missing = (0..<count).filter { $0 % 7 == 3 }.count
        #expect(codes(held) == ["tenant_quota_exceeded": count - missing, "http_status": missing], "\(codes(held))")
        func stats(_ store: String, _ tenant: String) throws -> String {
            try runChild(
                try attacheExecutable(),
                ["store", "stats", "--store", directory.path + "/" + store, "--tenant", tenant]
            ).text
        }
        #expect(try stats("store-acme", "acme").contains("objects=0 bytes=0"))
        // Without a file, the tenant owns what it stores: store stats counts it as its own.
        let solo = try run("solo", ["--tenant", "solo"])
        #expect(solo.contains { $0.outcome == "attached" }, "\(codes(solo))")
        #expect(!(try stats("store-solo", "solo").contains("objects=0")), "the tenant's objects are its own")
        #expect(try stats("store-solo", "acme").contains("objects=0 bytes=0"))
        // The tenant leaves: its purge removes everything it alone held.
        let purged = try runChild(
            try attacheExecutable(), ["store", "purge", "--store", directory.path + "/store-solo", "--tenant", "solo"]
        ).text
        #expect(purged.contains("tenant=solo") && !purged.contains("removed=0 "), "\(purged)")
        #expect(try stats("store-solo", "solo").contains("objects=0 bytes=0"))
        // A tenant the file does not have, and a file without a tenant, are refused at once.
        let unknown = try batchSays(["--tenant", "nobody", "--tenants", tenants])
        #expect(unknown.status != 0 && unknown.said.contains("--tenant 'nobody' is not a tenant of"), "\(unknown.said)")
        let alone = try batchSays(["--tenants", tenants])
        #expect(alone.status != 0 && alone.said.contains("--tenants"), "\(alone.said)")
    }

    @Test func killedAtRandomMomentsTheRerunsFinishWithNoItemLostOrDoneTwice() throws {
        var random = SplitMix(seed: 0xBA7C4)
        for _ in 0..<6 {
            let recorded = manifestLines()
            let process = try batch()
            let permits = gate.add(Int.random(in: 2...7, using: &random))
            // Killed once a random number of the permitted items are recorded: the others may
            // be anywhere between asked for and half-written.
            let target = min(count - 1, recorded + Int.random(in: 1...permits, using: &random))
            let start = ContinuousClock.now
            while manifestLines() < target, process.isRunning, ContinuousClock.now - start < .seconds(120) {
                usleep(1_000)
            }
            #expect(process.isRunning, "items without a permit cannot finish")
            process.send(SIGKILL)
            process.wait()
        }
        gate.open()
        let final = try batch(["--json"], outputs: .separate).wait()
        #expect(final.status == 0)
        let summaryText = Data(final.output)

        let lines = try records(directory.path + "/out.manifest.jsonl")
        #expect(lines.count == count, "every item once")
        #expect(Set(lines.map(\.reference)).count == count, "no item twice")
        let payloads = try String(contentsOfFile: directory.path + "/out.jsonl", encoding: .utf8)
            .split(separator: "\n")
        #expect(payloads.count == count, "one payload per item, none half-written")
        #expect(Set(payloads).count == count)
        for payload in payloads { #expect((try? JSONParser.parse(Array(payload.utf8))) != nil) }
        // The manifest and the store agree, and every object verifies.
        let store = try AttachmentStore(StoreConfiguration(root: directory.path + "/store"))
        for id in lines.flatMap(\.attachments) {
            #expect(try store.attachment(try #require(AttachmentID(hex: id))) != nil)
        }
        #expect(try store.verify().isClean)
        #expect(lines.filter { $0.outcome == "failed" }.count == (0..<count).filter { $0 % 7 == 3 }.count)
        let summary = try #require(try JSONSerialization.jsonObject(with: summaryText) as? [String: Any])
        #expect(summary["items"] as? Int == count)
    }

    @Test("batch --manifest naming a file that is not a manifest refuses it and leaves it as it was")
    func aManifestOptionNamingAnotherFileIsRefused() throws {
        let notes = directory.path + "/notes.txt"
        try Data("my notes, one line\n".utf8).write(to: URL(fileURLWithPath: notes))
        let (status, said) = try batchSays(["--manifest", notes])
        #expect(status != 0)
        #expect(said.contains("not a batch manifest"), "\(said)")
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "my notes, one line\n")
        #expect(server.accepted == 0, "nothing fetched")
    }

    @Test("a batch with a refused option says so even while another batch holds the manifest")
    func aRefusedOptionIsNamedWhileTheManifestIsHeld() throws {
        let held = try BatchManifest(path: directory.path + "/out.manifest.jsonl")
        defer { withExtendedLifetime(held) {} }
        for (option, words) in [
            ("--blobs=ftp://bucket", "--blobs"), ("--seal-kid=bad kid!", "--seal-kid"),
        ] {
            let (status, said) = try batchSays([option])
            #expect(status != 0)
            #expect(said.contains(words) && !said.contains("in use"), "\(option): \(said)")
        }
        // A batch with nothing wrong is the one told the manifest is taken.
        let (status, said) = try batchSays()
        #expect(status != 0)
        #expect(said.contains("in use by another batch"), "\(said)")
        #expect(server.accepted == 0, "nothing fetched")
    }

    @Test("the help names the default manifest the command writes")
    func theHelpNamesTheDefaultManifest() throws {
        gate.open()
        let text = try runChild(try attacheExecutable(), ["batch", "--help"]).text
        #expect(text.contains("out.manifest.jsonl for --out out.jsonl"), "\(text)")
        #expect(!text.contains("<out>.manifest.jsonl"))
        // And that is the file a run with --out out.jsonl writes.
        try batch().wait()
        #expect(FileManager.default.fileExists(atPath: directory.path + "/out.manifest.jsonl"))
    }

    /// `--metrics-file`: while items wait, the file says the run is not finished and when an
    /// item last finished; at the end every item is counted and the run finished. promtool
    /// reads it as valid exposition text.
    @Test func theMetricsFileFollowsTheRun() throws {
        let metrics = directory.path + "/batch.prom"
        _ = gate.add(4)
        let process = try batch(["--metrics-file", metrics])
        defer { if process.isRunning { process.send(SIGTERM) } }
        func values() -> [String: Double] {
            let text = (try? String(contentsOfFile: metrics, encoding: .utf8)) ?? ""
            var found: [String: Double] = [:]
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let value = Double(parts[1]) else { continue }
                let name = parts[0].prefix { $0 != "{" }
                let state = parts[0].firstRange(of: "state=\"").map { parts[0][$0.upperBound...].prefix { $0 != "\"" } }
                found[String(name) + (state.map { ":" + $0 } ?? "")] = value
            }
            return found
        }
        let started = Date().timeIntervalSince1970
        let start = ContinuousClock.now
        while (values()["attache_batch_items:done"] ?? 0) < 1, process.isRunning,
            ContinuousClock.now - start < .seconds(120)
        {
            usleep(2_000)
        }
        #expect((values()["attache_batch_items:done"] ?? 0) >= 1, "\(values())")
        let waiting = values()
        #expect(waiting["attache_batch_finished"] == 0)
        #expect(waiting["attache_batch_items:total"] == Double(count))
        #expect((waiting["attache_batch_items:remaining"] ?? 0) >= Double(count - 4))
        let last = try #require(waiting["attache_batch_last_progress_seconds"])
        #expect(last >= started - 1 && last <= Date().timeIntervalSince1970 + 1)
        #expect(process.isRunning, "items without a permit cannot finish")

        gate.open()
        #expect(process.wait().status == 0)
        let done = values()
        #expect(done["attache_batch_finished"] == 1)
        #expect(done["attache_batch_items:done"] == Double(count))
        #expect(done["attache_batch_items:remaining"] == 0)
        #expect(done["attache_batch_items:failed"] == Double((0..<count).filter { $0 % 7 == 3 }.count))
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains(#"run="campaign.txt""#), "\(text)")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") {
            let check = try runChild("/usr/bin/promtool", ["check", "metrics"], inputFile: metrics, outputs: .merged)
            #expect(check.status == 0, "\(check.text)")
        }
    }

    @Test func aDryRunListsWhatWouldBeDoneAndFetchesNothing() throws {
        gate.open()
        let dry = try batch(["--dry-run"], outputs: .separate).wait()
        let (listed, said) = (dry.text, dry.errorText)
        #expect(dry.status == 0)
        let rows = listed.split(separator: "\n")
        #expect(rows.count == count)
        #expect(rows.first == "campaign.txt:1\t\(server.url("/item/0.png"))")
        #expect(said.contains("\(count) items to do, 0 already in"))
        #expect(server.accepted == 0, "nothing fetched")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/out.jsonl"))
    }

    @Test func withoutATerminalProgressIsPlainLinesAndTheSummaryATable() throws {
        gate.open()
        let (status, text) = try batchSays()
        #expect(status == 0)
        #expect(!text.contains("\r") && !text.contains("\u{1B}"), "\(text)")
        #expect(text.contains("batch: \(count)/\(count),"), "\(text)")
        #expect(text.contains("attached "), "\(text)")
        #expect(text.contains("http_status "), "\(text)")
        #expect(text.contains("this run: \(count) items"), "\(text)")
    }

    @Test func onATerminalTheBarRedrawsInPlaceAndEndsWithACleanLine() throws {
        gate.open()
        // A pseudo-terminal: /dev/ptmx, unlocked, its number names the other side
        // (TIOCSPTLCK and TIOCGPTN, whose macros Swift does not import).
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        #expect(ioctl(master, 0x4004_5431, &unlock) == 0 && ioctl(master, 0x8004_5430, &number) == 0)
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        try #require(slave >= 0)
        let process = try batch(outputs: .errorsTo(FileHandle(fileDescriptor: slave, closeOnDealloc: true)))
        close(slave)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(master, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }  // EIO once the child's side is closed
            bytes += buffer[0..<n]
        }
        #expect(process.wait().status == 0)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("\r\u{1B}[2K["), "\(text)")
        let final = try #require(text.components(separatedBy: "\r\u{1B}[2K").last)
        #expect(final.hasPrefix("[" + String(repeating: "#", count: 10)), "\(final)")
        #expect(final.contains("\(count)/\(count)"), "\(final)")
        #expect(final.contains("\n"), "the bar's last state stays on its own line")
        #expect(!text.contains("batch: "), "no log lines on a terminal")
    }
}
