import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

@Suite struct ServiceUnitTests {
    @Test func byteRanges() {
        #expect(ByteRange.parse("bytes=0-9", size: 100) == .range(0...9))
        #expect(ByteRange.parse("bytes=90-200", size: 100) == .range(90...99))
        #expect(ByteRange.parse("bytes=-5", size: 100) == .range(95...99))
        #expect(ByteRange.parse("bytes=-500", size: 100) == .range(0...99))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=5-2", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=0-1,4-5", size: 100) == .whole)
        #expect(ByteRange.parse("items=0-1", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=a-b", size: 100) == .whole)
        #expect(ByteRange.parse("bytes=99999999999999999999999-", size: 100) == .unsatisfiable)
    }

    @Test func aPreviewsQueryPayloadIsBase64URL() {
        #expect(NotificationRoute.base64URL("aGk") == Array("hi".utf8))
        #expect(NotificationRoute.base64URL("aGk=") == Array("hi".utf8))
        #expect(NotificationRoute.base64URL("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(NotificationRoute.base64URL("") == [])
        for refused in ["a", "aGk==", "aG=k", "+/+/", "aGk===", "aGk ", "a\u{e9}"] {
            #expect(NotificationRoute.base64URL(refused) == nil, "\(refused)")
        }
    }

    @Test func aBaseURLNamingPortZeroTakesTheBoundPort() {
        #expect(
            PipelineSlot.baseURL("http://127.0.0.1:0/attachments", bound: 41234) == "http://127.0.0.1:41234/attachments"
        )
        #expect(PipelineSlot.baseURL("http://[::1]:0/a", bound: 8081) == "http://[::1]:8081/a")
        #expect(PipelineSlot.baseURL("https://media.example.com/attachments", bound: 8081) == nil)
        #expect(PipelineSlot.baseURL("http://127.0.0.1:8080/attachments", bound: 8081) == nil)
        #expect(PipelineSlot.baseURL("http://127.0.0.1:0/attachments", bound: 0) == nil)
    }

    @Test func apiKeysCompareWhole() {
        let keys = APIKeys(["alpha-key-0000000000", "beta-key-00000000000"])
        #expect(keys.accepts("alpha-key-0000000000") && keys.accepts("beta-key-00000000000"))
        #expect(!keys.accepts("alpha-key-000000000") && !keys.accepts("alpha-key-00000000000") && !keys.accepts(""))
        #expect(APIKeys.bearer("Bearer abc") == "abc" && APIKeys.bearer("bearer  abc") == "abc")
        #expect(APIKeys.bearer("Basic abc") == nil && APIKeys.bearer("Bearer") == nil && APIKeys.bearer(nil) == nil)
        #expect(!APIKeys([]).accepts("anything"))
    }

    @Test func admissionHandsSlotsOnInOrder() async {
        let admission = Admission(slots: 1, queue: 1)
        #expect(await admission.enter())
        let waiter = Task { await admission.enter() }
        #expect(await eventually { admission.counts.waiting == 1 })
        #expect(await admission.enter() == false, "queue full: turned away at once")
        admission.leave()
        #expect(await waiter.value)
        #expect(admission.counts == (1, 0))
        // A cancelled waiter leaves the queue and holds no slot.
        let cancelled = Task { await admission.enter() }
        #expect(await eventually { admission.counts.waiting == 1 })
        cancelled.cancel()
        #expect(await cancelled.value == false)
        #expect(admission.counts == (1, 0))
        admission.leave()
        #expect(admission.counts == (0, 0))
    }

    @Test func settingsComeFromFlagsThenEnvironmentThenFile() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/attache.json"
        try Data(#"{"port": 9001, "maxQueued": 5, "maxSide": 640, "apiKeys": "file-key-0000000000000"}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let reader = try await ServerSettings.reader(
            flags: ["port": "9003"], environment: ["ATTACHE_PORT": "9002", "ATTACHE_MAX_QUEUED": "7"], file: file)
        let loaded = ServerSettings.load(reader, environment: ["HOME": directory.path])
        #expect(loaded.problems.isEmpty, "\(loaded.problems)")
        #expect(loaded.configuration.port == 9003, "a flag beats the environment")
        #expect(loaded.configuration.maxQueued == 7, "the environment beats the file")
        #expect(loaded.configuration.pipeline.rendition.maxSide == 640, "the file beats the default")
        #expect(loaded.configuration.apiKeys == ["file-key-0000000000000"])
        #expect(loaded.configuration.pipeline.baseURL == "http://127.0.0.1:9003/attachments")
    }

    @Test func everyBadSettingGetsItsOwnMessage() async throws {
        let reader = try await ServerSettings.reader(
            flags: ["port": "http", "deadline": "soon"],
            environment: ["ATTACHE_MAX_QUEUED": "-1", "ATTACHE_BASE_URL": "ftp://x/y", "ATTACHE_API_KEYS": "short"],
            file: nil)
        let loaded = ServerSettings.load(reader, environment: [:])
        let problems = loaded.problems.joined(separator: "\n")
        #expect(loaded.problems.count == 5, "\(problems)")
        for name in ["ATTACHE_PORT", "ATTACHE_DEADLINE", "ATTACHE_MAX_QUEUED", "ATTACHE_BASE_URL", "ATTACHE_API_KEYS"] {
            #expect(problems.contains(name), "\(name) in \(problems)")
        }
        #expect(!problems.contains("short"), "a secret is never echoed")
        let none = ServerSettings.load(try await ServerSettings.reader(flags: [:], environment: [:], file: nil))
        #expect(none.problems.contains { $0.contains("no API key") })
    }

    /// The document's enums of error codes and limit names are the catalogue's, in its order.
    @Test func theDocumentNamesEveryCodeAndLimit() {
        let text = String(decoding: OpenAPIDocument.bytes, as: UTF8.self)
        func names(after schema: String) -> [String] {
            guard let start = text.range(of: "    \(schema):\n") else { return [] }
            let rest = text[start.upperBound...]
            guard let open = rest.firstIndex(of: "["), let close = rest.firstIndex(of: "]") else { return [] }
            return rest[rest.index(after: open)..<close].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        #expect(names(after: "ErrorCode") == AttacheError.Code.all.map(\.rawValue))
        #expect(names(after: "LimitName") == AttacheError.Limit.all.map(\.rawValue))
    }

    @Test func attachmentsPathFromTheBaseURL() {
        var configuration = ServerConfiguration(store: StoreConfiguration(root: "/tmp/x"))
        for (base, path) in [
            ("https://cdn.example/a/b/", "/a/b"), ("http://h:1/attachments", "/attachments"), ("https://h", ""),
        ] {
            configuration.pipeline.baseURL = base
            #expect(configuration.attachmentsPath == path)
        }
    }
}
