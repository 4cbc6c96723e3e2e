import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import Configuration
import Foundation

/// One reading of the settings: typed reads of the table's keys, each bad value one problem
/// (naming the flag, the variable and the file key), and the settings read group by group.
final class SettingsReading {
    private let reader: ConfigReader
    private let environment: [String: String]
    private(set) var problems: [String] = []
    private(set) var notes: [String] = []

    init(_ reader: ConfigReader, environment: [String: String]) {
        self.reader = reader
        self.environment = environment
    }

    // MARK: - Reads

    /// The value as text, whatever type the provider holds it as; nil when not set.
    func text(_ key: String) -> String? {
        let secret = ServerSettings.setting(key).secret
        if let value = reader.string(forKey: ConfigKey(key), isSecret: secret) { return value }
        if let value = reader.int(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
        if let value = reader.double(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
        if let value = reader.bool(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
        if let value = reader.stringArray(forKey: ConfigKey(key), isSecret: secret) {
            return value.joined(separator: ",")
        }
        return nil
    }

    /// `--flag / ATTACHE_VARIABLE / "key"`, for messages.
    func named(_ key: String) -> String {
        let s = ServerSettings.setting(key)
        return "\(s.flag) / \(s.environment) / \"\(s.key)\""
    }

    func problem(_ key: String, _ text: String) {
        problems.append("\(named(key)): \(text)")
    }

    /// Reads every row that reads itself (``SettingRow/readsItself``) into `configuration`: a
    /// value refused is a problem, and the default stays.
    func rows(_ rows: [ServerSettings.Setting], into configuration: inout ServerConfiguration) {
        for row in rows where row.readsItself {
            guard let value = text(row.key) else { continue }
            do throws(SettingRefusal) {
                try row.read(value, into: &configuration, given: text)
            } catch {
                problem(row.key, error.said(value))
            }
        }
    }

    // The settings read by hand below are judged by the rows' parsers (``SettingValue``): one
    // rule and one refusal for each kind of value, on every surface.

    /// The value of `key` by `parse`, or `fallback` when it is not set or is refused (a problem).
    func parsed<T>(_ key: String, _ fallback: T, _ parse: (String) throws(SettingRefusal) -> T) -> T {
        guard let value = text(key) else { return fallback }
        do {
            return try parse(value)
        } catch {
            problem(key, error.said(value))
            return fallback
        }
    }

    func integer<T: FixedWidthInteger>(_ key: String, _ range: ClosedRange<T>, _ fallback: T) -> T {
        parsed(key, fallback) { text throws(SettingRefusal) in try SettingValue.wholeNumber(text, range) }
    }

    func flag(_ key: String) -> Bool {
        parsed(key, false, SettingValue.switchValue)
    }

    func duration(
        _ key: String, _ range: ClosedRange<Duration>, _ fallback: Duration, wholeSeconds: Bool = false
    ) -> Duration {
        parsed(key, fallback) { text throws(SettingRefusal) in
            wholeSeconds
                ? try SettingValue.wholeSeconds(text, range) : try SettingValue.duration(text, range)
        }
    }

    /// A file of at most 1 MiB that the setting names.
    func file(_ key: String, _ path: String) -> Data? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
            problem(key, "cannot read '\(path)' (or it is over 1 MiB)")
            return nil
        }
        return data
    }

    // MARK: - Groups

    /// The store: a directory (default under XDG_DATA_HOME) or a shared one, and its quotas.
    func store() -> ServerConfiguration {
        let storeRoot: String
        if let root = text("store"), !root.isEmpty {
            storeRoot = root
        } else if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            storeRoot = data + "/attache/store"
        } else {
            storeRoot = (environment["HOME"] ?? ".") + "/.local/share/attache/store"
        }
        // The quotas are read by their rows (ServerSettings.all), after this.
        var configuration = ServerConfiguration(store: StoreConfiguration(root: storeRoot))
        // Read (and checked) whatever the store: a replica's tuning may be set for a fleet that
        // runs both kinds of store.
        let grace = duration(
            "catalogOutageGrace", .zero...(.seconds(3600)), SharedStoreConfiguration.defaultOutageGrace)
        let timeout = duration(
            "catalogTimeout", .milliseconds(100)...(.seconds(600)), SharedStoreConfiguration.defaultTimeout)
        guard SharedStoreConfiguration.names(storeRoot) else {
            for key in ["catalogOutageGrace", "catalogTimeout", "blobCache"] where text(key) != nil {
                notes.append("\(named(key)) is set; only a postgres:// store uses it (this store is a directory)")
            }
            // Where the bytes go is not tuning: a bucket named for a directory store is a store
            // that is not the one meant.
            if text("blobs") != nil { problem("blobs", "only a postgres:// store keeps its bytes in a bucket") }
            return configuration
        }
        do {
            configuration.store.shared = try SharedStoreConfiguration.parse(
                store: storeRoot, blobs: text("blobs"), environment: environment, cache: text("blobCache"),
                defaultCache: SharedStoreConfiguration.defaultCacheDirectory(environment: environment))
            configuration.store.shared?.catalogOutageGrace = grace
            configuration.store.shared?.catalogTimeout = timeout
        } catch {
            problem("store", error.message)
        }
        return configuration
    }

