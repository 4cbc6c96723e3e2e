import AttacheBase
public import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import AttacheWork
public import Configuration
public import Foundation

/// Every setting of `attache serve`, read through swift-configuration from (first wins) the
/// command line, the environment (`ATTACHE_` + the key in upper snake case) and an optional
/// JSON file (keys as written here), then checked: each problem gets one message, and the
/// service does not start while there is any.
public enum ServerSettings {
    /// One setting of serve: a row of the one settings table (``SettingRow``), read into the
    /// service's configuration; the pipeline's rows are lifted into it.
    public typealias Setting = SettingRow<ServerConfiguration>

    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The settings, in the order `--help` lists them.
    public static let all: [Setting] =
        [
            .init(
                "host", "Address to listen on.",
                .text(\.host, accepted: "an address or host name to listen on (127.0.0.1, ::1, 0.0.0.0, localhost)") {
                    isListenAddress($0) ? $0 : nil
                }),
            .init("port", "Port to listen on (0: any free port, logged).", .integer(\.port, 0...65_535)),
            .init(
                key: "store", help: "Store directory, or postgres://… for a shared store (with blobs).",
                defaultText: "$XDG_DATA_HOME/attache/store or ~/.local/share/attache/store", secret: false),
            .init(
                key: "blobs",
                help:
                    "Bucket of a shared store's object bytes: s3://bucket[/prefix] (endpoint and keys from the environment).",
                defaultText: "none", secret: false),
            .init(
                key: "blobCache",
                help: "A shared store's local copies of the objects served here (none: stream every download).",
                defaultText: "$XDG_CACHE_HOME/attache/blobs or ~/.cache/attache/blobs", secret: false),
            .init(
                "catalogOutageGrace",
                "While a shared store's catalog is away, objects whose row this replica read within this long are still "
                    + "served to valid tokens (0s: none; revocations are honoured within it).",
                .duration(\.catalogOutageGrace, .zero...(.seconds(3600)))),
            .init(
                "catalogTimeout",
                "How long one catalog statement, or connecting to the catalog, may take before it fails.",
                .duration(\.catalogTimeout, .milliseconds(100)...(.seconds(600)))),
        ]
        // The store's quotas: the options every command that opens a store takes.
        + StoreSettings.all.map { $0.lifted(\.store) }
        + [
            .init(
                key: "apiKeys", help: "API keys accepted (comma-separated; several for rotation).", defaultText: "none",
                secret: true),
            .init(
                key: "apiKeyFiles", help: "Files of API keys, one per line (comma-separated list of files).",
                defaultText: "none", secret: false),
            .init(
                key: "tenants",
                help:
                    "A tenants file: named tenants with key digests, shares, rates and media hosts (read again on SIGHUP and on change); catalog: those a postgres:// store keeps for its replicas.",
                defaultText: "none", secret: false),
            .init(
                "allowAnonymous", "Accept POST /v1/notifications without an API key (loopback demos).",
                .flag(\.allowAnonymous)),
            .init(
                "maxRequestBytes", "Largest request body (bytes); larger is 413.",
                .integer(\.maxRequestBytes, 2...(1 << 20))),
            .init(
                "maxDeadline", "Longest deadline a request may ask for.",
                .duration(\.maxDeadline, .milliseconds(1)...(.seconds(3600)))),
            .init(
                "maxConcurrent", "Payloads in the pipeline at once (fetching or transforming).",
                .integer(\.maxConcurrent, 1...4096), default: "\(16 * cores) (16 × the cores)"),
            .init(
                "maxQueued", "Payloads waiting for a slot; beyond them, 503.", .integer(\.maxQueued, 0...1_000_000),
                default: "\(4 * cores) (4 × the cores)"),
            .init(
                "maxDecodeMemory",
                "Bytes the decodes may hold together: one waits, before it allocates, until it fits (not the clients' count).",
                .integer(\.maxDecodeMemory, PipelineWorkers.memoryRange),
                default: "\(PipelineWorkers.defaultMemory) (96 MiB × the cores, at most a quarter of the memory)"),
            .init("retryAfter", "Retry-After of a 503 (seconds).", .integer(\.retryAfterSeconds, 1...3600)),
            .init(
                "headTimeout",
                "Time a request head may take from its first byte (a new connection's start) to its last.",
                .duration(\.connections.headTimeout, .seconds(1)...(.seconds(3600)))),
            .init(
                "bodyTimeout", "Time between two reads of a request body.",
                .duration(\.connections.bodyTimeout, .seconds(1)...(.seconds(3600)))),
            .init(
                "idleTimeout", "Time a kept-alive connection may wait for its next request.",
                .duration(\.connections.idleTimeout, .seconds(1)...(.seconds(3600)))),
            .init(
                "sendTimeout", "Time an answer may go without the client reading any of it.",
                .duration(\.connections.sendTimeout, .seconds(1)...(.seconds(3600)))),
            .init(
                "maxConnections",
                "Connections open at once; the newest beyond is closed as it is accepted (0: from the descriptor limit).",
                .integer(\.connections.maxConnections, 0...10_000_000),
                default: "0 ((descriptor limit − 64 − 4 × max-concurrent) / 2)"),
            .init(
                "gracePeriod", "Time in-flight requests get after SIGTERM/SIGINT.",
                .duration(\.gracePeriod, .zero...(.seconds(3600)))),
            .init(
                "workerNice", "Nice value of the decoding and fetching threads (0-19), below request handling.",
                .integer(\.workerNice, 0...19)),
            .init(
                "eventLoopNice",
                "Nice value of the event loop threads (-20-0), above request work; below 0 needs CAP_SYS_NICE or LimitNICE.",
                .integer(\.eventLoopNice, -20...0)),
            .init(
                "gcInterval", "Store garbage collection interval (0: never).",
                .duration(\.collectionInterval, .zero...(.seconds(86_400 * 7)))),
        ]
        // How payloads are treated: the rows `process` and `batch` read too, and requests where
        // a row has a query term.
        + PipelineSettings.all.map { row in
            row.lifted(\.pipeline, default: row.key == "baseUrl" ? "http://<host>:<port>/attachments" : nil)
        }
        + [
            .init(
                "edgeMaxAge",
                "How long a shared cache (an edge, a CDN) may keep a download, within its token's life (0s: private).",
                .wholeSeconds(\.edgeMaxAge, .zero...(.seconds(EdgeCaching.maxAgeLimit)))),
            .init(
                "edgeStale",
                "How long past that a shared cache may serve a download while the origin cannot answer or is asked "
                    + "again, within its token's life (0s: never).",
                .wholeSeconds(\.edgeStale, .zero...(.seconds(7 * 86_400)))),
            .init(
                "receipts", "Take delivery receipts: POST to an attachment's own URL (the device kit's report).",
                .flag(\.receipts)),
        ]
        // What a fetch may reach: the switches every command that fetches takes.
        + AddressSettings.all.map { $0.lifted(\.fetch) }
        + [
            .init("logLevel", logLevelWords + ".", .choice(\.logLevel, logLevels.map { ($0, $0) })),
            .init(
                "logFormat", "Log lines as text or json (one object a line).",
                .choice(\.logFormat, [("text", "text"), ("json", "json")])),
            .init(
                "otelEndpoint",
                "OTLP/HTTP collector traces are sent to (http://host:4318; /v1/traces is added). Traces are off without "
                    + "it or OTEL_EXPORTER_OTLP_ENDPOINT; the OTEL_* variables win over these settings.",
                TraceSettings.endpoint),
            .init(
                key: "otelServiceName", help: "service.name of the traces (OTEL_SERVICE_NAME wins).",
                defaultText: "attache"),
            .init(
                "otelSampler",
                "Which traces are kept: parentbased_always_on, parentbased_always_off, parentbased_traceidratio, "
                    + "always_on, always_off or traceidratio (OTEL_TRACES_SAMPLER wins).",
                .choice(\.traces.sampler, TraceSettings.samplers.sorted().map { ($0, $0) })),
            .init(
                "otelSamplerArg", "The ratio of a traceidratio sampler, 0 to 1 (OTEL_TRACES_SAMPLER_ARG wins).",
                TraceSettings.ratio),
        ]

