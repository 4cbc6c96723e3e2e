public import AttacheBase
import Crypto
import ExtrasBase64
import Foundation

/// A store shared by several processes and machines: the catalog (objects, sources, expiry,
/// revocations, the key ring, batch jobs) in PostgreSQL, the object bytes in an S3 bucket.
public struct SharedStoreConfiguration: Sendable {
    /// A libpq connection URI: `postgres://user[:password]@host[:port]/database[?…]`.
    public var postgres: String
    /// The bucket and the credentials for the object bytes.
    public var blobs: S3Location
    /// The 32-byte key that encrypts the token key ring at rest in the catalog (AES-GCM).
    public var keyRingKey: [UInt8]
    /// Catalog connections for reads and writes (per process).
    public var connections: Int
    /// Catalog connections that hold the advisory locks of open downloads (per process).
    public var leaseConnections: Int
    /// Where this process keeps copies of the objects it stores and serves (nil: none; every
    /// download is then streamed from the bucket).
    public var cacheDirectory: String?
    /// The copies' bound in bytes (default 1 GiB).
    public var cacheBytes: Int64 = 1 << 30
    /// Objects larger than this are never copied, always streamed (default 64 MiB).
    public var cacheObjectBytes: Int64 = 64 << 20
    /// While the catalog cannot be reached, an object whose row this process read within this
    /// long, and of which it has a copy, is still served to valid tokens (default 60 s): a
    /// revocation made meanwhile is honoured within this bound instead of within a second.
    public var catalogOutageGrace: Duration = defaultOutageGrace
    /// How long one catalog statement, or connecting to the catalog, may take before it fails
    /// as `store_unavailable` (default 10 s): a catalog that stopped answering without closing
    /// its connections (a host gone from the network, a frozen primary) never holds a payload
    /// or a download longer than this.
    public var catalogTimeout: Duration = defaultTimeout

    /// The default ``catalogOutageGrace``.
    public static let defaultOutageGrace = Duration.seconds(60)
    /// The default ``catalogTimeout``.
    public static let defaultTimeout = Duration.seconds(10)

    /// Creates a configuration.
    public init(
        postgres: String, blobs: S3Location, keyRingKey: [UInt8], connections: Int = 16, leaseConnections: Int = 4,
        cacheDirectory: String? = nil
    ) {
        self.postgres = postgres
        self.blobs = blobs
        self.keyRingKey = keyRingKey
        self.connections = connections
        self.leaseConnections = leaseConnections
        self.cacheDirectory = cacheDirectory
    }

    /// Whether `store` names a shared store (a PostgreSQL URI) rather than a directory: the one
    /// place the backend is chosen from a `--store` value.
    public static func names(_ store: String) -> Bool {
        store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")
    }

    /// Reads `--store postgres://…` and `--blobs s3://bucket[/prefix]` with the rest from the
    /// environment (see ``S3Location/parse(_:environment:)``) and the key ring key from
    /// `ATTACHE_KEYRING_KEY` (base64 of 32 bytes) or the file `ATTACHE_KEYRING_KEY_FILE` names.
    /// Every problem found is named in one ``AttacheError/Code/invalidInput`` error. The copy
    /// cache is `cache`, else `ATTACHE_BLOB_CACHE` (a directory; `none` for no cache), else
    /// `defaultCache`.
    public static func parse(
        store: String, blobs: String?, environment: [String: String], cache: String? = nil,
        defaultCache: String? = nil
    ) throws(AttacheError) -> SharedStoreConfiguration {
        var problems: [String] = []
        if !names(store) {
            problems.append("--store must be a directory or a postgres:// URI")
        }
        var location: S3Location? = nil
        if let blobs {
            do {
                location = try S3Location.parse(blobs, environment: environment)
            } catch {
                problems.append(error.message)
            }
        } else {
            problems.append("a postgres:// store keeps its object bytes in S3: --blobs s3://bucket is required")
        }
        var key: [UInt8]? = nil
        if let text = environment["ATTACHE_KEYRING_KEY"] {
            key = decodeKey(text)
            if key == nil { problems.append("ATTACHE_KEYRING_KEY must be base64 of 32 bytes") }
        } else if let path = environment["ATTACHE_KEYRING_KEY_FILE"] {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                key = decodeKey(text.trimmingCharacters(in: .whitespacesAndNewlines))
                if key == nil { problems.append("\(path) (ATTACHE_KEYRING_KEY_FILE) must hold base64 of 32 bytes") }
            } else {
                problems.append("cannot read \(path) (ATTACHE_KEYRING_KEY_FILE)")
            }
        } else {
            problems.append(
                "the shared key ring is encrypted with ATTACHE_KEYRING_KEY (base64 of 32 bytes; `openssl rand"
                    + " -base64 32`) or the file ATTACHE_KEYRING_KEY_FILE names; neither is set")
        }
        guard problems.isEmpty, let location, let key else {
            throw AttacheError(.invalidInput, "shared store: " + problems.joined(separator: "; "))
        }
        var cacheDirectory = cache ?? environment["ATTACHE_BLOB_CACHE"] ?? defaultCache
        if cacheDirectory == "none" || cacheDirectory == "" { cacheDirectory = nil }
        return SharedStoreConfiguration(
            postgres: store, blobs: location, keyRingKey: key, cacheDirectory: cacheDirectory)
    }

    /// Where `attache serve` keeps its copies unless told: `$XDG_CACHE_HOME/attache/blobs`, else
    /// `~/.cache/attache/blobs`.
    public static func defaultCacheDirectory(environment: [String: String]) -> String {
        if let cache = environment["XDG_CACHE_HOME"], !cache.isEmpty { return cache + "/attache/blobs" }
        return (environment["HOME"] ?? "/tmp") + "/.cache/attache/blobs"
    }

    private static func decodeKey(_ text: String) -> [UInt8]? {
        let options: [Base64.DecodingOptions] = [
            [], [.base64UrlAlphabet], [.base64UrlAlphabet, .omitPaddingCharacter],
        ]
        for option in options {
            if let bytes = try? Base64.decode(string: text, options: option), bytes.count == 32 { return bytes }
        }
        return nil
    }

    /// The catalog's address for logs, without a password.
    public var postgresDescription: String {
        guard let at = postgres.lastIndex(of: "@"), let scheme = postgres.range(of: "://") else { return postgres }
        let user = postgres[scheme.upperBound..<at].split(separator: ":", maxSplits: 1).first ?? ""
        return String(postgres[..<scheme.upperBound]) + user + String(postgres[at...])
    }
}
