import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheTestSupport
import Crypto
import Foundation
import Testing

@testable import AttacheServer

/// Named tenants from a tenants file: their keys (digests), rates and media hosts, and the file
/// read again while the service runs.
@Suite struct TenantsTests {
    static func digest(_ key: String) -> String {
        "sha256:" + SHA256.hash(data: Array(key.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static let acmeKey = "acme-key-0123456789abcdef"
    static let mediaKey = "media-key-0123456789abcdef"
    static let lateKey = "late-key-0123456789abcdef"

    static func write(_ text: String, to path: String) throws {
        // Written aside and renamed: the service never reads half a file.
        try Data(text.utf8).write(to: URL(fileURLWithPath: path + ".new"))
        guard rename(path + ".new", path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    /// The test service with `file` as its tenants file (beside its two plain keys).
    static func service(tenants file: String) async throws -> RunningService {
        let table = try TenantTable.load(file).get()
        return try await ServiceTests.start {
            $0.tenantsFile = file
            $0.tenants = table
        }
    }

    @Test("a tenants file is read whole, or refused with each problem's line and key")
    func theFileIsReadWholeOrRefused() throws {
        let good = """
            {"tenants": [
              {"id": "acme", "keys": ["\(Self.digest(Self.acmeKey))"], "share": 2, "rate": 5, "burst": 10,
               "decodeMemory": 67108864, "sources": {"allow": ["cdn.acme.test", ".acme-media.test"], "deny": ["bad.acme-media.test"]}},
              {"id": "media", "keys": ["\(Self.digest(Self.mediaKey))", "\(Self.digest(Self.lateKey))"]}
            ]}
            """
        let table = try TenantTable.parse(Array(good.utf8), name: "tenants.json").get()
        #expect(table.tenants.map(\.id) == ["acme", "media"])
        let acme = table.tenants[0]
        #expect(acme.share == 2 && acme.rate == 5 && acme.burst == 10 && acme.keys.count == 1)
        #expect(acme.decodeMemory == 64 << 20 && acme.applied(to: PipelineConfiguration()).decodeMemory == 64 << 20)
        #expect(table.tenants[1].decodeMemory == nil)
        let hosts = try #require(acme.sources)
        #expect(hosts.permits("cdn.acme.test") && hosts.permits("img.acme-media.test"))
        #expect(!hosts.permits("bad.acme-media.test") && !hosts.permits("acme-media.test") && !hosts.permits("x.test"))
        #expect(table.tenants[1].rate == nil && table.tenants[1].keys.count == 2 && table.tenants[1].sources == nil)

        let bad = """
            {"tenants": [
              {"id": "acme", "keys": ["\(Self.digest(Self.acmeKey))"], "rat": 5},
              {"id": "acme", "keys": ["sha256:12"], "decodeMemory": 1000},
              {"id": "Bad Id", "keys": ["\(Self.digest(Self.acmeKey))"], "burst": 3,
               "sources": {"allow": ["http://x.test/"]}}
            ]}
            """
        guard case .failure(let error) = TenantTable.parse(Array(bad.utf8), name: "tenants.json") else {
            Issue.record("a bad file was taken")
            return
        }
        let text = error.problems.joined(separator: "\n")
        #expect(
            text.contains("tenants.json:2: tenant 1: \"rat\" is not a tenant key; did you mean \"rate\"?"), "\(text)")
        #expect(text.contains("tenants.json:3: tenant 2 \"id\": 'acme' is another tenant's too"), "\(text)")
        #expect(text.contains("tenants.json:3: tenant 2 \"keys\": each key is \"sha256:\""), "\(text)")
        #expect(text.contains("tenant 2 \"decodeMemory\": a whole number of bytes from 16777216"), "\(text)")
        #expect(text.contains("tenants.json:4: tenant 3 \"id\""), "\(text)")
        #expect(text.contains("tenant 3 \"keys\": a key is listed twice"), "\(text)")
        #expect(text.contains("tenant 3 \"burst\": a burst needs a rate"), "\(text)")
        #expect(text.contains("tenant 3 \"sources\": 'http://x.test/' is not a host name"), "\(text)")
        // A key written twice in a row is refused, not the last taken.
        let twice = #"{"tenants": [{"id": "a", "id": "b", "keys": []}]}"#
        #expect(throws: TenantFileError.self) { try TenantTable.parse(Array(twice.utf8), name: "t").get() }
    }

    @Test("--tenants catalog needs a shared store, and a directory store keeps no tenants to push")
    func theCatalogsTenantsNeedASharedStore() async throws {
        let loaded = ServerSettings.load(
            try await ServerSettings.reader(
                flags: ["tenants": "catalog", "apiKeys": Self.acmeKey], environment: [:], file: nil),
            environment: ["HOME": "/nonexistent"])
        #expect(loaded.problems.contains { $0.contains("this store is a directory") }, "\(loaded.problems)")
        let directory = try TemporaryDirectory()
        try Self.write(#"{"tenants": []}"#, to: directory.path + "/tenants.json")
        let pushed = await runProcess(
            try attacheExecutable(),
            ["store", "tenants", "push", directory.path + "/tenants.json", "--store", directory.path + "/store"])
        #expect(pushed.status != 0 && pushed.output.contains("keeps no tenants for replicas"), "\(pushed.output)")
        // The rows a catalog keeps read back as the file they came from, a problem's line its row's.
        let rows = TenantTable.rows(Array(#"{"tenants": [{"id": "a", "keys": []},\#n {"id": "b"}]}"#.utf8))
        #expect(rows == [#"{"id":"a","keys":[]}"#, #"{"id":"b"}"#])
        var problems: [String] = []
        if case .failure(let error) = TenantTable.parse(TenantTable.document(rows), name: "catalog") {
            problems = error.problems
        }
        #expect(problems.contains { $0.hasPrefix("catalog:2: tenant 1 \"keys\"") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("catalog:3: tenant 2") }, "\(problems)")
    }

    @Test("a tenant's rate answers 429 past its burst, and another tenant is not slowed")
    func aTenantOverItsRateGets429() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        // One request a minute after a burst of three: the fourth within the test is over it.
        try Self.write(
            #"{"tenants": [{"id": "acme", "keys": ["\#(Self.digest(Self.acmeKey))"], "rate": 0.0167, "burst": 3}]}"#,
            to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let plain = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        let acme = ["Authorization": "Bearer \(Self.acmeKey)"]
        for n in 0..<3 {
            let answer = try await curl("POST", post, headers: acme, body: plain)
            #expect(answer.status == 200, "request \(n): \(answer.status) \(answer.text)")
        }
        let over = try await curl("POST", post, headers: acme, body: plain)
        #expect(over.status == 429, "\(over.status) \(over.text)")
        #expect(over.text.contains("\"code\":\"rate_limited\"") && over.text.contains("\"limit\":\"tenant_rate\""))
        let wait = Int(over.headers["retry-after"] ?? "") ?? 0
        #expect((1...60).contains(wait), "Retry-After \(wait)")
        // The plain keys are tenants of their own, without a rate.
        for _ in 0..<5 {
            #expect(try await curl("POST", post, headers: ServiceTests.auth, body: plain).status == 200)
        }
        let metrics = try await curl("GET", service.base + "/metrics").text
        #expect(metrics.contains(#"attache_tenant_rate_limited_total{tenant="acme"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"attache_tenant_requests_total{tenant="acme",status="429"}"#))
    }

    @Test("a tenant fetches only from its media hosts: the URL, every redirect, and never a stored copy")
    func aTenantsMediaHosts() async throws {
        let media = try ServiceTests.mediaServer()
        // `localhost` and `127.0.0.1` are the same server under two names.
        media.route("/hop.jpg") { _, c in c.redirect(to: media.url("/photo.jpg")) }
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(
            #"{"tenants": [{"id": "media", "keys": ["\#(Self.digest(Self.mediaKey))"], "sources": {"allow": ["localhost"]}}]}"#,
            to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications?envelope=true"
        let mine = ["Authorization": "Bearer \(Self.mediaKey)"]
        func code(_ answer: HTTPAnswer) throws -> String? {
            let report = (try answer.json()["report"] as? [String: Any])?["attachments"] as? [[String: Any]]
            return (report?.first?["error"] as? [String: Any])?["code"] as? String
        }
        // Stored first for another tenant, whose hosts are the policy's.
        let other = try await curl(
            "POST", post, headers: ServiceTests.auth, body: payload(image: media.url("/photo.jpg")))
        #expect(try other.json()["outcome"] as? String == "mutated", "\(other.text)")
        // The same URL for "media": off its hosts, so neither fetched nor served from the store.
        let refused = try await curl("POST", post, headers: mine, body: payload(image: media.url("/photo.jpg")))
        let refusedCode = try code(refused)
        #expect(refused.status == 200 && refusedCode == "source_not_allowed", "\(refused.text)")
        #expect(try refused.json()["outcome"] as? String != "mutated")
        let local = media.url("/photo.jpg").replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let allowed = try await curl("POST", post, headers: mine, body: payload(image: local))
        #expect(try allowed.json()["outcome"] as? String == "mutated", "\(allowed.text)")
        // A redirect from its host to another is refused on the hop.
        let hop = media.url("/hop.jpg").replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let redirected = try await curl("POST", post, headers: mine, body: payload(image: hop))
        let redirectedCode = try code(redirected)
        #expect(redirectedCode == "source_not_allowed", "\(redirected.text)")
    }

    @Test("the file read again when it changes: a key added works, one taken out is refused, a bad file keeps the old")
    func aChangedFileIsReadAgain() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(#"{"tenants": [{"id": "acme", "keys": ["\#(Self.digest(Self.acmeKey))"]}]}"#, to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let plain = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        func status(_ key: String) async throws -> Int {
            try await curl("POST", post, headers: ["Authorization": "Bearer \(key)"], body: plain).status
        }
        #expect(try await status(Self.acmeKey) == 200)
        #expect(try await status(Self.lateKey) == 401)
        // acme's key rotated: the old one out, a new one in, and a new tenant.
        try Self.write(
            """
            {"tenants": [{"id": "acme", "keys": ["\(Self.digest(Self.mediaKey))"]},
                         {"id": "late", "keys": ["\(Self.digest(Self.lateKey))"]}]}
            """, to: file)
        #expect(await eventually { try await status(Self.lateKey) == 200 }, "the new key")
        #expect(try await status(Self.acmeKey) == 401, "the key taken out")
        #expect(try await status(Self.mediaKey) == 200)
        #expect(service.service.tenants.shares.keys.sorted() == ["acme", "key-0", "key-1", "late"])
        // A bad file: refused, the tenants in use stay.
        try Self.write(#"{"tenants": [{"id": "acme", "keys": ["sha256:00"]}]}"#, to: file)
        #expect(
            await eventually {
                try await curl("GET", service.base + "/metrics").text.contains(
                    #"attache_tenants_reloads_total{result="refused"} 1"#)
            })
        let late = try await status(Self.lateKey)
        let rotated = try await status(Self.mediaKey)
        let plainKey = try await status(RunningService.apiKey)
        #expect(late == 200 && rotated == 200 && plainKey == 200)
    }

    @Test("attache serve reads the file again on SIGHUP, and refuses to start on a bad one with its lines")
    func aSignalReadsTheFileAgain() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        let first = #"{"tenants": [{"id": "acme", "keys": ["\#(Self.digest(Self.acmeKey))"]}]}"#
        try Self.write(first, to: file)
        let child = try ChildProcess(
            try attacheExecutable(),
            ["serve", "--port", "0", "--store", directory.path + "/store", "--tenants", file, "--allow-loopback"])
        defer { child.send(SIGTERM) }
        func logged() -> String { String(decoding: child.errorsSoFar, as: UTF8.self) }
        #expect(await eventually { logged().contains("listening") || !child.isRunning }, "\(logged())")
        let range = try #require(
            logged().range(of: #"address=http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression))
        let port = try #require(Int(logged()[range].split(separator: ":").last!.dropLast()))
        let post = "http://127.0.0.1:\(port)/v1/notifications"
        let plain = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        func status(_ key: String) async throws -> Int {
            try await curl("POST", post, headers: ["Authorization": "Bearer \(key)"], body: plain).status
        }
        #expect(try await status(Self.acmeKey) == 200)
        #expect(try await status(Self.lateKey) == 401)
        // The same size, inode and time: only the signal can say the file changed.
        var before = stat()
        #expect(stat(file, &before) == 0)
        let second = first.replacingOccurrences(of: Self.digest(Self.acmeKey), with: Self.digest(Self.lateKey))
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.write(contentsOf: Data(second.utf8))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        try await Task.sleep(for: .seconds(2))
        #expect(try await status(Self.lateKey) == 401, "not read again without the signal")
        child.send(SIGHUP)
        #expect(await eventually { try await status(Self.lateKey) == 200 }, "\(logged().suffix(1000))")
        #expect(try await status(Self.acmeKey) == 401)
        #expect(
            logged().contains("tenants read again") && logged().contains("reason=SIGHUP"), "\(logged().suffix(1000))")
        // A bad file read on the signal: the gauge the alert reads says so, the tenants in use stay.
        func inStep() async throws -> String? {
            let text = try await curl("GET", "http://127.0.0.1:\(port)/metrics").text
            return text.split(separator: "\n").first { $0.hasPrefix("attache_tenants_last_reload_successful ") }
                .map { String($0.split(separator: " ")[1]) }
        }
        #expect(try await inStep().flatMap(Double.init) == 1)
        try Self.write(#"{"tenants": [{"id": "acme", "keys": ["sha256:0"]}]}"#, to: file)
        child.send(SIGHUP)
        #expect(await eventually { try await inStep().flatMap(Double.init) == 0 }, "\(logged().suffix(1000))")
        #expect(try await status(Self.lateKey) == 200, "the tenants in use stay")
        try Self.write(second, to: file)
        child.send(SIGHUP)
        #expect(await eventually { try await inStep().flatMap(Double.init) == 1 }, "\(logged().suffix(1000))")

        // At start a bad file is the service's problem to name, not one to run with.
        try Self.write(#"{"tenants": [{"id": "acme", "keys": ["sha256:0"], "sharee": 2}]}"#, to: file)
        let bad = try runChild(
            try attacheExecutable(),
            ["serve", "--port", "0", "--store", directory.path + "/store2", "--tenants", file, "--check-config"])
        #expect(bad.status != 0, "\(bad.text) \(bad.errorText)")
        let said = bad.text + bad.errorText
        #expect(
            said.contains("tenants.json:1: tenant 1 \"keys\"") && said.contains("did you mean \"share\"?"), "\(said)")
    }

    @Test("a tenant's settings are over the service's and under a request's terms; a bad one is named")
    func aTenantsSettings() async throws {
        let bad =
            #"{"tenants": [{"id": "a", "keys": [], "settings": {"qualityTarge": 85, "androidMaxBytes": "x", "categories": "/etc/hosts"}}]}"#
        guard case .failure(let error) = TenantTable.parse(Array(bad.utf8), name: "t.json") else {
            Issue.record("bad settings were taken")
            return
        }
        let text = error.problems.joined(separator: "\n")
        #expect(
            text.contains(
                "\"qualityTarge\" is not a pipeline setting a tenant may hold; did you mean \"qualityTarget\"?"),
            "\(text)")
        #expect(text.contains("\"categories\" is not a pipeline setting a tenant may hold"), "\(text)")
        #expect(text.contains("androidMaxBytes: 'x' is not"), "\(text)")

        let media = try ServiceTests.mediaServer()
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(
            #"{"tenants": [{"id": "fixed", "keys": ["\#(Self.digest(Self.acmeKey))"], "settings": {"quality": 60, "smallSide": 0}}]}"#,
            to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        func attachment(_ key: String, query: String = "", n: Int) async throws -> [String: Any] {
            let answer = try await curl(
                "POST", service.base + "/v1/notifications?envelope=true" + query,
                headers: ["Authorization": "Bearer \(key)"], body: payload(image: media.url("/photo.jpg?n=\(n)")))
            let report = (try answer.json()["report"] as? [String: Any])?["attachments"] as? [[String: Any]]
            return try #require(report?.first, "\(answer.text)")
        }
        let tenants = try await attachment(Self.acmeKey, n: 1)
        #expect(tenants["quality"] as? Int == 60 && tenants["score"] == nil, "\(tenants)")
        let asked = try await attachment(Self.acmeKey, query: "&quality=70", n: 2)
        #expect(asked["quality"] as? Int == 70, "the request's term over the tenant's: \(asked)")
        let service_ = try await attachment(RunningService.apiKey, n: 3)
        #expect(service_["score"] != nil, "another tenant keeps the service's auto: \(service_)")
    }

    @Test("a tenant at its store quota sends its payloads without pictures; another tenant's are stored")
    func aTenantAtItsStoreQuota() async throws {
        let media = try ServiceTests.mediaServer()
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(
            #"{"tenants": [{"id": "small", "keys": ["\#(Self.digest(Self.acmeKey))"], "storeMaxObjects": 2, "settings": {"smallSide": 0}}]}"#,
            to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        // Distinct pictures: the same photo at three qualities (each a new object).
        var outcomes: [(outcome: String?, code: String?)] = []
        for (n, quality) in [(1, "70"), (2, "75"), (3, "80")] {
            let answer = try await curl(
                "POST", service.base + "/v1/notifications?envelope=true&quality=\(quality)",
                headers: ["Authorization": "Bearer \(Self.acmeKey)"],
                body: payload(image: media.url("/photo.jpg?n=\(n)")))
            let envelope = try answer.json()
            let report = (envelope["report"] as? [String: Any])?["attachments"] as? [[String: Any]]
            outcomes.append(
                (envelope["outcome"] as? String, (report?.first?["error"] as? [String: Any])?["code"] as? String))
        }
        #expect(outcomes[0].outcome == "mutated" && outcomes[1].outcome == "mutated", "\(outcomes)")
        #expect(outcomes[2].outcome != "mutated" && outcomes[2].code == "tenant_quota_exceeded", "\(outcomes)")
        // The store is not full for the others.
        let other = try await curl(
            "POST", service.base + "/v1/notifications?envelope=true&quality=85", headers: ServiceTests.auth,
            body: payload(image: media.url("/photo.jpg?n=4")))
        #expect(try other.json()["outcome"] as? String == "mutated", "\(other.text)")
        // What it holds beside its quota, for the tenants with one only (the plain keys have none).
        let metrics = try await curl("GET", service.base + "/metrics").text
        #expect(metrics.contains("attache_tenant_store_objects{tenant=\"small\"} 2\n"), "\(metrics)")
        #expect(metrics.contains("attache_tenant_store_max_objects{tenant=\"small\"} 2\n"), "\(metrics)")
        #expect(metrics.contains("attache_tenant_store_bytes{tenant=\"small\"} "), "\(metrics)")
        #expect(!metrics.contains("attache_tenant_store_max_bytes") && !metrics.contains("tenant=\"key-0\"} "))
    }
}

extension TenantsTests {
    @Test("a tenant's edgeMaxAge is its downloads' s-maxage; an object two tenants hold gets the shorter")
    func aTenantsEdgeTime() async throws {
        let media = try ServiceTests.mediaServer()
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(
            """
            {"tenants": [
              {"id": "short", "keys": ["\(Self.digest(Self.acmeKey))"], "edgeMaxAge": 5},
              {"id": "long", "keys": ["\(Self.digest(Self.mediaKey))"], "edgeMaxAge": 600}
            ]}
            """, to: file)
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        func stored(_ key: String, _ path: String) async throws -> String {
            let answer = try await curl(
                "POST", service.base + "/v1/notifications", headers: ["Authorization": "Bearer \(key)"],
                body: payload(image: media.url(path)))
            let entries = try answer.json()["attachments"] as? [[String: Any]]
            let url = try #require(entries?.first?["url"] as? String, "\(answer.text)")
            return ServiceTests.local(url, service)
        }
        func edgeAge(_ url: String) async throws -> String? {
            let control = try await curl("GET", url).headers["cache-control"] ?? ""
            return control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("s-maxage=") }
        }
        let long = try await stored(Self.mediaKey, "/photo.jpg?n=1")
        #expect(try await edgeAge(long) == "s-maxage=600")
        // A caller with no edge time of its own: the service's (60 s by default).
        let plain = try await stored(RunningService.apiKey, "/photo.jpg?n=2")
        #expect(try await edgeAge(plain) == "s-maxage=60")
        // The short tenant is sent the long one's stored copy: from then, the shorter time.
        let shared = try await stored(Self.acmeKey, "/photo.jpg?n=1")
        #expect(shared == long)
        #expect(await eventually { try await edgeAge(long) == "s-maxage=5" })

        var problems: [String] = []
        let bad = #"{"tenants": [{"id": "a", "keys": ["\#(Self.digest(Self.lateKey))"], "edgeMaxAge": 90000}]}"#
        if case .failure(let error) = TenantTable.parse(Array(bad.utf8), name: "t") { problems = error.problems }
        #expect(problems.contains { $0.contains("\"edgeMaxAge\": a whole number of seconds from 0") }, "\(problems)")
    }
}

extension TenantsTests {
    /// The deadline is a row like the others: a tenant's `deadline` setting is its payloads'
    /// when the request names none, and a request's `?deadline=` (or `Attache-Deadline`) is read
    /// by the same row (`1m` as the flag takes it), over the tenant's.
    @Test("a tenant's deadline setting holds its payloads, and a request's term is read by the row")
    func aTenantsDeadline() async throws {
        let media = try ServiceTests.mediaServer()
        let held = HeldRoute(on: media, path: "/held.jpg", body: [0xFF, 0xD8, 0xFF])
        defer { held.release() }
        let directory = try TemporaryDirectory()
        let file = directory.path + "/tenants.json"
        try Self.write(
            #"{"tenants": [{"id": "hurried", "keys": ["\#(Self.digest(Self.acmeKey))"], "settings": {"deadline": "300ms"}}]}"#,
            to: file)
        // The service's own deadline is 120 s: a payload held past that would not come back
        // within curl's time, so the answer coming at all is the tenant's deadline at work.
        let service = try await Self.service(tenants: file)
        defer { Task { await service.stop() } }
        func post(_ query: String, headers: [String: String] = [:]) async throws -> HTTPAnswer {
            try await curl(
                "POST", service.base + "/v1/notifications?envelope=true" + query,
                headers: headers.merging(["Authorization": "Bearer \(Self.acmeKey)"]) { a, _ in a },
                body: payload(image: media.url("/held.jpg")))
        }
        let hurried = try await post("")
        #expect(hurried.status == 200, "\(hurried.text)")
        #expect(try hurried.json()["outcome"] as? String == "passed_through", "\(hurried.text)")
        let report = try hurried.json()["report"] as? [String: Any]
        #expect(report?["best_attempt"] as? Bool == true, "\(hurried.text)")
        // The request's term over the tenant's, in the row's units; the header the same.
        let refused = try await post("&deadline=0s")
        #expect(refused.status == 400 && refused.text.contains("deadline must be a duration"), "\(refused.text)")
        let header = try await post("", headers: ["Attache-Deadline": "2h0"])
        #expect(header.status == 400 && header.text.contains("Attache-Deadline must be a duration"), "\(header.text)")
        let minute = try await post("&deadline=1ms", headers: ["Attache-Deadline": "1m"])
        let minuteReport = try minute.json()["report"] as? [String: Any]
        #expect(minute.status == 200 && minuteReport?["best_attempt"] as? Bool == true, "\(minute.text)")
    }
}
