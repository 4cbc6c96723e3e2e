import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheStore
import AttacheWork
import Crypto
import Foundation

/// A named caller of the service: its keys (SHA-256 digests, several at once for rotation) and
/// its own limits and media hosts.
struct Tenant: Sendable, Hashable {
    var id: String
    var keys: [[UInt8]]
    /// Its weight in the admission places' reserves (``TenantShares``) and in the cores' share
    /// (the workers' scheduler).
    var share = 1
    /// Requests a second, and how many may come at once above it (nil: no rate limit).
    var rate: Double? = nil
    var burst = 1
    /// Hosts it may fetch from, on top of the fetch policy (nil: the policy's).
    var sources: SourceRules? = nil
    /// Its own values of pipeline settings (by row key, as text), over the service's and under
    /// a request's terms.
    var settings: [String: String] = [:]
    /// Its own store quota, within the store's (nil: none of its own).
    var storeMaxBytes: Int64? = nil
    var storeMaxObjects: Int? = nil
    /// The memory its transforms may hold at once (nil: the workers' budget alone).
    var decodeMemory: Int? = nil
    /// Seconds a shared cache may keep its downloads (nil: the service's `--edge-max-age`); an
    /// object several tenants hold gets the shortest of theirs.
    var edgeMaxAge: Int64? = nil

    /// `configuration` with this tenant's settings over it (checked when the file was read).
    func applied(to configuration: PipelineConfiguration) -> PipelineConfiguration {
        var configuration = configuration
        if !settings.isEmpty { _ = PipelineSettings.read({ settings[$0] }, into: &configuration) }
        configuration.coreShare = share
        configuration.decodeMemory = decodeMemory
        configuration.storeOwner = StoreOwner(id: id, maxBytes: storeMaxBytes, maxObjects: storeMaxObjects)
        return configuration
    }
}

/// The tenants the service knows: from `--tenants FILE` and one per `--api-keys` key (`key-N`).
struct TenantTable: Sendable, Hashable {
    var tenants: [Tenant] = []

    /// The tenant of each key, by the key's digest.
    var byDigest: [([UInt8], Int)] {
        tenants.enumerated().flatMap { index, tenant in tenant.keys.map { ($0, index) } }
    }

    /// The tenants of plain keys: `key-0`, `key-1`, … in their order.
    static func keys(_ keys: [String]) -> TenantTable {
        TenantTable(
            tenants: keys.enumerated().map { index, key in
                Tenant(id: "key-\(index)", keys: [Array(SHA256.hash(data: Array(key.utf8)))])
            })
    }

    /// This table and `other`'s tenants after it.
    func adding(_ other: TenantTable) -> TenantTable { TenantTable(tenants: tenants + other.tenants) }

    /// This file's tenants and one per plain key after them; nil when a key of the file is one
    /// of the plain keys too (a key is one tenant's only).
    func with(plainKeys keys: [String]) -> TenantTable? {
        let plain = TenantTable.keys(keys)
        let given = Set(plain.tenants.flatMap(\.keys))
        guard !tenants.contains(where: { $0.keys.contains(where: given.contains) }) else { return nil }
        return adding(plain)
    }

    static let sharedKeyProblem = "a key of the tenants file is given to --api-keys too"

