import AttacheStore
import Foundation
import Synchronization

/// The PostgreSQL and radosgw (S3) servers `scripts/test.sh` starts for the shared-store tests
/// (`scripts/shared-servers.sh`), read from the environment it exports. Each test gets a fresh
/// database and a fresh bucket, so tests never see each other's objects.
public enum SharedServers {
    private static let environment = ProcessInfo.processInfo.environment

    /// Whether the servers are there (the suites that need them are disabled otherwise).
    public static let available =
        environment["ATTACHE_TEST_POSTGRES"] != nil
        && environment["ATTACHE_TEST_S3_ENDPOINT"] != nil

    /// Why a shared-store suite does not run, for its disabled trait.
    public static let missing = "no PostgreSQL and radosgw: run the tests with scripts/test.sh (it starts them)"

    /// The environment a child `attache` needs for a shared store: S3 credentials, endpoint and
    /// the key ring key.
    public static func childEnvironment(keyRingKey: [UInt8]) -> [String: String] {
        var out = ProcessInfo.processInfo.environment
        // A fetch test sets http_proxy in this process for a moment; children never take it.
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            out[name] = nil
        }
        out["ATTACHE_S3_ENDPOINT"] = environment["ATTACHE_TEST_S3_ENDPOINT"]
        out["AWS_REGION"] = environment["ATTACHE_TEST_S3_REGION"] ?? "us-east-1"
        out["AWS_ACCESS_KEY_ID"] = environment["ATTACHE_TEST_S3_ACCESS_KEY"]
        out["AWS_SECRET_ACCESS_KEY"] = environment["ATTACHE_TEST_S3_SECRET_KEY"]
        out["ATTACHE_KEYRING_KEY"] = Data(keyRingKey).base64EncodedString()
        return out
    }

    /// A fresh shared store: a new database on the test PostgreSQL, a new bucket name on the
    /// test radosgw (created when the store opens), a random key ring key.
    public struct Fresh: Sendable {
        /// The database URI.
        public let postgres: String
        /// `s3://bucket`.
        public let blobs: String
        /// The key ring key.
        public let keyRingKey: [UInt8]

        /// The configuration of a store over this database and bucket.
        public func configuration(
            maxBytes: Int64 = 5_000_000_000, maxObjects: Int = 1_000_000,
            clock: @escaping @Sendable () -> Int64 = { StoreConfiguration.unixNow() }
        ) throws -> StoreConfiguration {
            var configuration = StoreConfiguration(
                root: postgres, maxBytes: maxBytes, maxObjects: maxObjects, clock: clock)
            configuration.shared = try SharedStoreConfiguration.parse(
                store: postgres, blobs: blobs, environment: SharedServers.childEnvironment(keyRingKey: keyRingKey))
            return configuration
        }

        /// `--store … --blobs …` for a child `attache`.
        public var arguments: [String] { arguments() }

        /// The same, its PostgreSQL connections allowed `connectTimeout` seconds (libpq's
        /// `connect_timeout`) when given.
        public func arguments(connectTimeout: Int? = nil) -> [String] {
            ["--store", postgres + (connectTimeout.map { "?connect_timeout=\($0)" } ?? ""), "--blobs", blobs]
        }

        /// The environment for a child `attache`.
        public var childEnvironment: [String: String] { SharedServers.childEnvironment(keyRingKey: keyRingKey) }

        /// Runs SQL on the test database through `psql` (for checks the product has no API for).
        public func sql(_ statement: String) throws -> String {
            try SharedServers.psql(postgres, statement)
        }

        /// Locks `table` against every other session (ACCESS EXCLUSIVE, in an open transaction
        /// of a `psql` of its own) and returns once the lock is held: queries on it wait until
        /// ``TableLock/release()``.
        public func lock(_ table: String) throws -> TableLock {
            try TableLock(postgres, table: table)
        }
    }

    /// Makes a fresh database and bucket name.
    public static func fresh() throws -> Fresh {
        guard let admin = environment["ATTACHE_TEST_POSTGRES"] else { throw SharedServersMissing() }
        let name = "attache_t_" + String(UInt64.random(in: 0 ... .max), radix: 36)
        _ = try psql(admin, "CREATE DATABASE \(name)")
        let slash = admin.range(of: "/", options: .backwards)!
        let postgres = String(admin[..<slash.upperBound]) + name
        let bucket = "t-" + String(UInt64.random(in: 0 ... .max), radix: 36)
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        return Fresh(postgres: postgres, blobs: "s3://" + bucket, keyRingKey: key)
    }

    /// Runs one statement with `psql` and returns its unaligned output.
    static func psql(_ url: String, _ statement: String) throws -> String {
        let result = try runChild(
            "/usr/bin/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", statement])
        guard result.status == 0 else { throw SharedServersMissing(message: "psql: " + result.errorText) }
        return result.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The test servers are not there, or refused.
public struct SharedServersMissing: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String = SharedServers.missing) { self.message = message }
}

/// A table locked by a session of its own (``SharedServers/Fresh/lock(_:)``).
public final class TableLock: Sendable {
    private let session: ChildProcess
    private let released = Mutex(false)

    init(_ postgres: String, table: String) throws {
        session = try ChildProcess(
            "/usr/bin/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", postgres], interactive: true)
        session.write("BEGIN;\nLOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE;\nSELECT 'held';\n")
        // The answer to the SELECT comes once the lock is held (or psql ends on an error).
        guard session.output(containing: "held") != nil else {
            throw SharedServersMissing(
                message: "psql could not lock \(table): \(String(decoding: session.errorsSoFar, as: UTF8.self))")
        }
    }

    /// Commits the locking transaction and waits for `psql` to end. True for the call that
    /// released it, false when it was released already.
    @discardableResult
    public func release() -> Bool {
        guard
            released.withLock({ done in
                defer { done = true }
                return !done
            })
        else { return false }
        session.write("COMMIT;\n")
        session.closeInput()
        session.wait()
        return true
    }

    deinit { release() }
}
