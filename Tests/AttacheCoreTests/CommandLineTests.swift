import AttacheBase
import AttacheFetch
import AttacheTestSupport
import Crypto
import Foundation
import Testing

/// What the `attache` command does with hostile arguments and outputs. Runs with the network
/// suites, alone in a child process (it starts servers and child processes of its own).
@Suite(.enabled(if: inIsolatedChild)) struct CommandLineTests {
    /// Runs `attache` with `arguments` and `input` on standard input, waiting on a thread of its own.
    static func run(
        _ arguments: [String], input: [UInt8] = []
    ) async throws -> (status: Int32, out: String, err: String) {
        try await onOwnThread { try runWaiting(arguments, input: input) }
    }

    private static func runWaiting(
        _ arguments: [String], input: [UInt8]
    ) throws -> (status: Int32, out: String, err: String) {
        let result = try runChild(try attacheExecutable(), arguments, input: input)
        return (result.status, result.text, result.errorText)
    }

    /// A store holding one attachment, with a token for it.
    static func storeWithOne(_ directory: TemporaryDirectory) async throws -> (root: String, id: String, token: String)
    {
        let root = directory.path + "/store"
        let put = try await run(["store", "put", "--json", "--store", root, Paths.samples + "/gray.jpg"])
        #expect(put.status == 0, "\(put.err)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(put.out.utf8)) as? [String: Any])
        return (root, try #require(line["id"] as? String), try #require(line["token"] as? String))
    }

    @Test func hugeNumbersAreRefusedWithTheirRangeNotATrap() async throws {
        let directory = try TemporaryDirectory()
        let (root, id, _) = try await Self.storeWithOne(directory)
        let huge = "9223372036854775807"
        let cases: [([String], String)] = [
            (["token", "issue", "--store", root, "--ttl", huge, id], "--ttl (seconds) must be from 1 to"),
            (["token", "issue", "--store", root, "--ttl", huge + "d", id], "--ttl (seconds) must be from 1 to"),
            (["store", "put", "--store", root, "--ttl", huge, Paths.samples + "/gray.jpg"], "--ttl (seconds)"),
            (["store", "put", "--store", root, "--token-ttl", huge, Paths.samples + "/gray.jpg"], "--token-ttl"),
            (["process", "--store", root, "--deadline", huge + "s", "-"], "--deadline: '\(huge)s' is not a duration"),
            (
                ["process", "--store", root, "--max-side", "0", "-"],
                "--max-side: '0' is not a whole number from 1 to 32767"
            ),
            (["resize", "--max-side", huge, "--out", directory.path, "x.jpg"], "--max-side"),
            (["fetch", "--concurrency", "0", "http://127.0.0.1/"], "--concurrency must be from 1"),
        ]
        for (arguments, message) in cases {
            let result = try await Self.run(arguments)
            #expect(result.status == 64, "\(arguments): status \(result.status), \(result.err)")
            #expect(result.err.contains(message), "\(arguments): \(result.err)")
        }
    }

    @Test func standardInputIsReadOnlyUpToTheLimit() async throws {
        let directory = try TemporaryDirectory()
        let input = [UInt8](repeating: UInt8(ascii: " "), count: 3 << 20)
        let result = try await Self.run(["process", "--store", directory.path + "/store", "-"], input: input)
        #expect(result.status == 1)
        #expect(result.out.isEmpty, "nothing is echoed back")
        #expect(result.err.contains("invalid_payload") && result.err.contains("1048576"), "\(result.err)")
    }

    /// `--out` naming a device, a FIFO or a symbolic link writes through it; it never turns
    /// the path into a regular file.
    @Test func outputsNeverReplaceSpecialFiles() async throws {
        let directory = try TemporaryDirectory()
        let (root, id, token) = try await Self.storeWithOne(directory)
        let expected = try Data(contentsOf: URL(fileURLWithPath: Paths.samples + "/gray.jpg"))
        func open(to out: String) async throws -> Int32 {
            try await Self.run(["store", "open", "--store", root, "--token", token, "--out", out, id]).status
        }

        // A character device like /dev/null (made here, so nothing outside the test is touched).
        let device = directory.path + "/null"
        try #require(mknod(device, S_IFCHR | 0o666, (1 << 8) | 3) == 0, "mknod (of 1,3: null) needs root")
        #expect(try await open(to: device) == 0)
        #expect(Self.type(of: device) == S_IFCHR, "still a device")

        // A FIFO, read on another thread.
        let fifo = directory.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = Thread.detachedRead(path: fifo)
        #expect(try await open(to: fifo) == 0)
        _ = reader.wait()
        #expect(reader.bytes == Array(expected), "the FIFO's reader got the attachment")
        #expect(Self.type(of: fifo) == S_IFIFO, "still a FIFO")

        // A symbolic link keeps pointing at its file, which gets the bytes.
        let target = directory.path + "/target.jpg"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        let link = directory.path + "/link.jpg"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try await open(to: link) == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == expected)

        // A directory is refused.
        #expect(try await open(to: directory.path) == 1)
    }

    /// The file type bits of `path` (not following a link).
    static func type(of path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
    }

    /// `process --seal-key`: the alert's text appears nowhere — not in the payload printed,
    /// not in the report or the log on standard error, not under the store — and a key that is
    /// no key is refused before anything runs.
    @Test func aSealedPayloadLeavesNoPlaintextInOutputLogsOrStore() async throws {
        let marker = "MARKER-c0ffee-alert"
        let server = try sampleMediaServer()
        let directory = try TemporaryDirectory()
        let keyFile = directory.path + "/device.pem"
        let key = P256.KeyAgreement.PrivateKey()
        try key.publicKey.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let payload = Array(
            #"{"aps":{"alert":{"title":"\#(marker)","body":"\#(marker)"},"mutable-content":1},"image":"\#(server.url("/gray.jpg"))"}"#
                .utf8)
        let store = directory.path + "/store"
        let (status, out, err) = try await Self.run(
            [
                "process", "--store", store, "--allow-loopback", "--seal-key", keyFile, "--seal-kid", "dev-1",
                "--report", "--summary", "-",
            ], input: payload)
        #expect(status == 0, "\(err)")
        #expect(out.contains("encrypted-content") && out.contains("New message"))
        #expect(!out.contains(marker) && !err.contains(marker), "\(err)")
        for file in FileManager.default.enumerator(atPath: store)!.compactMap({ $0 as? String }) {
            let content = FileManager.default.contents(atPath: store + "/" + file) ?? Data()
            #expect(content.range(of: Data(marker.utf8)) == nil, "\(file)")
        }
        let bad = try await Self.run(
            ["process", "--store", store, "--seal-key", "/etc/hostname", "--seal-kid", "dev-1", "-"], input: payload)
        #expect(bad.status != 0 && bad.out.isEmpty && bad.err.contains("--seal-key"))
    }

    /// `--https-only` in the commands that run the pipeline, as in `fetch` and the service: an
    /// http URL is refused before any request, the payload still printed.
    @Test func processAndBatchFetchOnlyHTTPSWhenTold() async throws {
        let server = try sampleMediaServer()
        let directory = try TemporaryDirectory()
        let payload = Array(#"{"aps":{"alert":"a","mutable-content":1},"image":"\#(server.url("/gray.jpg"))"}"#.utf8)
        let store = directory.path + "/store"
        let plain = try await Self.run(["process", "--store", store, "--allow-loopback", "-"], input: payload)
        #expect(plain.status == 0 && plain.out.contains("\"attachments\""), "\(plain.err)")
        let refused = try await Self.run(
            ["process", "--store", directory.path + "/other", "--allow-loopback", "--https-only", "--report", "-"],
            input: payload)
        #expect(refused.status == 0 && !refused.out.contains("\"attachments\""), "\(refused.out)")
        #expect(refused.err.contains("scheme_not_allowed"), "\(refused.err)")
        let list = directory.path + "/urls.txt"
        try Data((server.url("/gray.jpg") + "\n").utf8).write(to: URL(fileURLWithPath: list))
        let batch = try await Self.run([
            "batch", "--store", directory.path + "/third", "--allow-loopback", "--https-only", "--json",
            "--out", directory.path + "/out.jsonl", list,
        ])
        let written = (try? String(contentsOfFile: directory.path + "/out.jsonl", encoding: .utf8)) ?? ""
        #expect((batch.out + batch.err + written).contains("scheme_not_allowed"), "\(batch.out)\n\(batch.err)")
        #expect(!written.contains("\"attachments\""), "\(written)")
    }

    /// `attache preview`: the page of a payload on standard output or in a file, the payload
    /// read as `process` reads it (standard input included); one payload only.
    @Test func previewWritesThePageOfOnePayload() async throws {
        let server = try sampleMediaServer()
        let directory = try TemporaryDirectory()
        let payload = Array(
            #"{"aps":{"alert":{"title":"<b>Lunch</b>","body":"b"},"mutable-content":1},"image":"\#(server.url("/gray.jpg"))"}"#
                .utf8)
        let store = directory.path + "/store"
        let shown = try await Self.run(["preview", "--store", store, "--allow-loopback", "-"], input: payload)
        #expect(shown.status == 0, "\(shown.err)")
        #expect(shown.out.hasPrefix("<!doctype html>") && shown.out.contains("&lt;b&gt;Lunch&lt;/b&gt;"))
        #expect(shown.out.contains("data-platform=\"ios-expanded\""))
        let file = directory.path + "/page.html"
        let written = try await Self.run(
            ["preview", "--store", store, "--allow-loopback", "--out", file, "-"], input: payload)
        #expect(written.status == 0 && written.out.isEmpty, "\(written.err)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == shown.out)
        let two = try await Self.run(["preview", "--store", store, "a.json", "b.json"])
        #expect(two.status != 0 && two.err.contains("one payload"), "\(two.err)")
    }

    /// A refused JPEG XL makes libjxl write its traces to C's stderr: while a command runs they
    /// are debug log lines, not shown at the default level; a file name's newline is escaped.
    @Test func libraryOutputIsLoggedAndNamesStayOnOneLine() async throws {
        let directory = try TemporaryDirectory()
        var jxl = [UInt8](try #require(FileManager.default.contents(atPath: Fixtures.root + "/jxl/photo.jxl")))
        for i in stride(from: 40, to: jxl.count, by: 37) { jxl[i] ^= 0x5A }
        let corrupt = directory.path + "/flipped.jxl"
        let named = directory.path + "/two\nlines.jpg"
        #expect(FileManager.default.createFile(atPath: corrupt, contents: Data(jxl)))
        #expect(FileManager.default.createFile(atPath: named, contents: Data(sampleJPEG)))
        let result = try await Self.run([
            "resize", "--max-side", "32", "--out", directory.path + "/out", corrupt, named,
        ])
        #expect(result.status == 0, "\(result.err)")
        #expect(!result.err.contains("lib/jxl"), "libjxl's traces are not printed raw: \(result.err)")
        let lines = result.out.split(separator: "\n")
        #expect(lines.count == 2, "one line per file: \(result.out)")
        #expect(lines.contains { $0.contains("flipped.jxl\terror\tcorrupt_data") }, "\(result.out)")
        #expect(lines.contains { $0.contains("two\\nlines.jpg\tok") }, "\(result.out)")
    }

    @Test func serveFilesServesRegularFilesOnly() async throws {
        let directory = try TemporaryDirectory()
        try Data(sampleJPEG).write(to: URL(fileURLWithPath: directory.path + "/a.jpg"))
        let secret = try TemporaryDirectory()
        try Data("secret".utf8).write(to: URL(fileURLWithPath: secret.path + "/secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: directory.path + "/leak.jpg", withDestinationPath: secret.path + "/secret.txt")

        let process = try ChildProcess(try attacheExecutable(), ["serve-files", "--port", "0", directory.path])
        defer {
            process.send(SIGTERM)
            process.wait()
        }
        // Wait for the line that says where it listens.
        let line = try #require(
            try await onOwnThread { process.output(containing: "\n") },
            "serve-files exited: \(String(decoding: process.errorsSoFar, as: UTF8.self))")
        let base = try #require(line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        let fetcher = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        let served = try await fetcher.fetch(base + "a.jpg")
        #expect(Array(served.bytes.buffer) == sampleJPEG)
        do {
            _ = try await fetcher.fetch(base + "leak.jpg")
            Issue.record("a symbolic link out of the folder was served")
        } catch {
            #expect(error.code == .httpStatus && error.detail == "404")
        }
    }
}

extension Thread {
    /// Opens `path` (a FIFO) for reading on another thread and reads it to its end.
    static func detachedRead(path: String) -> PendingRead {
        let read = PendingRead()
        Thread.detachNewThread {
            let handle = FileHandle(forReadingAtPath: path)
            read.finish(Array(handle?.readDataToEndOfFile() ?? Data()))
        }
        return read
    }
}

/// Bytes another thread is reading.
final class PendingRead: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private(set) var bytes: [UInt8] = []

    func finish(_ bytes: [UInt8]) {
        self.bytes = bytes
        done.signal()
    }

    /// Waits for the read to end and returns it as text.
    func wait() -> String {
        done.wait()
        return String(decoding: bytes, as: UTF8.self)
    }
}
