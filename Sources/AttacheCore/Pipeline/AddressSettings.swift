public import AttacheFetch

/// The address policy's switches — what a fetch may reach — declared once: serve's rows (lifted
/// into its configuration's fetch policy) and the flags of every command that fetches
/// (`process`, `batch`, `preview`, `fetch`), with one meaning and one help each. They are not
/// rows of ``PipelineSettings``: no request term and no tenant's settings can loosen them.
public enum AddressSettings {
    public static let all: [SettingRow<FetchPolicy>] = [
        SettingRow(
            key: "allowLoopback", help: "Fetch from 127.0.0.0/8 and ::1 (tests and demos).",
            reader: .flag(\.allowLoopback)),
        SettingRow(
            key: "allowPrivate",
            help: "Fetch from private ranges (RFC 1918, 100.64/10, fc00::/7); metadata addresses stay denied.",
            reader: .flag(\.allowPrivate)),
        SettingRow(
            key: "httpsOnly", help: "Fetch only https URLs, on the first request and on every redirect.",
            reader: .flag(\.httpsOnly)),
    ]

    /// The row of `key` (one of ``all``'s).
    public static func named(_ key: String) -> SettingRow<FetchPolicy> {
        all.first { $0.key == key } ?? all[0]
    }
}
