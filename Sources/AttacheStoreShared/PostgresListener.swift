internal import AttacheBase
import AttacheStore
import CLibPQ
import Glibc
import Synchronization

/// A connection of its own that LISTENs on one channel, for waiting on other processes'
/// `NOTIFY` instead of polling a table.
///
/// A notification only tells the waiter to look again: the table stays the truth, so one that
/// is lost (the connection broke between two waits) costs a wait of at most its timeout, never
/// a wrong answer.
final class PostgresListener: @unchecked Sendable {
    private let url: String
    private let channel: String
    /// One waiter at a time (holding `lock`); `nil` while the connection is down (opened again
    /// by the next wait).
    private var connection: OpaquePointer?
    private let lock = Mutex(())

    /// Opens the connection and starts listening on `channel` (an SQL identifier).
    init(url: String, channel: String) throws(AttacheError) {
        precondition(channel.utf8.allSatisfy { $0 == UInt8(ascii: "_") || ($0 >= 97 && $0 <= 122) })
        self.url = url
        self.channel = channel
        connection = try Self.open(url: url, channel: channel)
    }

    deinit {
        if let connection { PQfinish(connection) }
    }

    private static func open(url: String, channel: String) throws(AttacheError) -> OpaquePointer {
        guard let connection = PostgresConnection.connect(url, timeout: .seconds(10)) else {
            throw AttacheError(.storeUnavailable, "catalog: libpq could not allocate a connection")
        }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        guard PQstatus(connection) == CONNECTION_OK, let result = PQexec(connection, "LISTEN \(channel)") else {
            let message = String(cString: PQerrorMessage(connection))
            PQfinish(connection)
            throw AttacheError(.storeUnavailable, "catalog: cannot listen for notifications: \(message)")
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            let message = String(cString: PQresultErrorMessage(result))
            PQfinish(connection)
            throw AttacheError(.storeUnavailable, "catalog: LISTEN \(channel) failed: \(message)")
        }
        return connection
    }

    /// Waits until a notification whose payload is `payload` arrives or `timeout` passes.
    /// True when one arrived (notifications that came while nobody waited count too).
    func wait(for payload: String, timeout: Duration) -> Bool {
        let end = ContinuousClock.now + timeout
        return lock.withLock { _ -> Bool in
            if connection == nil { connection = try? Self.open(url: url, channel: channel) }
            guard let open = connection else {
                // The catalog is unreachable: waiting the timeout out is all a poll would do.
                Self.sleep(for: ContinuousClock.now.duration(to: end))
                return false
            }
            while true {
                guard PQconsumeInput(open) == 1 else {
                    // The connection broke: drop it (the next wait opens another) and let the
                    // caller look at the table, which is what a lost notification would need.
                    PQfinish(open)
                    connection = nil
                    return false
                }
                var matched = false
                while let notification = PQnotifies(open) {
                    if let extra = notification.pointee.extra, String(cString: extra) == payload { matched = true }
                    PQfreemem(notification)
                }
                if matched { return true }
                let left = ContinuousClock.now.duration(to: end)
                if left <= .zero { return false }
                let milliseconds = Int32(
                    clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                var descriptor = pollfd(fd: PQsocket(open), events: Int16(POLLIN), revents: 0)
                if poll(&descriptor, 1, milliseconds) < 0 && errno != EINTR { return false }
            }
        }
    }

    /// Sleeps the calling thread for `left` (for a caller that has nothing to wait on).
    static func sleep(for left: Duration) {
        guard left > .zero else { return }
        var request = timespec(
            tv_sec: Int(left.components.seconds), tv_nsec: Int(left.components.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