    /// Reads a tenants file; every problem is one line naming the line and key.
    static func load(_ path: String) -> Result<TenantTable, TenantFileError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(TenantFileError(problems: ["cannot read \(path)"]))
        }
        return parse(Array(data), name: path)
    }

    /// The rows a catalog keeps as a tenants file: each row on a line of its own, so a problem's
    /// line is its row's number plus one.
    static func document(_ rows: [String]) -> [UInt8] {
        Array(("{\"tenants\": [\n" + rows.joined(separator: ",\n") + "\n]}\n").utf8)
    }

    /// A tenants file's rows, each as compact JSON text (for the catalog); the file must read
    /// whole first (``parse(_:name:)``), so this finds what that found.
    static func rows(_ bytes: [UInt8]) -> [String] {
        guard case .object(let top)? = try? JSONParser.parse(bytes),
            case .array(let rows)? = top.first(where: { $0.key == "tenants" })?.value
        else { return [] }
        return rows.map(\.text)
    }

    /// The keys a tenant row may have.
    static let rowKeys = [
        "id", "keys", "share", "rate", "burst", "sources", "settings", "storeMaxBytes", "storeMaxObjects",
        "decodeMemory", "edgeMaxAge",
    ]

    static func parse(_ bytes: [UInt8], name: String) -> Result<TenantTable, TenantFileError> {
        var problems: [String] = []
        func line(_ offset: Int?) -> String {
            guard let offset else { return name }
            return "\(name):\(bytes.prefix(offset).reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) })"
        }
        let root: JSONValue
        do throws(AttacheError) {
            root = try JSONParser.parse(bytes)
        } catch {
            return .failure(
                TenantFileError(problems: [
                    "\(name): " + error.message.replacingOccurrences(of: "member name", with: "key")
                ]))
        }
        guard case .object(let top) = root else {
            return .failure(TenantFileError(problems: ["\(name): the file is one JSON object with \"tenants\""]))
        }
        for member in top where member.key != "tenants" {
            problems.append(
                "\(line(member.sourceRange?.lowerBound)): \"\(member.key)\" is not a key of the file (tenants)")
        }
        guard let listMember = top.first(where: { $0.key == "tenants" }), case .array(let rows) = listMember.value
        else {
            return .failure(TenantFileError(problems: problems + ["\(name): \"tenants\" is a list of tenants"]))
        }
        var table = TenantTable()
        var seen = (ids: Set<String>(), keys: Set<[UInt8]>())
        for (offset, row) in rows.enumerated() {
            guard case .object(let members) = row else {
                problems.append("\(line(listMember.valueStart)): tenant \(offset + 1) is not an object")
                continue
            }
            let at = members.first?.sourceRange?.lowerBound ?? listMember.valueStart
            let (tenant, found) = Self.tenant(members, seen: &seen) { key in
                line(members.first { $0.key == key }?.sourceRange?.lowerBound ?? at) + ": tenant \(offset + 1)"
            }
            problems += found
            table.tenants.append(tenant)
        }
        return problems.isEmpty ? .success(table) : .failure(TenantFileError(problems: problems))
    }

    /// One row of the file: the tenant and its problems, each after `place(key)` (the line of
    /// that key, else of the row, and the row's number).
    static func tenant(
        _ members: [JSONValue.Member], seen: inout (ids: Set<String>, keys: Set<[UInt8]>),
        place: (String) -> String
    ) -> (Tenant, [String]) {
        var problems: [String] = []
        func problem(_ key: String, _ text: String) { problems.append("\(place(key)) \"\(key)\": \(text)") }
        for member in members where !rowKeys.contains(member.key) {
            let nearest = ServerSettings.nearest(member.key, among: rowKeys).map { "; did you mean \"\($0)\"?" } ?? ""
            problems.append("\(place(member.key)): \"\(member.key)\" is not a tenant key" + nearest)
        }
        let row = JSONValue.object(members)
        // A whole number in `range` under `key`; nil, with the problem named, when it is not one.
        func whole(_ key: String, _ range: ClosedRange<Int>, _ what: String) -> Int? {
            guard let value = row[key] else { return nil }
            if let number = integer(value), range.contains(number) { return number }
            problem(key, what)
            return nil
        }
        var tenant = Tenant(id: "", keys: [])
        if let id = row["id"]?.stringValue, validID(id) {
            if !seen.ids.insert(id).inserted { problem("id", "'\(id)' is another tenant's too") }
            tenant.id = id
        } else {
            problem("id", "an id is 1-64 of a-z 0-9 . _ - (starting with a letter or digit)")
        }
        if case .array(let keys)? = row["keys"], !keys.isEmpty {
            for key in keys {
                guard let digest = key.stringValue.flatMap(digest) else {
                    problem("keys", "each key is \"sha256:\" and the 64 hex digits of the key's SHA-256")
                    continue
                }
                if !seen.keys.insert(digest).inserted { problem("keys", "a key is listed twice") }
                tenant.keys.append(digest)
            }
        } else {
            problem("keys", "a list of one or more key digests (\"sha256:<hex>\")")
        }
        tenant.share = whole("share", 1...64, "a whole number from 1 to 64") ?? tenant.share
        if let rate = row["rate"] {
            if case .number(let text) = rate, let value = DecimalText.number(text), value > 0, value <= 1e6 {
                tenant.rate = value
                tenant.burst = max(1, Int(value.rounded(.up)))
            } else {
                problem("rate", "requests a second, above 0 and at most 1000000")
            }
        }
        if row["burst"] != nil, tenant.rate == nil {
            problem("burst", "a burst needs a rate")
        } else if let burst = whole("burst", 1...1_000_000, "a whole number of requests from 1 to 1000000") {
            tenant.burst = burst
        }
        tenant.storeMaxBytes = whole("storeMaxBytes", 1...Int.max, "a whole number of bytes, at least 1").map(
            Int64.init)
        tenant.storeMaxObjects = whole("storeMaxObjects", 1...Int.max, "a whole number of objects, at least 1")
        tenant.decodeMemory = whole(
            "decodeMemory", PipelineWorkers.memoryRange,
            "a whole number of bytes from \(PipelineWorkers.memoryRange.lowerBound) (16 MiB) to 2^40")
        tenant.edgeMaxAge = whole(
            "edgeMaxAge", 0...Int(EdgeCaching.maxAgeLimit),
            "a whole number of seconds from 0 (no shared cache keeps its downloads) to \(EdgeCaching.maxAgeLimit)"
        ).map(Int64.init)
        if let settings = row["settings"] {
            switch Self.settings(settings) {
            case .success(let values): tenant.settings = values
            case .failure(let why): problem("settings", why.problems.joined(separator: "; "))
            }
        }
        if let sources = row["sources"] {
            switch Self.sources(sources) {
            case .success(let rules): tenant.sources = rules
            case .failure(let why): problem("sources", why.problems.joined(separator: "; "))
            }
        }
        return (tenant, problems)
    }

    /// Pipeline settings a tenant may hold: every row but those that read a file.
    static let notPerTenant: Set<String> = ["categories"]

    /// `{"qualityTarget": 85, "androidMaxBytes": 40000, …}`: pipeline settings by their keys,
    /// each value read by its row as a request's term or a flag would be.
    static func settings(_ value: JSONValue) -> Result<[String: String], TenantFileError> {
        guard case .object(let members) = value else {
            return .failure(TenantFileError(problems: ["an object of pipeline settings by key"]))
        }
        var problems: [String] = []
        var values: [String: String] = [:]
        for member in members {
            guard let setting = PipelineSettings.named(member.key), !notPerTenant.contains(member.key) else {
                let near = ServerSettings.nearest(member.key, among: PipelineSettings.all.map(\.key))
                problems.append(
                    "\"\(member.key)\" is not a pipeline setting a tenant may hold"
                        + (near.map { "; did you mean \"\($0)\"?" } ?? ""))
                continue
            }
            switch member.value {
            case .string(let text): values[setting.key] = text
            case .number(let text): values[setting.key] = text
            case .bool(let flag): values[setting.key] = flag ? "true" : "false"
            default: problems.append("\(member.key) is a string, a number or true/false")
            }
        }
        var probe = PipelineConfiguration()
        for refused in PipelineSettings.read({ values[$0] }, into: &probe) {
            problems.append("\(refused.setting.key): \(refused.refusal.said(refused.text))")
        }
        return problems.isEmpty ? .success(values) : .failure(TenantFileError(problems: problems))
    }

    /// `{"allow": [...], "deny": [...]}`.
    static func sources(_ value: JSONValue) -> Result<SourceRules, TenantFileError> {
        guard case .object(let members) = value else {
            return .failure(TenantFileError(problems: ["an object with \"allow\" and/or \"deny\" lists of hosts"]))
        }
        var problems: [String] = []
        var lists: [String: [String]] = [:]
        for member in members {
            guard ["allow", "deny"].contains(member.key) else {
                problems.append("\"\(member.key)\" is not allow or deny")
                continue
            }
            guard case .array(let items) = member.value else {
                problems.append("\(member.key) is a list of hosts")
                continue
            }
            for item in items {
                guard let host = item.stringValue else {
                    problems.append("\(member.key) holds a host name as a string")
                    continue
                }
                if let why = SourceRules.problem(host) {
                    problems.append(why)
                } else {
                    lists[member.key, default: []].append(host)
                }
            }
        }
        guard problems.isEmpty else { return .failure(TenantFileError(problems: problems)) }
        return .success(SourceRules(allow: lists["allow"] ?? [], deny: lists["deny"] ?? []))
    }

    /// A file tenant's id: the owners' grammar, and not a name the plain keys or anonymous
    /// callers go by.
    static func validID(_ id: String) -> Bool {
        StoreOwner.isValidID(id) && !id.hasPrefix("key-") && id != Tenants.anonymous
    }

    /// `sha256:<64 hex>` as its 32 bytes.
    static func digest(_ text: String) -> [UInt8]? {
        guard text.hasPrefix("sha256:") else { return nil }
        let hex = Array(text.utf8.dropFirst(7))
        guard hex.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(hex[i]), let low = Self.nibble(hex[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func integer(_ value: JSONValue) -> Int? {
        guard case .number(let text) = value, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }
}

/// What is wrong with a tenants file, a line each.
struct TenantFileError: Error, Sendable {
    var problems: [String]
}
