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
    /// How long one statement (or one batch) may go without its answer, and how long
    /// connecting may take: a catalog that stopped answering (a black-holed host, a frozen
    /// primary) fails the statement with `store_unavailable` instead of holding its caller.
    let timeout: Duration
    /// A statement went unanswered: the session's state is unknown, so it is reset before the
    /// next one and nothing more is sent on it (not even a ROLLBACK) until then.
    private var broken = false

    init(url: String, timeout: Duration = .seconds(10)) throws(AttacheError) {
        self.url = url
        self.timeout = timeout
        guard let connection = Self.connect(url, timeout: timeout) else {
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

    /// Connects with a bound on connecting and TCP keepalives (a peer that vanished is noticed
    /// by the kernel too); what the URI itself sets comes later and wins.
    static func connect(_ url: String, timeout: Duration) -> OpaquePointer? {
        let seconds = max(1, Int(timeout.components.seconds))
        let settings: [(String, String)] = [
            ("connect_timeout", String(seconds)), ("keepalives", "1"), ("keepalives_idle", "5"),
            ("keepalives_interval", "2"), ("keepalives_count", "3"), ("dbname", url),
        ]
        return withCStrings(settings.map(\.0) + [nil]) { keywords in
            withCStrings(settings.map(\.1) + [nil]) { values in PQconnectdbParams(keywords, values, 1) }
        }
    }

    /// Counts the sessions this connection has had: a reset starts a new one, without the
    /// advisory locks the old one held.
    private(set) var session = 0

    /// False once the session broke or a statement went unanswered (reset before next use).
    var isUsable: Bool { !broken && PQstatus(connection) == CONNECTION_OK }

    private func reset() {
        PQreset(connection)
        broken = false
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
        if !inTransaction, broken || PQstatus(connection) != CONNECTION_OK { reset() }
        do {
            return try attempt()
        } catch {
            // No answer in time: not sent again (it may have run, and a second wait would
            // double the caller's).
            if error.unanswered { throw error.attacheError }
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
        guard !broken else { throw unanswered() }
        guard PQsendQuery(connection, sql) == 1 else {
            throw PostgresFailure(state: nil, message: Self.message(connection))
        }
        return try results()
    }

    private func run(_ sql: String, _ parameters: [String?]) throws(PostgresFailure) -> PostgresRows {
        guard !broken else { throw unanswered() }
        let count = Int32(parameters.count)
        let sent = withCStrings(parameters) { pointers in
            PQsendQueryParams(connection, sql, count, nil, pointers, nil, nil, 0)
        }
        guard sent == 1 else { throw PostgresFailure(state: nil, message: Self.message(connection)) }
        let results = try results()
        guard results.count == 1 else {
            throw PostgresFailure(state: nil, message: "\(results.count) results for one statement")
        }
        return results[0]
    }

    /// Every result of what was sent, each read once the socket has it, within ``timeout``
    /// of the last byte that came; the first failure is thrown after all were read.
    private func results() throws(PostgresFailure) -> [PostgresRows] {
        var results: [PostgresRows] = []
        var failure: PostgresFailure? = nil
        while true {
            try waitForResult()
            guard let result = PQgetResult(connection) else { break }
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

    /// Returns when PQgetResult will not block: the next result is whole, or there is none.
    private func waitForResult() throws(PostgresFailure) {
        var waitedSince = ContinuousClock.now
        while PQisBusy(connection) == 1 {
            let left = timeout - waitedSince.duration(to: .now)
            guard left > .zero else {
                broken = true
                throw unanswered()
            }
            var descriptor = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: max(1, left.wholeMilliseconds)))
            if ready < 0 {
                guard errno == EINTR else { throw PostgresFailure(state: nil, message: "poll: errno \(errno)") }
                continue
            }
            if ready == 0 { continue }
            guard PQconsumeInput(connection) == 1 else {
                throw PostgresFailure(state: "08006", message: Self.message(connection))
            }
            waitedSince = .now
        }
    }

    private func unanswered() -> PostgresFailure {
        var failure = PostgresFailure(
            state: nil, message: "PostgreSQL did not answer within \(timeout); the connection is reset")
        failure.unanswered = true
        return failure
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
    /// No answer came in time: whether it ran is unknown (it is not sent again).
    var unanswered = false

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
    private let timeout: Duration
    private let state: Mutex<State>
    private let available: PoolSignal
    let breaker: CatalogBreaker

    private struct State {
        var idle: [PostgresConnection] = []
        var opened = 0
    }

    let size: Int

    init(url: String, size: Int, timeout: Duration = .seconds(10), breaker: CatalogBreaker = CatalogBreaker()) {
        self.url = url
        self.timeout = timeout
        self.breaker = breaker
        self.size = max(1, size)
        state = Mutex(State())
        available = PoolSignal()
    }

    /// Runs `body` with a connection of its own.
    func with<T>(_ body: (PostgresConnection) throws(AttacheError) -> T) throws(AttacheError) -> T {
        try breaker.guarding { () throws(CatalogBreaker.Failure) in
            let connection: PostgresConnection
            do throws(AttacheError) {
                connection = try checkOut()
            } catch {
                throw .connection(error)
            }
            defer { checkIn(connection) }
            do throws(AttacheError) {
                return try body(connection)
            } catch {
                // A statement PostgreSQL refused is the caller's; a session lost is the catalog's.
                throw connection.isUsable ? .statement(error) : .connection(error)
            }
        }
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
                    return try PostgresConnection(url: url, timeout: timeout)
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

/// Fails catalog work at once while the catalog is known to be unreachable, instead of letting
/// every caller wait out a connect or a statement timeout of its own: after a connection fails
/// (cannot connect, session lost, no answer in time) it stays open for ``openFor``; then one
/// caller at a time tries (the others still fail at once) until one gets through.
final class CatalogBreaker: Sendable {
    private struct State {
        var openUntil: ContinuousClock.Instant? = nil
        var trying = false
        var reason = ""
    }

    /// What a guarded call ended with: a failure of the statement (the catalog answered) or of
    /// the connection (the catalog is away).
    enum Failure: Error {
        case statement(AttacheError)
        case connection(AttacheError)
    }

    let openFor: Duration
    private let state = Mutex(State())

    init(openFor: Duration = .seconds(1)) {
        self.openFor = openFor
    }

    /// Runs `body` unless the catalog is known to be away (then `store_unavailable` at once).
    func guarding<T>(_ body: () throws(Failure) -> T) throws(AttacheError) -> T {
        let now = ContinuousClock.now
        let refusal: AttacheError? = state.withLock { state in
            guard let until = state.openUntil else { return nil }
            if now < until || state.trying {
                return AttacheError(.storeUnavailable, "catalog: unreachable (\(state.reason)); tried again shortly")
            }
            state.trying = true
            return nil
        }
        if let refusal { throw refusal }
        do {
            let value = try body()
            state.withLock { $0 = State() }
            return value
        } catch {
            switch error {
            case .statement(let failure):
                state.withLock { $0 = State() }
                throw failure
            case .connection(let failure):
                state.withLock { state in
                    state = State(openUntil: .now + openFor, trying: false, reason: failure.message)
                }
                throw failure
            }
        }
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
