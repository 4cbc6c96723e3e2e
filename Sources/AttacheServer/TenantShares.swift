/// Places (the pipeline's slots, or its slots and queue places together) shared by tenants so
/// that no tenant can take the places another is owed: each tenant's first ``reserve`` places
/// are kept for it while it does not hold them, and the rest go to whoever comes first. A lone
/// tenant may use every place but the others' reserves; a tenant sending as fast as it can
/// never leaves another without a place.
///
/// A tenant is an index: the position of its API key, and one more for callers without an
/// accepted key (anonymous callers, or ones refused later), which has a reserve only when
/// anonymous callers are let in.
struct TenantShares: Sendable {
    let total: Int
    /// Places kept for each tenant that has a reserve: at most 4, and at most half the places
    /// kept in all (a lone tenant always has at least half); none when only one tenant has one.
    let reserve: Int
    /// Tenants from this index on have no reserve.
    let reserved: Int
    private(set) var held: [Int]
    private(set) var sum = 0

    /// `tenants` tenants, the first `reserved` of them with a reserve (all by default).
    init(total: Int, tenants: Int, reserved: Int? = nil) {
        self.total = max(1, total)
        let count = max(1, tenants)
        self.reserved = min(count, max(0, reserved ?? count))
        reserve = self.reserved > 1 ? min(4, self.total / (2 * self.reserved)) : 0
        held = [Int](repeating: 0, count: count)
    }

    var tenants: Int { held.count }

    /// The tenant index `tenant` counts under (an index past the last counts as the last).
    func index(_ tenant: Int) -> Int { min(max(0, tenant), held.count - 1) }

    /// Whether `tenant` may take one more place: what is held, plus the others' reserves they
    /// do not hold, leaves one.
    func canTake(_ tenant: Int) -> Bool {
        let tenant = index(tenant)
        var owed = 0
        if reserve > 0 {
            for (other, count) in held.prefix(reserved).enumerated() where other != tenant {
                owed += max(0, reserve - count)
            }
        }
        return sum + 1 + owed <= total
    }

    /// Takes a place for `tenant` when it may; false (nothing taken) when not.
    mutating func take(_ tenant: Int) -> Bool {
        guard canTake(tenant) else { return false }
        held[index(tenant)] += 1
        sum += 1
        return true
    }

    /// Gives back a place `tenant` held.
    mutating func give(_ tenant: Int) {
        let tenant = index(tenant)
        guard held[tenant] > 0 else { return }
        held[tenant] -= 1
        sum -= 1
    }
}
