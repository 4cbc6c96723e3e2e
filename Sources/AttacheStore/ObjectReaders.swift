internal import AttacheBase
import Foundation
import GRDBSQLite
import Synchronization

/// The catalog read every download makes: one object row by id.
///
/// GRDB's reader pool hands its connections out under a lock that every event-loop thread
/// takes twice per request; on a busy download path the threads spend more time waking each
/// other than reading. Here a few slots each hold their own SQLite connection and prepared
/// statement; a thread starts at a slot of its own and takes the first free one with a
/// try-lock, so two threads meet on a slot only when every slot is busy. Each lookup is one
/// statement in its own read transaction, so it sees every commit made before it, by any
/// process.
final class ObjectReaders: Sendable {
    private let path: String
    private let slots: [Slot]

    init(path: String, slots count: Int = min(16, 2 * max(1, ProcessInfo.processInfo.activeProcessorCount))) {
        self.path = path
        self.slots = (0..<max(1, count)).map { _ in Slot() }
    }

    func object(_ id: String) throws(AttacheError) -> ObjectRow? {
        let home = Self.threadSlot % slots.count
        for offset in 0..<slots.count {
            let taken = try slots[(home + offset) % slots.count].reader.withLockIfAvailable {
                reader throws(AttacheError) in try Self.lookup(id, in: &reader, path: path)
            }
            if let taken { return taken }
        }
        return try slots[home].reader.withLock { reader throws(AttacheError) in
            try Self.lookup(id, in: &reader, path: path)
        }
    }

    private static func lookup(_ id: String, in reader: inout Reader?, path: String) throws(AttacheError) -> ObjectRow?
    {
        if reader == nil { reader = try Reader(path: path) }
        return try reader!.object(id)
    }

    /// This thread's own number, handed out in order on its first lookup (so the threads of an
    /// event-loop group start on different slots).
    private static var threadSlot: Int {
        let stored = Int(bitPattern: pthread_getspecific(slotKey))
        if stored != 0 { return stored - 1 }
        let assigned = nextSlot.add(1, ordering: .relaxed).newValue
        pthread_setspecific(slotKey, UnsafeRawPointer(bitPattern: assigned))
        return assigned - 1
    }

    private static let slotKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
    private static let nextSlot = Atomic<Int>(0)
}

private final class Slot: Sendable {
    let reader = Mutex<Reader?>(nil)
}

/// One SQLite connection with the lookup statement prepared on it.
private final class Reader {
    private let db: OpaquePointer
    private let statement: OpaquePointer
    static let sql = """
        SELECT kind, ext, bytes, width, height, frames, created, expires, revoked_before, poster_time, placeholder,
        clip, tenant FROM object WHERE id = ?1
        """

    init(path: String) throws(AttacheError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw AttacheError(.storeCorrupt, "catalog: \(message)")
        }
        sqlite3_busy_timeout(db, 10_000)
        // A lookup by primary key reads a few pages: a small page cache per connection (the
        // default is 2 MB each, and a store keeps several of these).
        sqlite3_exec(db, "PRAGMA cache_size = -128", nil, nil, nil)
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, Self.sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close(db)
            throw AttacheError(.storeCorrupt, "catalog: \(message)")
        }
        self.db = db
        self.statement = statement
    }

    deinit {
        sqlite3_finalize(statement)
        sqlite3_close(db)
    }

    func object(_ id: String) throws(AttacheError) -> ObjectRow? {
        let result: Result<ObjectRow?, AttacheError> = id.withCString { text in
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            // The text is bound without a copy: the statement is reset before it goes away.
            sqlite3_bind_text(statement, 1, text, -1, nil)
            switch sqlite3_step(statement) {
            case SQLITE_DONE:
                return .success(nil)
            case SQLITE_ROW:
                return .success(row(id))
            default:
                return .failure(AttacheError(.storeCorrupt, "catalog: \(String(cString: sqlite3_errmsg(db)))"))
            }
        }
        return try result.get()
    }

    private func row(_ id: String) -> ObjectRow {
        func text(_ column: Int32) -> String {
            sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
        }
        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        func optional(_ column: Int32) -> Int? {
            sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : Int(integer(column))
        }
        return ObjectRow(
            id: id, kind: text(0), ext: text(1), bytes: integer(2), width: optional(3), height: optional(4),
            frames: optional(5), created: integer(6), expires: integer(7), revokedBefore: integer(8),
            posterTime: sqlite3_column_type(statement, 9) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 9),
            tenant: sqlite3_column_type(statement, 12) == SQLITE_NULL ? nil : text(12),
            placeholder: sqlite3_column_type(statement, 10) == SQLITE_NULL ? nil : text(10),
            clip: sqlite3_column_type(statement, 11) == SQLITE_NULL ? nil : text(11))
    }
}