    /// The log levels `logLevel` takes, most to least verbose.
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
    static let logLevelWords = logLevels.dropLast().joined(separator: ", ") + " or " + logLevels.last!

    /// The setting `key` names (every key this file reads is one of ``all``: a test reads them).
    public static func setting(_ key: String) -> Setting {
        all.first { $0.key == key } ?? Setting(key: key, help: "", defaultText: "", secret: true)
    }

    /// What was read, with every problem found.
    public struct Loaded: Sendable {
        public var configuration: ServerConfiguration
        public var logLevel: String
        /// `text` or `json`.
        public var logFormat = "text"
        /// Where traces go.
        public var traces = TraceSettings()
        /// The process's `OTEL_*` environment, checked against what this build can honour.
        public var traceEnvironment: TraceEnvironment
        public var problems: [String]
        /// Settings accepted that do nothing here, and what was changed to be honoured: logged
        /// at start.
        public var notes: [String] = []
    }

    /// Where traces go (OpenTelemetry, OTLP/HTTP), as the settings say; the process's `OTEL_*`
    /// environment is applied over them where traces are set up.
    public struct TraceSettings: Sendable {
        /// The collector's base URL; nil: none set here.
        public var endpoint: String?
        public var serviceName = "attache"
        public var sampler = "parentbased_always_on"
        public var samplerRatio = 1.0