    /// Where it listens and the attachments' public base URL.
    func listen(_ configuration: inout ServerConfiguration) {
        configuration.host = text("host") ?? configuration.host
        if !ServerSettings.isListenAddress(configuration.host) {
            problem(
                "host",
                "'\(configuration.host)' is not an address or host name to listen on "
                    + "(127.0.0.1, ::1, 0.0.0.0, localhost)")
        }
        configuration.port = integer("port", 0...65_535, configuration.port)
        // A base URL given is read by its row (PipelineSettings); without one, the address's.
        if text("baseUrl") == nil {
            let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            configuration.pipeline.baseURL = "http://\(host):\(configuration.port)/attachments"
        }
    }

    /// Who may call: the API keys (and their files), or anonymous callers.
    func callers(_ configuration: inout ServerConfiguration) {
        var keys = (text("apiKeys") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for file in (text("apiKeyFiles") ?? "").split(separator: ",") {
            guard let data = self.file("apiKeyFiles", file.trimmingCharacters(in: .whitespaces)) else { continue }
            keys += String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        keys = keys.filter { !$0.isEmpty }
        if keys.contains(where: { $0.count < 16 || $0.contains { $0 == " " || !$0.isASCII } }) {
            problem("apiKeys", "every API key must be at least 16 printable ASCII characters")
        }
        configuration.apiKeys = keys
        if text("tenants") == TenantOrigin.catalogName {
            configuration.tenantsInCatalog = true
            if configuration.store.shared == nil {
                problem(
                    "tenants",
                    "'catalog' reads the tenants a postgres:// store keeps for its replicas; "
                        + "this store is a directory: give a tenants file (./catalog for a file of that name)")
            }
        } else if let path = text("tenants"), !path.isEmpty {
            configuration.tenantsFile = path
            switch TenantTable.load(path) {
            case .success(let table):
                configuration.tenants = table
                if table.with(plainKeys: keys) == nil { problem("tenants", TenantTable.sharedKeyProblem) }
            case .failure(let error):
                for line in error.problems { problem("tenants", line) }
            }
        }
        if keys.isEmpty && configuration.tenants.tenants.isEmpty && !configuration.tenantsInCatalog
            && !configuration.allowAnonymous
        {
            problems.append(
                "no API key: give \(ServerSettings.setting("apiKeys").environment) or \(named("apiKeyFiles")), "
                    + "or allow anonymous callers with --allow-anonymous")
        }
    }

    /// The log's level and format.
    func logging() -> (level: String, format: String) {
        let level = (text("logLevel") ?? "info").lowercased()
        if !ServerSettings.logLevels.contains(level) {
            problem("logLevel", "'\(level)' is not a log level (\(ServerSettings.logLevelWords))")
        }
        let format = (text("logFormat") ?? "text").lowercased()
        if !["text", "json"].contains(format) { problem("logFormat", "'\(format)' is not text or json") }
        return (level, format)
    }

    /// Where traces go.
    func traces() -> ServerSettings.TraceSettings {
        var traces = ServerSettings.TraceSettings()
        if let endpoint = text("otelEndpoint"), !endpoint.isEmpty {
            if URL(string: endpoint).map({ ["http", "https"].contains($0.scheme ?? "") && $0.host != nil }) == true {
                traces.endpoint = endpoint
            } else {
                problem("otelEndpoint", "'\(endpoint)' is not an http:// or https:// URL")
            }
        }
        if let name = text("otelServiceName"), !name.isEmpty { traces.serviceName = name }
        let sampler = (text("otelSampler") ?? traces.sampler).lowercased()
        if ServerSettings.TraceSettings.samplers.contains(sampler) {
            traces.sampler = sampler
        } else {
            problem(
                "otelSampler",
                "'\(sampler)' is not one of " + ServerSettings.TraceSettings.samplers.sorted().joined(separator: ", "))
        }
        if let ratio = text("otelSamplerArg") {
            if let value = DecimalText.number(ratio), (0...1).contains(value) {
                traces.samplerRatio = value
            } else {
                problem("otelSamplerArg", "'\(ratio)' is not a ratio from 0 to 1")
            }
        }
        return traces
    }
}
