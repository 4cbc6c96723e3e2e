package import AttacheBase
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

/// Who an object is stored for (a service's tenant) and that tenant's own quotas, within the
/// store's: the first to store an object is charged for it, a copy already stored costs nothing,
/// and only expired objects are collected to make room (never another tenant's live ones).
public struct StoreOwner: Sendable, Hashable {
    public var id: String
    /// Bytes and objects this owner's objects may hold together (nil: only the store's quota).
    public var maxBytes: Int64?
    public var maxObjects: Int?

    public init(id: String, maxBytes: Int64? = nil, maxObjects: Int? = nil) {
        (self.id, self.maxBytes, self.maxObjects) = (id, maxBytes, maxObjects)
    }

    /// An owner's id as a tenants file writes it: 1 to 64 of `a-z 0-9 . _ -`, starting with a
    /// letter or digit.
    public static func isValidID(_ id: String) -> Bool {
        func letterOrDigit(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard let first = id.utf8.first, id.utf8.count <= 64, letterOrDigit(first) else { return false }
        return id.utf8.allSatisfy {
            letterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    /// The quota one more object of `bytes` would pass, given what the owner holds; nil: it fits.
    package func passed(_ held: (objects: Int, bytes: Int64), adding bytes: Int64) -> AttacheError.Limit? {
        if let maxBytes, held.bytes + bytes > maxBytes { return .tenantStoreBytes }
        if let maxObjects, held.objects + 1 > maxObjects { return .tenantStoreObjects }
        return nil
    }

    package func full(bytes: Int64, limit: AttacheError.Limit) -> AttacheError {
        let quota = [maxBytes.map { "\($0) bytes" }, maxObjects.map { "\($0) objects" }].compactMap { $0 }
        return AttacheError(
            .tenantQuotaExceeded,
            "storing \(bytes) bytes would pass tenant \(id)'s store quota of \(quota.joined(separator: " / "))",
            limit: limit)
    }
}