        public init() {}

        /// `otelEndpoint`: an http(s) URL with a host, or none.
        static let endpoint = Setting.Reader(
            read: { text, configuration, _ in
                guard !text.isEmpty, text != "none" else {
                    configuration.traces.endpoint = nil
                    return
                }
                guard URL(string: text).map({ ["http", "https"].contains($0.scheme ?? "") && $0.host != nil }) == true
                else { throw SettingRefusal(accepted: "an http:// or https:// URL") }
                configuration.traces.endpoint = text
            }, shown: { $0.traces.endpoint ?? "none" })

        /// `otelSamplerArg`: a ratio from 0 to 1.
        static let ratio = Setting.Reader(
            read: { text, configuration, _ in
                guard let value = DecimalText.number(text), (0...1).contains(value) else {
                    throw SettingRefusal(accepted: "a ratio from 0 to 1")
                }
                configuration.traces.samplerRatio = value
            },
            shown: { configuration in
                let ratio = configuration.traces.samplerRatio
                return ratio == ratio.rounded() ? String(Int(ratio)) : String(ratio)
            })

        /// The sampler names OpenTelemetry defines that this build takes.
        public static let samplers: Set<String> = [
            "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
            "parentbased_traceidratio",
        ]
    }

    /// The providers in order: flags (already parsed into `flags`, key → text), the
    /// environment, then the JSON file at `file` (when given).
    public static func reader(
        flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String?
    ) async throws -> ConfigReader {
        var providers: [any ConfigProvider] = []
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, text) in flags {
            values[AbsoluteConfigKey([key])] = ConfigValue(.string(text), isSecret: setting(key).secret)
        }
        providers.append(InMemoryProvider(name: "flags", values: values))
        let secrets = Set(all.filter(\.secret).map(\.environment))
        providers.append(
            EnvironmentVariablesProvider(
                environmentVariables: environment, secretsSpecifier: .dynamic { key, _ in secrets.contains(key) }
            ).prefixKeys(with: "attache"))
        if let file {
            let location = InMemoryProvider(values: [
                AbsoluteConfigKey(["filePath"]): ConfigValue(.string(file), isSecret: false)
            ])
            providers.append(try await FileProvider<JSONSnapshot>(config: ConfigReader(provider: location)))
        }
        return ConfigReader(providers: providers)
    }

    /// Reads and checks every setting (ServerSettings+Load.swift: one function per group).
    public static func load(
        _ reader: ConfigReader, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Loaded {
        let read = SettingsReading(reader, environment: environment)
        var configuration = ServerConfiguration(store: StoreConfiguration(root: read.storeRoot()))
        read.rows(all, into: &configuration)
        read.store(&configuration)
        read.listen(&configuration)
        read.callers(&configuration)
        if let name = read.text("otelServiceName"), !name.isEmpty { configuration.traces.serviceName = name }
        let checked = TraceEnvironment(environment, settings: configuration.traces)
        return Loaded(
            configuration: configuration, logLevel: configuration.logLevel, logFormat: configuration.logFormat,
            traces: configuration.traces, traceEnvironment: checked, problems: read.problems + checked.problems,
            notes: read.notes + checked.notes)
    }

    /// An IP address or a host name (letters, digits, `-`, `.`; `:` for IPv6).
    static func isListenAddress(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 253
            && text.unicodeScalars.allSatisfy {
                ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0)
                    || "-.:".unicodeScalars.contains($0)
            }
    }
}
