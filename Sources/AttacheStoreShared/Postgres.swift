internal import AttacheBase
import AttacheStore
import CLibPQ
import Glibc
import Synchronization

/// One libpq connection, used by one thread at a time (``PostgresPool`` hands it out).
///
/// Queries go out with text parameters (`$1`, `$2`…, never spliced into the SQL) and come
/// back as text. A connection that broke is reset once before a query fails.
final class PostgresConnection: @unchecked Sendable {
    private let connection: OpaquePointer
    private let url: String

    init(url: String) throws(AttacheError) {
        self.url = url
        guard let connection = PQconnectdb(url) else {
            throw AttacheError(.storeUnavailable, "catalog: libpq could not allocate a connection")
        }
        // Checked before the property is set: a throw after it would run deinit too.
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(connection)
            PQfinish(connection)
            throw AttacheError(.storeUnavailable, "catalog: cannot connect to PostgreSQL: \(message)")
        }
        self.connection = connection
        // Notices ("relation already exists, skipping", "you don't own a lock") stay out of
        // stderr; the processor belongs to the connection, so it outlives a reset.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    /// Counts the sessions this connection has had: a reset starts a new one, without the
    /// advisory locks the old one held.
    private(set) var session = 0

    private func reset() {
        PQreset(connection)
        session += 1
    }

    deinit { PQfinish(connection) }

    /// Whether a transaction is open on this connection (a statement in it is never retried).
    private var inTransaction = false

    /// Runs one statement. A broken connection is reset and the statement tried once more,
    /// unless it was inside a transaction (then the transaction is lost and the caller is told).
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(AttacheError) -> PostgresRows {
        try retryingOnce { () throws(PostgresFailure) in try run(sql, parameters) }
    }

    /// Runs `attempt`; when it failed because the session is gone, resets the connection and,
    /// outside a transaction and when nothing of it had run, runs it once more.
    private func retryingOnce<T>(_ attempt: () throws(PostgresFailure) -> T) throws(AttacheError) -> T {
        if !inTransaction, PQstatus(connection) != CONNECTION_OK { reset() }
        do {
            return try attempt()
        } catch {
            // A server that ended this session (restart, failover, pg_terminate_backend)
            // answers with a FATAL error while libpq still calls the connection good.
            guard PQstatus(connection) != CONNECTION_OK || error.sessionEnded else { throw error.attacheError }
            reset()
            if !inTransaction, !error.partlyRan, PQstatus(connection) == CONNECTION_OK, let value = try? attempt() {
                return value
            }
            throw AttacheError(.storeUnavailable, "catalog: PostgreSQL connection lost: \(error.message)")
        }
    }

    /// Runs `body` in a transaction (READ COMMITTED), retrying it when PostgreSQL reports a
    /// serialization failure or deadlock.
    func transaction<T>(_ body: (PostgresConnection) throws(AttacheError) -> T) throws(AttacheError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            try query("BEGIN")
            inTransaction = true
            do {
                let value = try body(self)
                try query("COMMIT")
                inTransaction = false
                return value
            } catch {
                _ = try? run("ROLLBACK", [])
                inTransaction = false
                if attempt < 5, error.detail == "40001" || error.detail == "40P01" { continue }
                throw error
            }
        }
    }

    /// Sends several statements in one round trip (no parameters: the caller puts only values
    /// it has checked into `sql`) and returns each one's rows. Each statement sees what the
    /// ones before it did (READ COMMITTED takes a snapshot per statement).
    ///
    /// A batch that found its session ended before its first statement ran is sent once more
    /// on a fresh session, as a lone statement is.
    func batch(_ sql: String) throws(AttacheError) -> [PostgresRows] {
        try retryingOnce { () throws(PostgresFailure) in try sendBatch(sql) }
    }

    private func sendBatch(_ sql: String) throws(PostgresFailure) -> [PostgresRows] {
        guard PQsendQuery(connection, sql) == 1 else {
            throw PostgresFailure(state: nil, message: Self.message(connection))
        }
        var results: [PostgresRows] = []
        var failure: PostgresFailure? = nil
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            do {
                results.append(try Self.rows(result))
            } catch {
                failure = failure ?? error
            }
        }
        if var failure {
            failure.partlyRan = !results.isEmpty
            throw failure
        }
        return results
    }

    private func run(_ sql: String, _ parameters: [String?]) throws(PostgresFailure) -> PostgresRows {
        let count = Int32(parameters.count)
        let result: OpaquePointer? = withCStrings(parameters) { pointers in
            PQexecParams(connection, sql, count, nil, pointers, nil, nil, 0)
        }
        guard let result else { throw PostgresFailure(state: nil, message: Self.message(connection)) }
        defer { PQclear(result) }
        return try Self.rows(result)
    }

    private static func rows(_ result: OpaquePointer) throws(PostgresFailure) -> PostgresRows {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            var rows: [[String?]] = []
            let (height, width) = (PQntuples(result), PQnfields(result))
            rows.reserveCapacity(Int(height))
            for row in 0..<height {
                var values: [String?] = []
                values.reserveCapacity(Int(width))
                for column in 0..<width {
                    if PQgetisnull(result, row, column) != 0 {
                        values.append(nil)
                    } else {
                        values.append(String(cString: PQgetvalue(result, row, column)))
                    }
                }
                rows.append(values)
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(rows: rows, affected: affected)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "unknown error"
            throw PostgresFailure(state: state, message: message.trimmingTrailingNewlines())
        }
    }

    private static func message(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
    }
}

