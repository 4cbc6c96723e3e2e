public import AttacheBase
import Dispatch
import Foundation
import Synchronization

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

    package init(dryRun: Bool = false) { self.dryRun = dryRun }
}

/// What a purge of one tenant did (``AttachmentStore/purge(tenant:_:)``).
public struct PurgeReport: Hashable, Sendable {
    public var counts: PurgeCounts
    /// The collection pass that followed.
    public var collection: CollectionReport
}

/// How a collection pass runs.
public struct CollectionOptions: Hashable, Sendable {
    /// Count what would go, remove nothing.
    public var dryRun = false
    /// An object without a catalog row younger than this is not an orphan yet: its upload may
    /// be about to commit (its writer's lock protects it too). Default 15 minutes.
    public var minOrphanAge: Duration = .seconds(900)
    /// At most this many deletions a second (expired objects and orphans together; nil: no limit).
    public var maxDeletesPerSecond: Double? = nil
    /// Look for orphans too (a shared store lists its whole bucket for them); expired objects
    /// and temp files are collected either way.
    public var sweepOrphans = true

    /// Creates options; every argument has the documented default.
    public init(
        dryRun: Bool = false, minOrphanAge: Duration = .seconds(900), maxDeletesPerSecond: Double? = nil,
        sweepOrphans: Bool = true
    ) {
        self.dryRun = dryRun
        self.minOrphanAge = minOrphanAge
        self.maxDeletesPerSecond = maxDeletesPerSecond
        self.sweepOrphans = sweepOrphans
    }
}

/// How a verification runs.
public struct VerifyOptions: Hashable, Sendable {
    /// The fraction of objects whose bytes are read and hashed (0 < fraction ≤ 1; chosen by id,
    /// so the same objects each time). Every object is matched against the catalog by key and
    /// size whatever the fraction.
    public var sample: Double = 1
    /// Go on from the last verification that did not finish (the prefixes it completed are
    /// not read again; their counts are kept).
    public var resume = false

    /// Creates options; every argument has the documented default.
    public init(sample: Double = 1, resume: Bool = false) {
        self.sample = sample
        self.resume = resume
    }

    /// Whether the object `id` is one of the sample.
    package func sampled(_ id: String) -> Bool {
        guard sample < 1 else { return true }
        let head = UInt64(id.prefix(8), radix: 16) ?? 0
        return Double(head) < sample * 4_294_967_296
    }
}

/// One thing a verification found wrong.
public struct VerifyProblem: Hashable, Sendable {
    /// `corrupt`: bytes that do not hash to their id, or a size or extension other than the
    /// catalog's; `orphan`: an object without a catalog row; `missing`: a row without its object.
    public enum Kind: String, Hashable, Sendable {
        case corrupt, orphan, missing
    }
    public var kind: Kind
    /// The attachment id, when the name spells one.
    public var id: String?
    /// Where: the file path or `s3://` URL (the id for a missing object).
    public var location: String

    package init(kind: Kind, id: String?, location: String) {
        (self.kind, self.id, self.location) = (kind, id, location)
    }
}

/// Counts of a verification (of one prefix, or of the whole store).
public struct VerifyCounts: Hashable, Sendable {
    /// Objects that match their row (by key and size, and by hash when sampled).
    public var objects = 0
    /// Of them, the ones whose bytes were read and hashed.
    public var hashed = 0
    public var corrupt = 0
    public var orphans = 0
    public var missing = 0

    public init() {}

    package mutating func add(_ other: VerifyCounts) {
        objects += other.objects
        hashed += other.hashed
        corrupt += other.corrupt
        orphans += other.orphans
        missing += other.missing
    }
}

/// What a full check of the store found.
public struct VerifyReport: Hashable, Sendable {
    /// Objects that match their row; of them, ``hashed`` had their bytes read and hashed.
    public var objects = 0
    public var hashed = 0
    /// How many of each problem (exact), and the first ``listed`` of each.
    public var corruptCount = 0
    public var orphanCount = 0
    public var missingCount = 0
    /// The first corrupt objects, orphans and missing ids (at most ``listed`` each; the counts
    /// are exact).
    public var corrupt: [String] = []
    public var orphans: [String] = []
    public var missing: [String] = []
    /// Files in `tmp/` (invisible to readers).
    public var temps = 0
    /// Prefixes taken from an earlier, unfinished verification (``VerifyOptions/resume``).
    public var resumedPrefixes = 0
    /// No corrupt object and no row without its object.
    public var isClean: Bool { corruptCount == 0 && missingCount == 0 }
    /// How many of each problem are listed.
    public static let listed = 1000

