public import AttacheStore

/// The store's quotas, declared once: serve's rows (lifted into its configuration's store) and
/// the options of every command that opens a store (`process`, `batch`, the `store` and `token`
/// commands), with one meaning, range and refusal each.
public enum StoreSettings {
    public static let all: [SettingRow<StoreConfiguration>] = [
        SettingRow(
            key: "storeMaxBytes", help: "Byte quota of the store.",
            reader: .integer(\.maxBytes, StoreConfiguration.maxBytesRange)),
        SettingRow(
            key: "storeMaxObjects", help: "Object quota of the store.",
            reader: .integer(\.maxObjects, StoreConfiguration.maxObjectsRange)),
    ]

    /// The row of `key` (one of ``all``'s).
    public static func named(_ key: String) -> SettingRow<StoreConfiguration> {
        all.first { $0.key == key } ?? all[0]
    }
}
