public import AttacheBase

/// What one garbage-collection pass did (or would do, on a dry run).
public struct CollectionReport: Hashable, Sendable {
    /// Expired objects removed.
    public var removed: [AttachmentID] = []
    /// Their bytes.
    public var removedBytes: Int64 = 0
    /// Expired objects kept because a lease is open on them.
    public var leased: [AttachmentID] = []
    /// Object files without a catalog row (left by a crash between rename and record), removed.
    public var orphans = 0
    /// Abandoned temp files (writer gone, older than a minute), removed.
    public var temps = 0
    /// Whether nothing was actually removed.
    public var dryRun = false
}

/// What a full check of the store found.
public struct VerifyReport: Hashable, Sendable {
    /// Object files whose bytes hash to their name.
    public var objects = 0
    /// Object files whose bytes do not hash to their name, or whose size differs from the catalog.
    public var corrupt: [String] = []
    /// Files under `objects/` without a catalog row (whole, but unrecorded).
    public var orphans: [String] = []
    /// Catalog rows without their file.
    public var missing: [String] = []
    /// Files in `tmp/` (invisible to readers).
    public var temps = 0
    /// No corrupt object and no row without its file.
    public var isClean: Bool { corrupt.isEmpty && missing.isEmpty }
}

/// Totals for `attache store stats`.
public struct StoreStats: Hashable, Sendable {
    /// Objects recorded.
    public var objects: Int
    /// Their bytes.
    public var bytes: Int64
    /// Objects past their expiry, waiting for collection.
    public var expired: Int
    /// Source records (URL + spec → object).
    public var sources: Int
    /// The byte quota.
    public var maxBytes: Int64
    /// The object quota.
    public var maxObjects: Int
    /// The key that signs new tokens.
    public var currentKeyID: UInt32
    /// Keys that still verify.
    public var liveKeys: Int
}

extension AttachmentStore {
    /// Removes expired objects that no lease holds, orphaned objects (left by a crash between
    /// upload and record) and abandoned temp files. Objects being written are never touched.
    public func collect(dryRun: Bool = false) throws(AttacheError) -> CollectionReport {
        try backend.collect(dryRun: dryRun, now: now)
    }

    /// Rehashes every object and matches them against the catalog.
    public func verify() throws(AttacheError) -> VerifyReport {
        try backend.verify()
    }

    /// Counts and quotas.
    public func stats() throws(AttacheError) -> StoreStats {
        let totals = try backend.totals(at: now)
        let ring = keyRing
        return StoreStats(
            objects: totals.objects, bytes: totals.bytes, expired: totals.expired,
            sources: try backend.sourceCount(), maxBytes: configuration.maxBytes,
            maxObjects: configuration.maxObjects, currentKeyID: ring.currentKeyID,
            liveKeys: ring.entries.filter { !$0.retired }.count)
    }
}
