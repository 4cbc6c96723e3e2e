import AttacheBase
import AttacheStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Where the service reads its tenants: a file (`--tenants FILE`), or the rows a shared store
/// keeps in its catalog for every replica (`--tenants catalog`, written by `attache store
/// tenants push`).
enum TenantOrigin: Sendable {
    case file(String)
    case catalog(AttachmentStore)

    /// The `--tenants` value that names the catalog.
    static let catalogName = "catalog"

    /// What changes when the tenants do: the file's size, time and inode; the catalog's version.
    enum Look: Equatable, @unchecked Sendable {
        case file(size: Int64, modified: timespec, inode: UInt64)
        case version(Int64)

        static func == (a: Look, b: Look) -> Bool {
            switch (a, b) {
            case (.file(let s1, let m1, let i1), .file(let s2, let m2, let i2)):
                s1 == s2 && m1.tv_sec == m2.tv_sec && m1.tv_nsec == m2.tv_nsec && i1 == i2
            case (.version(let v1), .version(let v2)): v1 == v2
            default: false
            }
        }
    }

    /// How it looks now; nil when it cannot be looked at (no file, the catalog away): then
    /// nothing is read and the tenants in use stay.
    func look() -> Look? {
        switch self {
        case .file(let path):
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            return .file(size: Int64(info.st_size), modified: info.st_mtim, inode: UInt64(info.st_ino))
        case .catalog(let store):
            return (try? store.catalogTenantsVersion())?.map(Look.version)
        }
    }

    /// The tenants it holds, whole, or each problem on a line of its own.
    func read() -> Result<TenantTable, TenantFileError> {
        switch self {
        case .file(let path):
            return TenantTable.load(path)
        case .catalog(let store):
            let found: CatalogTenants?
            do throws(AttacheError) {
                found = try store.catalogTenants()
            } catch {
                return .failure(TenantFileError(problems: ["the catalog's tenants: " + error.message]))
            }
            guard let found else {
                return .failure(TenantFileError(problems: ["a directory store keeps no tenants for replicas"]))
            }
            return TenantTable.parse(TenantTable.document(found.rows), name: Self.catalogName)
        }
    }

    /// How the log and the problems name it.
    var name: String {
        switch self {
        case .file(let path): path
        case .catalog: Self.catalogName
        }
    }
}

/// Reads the tenants again on SIGHUP and when they change (the file's look or the catalog's
/// version, looked at every ``interval``), as a lifecycle service. Tenants that read whole
/// replace those in use at once (a request already under way keeps the tenant it was given; a
/// key taken out is refused from the next request); with a problem they are refused, each
/// problem's line and key named, and the tenants in use stay.
struct TenantReload: Service {
    let origin: TenantOrigin
    /// The `--api-keys` keys, tenants of their own beside the file's.
    let keys: [String]
    let tenants: Tenants
    let metrics: ServerMetrics
    let logger: Logger
    var interval: Duration = .seconds(1)

    private final class Seen: Sendable {
        let look: Mutex<TenantOrigin.Look?>
        init(_ look: TenantOrigin.Look?) { self.look = Mutex(look) }
    }

    func run() async throws {
        let last = Seen(origin.look())
        metrics.tenantsInStep(true)
        let signals = await UnixSignalsSequence(trapping: .sighup)
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in signals {
                        let now = origin.look()
                        last.look.withLock { $0 = now }
                        reload(because: "SIGHUP")
                    }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: interval)
                        let now = origin.look()
                        let changed = last.look.withLock { seen -> Bool in
                            guard now != nil, now != seen else { return false }
                            seen = now
                            return true
                        }
                        if changed { reload(because: "changed") }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// Reads the tenants; applies them whole or keeps what is in use.
    func reload(because reason: String) {
        switch origin.read() {
        case .success(let table):
            guard let combined = table.with(plainKeys: keys) else {
                refused(reason, ["\(origin.name): " + TenantTable.sharedKeyProblem])
                return
            }
            tenants.replace(combined)
            metrics.tenantsReload("applied")
            logger.info(
                "tenants read again",
                metadata: [
                    "path": "\(origin.name)", "reason": "\(reason)", "tenants": "\(table.tenants.count)",
                    "keys": "\(table.tenants.reduce(0) { $0 + $1.keys.count })",
                ])
        case .failure(let error):
            refused(reason, error.problems)
        }
    }

    private func refused(_ reason: String, _ problems: [String]) {
        metrics.tenantsReload("refused")
        logger.error(
            "tenants refused; the tenants in use stay",
            metadata: [
                "path": "\(origin.name)", "reason": "\(reason)", "problems": "\(problems.joined(separator: "; "))",
            ])
    }
}
