internal import AttacheBase
import Glibc

/// How a store is laid out and bounded.
public struct StoreConfiguration: Sendable {
    /// The store directory (created when missing).
    public var root: String
    /// The key file; defaults to `<root>/keys.json`. Replicas sharing a store share this file.
    public var keyFile: String?
    /// Total bytes of objects allowed (default 5 GB).
    public var maxBytes: Int64
    /// Objects allowed (default 1,000,000).
    public var maxObjects: Int
    /// How long a stored object lives unless a put says otherwise (default 7 days).
    public var defaultTTL: Int64
    /// Current time in Unix seconds (tests move it).
    public var clock: @Sendable () -> Int64
    /// When set, the store is shared: its catalog in PostgreSQL and its bytes in an S3 bucket
    /// (`root` and `keyFile` are then unused).
    public var shared: SharedStoreConfiguration?

    /// The byte quotas a store may be given: every surface that takes one (serve's
    /// `--store-max-bytes`, the store options of the other commands) checks this range.
    public static let maxBytesRange: ClosedRange<Int64> = 1...(Int64.max / 2)
    /// The object quotas a store may be given.
    public static let maxObjectsRange: ClosedRange<Int> = 1...(Int.max / 2)

    /// Creates a configuration with the documented defaults.
    public init(
        root: String,
        keyFile: String? = nil,
        maxBytes: Int64 = 5_000_000_000,
        maxObjects: Int = 1_000_000,
        defaultTTL: Int64 = 7 * 86_400,
        clock: @escaping @Sendable () -> Int64 = { StoreConfiguration.unixNow() }
    ) {
        self.root = root
        self.keyFile = keyFile
        self.maxBytes = maxBytes
        self.maxObjects = maxObjects
        self.defaultTTL = defaultTTL
        self.clock = clock
    }

    /// The wall clock in Unix seconds.
    public static func unixNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}
