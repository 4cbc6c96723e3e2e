import AttacheBase
import AttacheCore
import AttacheStore

extension ServerSettings {
    /// How a setting that goes straight into the configuration is read — its parser, its range
    /// and where it goes — and its default, the configuration's own. A row with a value is the
    /// whole of such a setting: its flag, variable, file key, `--help` line, `--check-config`
    /// problem and its default in the docs table all come from the row.
    public struct Value: Sendable {
        /// Reads the setting `key` into the configuration (a bad value is a problem, and the
        /// default stays).
        let read: @Sendable (SettingsReading, String, inout ServerConfiguration) -> Void
        /// The default as `--help` and the docs show it.
        let shown: @Sendable (ServerConfiguration) -> String
        let boolean: Bool

        /// A whole number within `range`.
        static func integer<T: FixedWidthInteger & Sendable>(
            _ path: any WritableKeyPath<ServerConfiguration, T> & Sendable, _ range: ClosedRange<T>
        ) -> Self {
            Self(
                read: { reading, key, configuration in
                    configuration[keyPath: path] = reading.integer(key, range, configuration[keyPath: path])
                }, shown: { "\($0[keyPath: path])" }, boolean: false)
        }

        /// A duration (`800ms`, `30s`, `5m`, `2h`, `7d`) within `range`.
        static func duration(
            _ path: any WritableKeyPath<ServerConfiguration, Duration> & Sendable, _ range: ClosedRange<Duration>
        ) -> Self {
            Self(
                read: { reading, key, configuration in
                    configuration[keyPath: path] = reading.duration(key, range, configuration[keyPath: path])
                }, shown: { DurationText.format($0[keyPath: path]) }, boolean: false)
        }

        /// A duration of whole seconds within `range`: a part of a second is refused, not
        /// rounded (a header that counts in seconds cannot say it).
        static func wholeSeconds(
            _ path: any WritableKeyPath<ServerConfiguration, Duration> & Sendable, _ range: ClosedRange<Duration>
        ) -> Self {
            Self(
                read: { reading, key, configuration in
                    configuration[keyPath: path] = reading.duration(
                        key, range, configuration[keyPath: path], wholeSeconds: true)
                }, shown: { DurationText.format($0[keyPath: path]) }, boolean: false)
        }

        /// A setting of how payloads are treated, read by its row in ``PipelineSettings/all``
        /// (with the settings read beside it) into the configuration's pipeline.
        static func pipeline(_ row: PipelineSetting) -> Self {
            Self(
                read: { reading, key, configuration in
                    guard let text = reading.text(key) else { return }
                    do throws(SettingRefusal) {
                        try row.read(text, into: &configuration.pipeline) { reading.text($0) }
                    } catch {
                        reading.problem(key, error.said(text))
                    }
                }, shown: { row.shown($0.pipeline) }, boolean: row.boolean)
        }

        /// A switch: `--name` / `--no-name`, true or false elsewhere.
        static func flag(_ path: any WritableKeyPath<ServerConfiguration, Bool> & Sendable) -> Self {
            Self(
                read: { reading, key, configuration in
                    if reading.text(key) != nil { configuration[keyPath: path] = reading.flag(key) }
                }, shown: { "\($0[keyPath: path])" }, boolean: true)
        }
    }

    /// The configuration's own defaults, which the rows with a value show.
    static let defaults = ServerConfiguration(store: StoreConfiguration(root: ""))
}

extension ServerSettings.Setting {
    /// A setting read straight into the configuration: `default` only where the configuration's
    /// value would mislead (one that follows the machine's cores).
    init(_ key: String, _ help: String, _ value: ServerSettings.Value, default shown: String? = nil) {
        self.init(
            key: key, help: help, defaultText: shown ?? value.shown(ServerSettings.defaults), secret: false,
            boolean: value.boolean)
        self.value = value
    }

    /// The row `pipeline` of ``PipelineSettings/all``, as `serve` reads it (`default` where the
    /// service's default is not the configuration's: the base URL follows the address).
    init(pipeline: PipelineSetting, default shown: String? = nil) {
        self.init(pipeline.key, pipeline.help, .pipeline(pipeline), default: shown)
    }
}
