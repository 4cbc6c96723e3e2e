import AttacheBase
public import AttacheCore
import AttacheStore

extension ServerSettings {
    /// The configuration's own defaults, which the rows that read themselves show.
    static let defaults = ServerConfiguration(store: StoreConfiguration(root: ""))
}

extension SettingRow where Configuration == ServerConfiguration {
    /// A setting read straight into the configuration by `reader` — its parser, its range and
    /// where it goes — and its default, the configuration's own (`default` only where that
    /// value would mislead: one that follows the machine's cores). Such a row is the whole of the
    /// setting: its flag, variable, file key, `--help` line, `--check-config` problem and its
    /// default in the docs table all come from it.
    init(_ key: String, _ help: String, _ reader: Reader, default shown: String? = nil) {
        self.init(key: key, help: help, reader: reader, default: shown)
    }

    /// The default as `--help` and the docs show it.
    public var defaultText: String { shownDefault ?? shown(ServerSettings.defaults) }
}
