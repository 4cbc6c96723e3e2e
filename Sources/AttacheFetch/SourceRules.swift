/// Which media hosts one caller (a tenant) may fetch from, on top of the fetch policy's own
/// allowlist and address policy, which no caller's rules can loosen: `example.com` names that
/// host, `*.example.com` (or `.example.com`) any host below it. A deny rule that matches refuses
/// (`source_not_allowed`); with any allow rule a host must match one. Checked on the URL and on
/// every redirect hop.
public struct SourceRules: Sendable, Hashable {
    public var allow: [String]
    public var deny: [String]

    public init(allow: [String] = [], deny: [String] = []) {
        self.allow = allow.map(Self.normalized)
        self.deny = deny.map(Self.normalized)
    }

    /// No rule: every host the policy allows.
    public var isEmpty: Bool { allow.isEmpty && deny.isEmpty }

    /// Whether `host` may be fetched from.
    public func permits(_ host: String) -> Bool {
        let host = host.lowercased()
        if deny.contains(where: { Self.matches($0, host) }) { return false }
        return allow.isEmpty || allow.contains { Self.matches($0, host) }
    }

    /// A rule as written is a host name, `*.suffix` or `.suffix`: nil when it is neither (a
    /// scheme, a path, a port, a blank, a wildcard elsewhere).
    public static func problem(_ rule: String) -> String? {
        let name =
            rule.hasPrefix("*.") ? String(rule.dropFirst(2)) : rule.hasPrefix(".") ? String(rule.dropFirst()) : rule
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253,
            labels.allSatisfy({ label in
                !label.isEmpty && label.utf8.count <= 63
                    && label.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 < 0x80 && isAlnum($0) }
            })
        else { return "'\(rule)' is not a host name, *.suffix or .suffix" }
        return nil
    }

    private static func isAlnum(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The rules as the transfer's C list: `+rule` and `-rule`.
    var transferRules: [String] { allow.map { "+" + $0 } + deny.map { "-" + $0 } }

    /// `.example.com` is written `*.example.com`; names are lower case.
    private static func normalized(_ rule: String) -> String {
        let rule = rule.lowercased()
        return rule.hasPrefix(".") ? "*" + rule : rule
    }

    static func matches(_ rule: String, _ host: String) -> Bool {
        if rule == host { return true }
        guard rule.hasPrefix("*.") else { return false }
        let suffix = rule.dropFirst()
        return host.count > suffix.count && host.hasSuffix(suffix)
    }
}
