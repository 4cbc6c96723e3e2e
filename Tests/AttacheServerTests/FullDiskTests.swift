import AttacheBase
import AttacheServer
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A directory store on a small tmpfs of its own (mounting needs root): filled to the last
/// byte, then read-only. Payloads are answered with the attachment failing `store_full` or
/// `io_error` and the reason, downloads go on, nothing half-written is left, and the store
/// takes writes again as soon as space (or writing) comes back, without a restart.
@Suite(.enabled(if: inIsolatedChild && getuid() == 0, "mounting a tmpfs needs root"))
struct FullDiskTests {
    /// A tmpfs of `size` mounted on a fresh directory, unmounted by `unmount()`.
    struct SmallDisk {
        let directory: TemporaryDirectory
        var path: String { directory.path + "/disk" }

        init(size: String) throws {
            directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory.path + "/disk", withIntermediateDirectories: true)
            try Self.mount(["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.path + "/disk"])
        }

        /// Makes `directory` (under the disk) read-only, as a read-only mount is to what writes
        /// there, while files elsewhere stay open for writing (a whole remount would be busy).
        func readOnly(_ directory: String) throws {
            try Self.mount(["--bind", path + "/" + directory, path + "/" + directory])
            try Self.mount(["-o", "remount,bind,ro", path + "/" + directory])
        }

        func writable(_ directory: String) throws { try Self.run("/usr/bin/umount", [path + "/" + directory]) }

        func unmount() {
            _ = try? Self.run("/usr/bin/umount", ["-R", "-l", path])
        }

        static func mount(_ arguments: [String]) throws { try run("/usr/bin/mount", arguments) }

        static func run(_ executable: String, _ arguments: [String]) throws {
            let result = try runChild(executable, arguments, outputs: .merged)
            guard result.status == 0 else {
                throw AttacheError(.ioError, "\(executable) \(arguments.joined(separator: " ")) failed: \(result.text)")
            }
        }

        /// Fills the disk to its last byte with `name`.
        func fill(_ name: String) {
            let fd = open(path + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(fd) }
            let chunk = [UInt8](repeating: 0xA5, count: 4096)
            while true {
                let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
            }
            // The last few bytes of a block.
            var byte: UInt8 = 0
            while write(fd, &byte, 1) == 1 {}
        }
    }

    /// Posts a payload naming `path` on `media` and returns the envelope's outcome and the
    /// first attachment's report entry.
    static func post(_ service: RunningService, _ url: String) async throws -> (String?, [String: Any]?) {
        let answer = try await curl(
            "POST", service.base + "/v1/notifications?envelope=true", headers: ServiceTests.auth,
            body: payload(image: url))
        #expect(answer.status == 200, "\(answer.status) \(answer.text.prefix(300))")
        let envelope = try answer.json()
        let report = envelope["report"] as? [String: Any]
        return (envelope["outcome"] as? String, (report?["attachments"] as? [[String: Any]])?.first)
    }

    static func code(_ entry: [String: Any]?) -> String? { (entry?["error"] as? [String: Any])?["code"] as? String }
    static func message(_ entry: [String: Any]?) -> String {
        (entry?["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    @Test func aFullOrReadOnlyDiskFailsTheWritesAloneAndRecoversWithoutARestart() async throws {
        let disk = try SmallDisk(size: "2m")
        defer { disk.unmount() }
        let media = try ServiceTests.mediaServer()
        for name in ["gray.jpg", "cmyk-adobe.jpg", "portrait-progressive.jpg"] {
            let bytes = try #require(FileManager.default.contents(atPath: Paths.samples + "/" + name)).map { $0 }
            media.route("/" + name) { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: bytes) }
        }
        let service = try await ServiceTests.start { $0.store = StoreConfiguration(root: disk.path + "/store") }
        defer { Task { await service.stop() } }
        let (_, url) = try await ServiceTests.mutate(service, media: media)
        let before = try await curl("GET", ServiceTests.local(url, service))
        #expect(before.status == 200 && before.body.count > 1000)

        // Full to the last byte: the payload goes out unchanged, its attachment store_full.
        disk.fill("filler")
        let (outcome, entry) = try await Self.post(service, media.url("/gray.jpg"))
        #expect(outcome == "passed_through" && Self.code(entry) == "store_full", "\(String(describing: entry))")
        #expect(Self.message(entry).contains("No space left on device"), "\(Self.message(entry))")
        let during = try await curl("GET", ServiceTests.local(url, service))
        #expect(during.status == 200 && during.body == before.body, "downloads go on")
        let temporary = (try? FileManager.default.contentsOfDirectory(atPath: disk.path + "/store/tmp")) ?? []
        #expect(temporary.isEmpty, "no partial file left: \(temporary)")
        // Space back: the next payload is attached, no restart.
        try FileManager.default.removeItem(atPath: disk.path + "/filler")
        let (after, _) = try await Self.post(service, media.url("/gray.jpg"))
        #expect(after == "mutated")

        // Read-only (where the store writes its files): the same, with io_error and its reason.
        try disk.readOnly("store/tmp")
        let (readOnly, refused) = try await Self.post(service, media.url("/cmyk-adobe.jpg"))
        #expect(readOnly == "passed_through" && Self.code(refused) == "io_error", "\(String(describing: refused))")
        #expect(Self.message(refused).contains("Read-only file system"), "\(Self.message(refused))")
        #expect(try await curl("GET", ServiceTests.local(url, service)).status == 200)
        try disk.writable("store/tmp")
        let (writable, _) = try await Self.post(service, media.url("/cmyk-adobe.jpg"))
        #expect(writable == "mutated")
        await service.stop()
    }
}
