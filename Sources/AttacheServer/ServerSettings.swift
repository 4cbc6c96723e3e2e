import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
public import Configuration
public import Foundation

/// Every setting of `attache serve`, read through swift-configuration from (first wins) the
/// command line, the environment (`ATTACHE_` + the key in upper snake case) and an optional
/// JSON file (keys as written here), then checked: each problem gets one message, and the
/// service does not start while there is any.
public enum ServerSettings {
    /// One setting: its key (camelCase), what it means and its default as text.
    public struct Setting: Sendable {
        public let key: String
        public let help: String
        public let defaultText: String
        /// A secret: never logged, never echoed in a message.
        public let secret: Bool
        /// A switch: `--name` / `--no-name` on the command line, true or false elsewhere.
        public var boolean = false

        /// `--kebab-case` flag name.
        public var flag: String {
            var out = ""
            for character in key {
                if character.isUppercase {
                    out += "-" + character.lowercased()
                } else {
                    out.append(character)
                }
            }
            return out
        }

        /// `ATTACHE_SNAKE_CASE` environment name.
        public var environment: String { "ATTACHE_" + flag.replacingOccurrences(of: "-", with: "_").uppercased() }
    }

    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The settings, in the order `--help` lists them.
    public static let all: [Setting] = [
        .init(key: "host", help: "Address to listen on.", defaultText: "127.0.0.1", secret: false),
        .init(key: "port", help: "Port to listen on (0: any free port, logged).", defaultText: "8080", secret: false),
        .init(
            key: "baseUrl",
            help: "Public base URL of the attachments; its path is where they are served (port 0: the bound port).",
            defaultText: "http://<host>:<port>/attachments", secret: false),
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
            key: "catalogOutageGrace",
            help:
                "While a shared store's catalog is away, objects whose row this replica read within this long are still "
                + "served to valid tokens (0s: none; revocations are honoured within it).",
            defaultText: "60s", secret: false),
        .init(
            key: "catalogTimeout",
            help: "How long one catalog statement, or connecting to the catalog, may take before it fails.",
            defaultText: "10s", secret: false),
        .init(key: "storeMaxBytes", help: "Byte quota of the store.", defaultText: "10000000000", secret: false),
        .init(key: "storeMaxObjects", help: "Object quota of the store.", defaultText: "1000000", secret: false),
        .init(
            key: "apiKeys", help: "API keys accepted (comma-separated; several for rotation).", defaultText: "none",
            secret: true),
        .init(
            key: "apiKeyFiles", help: "Files of API keys, one per line (comma-separated list of files).",
            defaultText: "none", secret: false),
        .init(
            key: "allowAnonymous", help: "Accept POST /v1/notifications without an API key (loopback demos).",
            defaultText: "false", secret: false, boolean: true),
        .init(
            key: "maxRequestBytes", help: "Largest request body (bytes); larger is 413.", defaultText: "65536",
            secret: false),
        .init(
            key: "deadline", help: "Deadline of a request that names none (800ms, 2s).", defaultText: "25s",
            secret: false),
        .init(
            key: "maxDeadline", help: "Longest deadline a request may ask for.", defaultText: "25s", secret: false),
        .init(
            key: "maxConcurrent", help: "Payloads in the pipeline at once (fetching or transforming).",
            defaultText: "\(8 * cores) (8 × the cores)",
            secret: false),
        .init(
            key: "maxQueued", help: "Payloads waiting for a slot; beyond them, 503.", defaultText: "\(4 * cores)",
            secret: false),
        .init(key: "retryAfter", help: "Retry-After of a 503 (seconds).", defaultText: "1", secret: false),
        .init(
            key: "gracePeriod", help: "Time in-flight requests get after SIGTERM/SIGINT.", defaultText: "10s",
            secret: false),
        .init(
            key: "workerNice", help: "Nice value of the decoding threads (0-19), below request handling.",
            defaultText: "5", secret: false),
        .init(
            key: "gcInterval", help: "Store garbage collection interval (0: never).", defaultText: "5m",
            secret: false),
        .init(key: "maxSide", help: "Longest side of image renditions.", defaultText: "1024", secret: false),
        .init(
            key: "format",
            help: "Still renditions as auto (Apple-safe), jpeg or webp; a request may ask with ?format=.",
            defaultText: "auto", secret: false),
        .init(
            key: "transcode",
            help:
                "Re-encode what does not fit: GIFs the budgets would clip to MP4, video over 50 MB or unplayable to H.264/AAC MP4, audio to AAC M4A.",
            defaultText: "true", secret: false, boolean: true),
        .init(
            key: "videoPreset", help: "libx264's preset for those encodes (ultrafast ... veryslow).",
            defaultText: "veryfast", secret: false),
        .init(key: "maxSources", help: "Media sources considered per payload.", defaultText: "8", secret: false),
        .init(
            key: "smallSide", help: "Longest side of the small rendition beside each image (0: none).",
            defaultText: "320", secret: false),
        .init(
            key: "androidMaxBytes",
            help: "Largest Android picture of an FCM message or OneSignal body, in bytes (FCM: 1 MB).",
            defaultText: "1000000", secret: false),
        .init(
            key: "webMaxBytes", help: "Largest web push picture of an FCM message or OneSignal body, in bytes.",
            defaultText: "1000000", secret: false),
        .init(
            key: "webFormat", help: "The web push picture as jpeg or webp (Chrome shows both).", defaultText: "jpeg",
            secret: false),
        .init(
            key: "faces",
            help: "Centre the Android, web and icon crops on the largest frontal face found (10-50 ms a picture).",
            defaultText: "false", secret: false, boolean: true),
        .init(
            key: "sealPlaceholder", help: "The alert a sealed payload shows until the device opens it.",
            defaultText: "New message", secret: false),
        .init(
            key: "categories", help: "Categories by kind: a JSON file of rules and actions.", defaultText: "none",
            secret: false),
        .init(
            key: "maxPayloadFetchBytes", help: "Bytes all of a payload's fetches may read.",
            defaultText: "100000000", secret: false),
        .init(
            key: "maxPayloadStoreBytes", help: "Bytes a payload may add to the store.", defaultText: "100000000",
            secret: false),
        .init(key: "storeTtl", help: "How long stored attachments live.", defaultText: "7d", secret: false),
        .init(key: "tokenTtl", help: "How long an attachment URL's token opens it.", defaultText: "7d", secret: false),
        .init(
            key: "receipts", help: "Take delivery receipts: POST to an attachment's own URL (the device kit's report).",
            defaultText: "false", secret: false, boolean: true),
        .init(
            key: "allowLoopback", help: "Fetch from 127.0.0.0/8 and ::1 (tests and demos).", defaultText: "false",
            secret: false, boolean: true),
        .init(
            key: "allowPrivate", help: "Fetch from private ranges (metadata addresses stay denied).",
            defaultText: "false", secret: false, boolean: true),
        .init(
            key: "logLevel", help: "trace, debug, info, notice, warning, error or critical.", defaultText: "info",
            secret: false),
        .init(
            key: "logFormat", help: "Log lines as text or json (one object a line).", defaultText: "text", secret: false
        ),
        .init(
            key: "otelEndpoint",
            help:
                "OTLP/HTTP collector traces are sent to (http://host:4318; /v1/traces is added). Traces are off without "
                + "it or OTEL_EXPORTER_OTLP_ENDPOINT; the OTEL_* variables win over these settings.",
            defaultText: "none", secret: false),
        .init(
            key: "otelServiceName", help: "service.name of the traces (OTEL_SERVICE_NAME wins).",
            defaultText: "attache",
            secret: false),
        .init(
            key: "otelSampler",
            help:
                "Which traces are kept: parentbased_always_on, parentbased_always_off, parentbased_traceidratio, "
                + "always_on, always_off or traceidratio (OTEL_TRACES_SAMPLER wins).",
            defaultText: "parentbased_always_on", secret: false),
        .init(
            key: "otelSamplerArg", help: "The ratio of a traceidratio sampler, 0 to 1 (OTEL_TRACES_SAMPLER_ARG wins).",
            defaultText: "1", secret: false),
    ]

    /// The setting `key` names (every key this file reads is one of ``all``: a test reads them).
    public static func setting(_ key: String) -> Setting {
        all.first { $0.key == key } ?? Setting(key: key, help: "", defaultText: "", secret: true)
    }

    /// The setting a command-line flag names (`--max-side`, or `--no-transcode` for a switch).
    public static func setting(flag: String) -> (setting: Setting, negated: Bool)? {
        if let found = all.first(where: { "--" + $0.flag == flag }) { return (found, false) }
        if let found = all.first(where: { $0.boolean && "--no-" + $0.flag == flag }) { return (found, true) }
        return nil
    }

    /// What was read, with every problem found.
    public struct Loaded: Sendable {
        public var configuration: ServerConfiguration
        public var logLevel: String
        /// `text` or `json`.
        public var logFormat = "text"
        /// Where traces go.
        public var traces = TraceSettings()
        public var problems: [String]
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

    /// Reads and checks every setting.
    public static func load(
        _ reader: ConfigReader, environment: [String: String] = ProcessInfo.processInfo.environment
    )
        -> Loaded
    {
        var problems: [String] = []
        func text(_ key: String) -> String? {
            let secret = setting(key).secret
            if let value = reader.string(forKey: ConfigKey(key), isSecret: secret) { return value }
            if let value = reader.int(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
            if let value = reader.double(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
            if let value = reader.bool(forKey: ConfigKey(key), isSecret: secret) { return String(value) }
            if let value = reader.stringArray(forKey: ConfigKey(key), isSecret: secret) {
                return value.joined(separator: ",")
            }
            return nil
        }
        func named(_ key: String) -> String {
            let s = setting(key)
            return "\(s.flag) / \(s.environment) / \"\(s.key)\""
        }
        func integer<T: FixedWidthInteger>(_ key: String, _ range: ClosedRange<T>, _ fallback: T) -> T {
            guard let value = text(key) else { return fallback }
            guard let number = T(value.trimmingCharacters(in: .whitespaces)), range.contains(number) else {
                problems.append(
                    "\(named(key)): '\(value)' is not a whole number from \(range.lowerBound) to \(range.upperBound)")
                return fallback
            }
            return number
        }
        func flag(_ key: String) -> Bool {
            guard let value = text(key) else { return false }
            switch value.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default:
                problems.append("\(named(key)): '\(value)' is not true or false")
                return false
            }
        }
        func duration(_ key: String, _ range: ClosedRange<Duration>, _ fallback: Duration) -> Duration {
            guard let value = text(key) else { return fallback }
            guard let parsed = DurationText.parse(value), range.contains(parsed) else {
                problems.append(
                    "\(named(key)): '\(value)' is not a duration (800ms, 30s, 5m, 2h, 7d) from "
                        + "\(DurationText.format(range.lowerBound)) to \(DurationText.format(range.upperBound))")
                return fallback
            }
            return parsed
        }

        let storeRoot: String
        if let root = text("store"), !root.isEmpty {
            storeRoot = root
        } else if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            storeRoot = data + "/attache/store"
        } else {
            storeRoot = (environment["HOME"] ?? ".") + "/.local/share/attache/store"
        }
        let storeDefaults = StoreConfiguration(root: storeRoot)
        var configuration = ServerConfiguration(
            store: StoreConfiguration(
                root: storeRoot,
                maxBytes: integer("storeMaxBytes", 1...Int64.max / 2, storeDefaults.maxBytes),
                maxObjects: integer("storeMaxObjects", 1...Int.max / 2, storeDefaults.maxObjects)))
        if SharedStoreConfiguration.names(storeRoot) {
            do {
                configuration.store.shared = try SharedStoreConfiguration.parse(
                    store: storeRoot, blobs: text("blobs"), environment: environment, cache: text("blobCache"),
                    defaultCache: SharedStoreConfiguration.defaultCacheDirectory(environment: environment))
                configuration.store.shared?.catalogOutageGrace = duration(
                    "catalogOutageGrace", .zero...(.seconds(3600)), SharedStoreConfiguration.defaultOutageGrace)
                configuration.store.shared?.catalogTimeout = duration(
                    "catalogTimeout", .milliseconds(100)...(.seconds(600)), SharedStoreConfiguration.defaultTimeout)
            } catch {
                problems.append("\(named("store")): \(error.message)")
            }
        } else {
            for key in ["catalogOutageGrace", "catalogTimeout"] where text(key) != nil {
                problems.append("\(named(key)): only a postgres:// store has a catalog")
            }
            if text("blobs") != nil {
                problems.append("\(named("blobs")): only a postgres:// store keeps its bytes in a bucket")
            }
            if text("blobCache") != nil {
                problems.append("\(named("blobCache")): only a postgres:// store keeps local copies of its objects")
            }
        }

        configuration.host = text("host") ?? configuration.host
        if !Self.isListenAddress(configuration.host) {
            problems.append(
                "\(named("host")): '\(configuration.host)' is not an address or host name to listen on "
                    + "(127.0.0.1, ::1, 0.0.0.0, localhost)")
        }
        configuration.port = integer("port", 0...65_535, configuration.port)
        if let base = text("baseUrl") {
            if let url = URL(string: base), let scheme = url.scheme, ["http", "https"].contains(scheme),
                url.host != nil, url.query == nil, url.fragment == nil
            {
                configuration.pipeline.baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
            } else {
                problems.append("\(named("baseUrl")): '\(base)' is not an http(s) URL without query or fragment")
            }
        } else {
            let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            configuration.pipeline.baseURL = "http://\(host):\(configuration.port)/attachments"
        }

        var keys = (text("apiKeys") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for file in (text("apiKeyFiles") ?? "").split(separator: ",") {
            let path = file.trimmingCharacters(in: .whitespaces)
            guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
                problems.append("\(named("apiKeyFiles")): cannot read '\(path)' (or it is over 1 MiB)")
                continue
            }
            keys += String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        keys = keys.filter { !$0.isEmpty }
        if keys.contains(where: { $0.count < 16 || $0.contains { $0 == " " || !$0.isASCII } }) {
            problems.append("\(named("apiKeys")): every API key must be at least 16 printable ASCII characters")
        }
        configuration.apiKeys = keys
        configuration.allowAnonymous = flag("allowAnonymous")
        if keys.isEmpty && !configuration.allowAnonymous {
            problems.append(
                "no API key: give \(setting("apiKeys").environment) or \(named("apiKeyFiles")), "
                    + "or allow anonymous callers with --allow-anonymous")
        }

        configuration.maxRequestBytes = integer("maxRequestBytes", 2...(1 << 20), configuration.maxRequestBytes)
        configuration.pipeline.deadline = duration(
            "deadline", .milliseconds(1)...(.seconds(3600)), configuration.pipeline.deadline)
        configuration.maxDeadline = duration(
            "maxDeadline", .milliseconds(1)...(.seconds(3600)), configuration.maxDeadline)
        configuration.maxConcurrent = integer("maxConcurrent", 1...4096, configuration.maxConcurrent)
        configuration.maxQueued = integer("maxQueued", 0...1_000_000, configuration.maxQueued)
        configuration.retryAfterSeconds = integer("retryAfter", 1...3600, configuration.retryAfterSeconds)
        configuration.gracePeriod = duration("gracePeriod", .zero...(.seconds(3600)), configuration.gracePeriod)
        configuration.workerNice = Int32(integer("workerNice", 0...19, Int(configuration.workerNice)))
        configuration.collectionInterval = duration(
            "gcInterval", .zero...(.seconds(86_400 * 7)), configuration.collectionInterval)
        configuration.pipeline.rendition.maxSide = integer(
            "maxSide", 1...32_767, configuration.pipeline.rendition.maxSide)
        if let format = text("format") {
            if let chosen = RenditionSpec.OutputFormat(rawValue: format.lowercased()) {
                configuration.pipeline.rendition.outputFormat = chosen
            } else {
                problems.append("\(named("format")): '\(format)' is not auto, jpeg or webp")
            }
        }
        if text("transcode") != nil { configuration.pipeline.rendition.video.enabled = flag("transcode") }
        if let preset = text("videoPreset") {
            if VideoEncoding.presets.contains(preset) {
                configuration.pipeline.rendition.video.preset = preset
            } else {
                problems.append(
                    "\(named("videoPreset")): '\(preset)' is not one of \(VideoEncoding.presets.joined(separator: ", "))"
                )
            }
        }
        configuration.pipeline.maxSources = integer("maxSources", 1...1000, configuration.pipeline.maxSources)
        configuration.pipeline.smallSide = integer("smallSide", 0...32_767, configuration.pipeline.smallSide)
        configuration.pipeline.targets[.android]?.maxBytes = integer(
            "androidMaxBytes", 1_000...100_000_000, TargetSpec(.android).maxBytes)
        configuration.pipeline.targets[.web]?.maxBytes = integer(
            "webMaxBytes", 1_000...100_000_000, TargetSpec(.web).maxBytes)
        if let format = text("webFormat") {
            switch format.lowercased() {
            case "jpeg": configuration.pipeline.targets[.web]?.format = .jpeg
            case "webp": configuration.pipeline.targets[.web]?.format = .webp
            default: problems.append("\(named("webFormat")): '\(format)' is not jpeg or webp")
            }
        }
        if text("faces") != nil {
            let faces = flag("faces")
            for target in TargetSpec.Target.allCases { configuration.pipeline.targets[target]?.faces = faces }
        }
        if let placeholder = text("sealPlaceholder") {
            if placeholder.utf8.count > 1000 {
                problems.append("\(named("sealPlaceholder")): \(placeholder.utf8.count) bytes; at most 1000")
            }
            configuration.pipeline.sealPlaceholder = placeholder
        }
        if let path = text("categories") {
            if let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 {
                do {
                    configuration.pipeline.categories = try CategorySet(json: data)
                } catch {
                    problems.append("\(named("categories")): '\(path)': \(error)")
                }
            } else {
                problems.append("\(named("categories")): cannot read '\(path)' (or it is over 1 MiB)")
            }
        }
        configuration.pipeline.maxPayloadFetchBytes = integer(
            "maxPayloadFetchBytes", 1...(1 << 40), configuration.pipeline.maxPayloadFetchBytes)
        configuration.pipeline.maxPayloadStoreBytes = integer(
            "maxPayloadStoreBytes", 1...(1 << 40), configuration.pipeline.maxPayloadStoreBytes)
        let maxTTL = Duration.seconds(100 * 365 * 86_400)
        configuration.pipeline.storeTTL =
            duration("storeTtl", .seconds(1)...maxTTL, .seconds(configuration.pipeline.storeTTL)).components.seconds
        configuration.pipeline.tokenTTL =
            duration("tokenTtl", .seconds(1)...maxTTL, .seconds(configuration.pipeline.tokenTTL)).components.seconds
        configuration.fetch.allowLoopback = flag("allowLoopback")
        configuration.receipts = flag("receipts")
        configuration.fetch.allowPrivate = flag("allowPrivate")
        let level = (text("logLevel") ?? "info").lowercased()
        if !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(level) {
            problems.append(
                "\(named("logLevel")): '\(level)' is not a log level "
                    + "(trace, debug, info, notice, warning, error or critical)")
        }
        let format = (text("logFormat") ?? "text").lowercased()
        if !["text", "json"].contains(format) {
            problems.append("\(named("logFormat")): '\(format)' is not text or json")
        }
        var traces = TraceSettings()
        if let endpoint = text("otelEndpoint"), !endpoint.isEmpty {
            if URL(string: endpoint).map({ ["http", "https"].contains($0.scheme ?? "") && $0.host != nil }) == true {
                traces.endpoint = endpoint
            } else {
                problems.append("\(named("otelEndpoint")): '\(endpoint)' is not an http:// or https:// URL")
            }
        }
        if let name = text("otelServiceName"), !name.isEmpty { traces.serviceName = name }
        let sampler = (text("otelSampler") ?? traces.sampler).lowercased()
        if TraceSettings.samplers.contains(sampler) {
            traces.sampler = sampler
        } else {
            problems.append(
                "\(named("otelSampler")): '\(sampler)' is not one of "
                    + TraceSettings.samplers.sorted().joined(separator: ", "))
        }
        if let ratio = text("otelSamplerArg") {
            if let value = Double(ratio), (0...1).contains(value) {
                traces.samplerRatio = value
            } else {
                problems.append("\(named("otelSamplerArg")): '\(ratio)' is not a ratio from 0 to 1")
            }
        }
        return Loaded(
            configuration: configuration, logLevel: level, logFormat: format, traces: traces, problems: problems)
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

/// `800ms`, `30s`, `5m`, `2h`, `7d` or a bare number of seconds.
enum DurationText {
    static func parse(_ text: String) -> Duration? {
        var text = Substring(text.trimmingCharacters(in: .whitespaces))
        if text.hasSuffix("ms") {
            guard let value = Int64(text.dropLast(2)), value >= 0 else { return nil }
            return .milliseconds(value)
        }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            text = text.dropLast()
        }
        guard let value = Int64(text), value >= 0 else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: unit)
        return overflow ? nil : .seconds(seconds)
    }

    static func format(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        if ms % 1000 != 0 { return "\(ms)ms" }
        let s = ms / 1000
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where s >= size && s % size == 0 {
            return "\(s / size)\(unit)"
        }
        return "\(s)s"
    }
}