/// What a statement returned: rows of text values (nil for NULL) and the affected row count.
struct PostgresRows {
    var rows: [[String?]]
    var affected: Int

    var first: [String?]? { rows.first }
}

/// A statement PostgreSQL refused, with its SQLSTATE.
struct PostgresFailure: Error {
    var state: String?
    var message: String
    /// Some statements of a batch had run before this one failed (it is not sent again).
    var partlyRan = false

    /// The server ended the session (class 57P: shutdown, crash, terminated backend) or the
    /// connection failed (class 08): the statement did not run on a live session.
    var sessionEnded: Bool {
        guard let state else { return false }
        return state.hasPrefix("57P") || state.hasPrefix("08")
    }

    /// Unique violations, serialization failures and deadlocks keep their SQLSTATE in the
    /// error's `detail`, so callers can retry or tell a race from a fault.
    var attacheError: AttacheError {
        AttacheError(.storeUnavailable, "catalog: \(message)", detail: state)
    }
}

/// A fixed number of connections, opened when first needed, each used by one caller at a time.
/// Callers that find every connection busy wait for one.
final class PostgresPool: Sendable {
    private let url: String
    private let state: Mutex<State>
    private let available: PoolSignal

    private struct State {
        var idle: [PostgresConnection] = []
        var opened = 0
    }

    let size: Int

    init(url: String, size: Int) {
        self.url = url
        self.size = max(1, size)
        state = Mutex(State())
        available = PoolSignal()
    }

    /// Runs `body` with a connection of its own.
    func with<T>(_ body: (PostgresConnection) throws(AttacheError) -> T) throws(AttacheError) -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// `query` on any free connection.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(AttacheError) -> PostgresRows {
        try with { connection throws(AttacheError) in try connection.query(sql, parameters) }
    }

    /// `transaction` on any free connection.
    func transaction<T>(_ body: (PostgresConnection) throws(AttacheError) -> T) throws(AttacheError) -> T {
        try with { connection throws(AttacheError) in try connection.transaction(body) }
    }

    func checkOut() throws(AttacheError) -> PostgresConnection {
        while true {
            enum Next {
                case use(PostgresConnection)
                case open
                case wait
            }
            let next: Next = state.withLock { state in
                if let connection = state.idle.popLast() { return .use(connection) }
                if state.opened < size {
                    state.opened += 1
                    return .open
                }
                return .wait
            }
            switch next {
            case .use(let connection):
                return connection
            case .open:
                do {
                    return try PostgresConnection(url: url)
                } catch {
                    state.withLock { $0.opened -= 1 }
                    available.signal()
                    throw error
                }
            case .wait:
                available.wait()
            }
        }
    }

    func checkIn(_ connection: PostgresConnection) {
        state.withLock { $0.idle.append(connection) }
        available.signal()
    }
}

/// A counting signal for threads waiting on the pool (a pthread condition variable).
final class PoolSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var pending = 0

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func signal() {
        pthread_mutex_lock(mutex)
        pending += 1
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait() {
        pthread_mutex_lock(mutex)
        while pending == 0 { pthread_cond_wait(condition, mutex) }
        pending -= 1
        pthread_mutex_unlock(mutex)
    }
}

/// Calls `body` with C strings for `strings` (NULL for nil), valid during the call.
func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0)! } }
    defer { for copy in copies { free(copy) } }
    return copies.withUnsafeMutableBufferPointer { buffer in
        body(buffer.map { $0.map { UnsafePointer($0) } })
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while text.last == "\n" || text.last == " " { text = text.dropLast() }
        return String(text)
    }
}