    mutating func add(_ counts: VerifyCounts) {
        objects += counts.objects
        hashed += counts.hashed
        corruptCount += counts.corrupt
        orphanCount += counts.orphans
        missingCount += counts.missing
    }

    mutating func list(_ problem: VerifyProblem) {
        switch problem.kind {
        case .corrupt where corrupt.count < Self.listed: corrupt.append(problem.location)
        case .orphan where orphans.count < Self.listed: orphans.append(problem.location)
        case .missing where missing.count < Self.listed: missing.append(problem.id ?? problem.location)
        default: break
        }
    }
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
        try collect(CollectionOptions(dryRun: dryRun))
    }

    /// ``collect(dryRun:)`` with every option.
    public func collect(_ options: CollectionOptions) throws(AttacheError) -> CollectionReport {
        defer { changed() }
        return try backend.collect(options, now: now)
    }

    /// Matches every object against the catalog, prefix by prefix of the id (`00` … `ff`, a
    /// few at once where the backend gains from it), and rehashes them (or the sample asked
    /// for). Memory stays flat in the number of objects: each prefix is read as two streams in
    /// id order, a page at a time. Each prefix's counts are recorded as it completes, so a
    /// verification cut off can go on (``VerifyOptions/resume``). `problem` is told each
    /// problem as it is found (from one thread at a time).
    public func verify(
        _ options: VerifyOptions = VerifyOptions(), problem: @escaping @Sendable (VerifyProblem) -> Void = { _ in }
    ) throws(AttacheError) -> VerifyReport {
        var report = VerifyReport()
        var done: [String: VerifyCounts] = [:]
        if options.resume {
            done = try backend.verifyProgress()
        } else {
            try backend.resetVerifyProgress()
        }
        report.resumedPrefixes = done.count
        for counts in done.values { report.add(counts) }
        let todo = ObjectLayout.prefixes.filter { done[$0] == nil }
        let shared = Mutex(report)
        let backend = self.backend
        try forEachConcurrently(todo, workers: backend.verifyConcurrency) { (prefix) throws(AttacheError) in
            let counts = try backend.verify(prefix: prefix, options: options) { found in
                shared.withLock { $0.list(found) }
                problem(found)
            }
            try backend.recordVerifyProgress(prefix: prefix, counts: counts)
            shared.withLock { $0.add(counts) }
        }
        report = shared.withLock { $0 }
        report.temps = backend.temporaryFiles()
        return report
    }

    /// Takes a tenant that leaves off the store: every object only it holds (stored for it, or
    /// sent to it, by no one else) expires now and is removed by a collection pass right after
    /// (one an open download holds goes at the next pass: it is refused from now, as expired);
    /// an object another tenant holds too is kept and handed to it (counted in its totals from
    /// now). Its tokens open nothing it held alone. `options` pace the collection (a dry run
    /// is not one: a purge always takes the tenant off).
    public func purge(
        tenant: String, _ options: CollectionOptions = CollectionOptions()
    ) throws(AttacheError)
        -> PurgeReport
    {
        defer { changed() }
        let counts = try backend.purge(tenant: tenant, now: now)
        var options = options
        options.dryRun = false
        return PurgeReport(counts: counts, collection: try backend.collect(options, now: now))
    }

    /// What one tenant's objects hold: those it stored first (a copy another had stored costs
    /// it nothing), expired ones until they are collected — what its quota counts.
    /// The tenants that hold `id`: the one it was first stored for and each sent it since
    /// (`""`: a caller with no tenant).
    public func holders(of id: AttachmentID) throws(AttacheError) -> Set<String> { try backend.holders(id.hex) }

    public func stats(tenant: String) throws(AttacheError) -> (objects: Int, bytes: Int64) {
        try backend.totals(tenant: tenant)
    }

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
