/// Places (the pipeline's slots, or its slots and queue places together) shared by tenants so
/// that no tenant can take the places another is owed: each tenant's first places (its
/// ``reserves``) are kept for it while it does not hold them, and the rest go to whoever comes
/// first. A lone tenant may use every place but the others' reserves; a tenant sending as fast
/// as it can never leaves another without a place.
///
/// A tenant is its id (the tenants file's, `key-N` for the N-th `--api-keys` key, `anonymous`
/// for callers without a key). A tenant's reserve follows its share (a weight, 1 by default):
/// at most 4 places a unit of share, and at most half of all places kept in all (a lone tenant
/// always has at least half); none when only one tenant has a share.
struct TenantShares: Sendable {
    let total: Int
    private(set) var reserves: [String: Int] = [:]
    private(set) var held: [String: Int] = [:]
    private(set) var sum = 0
    /// The places kept and not held: the sum over tenants of their reserve less what they hold.
    private var owed = 0

    /// `total` places shared by the tenants `shares` names (each with its weight).
    init(total: Int, shares: [String: Int]) {
        self.total = max(1, total)
        share(shares)
    }

    /// The reserves for `shares` out of `total` places.
    static func reserves(total: Int, shares: [String: Int]) -> [String: Int] {
        let weights = shares.mapValues { max(1, $0) }
        let sum = weights.values.reduce(0, +)
        guard weights.count > 1 else { return weights.mapValues { _ in 0 } }
        return weights.mapValues { min(4 * $0, total * $0 / (2 * sum)) }
    }

    /// The reserve of one tenant (0 for one without a share).
    func reserve(_ tenant: String) -> Int { reserves[tenant] ?? 0 }

    /// Takes new shares (a tenants file read again): what each tenant holds stays held.
    mutating func share(_ shares: [String: Int]) {
        reserves = Self.reserves(total: total, shares: shares)
        owed = reserves.reduce(0) { $0 + max(0, $1.value - (held[$1.key] ?? 0)) }
    }

    /// Whether `tenant` may take one more place: what is held, plus the others' reserves they
    /// do not hold, leaves one.
    func canTake(_ tenant: String) -> Bool {
        let mine = max(0, reserve(tenant) - (held[tenant] ?? 0))
        return sum + 1 + owed - mine <= total
    }

    /// Takes a place for `tenant` when it may; false (nothing taken) when not.
    mutating func take(_ tenant: String) -> Bool {
        guard canTake(tenant) else { return false }
        let count = held[tenant] ?? 0
        if count < reserve(tenant) { owed -= 1 }
        held[tenant] = count + 1
        sum += 1
        return true
    }

    /// Gives back a place `tenant` held.
    mutating func give(_ tenant: String) {
        guard let count = held[tenant], count > 0 else { return }
        held[tenant] = count == 1 ? nil : count - 1
        if count <= reserve(tenant) { owed += 1 }
        sum -= 1
    }
}
