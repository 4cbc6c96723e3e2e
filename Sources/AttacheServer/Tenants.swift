import AttacheBase
import Synchronization

/// The tenants as the service uses them now: who a request's key is for, each tenant's rate,
/// and the shares of the admission places. Replaced whole when the tenants file is read again
/// (``replace(_:)``): a request started before keeps the tenant it was given.
final class Tenants: Sendable {
    /// The id of callers without a key (anonymous, or one not accepted).
    static let anonymous = "anonymous"

    struct Current: Sendable {
        var table: TenantTable
        var keys: APIKeys
        /// The edge times of the tenants with one of their own, in seconds.
        var edgeMaxAges: [String: Int64]

        init(_ table: TenantTable) {
            self.table = table
            keys = APIKeys(digests: table.byDigest)
            edgeMaxAges = Dictionary(
                table.tenants.compactMap { tenant in tenant.edgeMaxAge.map { (tenant.id, $0) } },
                uniquingKeysWith: min)
        }
    }

    private let current: Mutex<Current>
    /// Each tenant's tokens: requests it may send now, refilled at its rate up to its burst.
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])
    let allowAnonymous: Bool
    /// Told the new shares when the table changes (the gate's and the admission's).
    private let observers = Mutex<[@Sendable ([String: Int]) -> Void]>([])

    init(_ table: TenantTable, allowAnonymous: Bool) {
        self.allowAnonymous = allowAnonymous
        current = Mutex(Current(table))
    }

    var table: TenantTable { current.withLock { $0.table } }

    /// The edge times of the tenants that have their own (empty: every download the service's).
    var edgeMaxAges: [String: Int64] { current.withLock { $0.edgeMaxAges } }

    /// Each tenant's share of the places, callers without a key counted only when let in.
    var shares: [String: Int] { Self.shares(table, allowAnonymous: allowAnonymous) }

    static func shares(_ table: TenantTable, allowAnonymous: Bool) -> [String: Int] {
        var shares = Dictionary(table.tenants.map { ($0.id, $0.share) }, uniquingKeysWith: { a, _ in a })
        if allowAnonymous { shares[anonymous] = 1 }
        return shares
    }

    /// The tenant of an `Authorization` value; nil for none, or a key not accepted.
    func tenant(authorization: String?) -> Tenant? {
        guard let key = APIKeys.bearer(authorization) else { return nil }
        return current.withLock { now in now.keys.owner(of: key).map { now.table.tenants[$0] } }
    }

    /// The id a request's work is counted under at the gate.
    func id(authorization: String?) -> String { tenant(authorization: authorization)?.id ?? Self.anonymous }

    /// Replaces the table; the gate and the admission take the new shares.
    func replace(_ table: TenantTable) {
        current.withLock { $0 = Current(table) }
        let ids = Set(table.tenants.map(\.id))
        buckets.withLock { buckets in buckets = buckets.filter { ids.contains($0.key) } }
        let shares = self.shares
        for observer in observers.withLock({ $0 }) { observer(shares) }
    }

    func observe(_ observer: @escaping @Sendable ([String: Int]) -> Void) { observers.withLock { $0.append(observer) } }

    /// Takes one request from `tenant`'s rate: nil when it may go on, else the seconds until it
    /// may (its `Retry-After`).
    func admit(_ tenant: Tenant, now: ContinuousClock.Instant = .now) -> Int? {
        guard let rate = tenant.rate else { return nil }
        let burst = Double(tenant.burst)
        return buckets.withLock { buckets in
            var (tokens, at) = buckets[tenant.id] ?? (burst, now)
            tokens = min(burst, tokens + at.duration(to: now) / .seconds(1) * rate)
            if tokens >= 1 {
                buckets[tenant.id] = (tokens - 1, now)
                return nil
            }
            buckets[tenant.id] = (tokens, now)
            return max(1, Int(((1 - tokens) / rate).rounded(.up)))
        }
    }
}
