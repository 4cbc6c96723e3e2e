import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Reads the tenants file again on SIGHUP and when it changes (its size, time or inode, looked
/// at every ``interval``), as a lifecycle service. A file that reads whole replaces the tenants
/// at once (a request already under way keeps the tenant it was given; a key taken out is
/// refused from the next request); one with a problem is refused with each problem's line and
/// key named, and the tenants in use stay.
struct TenantReload: Service {
    let path: String
    /// The `--api-keys` keys, tenants of their own beside the file's.
    let keys: [String]
    let tenants: Tenants
    let metrics: ServerMetrics
    let logger: Logger
    var interval: Duration = .seconds(1)

    /// What the file looked like when last read.
    struct Look: Equatable, @unchecked Sendable {
        var size: Int64
        var modified: timespec
        var inode: UInt64

        static func == (a: Look, b: Look) -> Bool {
            a.size == b.size && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.inode == b.inode
        }
    }

    static func look(_ path: String) -> Look? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Look(size: Int64(info.st_size), modified: info.st_mtim, inode: UInt64(info.st_ino))
    }

    private final class Seen: Sendable {
        let look: Mutex<Look?>
        init(_ look: Look?) { self.look = Mutex(look) }
    }

    func run() async throws {
        let last = Seen(Self.look(path))
        let signals = await UnixSignalsSequence(trapping: .sighup)
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in signals {
                        last.look.withLock { $0 = Self.look(path) }
                        reload(because: "SIGHUP")
                    }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: interval)
                        let now = Self.look(path)
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

    /// Reads the file; applies it whole or keeps what is in use.
    func reload(because reason: String) {
        switch TenantTable.load(path) {
        case .success(let table):
            guard let combined = table.with(plainKeys: keys) else {
                refused(reason, ["\(path): " + TenantTable.sharedKeyProblem])
                return
            }
            tenants.replace(combined)
            metrics.tenantsReload("applied")
            logger.info(
                "tenants read again",
                metadata: [
                    "path": "\(path)", "reason": "\(reason)", "tenants": "\(table.tenants.count)",
                    "keys": "\(table.tenants.reduce(0) { $0 + $1.keys.count })",
                ])
        case .failure(let error):
            refused(reason, error.problems)
        }
    }

    private func refused(_ reason: String, _ problems: [String]) {
        metrics.tenantsReload("refused")
        logger.error(
            "tenants file refused; the tenants in use stay",
            metadata: ["path": "\(path)", "reason": "\(reason)", "problems": "\(problems.joined(separator: "; "))"])
    }
}
