import AttacheBase
import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// Reading a batch's input and its manifest, without the network.
struct BatchInputTests {
    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func all(_ input: BatchInput) throws -> [BatchItem] {
        var items = try input.items()
        var out: [BatchItem] = []
        while let item = items.next() { out.append(item) }
        return out
    }

    @Test func directoryItemsAreTheJSONFilesInNameOrderAndAnOversizedOneIsAnItemThatFails() throws {
        let directory = try TemporaryDirectory()
        try write("{\"b\":1}", to: directory.path + "/b.json")
        try write("{\"a\":1}", to: directory.path + "/a.json")
        try write("not a payload", to: directory.path + "/notes.txt")
        try write(String(repeating: " ", count: 200) + "{}", to: directory.path + "/c.json")
        let input = try BatchInput(path: directory.path, maxItemBytes: 100)
        #expect(input.kind == .directory)
        let items = try all(input)
        #expect(items.map(\.reference) == ["a.json", "b.json", "c.json"])
        #expect(items.map(\.index) == [0, 1, 2])
        #expect(items[0].payload == Array("{\"a\":1}".utf8))
        #expect(items[2].readError?.code == .invalidPayload)
        #expect(items[2].payload.isEmpty)
        #expect(try input.count() == 3)
    }

    @Test func payloadLinesSkipBlankLinesAndATooLongLineFailsAloneWithoutBeingHeld() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/campaign.jsonl"
        let long = "{\"x\":\"" + String(repeating: "y", count: 300_000) + "\"}"
        try write("{\"n\":1}\n\n  \n\(long)\n{\"n\":3}\r\n{\"n\":4}", to: path)
        let input = try BatchInput(path: path, maxItemBytes: 1_000)
        #expect(input.kind == .payloads)
        let items = try all(input)
        #expect(
            items.map(\.reference) == ["campaign.jsonl:1", "campaign.jsonl:4", "campaign.jsonl:5", "campaign.jsonl:6"])
        #expect(items[1].readError?.code == .invalidPayload)
        #expect(items[2].payload == Array("{\"n\":3}\r".utf8), "a CR before the newline is JSON whitespace, kept")
        #expect(items[3].payload == Array("{\"n\":4}".utf8), "the last line needs no newline")
        #expect(items.map(\.outputName) == ["1.json", "4.json", "5.json", "6.json"])
        #expect(try input.count() == 4)
    }

    @Test func urlListsSkipCommentsAndEachURLBecomesAPayloadThatNamesIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/urls.txt"
        try write("# campaign 7\nhttp://127.0.0.1:1/a.jpg\n\n  http://127.0.0.1:1/b \"q\".png  \n#end\n", to: path)
        let input = try BatchInput(path: path)
        #expect(input.kind == .urls)
        let items = try all(input)
        #expect(items.map(\.reference) == ["urls.txt:2", "urls.txt:4"])
        #expect(items.map(\.url) == ["http://127.0.0.1:1/a.jpg", "http://127.0.0.1:1/b \"q\".png"])
        let content = try NotificationContent(bytes: items[1].payload)
        #expect(content.isMutable)
        #expect(content.sources(using: SourceRule.defaults).map(\.url) == ["http://127.0.0.1:1/b \"q\".png"])
    }

    @Test("a URL line that is not UTF-8 is that item's invalid_url, never a repaired URL")
    func aURLLineThatIsNotUTF8IsInvalid() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/urls.txt"
        var bytes = Array("http://127.0.0.1:1/a.jpg\nhttp://127.0.0.1:1/caf".utf8) + [0xE9]
        bytes += Array(".jpg\nhttp://127.0.0.1:1/b.jpg\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let items = try all(try BatchInput(path: path))
        #expect(items.map(\.reference) == ["urls.txt:1", "urls.txt:2", "urls.txt:3"])
        #expect(items[1].readError?.code == .invalidURL)
        #expect(items[1].url == nil && items[1].payload.isEmpty, "nothing is fetched for it")
        #expect(items[0].readError == nil && items[2].readError == nil)
        #expect(items[2].url == "http://127.0.0.1:1/b.jpg")
    }

    @Test func aTornLastManifestLineIsCutAndItsItemIsNotDone() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/m.jsonl"
        let one = "{\"ref\":\"a.json\",\"index\":0,\"outcome\":\"attached\",\"out_end\":10}\n"
        let two = "{\"ref\":\"b.json\",\"index\":1,\"outcome\":\"failed\",\"code\":\"not_found\",\"out_end\":20}\n"
        try write(one + two + "{\"ref\":\"c.json\",\"ind", to: path)
        do {
            let manifest = try BatchManifest(path: path)
            #expect(manifest.done == ["a.json", "b.json"])
            #expect(manifest.outputEnd == 20)
            #expect(manifest.cut == 1)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == one + two)
        // A kill during the very first write leaves only the start of a record: cut too.
        try write("{\"ref\":\"a.js", to: path)
        #expect(try BatchManifest(path: path).cut == 1)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "")
        // A complete line that is not a record is no torn write, even last: refused, nothing cut.
        try write(one + "garbage\n", to: path)
        #expect(failure { try BatchManifest(path: path) }?.code == .invalidPayload)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == one + "garbage\n")
        // Nor is an unterminated last line that does not begin as records do.
        try write(one + "notes without a newline", to: path)
        #expect(failure { try BatchManifest(path: path) }?.code == .invalidPayload)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == one + "notes without a newline")
        // Damage in the middle is not a torn write: refused, nothing cut.
        try write("garbage\n" + one + "more garbage\n", to: path)
        #expect(failure { try BatchManifest(path: path) }?.code == .invalidPayload)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "garbage\n" + one + "more garbage\n")
    }

    @Test("a file that is not a manifest is never written to, whatever its number of lines")
    func aFileThatIsNotAManifestIsLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let notes = directory.path + "/notes.txt"
        let link = directory.path + "/link.jsonl"
        let long = directory.path + "/long.txt"
        try write("my notes, one line\n", to: notes)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: notes)
        // 10 MB on one line, no newline.
        try Data(repeating: UInt8(ascii: "x"), count: 10_000_000).write(to: URL(fileURLWithPath: long))
        for path in [notes, link, long] {
            let error = failure { try BatchManifest(path: path) }
            #expect(error?.code == .invalidPayload, "\(path)")
            #expect(error?.message.contains("not a batch manifest") == true, "\(String(describing: error))")
        }
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "my notes, one line\n")
        #expect(try FileManager.default.attributesOfItem(atPath: long)[.size] as? Int == 10_000_000)
        #expect(!FileManager.default.fileExists(atPath: notes + ".started"), "nothing was written beside it")
    }

    @Test func itemsStartedAndNeverRecordedAreTheInterruptedOnesAndOnlyThoseAreKept() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/m.jsonl"
        try write("{\"ref\":\"a.json\",\"index\":0,\"outcome\":\"attached\"}\n", to: path)
        try write("a.json\nc.json\nb.json\nc.json\nd.js", to: path + ".started")
        do {
            let manifest = try BatchManifest(path: path)
            #expect(manifest.interrupted == ["b.json": 1, "c.json": 2], "a torn last reference is not one")
            try manifest.started("e.json")
        }
        #expect(
            try String(contentsOfFile: path + ".started", encoding: .utf8) == "b.json\nc.json\nc.json\ne.json\n")
    }

    @Test func aManifestInUseByAnotherBatchIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/m.jsonl"
        let first = try BatchManifest(path: path)
        #expect(failure { try BatchManifest(path: path) }?.code == .ioError)
        _ = first
    }

    @Test func jsonlOutputIsCutBackToWhatTheManifestRecordsAndKeepsOnePayloadPerLine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/out.jsonl"
        do {
            let output = try BatchOutput(path: path, recordedEnd: nil)
            try output.write(Array("{\n \"a\": 1\n}".utf8), name: "1.json")
            #expect(output.size == 12)
            try output.write(Array("{\"b\":2}".utf8), name: "2.json")
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{  \"a\": 1 }\n{\"b\":2}\n")
        let reopened = try BatchOutput(path: path, recordedEnd: 12)
        #expect(reopened.size == 12)
        try reopened.write(Array("{\"c\":3}".utf8), name: "3.json")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{  \"a\": 1 }\n{\"c\":3}\n")
    }

    @Test func theProgressLineFitsTheTerminalAndCountsWhatIsLeft() {
        // Read at ten seconds from the start, however long the machine took to get here.
        let now = ContinuousClock.now
        var progress = BatchRunner.Progress(
            total: 2_000, skipped: 500, done: 750, failed: 3, started: now - .seconds(10))
        let bar = ProgressLine.bar(progress, width: 80, now: now)
        #expect(bar.count < 80)
        #expect(bar.contains("750/1500"))
        #expect(bar.contains("75.0 items/s"))
        #expect(bar.contains("ETA 0:10"))
        #expect(bar.contains("3 failed"))
        #expect(bar.hasPrefix("[" + String(repeating: "#", count: 10)))
        #expect(ProgressLine.bar(progress, width: 30, now: now).count < 30)
        progress.finished = true
        #expect(ProgressLine.log(progress, now: now).hasPrefix("batch: 750/1500, 75.0 items/s, ETA -, 3 failed"))
    }
}
