import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// Tenants a shared store keeps in its catalog (`attache store tenants push`), read by every
/// replica serving with `--tenants catalog`: the replicas of one PostgreSQL and radosgw bucket
/// (the servers `scripts/test.sh` starts) as separate processes.
@Suite(.enabled(if: inIsolatedChild && SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedTenantsTests {
    let fresh: SharedServers.Fresh
    let directory: TemporaryDirectory

    init() throws {
        fresh = try SharedServers.fresh()
        directory = try TemporaryDirectory()
    }

    var file: String { directory.path + "/tenants.json" }

    func attache(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        await runProcess(try attacheExecutable(), arguments + fresh.arguments, environment: fresh.childEnvironment)
    }

    /// Writes a tenants file of one tenant, `acme`, with `keys`, and pushes it.
    func push(acme keys: [String]) async throws -> (status: Int32, output: String) {
        let digests = keys.map { "\"\(TenantsTests.digest($0))\"" }.joined(separator: ", ")
        try TenantsTests.write(
            """
            {"tenants": [
              {"id": "acme", "keys": [\(digests)], "share": 2, "edgeMaxAge": 7, "settings": {"qualityTarget": 85}}
            ]}
            """, to: file)
        return try await attache(["store", "tenants", "push", file])
    }

    /// A payload with no picture, posted with `key`: the status says whether the key is let in.
    static func status(_ replica: SharedReplicaTests.Replica, _ key: String) async throws -> Int {
        try await curl(
            "POST", replica.base + "/v1/notifications", headers: ["Authorization": "Bearer \(key)"],
            body: Array(#"{"aps":{"alert":"hello"}}"#.utf8)
        ).status
    }

    @Test(
        "tenants pushed to the catalog reach every replica: a key added works on both, one taken out is refused by both, a bad file changes nothing"
    )
    func catalogTenantsReachEveryReplica() async throws {
        let (acmeKey, lateKey) = (TenantsTests.acmeKey, TenantsTests.lateKey)
        let first = try await push(acme: [acmeKey])
        #expect(first.status == 0 && first.output.contains("tenants=1 version=1"), "\(first.output)")

        let a = try await SharedReplicaTests.Replica(fresh, extra: ["--tenants", "catalog"])
        let b = try await SharedReplicaTests.Replica(fresh, extra: ["--tenants", "catalog"])
        defer {
            a.stop()
            b.stop()
        }
        for replica in [a, b] {
            #expect(try await Self.status(replica, acmeKey) == 200)
            #expect(try await Self.status(replica, lateKey) == 401)
            // The plain key stays a tenant of its own beside the catalog's.
            #expect(try await Self.status(replica, RunningService.apiKey) == 200)
        }

        // A rotation: the new key in, the old one out, in one push.
        let second = try await push(acme: [lateKey])
        #expect(second.status == 0 && second.output.contains("tenants=1 version=2"), "\(second.output)")
        for replica in [a, b] {
            #expect(await eventually { try await Self.status(replica, acmeKey) == 401 })
            #expect(try await Self.status(replica, lateKey) == 200)
            #expect(replica.logged().contains("tenants read again"), "\(replica.logged())")
        }

        // A file with a problem is refused with its line; the catalog and the replicas keep theirs.
        try TenantsTests.write(#"{"tenants": [{"id": "acme",\#n"keys": ["sha256:12"]}]}"#, to: file)
        let bad = try await attache(["store", "tenants", "push", file])
        #expect(bad.status != 0 && bad.output.contains("tenants.json:2: tenant 1 \"keys\""), "\(bad.output)")
        let shown = try await attache(["store", "tenants", "show"])
        #expect(shown.status == 0 && shown.output.contains("version=2"), "\(shown.output)")
        #expect(shown.output.contains(TenantsTests.digest(lateKey)) && shown.output.contains("\"qualityTarget\":85"))
        // What show prints is a tenants file that reads whole, the same tenants.
        let text = shown.output.split(separator: "\n").filter { !$0.hasPrefix("version=") }.joined(separator: "\n")
        let table = try TenantTable.parse(Array(text.utf8), name: "shown").get()
        #expect(table.tenants.map(\.id) == ["acme"] && table.tenants[0].share == 2)
        for replica in [a, b] { #expect(try await Self.status(replica, lateKey) == 200) }

        // The tenant's edge time is its downloads' on every replica (a shared store's holders
        // are read from the catalog).
        let media = try ServiceTests.mediaServer()
        let posted = try await curl(
            "POST", a.base + "/v1/notifications", headers: ["Authorization": "Bearer \(lateKey)"],
            body: payload(image: media.url("/photo.jpg")))
        let entries = try posted.json()["attachments"] as? [[String: Any]]
        let url = try #require(entries?.first?["url"] as? String, "\(posted.text)")
        for replica in [a, b] {
            let control = try await curl("GET", replica.url(url)).headers["cache-control"] ?? ""
            #expect(control.contains("s-maxage=7,") || control.hasSuffix("s-maxage=7"), "\(control)")
        }

        // A campaign for a tenant reads the same rows: one the catalog does not have is refused
        // before anything runs.
        let urls = directory.path + "/urls.txt"
        try Data("http://127.0.0.1:9/a.jpg\n".utf8).write(to: URL(fileURLWithPath: urls))
        let batch = try await attache([
            "batch", "--tenant", "globex", "--tenants", "catalog", "--out", directory.path + "/out.jsonl", urls,
        ])
        #expect(batch.status != 0 && batch.output.contains("is not a tenant of catalog (it has: acme)"), "\(batch)")
    }
}
