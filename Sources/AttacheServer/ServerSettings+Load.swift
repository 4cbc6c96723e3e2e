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

    /// A file of at most 1 MiB that the setting names.
    func file(_ key: String, _ path: String) -> Data? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
            problem(key, "cannot read '\(path)' (or it is over 1 MiB)")
            return nil
        }
        return data
    }

    // MARK: - Groups

    /// The store's root: the setting, else a directory under XDG_DATA_HOME (or the home's).
    func storeRoot() -> String {
        if let root = text("store"), !root.isEmpty { return root }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/attache/store" }
        return (environment["HOME"] ?? ".") + "/.local/share/attache/store"
    }

    /// A shared store (`postgres://…`): its bucket, local copies and the catalog's times (their
    /// rows read before this, whatever the store: a replica's tuning may be set for a fleet that
    /// runs both kinds of store).
    func store(_ configuration: inout ServerConfiguration) {
        let storeRoot = configuration.store.root
        guard SharedStoreConfiguration.names(storeRoot) else {
            for key in ["catalogOutageGrace", "catalogTimeout", "blobCache"] where text(key) != nil {
                notes.append("\(named(key)) is set; only a postgres:// store uses it (this store is a directory)")
            }
            // Where the bytes go is not tuning: a bucket named for a directory store is a store
            // that is not the one meant.
            if text("blobs") != nil { problem("blobs", "only a postgres:// store keeps its bytes in a bucket") }
            return
        }
        do {
            configuration.store.shared = try SharedStoreConfiguration.parse(
                store: storeRoot, blobs: text("blobs"), environment: environment, cache: text("blobCache"),
                defaultCache: SharedStoreConfiguration.defaultCacheDirectory(environment: environment))
            configuration.store.shared?.catalogOutageGrace = configuration.catalogOutageGrace
            configuration.store.shared?.catalogTimeout = configuration.catalogTimeout
        } catch {
            problem("store", error.message)
        }
    }

    /// The attachments' public base URL when none is given: the listening address's.
    func listen(_ configuration: inout ServerConfiguration) {
        // A base URL given is read by its row (PipelineSettings).
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
}
