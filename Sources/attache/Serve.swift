import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheServer
import AttacheStore
import AttacheWork
import Configuration
import Foundation
import Logging
import Metrics
import OTel
import Prometheus

/// `attache serve`: the service-extension backend over HTTP.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service: POST /v1/notifications, attachment downloads, health and metrics.",
        discussion: """
            Every setting comes from (first wins) its flag, its environment variable (ATTACHE_ and the \
            name in upper snake case, e.g. ATTACHE_MAX_QUEUED) or the JSON file given by --config \
            (keys in camelCase, e.g. {"maxQueued": 16}). All are checked before the service starts; \
            each problem is reported on its own line and the exit status is 2. SIGTERM or SIGINT stops \
            accepting, lets in-flight requests finish within --grace-period, and exits 0. API keys are \
            never logged.

            Settings (flag, variable, default):

            """ + settingsHelp
    )

    @Option(help: "JSON file of settings (keys as camelCase setting names). Also ATTACHE_CONFIG.")
    var config: String?

    @Flag(
        help:
            "Check every setting and open the store, print what would be served, and exit (0: ready to start, 2: a setting is wrong, 1: the store cannot be opened)."
    )
    var checkConfig = false

    /// Every setting's flag (`--max-side 2048`, `--max-side=2048`, `--faces`, `--no-faces`), read
    /// against ``ServerSettings/all``: the table is the one place a setting is declared.
    @Argument(
        parsing: .allUnrecognized, help: ArgumentHelp("The settings below, as flags.", visibility: .hidden),
        completion: .list(ServerSettings.all.flatMap { SettingFlags.words(flag: $0.flag, boolean: $0.boolean) }))
    var settings: [String] = []

    /// The settings as `--help` lists them: flag, variable, default and meaning, from the table.
    static var settingsHelp: String {
        ServerSettings.all.map { setting in
            let flag = setting.boolean ? "--[no-]\(setting.flag)" : "--\(setting.flag) <value>"
            return "\(flag) (\(setting.environment); \(setting.defaultText)): \(setting.help)"
        }.joined(separator: "\n\n")
    }

    func validate() throws { _ = try Self.flags(settings) }

    /// The flags given, by setting key; a flag that names no setting is refused.
    static func flags(_ arguments: [String]) throws -> [String: String] {
        let parsed = try SettingFlags.parse(arguments) { flag in
            ServerSettings.all.first { "--" + $0.flag == flag }.map { .init(key: $0.key, boolean: $0.boolean) }
        }
        if let extra = parsed.positionals.first {
            throw ValidationError("unknown argument '\(extra)' (attache serve takes its settings as flags)")
        }
        return parsed.values
    }

    func run() async throws {
        let loaded = try await loadSettings()
        if checkConfig { return try Self.checkConfiguration(loaded) }
        let registry = Self.bootstrap(loaded)
        let logger = Logger(label: "attache")
        for note in loaded.notes { logger.notice("setting", metadata: ["note": "\(note)"]) }
        let traces: TraceExport?
        do {
            traces = try TraceExport.start(loaded.traces, loaded.traceEnvironment, logger: logger)
        } catch {
            FileHandle.standardError.write(Data("attache serve: traces cannot be set up: \(error)\n".utf8))
            throw ExitCode(2)
        }
        // The clients' connections are counted against this limit, less a reserve
        // (ConnectionLimits); the soft limit of 1,024 is for programs that use select().
        ConnectionLimits.raiseDescriptorLimit()
        let service: AttacheService
        do {
            service = try AttacheService(configuration: loaded.configuration) { registry.emitToString() }
        } catch {
            FileHandle.standardError.write(
                Data("attache serve: cannot open the store (store / ATTACHE_STORE): \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        // Whatever is logged until the end is written before the process exits, after the
        // spans still buffered are sent.
        defer { LogWriter.shared.flush() }
        do {
            try await run(service, configuration: loaded.configuration, logger: logger)
        } catch {
            await traces?.finish()
            throw error
        }
        await traces?.finish()
    }

    /// Every setting read (flags, environment, file) and checked; each problem is said and
    /// the command exits 2.
    private func loadSettings() async throws -> ServerSettings.Loaded {
        let flags = try Self.flags(settings)
        let environment = ProcessInfo.processInfo.environment
        let file = config ?? environment["ATTACHE_CONFIG"]
        // A misspelt or repeated key is refused, not ignored or taken last.
        if let file, case let problems = ServerSettings.fileProblems(file), !problems.isEmpty {
            for problem in problems { FileHandle.standardError.write(Data("attache serve: \(problem)\n".utf8)) }
            throw ExitCode(2)
        }
        let reader: ConfigReader
        do {
            reader = try await ServerSettings.reader(flags: flags, environment: environment, file: file)
        } catch {
            FileHandle.standardError.write(Data("attache serve: cannot read --config \(file ?? ""): \(error)\n".utf8))
            throw ExitCode(2)
        }
        let loaded = ServerSettings.load(reader, environment: environment)
        guard loaded.problems.isEmpty else {
            for problem in loaded.problems {
                FileHandle.standardError.write(Data("attache serve: \(problem)\n".utf8))
            }
            throw ExitCode(2)
        }
        return loaded
    }

    /// `--check-config`: opens the store and prints what would be served.
    private static func checkConfiguration(_ loaded: ServerSettings.Loaded) throws {
        do {
            let service = try AttacheService(configuration: loaded.configuration)
            let configuration = loaded.configuration
            var store: String = configuration.store.root
            if let shared = configuration.store.shared {
                store = shared.postgresDescription + " + " + shared.blobs.description
            }
            let anonymous: String = configuration.allowAnonymous ? " (anonymous callers allowed)" : ""
            let lines: [String] = [
                "attache serve: the settings are valid",
                "  listen       \(configuration.host):\(configuration.port)",
                "  attachments  \(service.pipeline.configuration.baseURL)",
                "  store        \(store)",
                "  api keys     \(configuration.apiKeys.count)" + anonymous,
                "  pipeline     \(configuration.maxConcurrent) at once, \(configuration.maxQueued) queued",
            ]
            print((lines + loaded.notes.map { "  note         " + $0 }).joined(separator: "\n"))
        } catch {
            FileHandle.standardError.write(
                Data("attache serve: cannot open the store (store / ATTACHE_STORE): \(error.message)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The process's logging (lines through ``LogWriter``; a line written inside a span says
    /// which: `trace_id`, `span_id`) and metrics (a Prometheus registry, returned for `/metrics`).
    private static func bootstrap(_ loaded: ServerSettings.Loaded) -> PrometheusCollectorRegistry {
        let level = Logger.Level(rawValue: loaded.logLevel) ?? .info
        ImageProcessor.routeLibraryOutput(level <= .debug ? .logged : .hidden)
        LoggingSystem.bootstrap(
            { label, provider in
                var handler = LineLogHandler(label: label)
                handler.logLevel = level
                handler.json = loaded.logFormat == "json"
                handler.metadataProvider = provider
                return handler
            }, metadataProvider: loaded.traceEnvironment.wanted ? OTel.makeLoggingMetadataProvider() : nil)
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10), .seconds(25),
        ]
        // What `quality auto` chose: the score reached and the quality number written.
        factory.valueHistogramBuckets["attache_quality_score"] = [30, 50, 60, 65, 70, 75, 80, 85, 90, 95]
        factory.valueHistogramBuckets["attache_quality_chosen"] = [30, 50, 60, 70, 75, 80, 85, 90, 95, 100]
        MetricsSystem.bootstrap(factory)
        return registry
    }

    private func run(_ service: AttacheService, configuration: ServerConfiguration, logger: Logger) async throws {
        if let why = ImageProcessor.facesUnavailable {
            // The setting would have stopped the start; a request's `faces=true` is what is left.
            logger.notice("faces not looked for when a request asks", metadata: ["reason": "\(why)"])
        }
        service.runtime.apply()
        try await service.run(logger: logger) { port in
            logger.info(
                "listening",
                metadata: [
                    "address": "http://\(configuration.host):\(port)/",
                    "attachments": "\(service.pipeline.configuration.baseURL)",
                    "store":
                        "\(configuration.store.shared.map { "\($0.postgresDescription) + \($0.blobs.description)" } ?? configuration.store.root)",
                    "max_concurrent": "\(configuration.maxConcurrent)",
                    "max_queued": "\(configuration.maxQueued)",
                ])
        }
    }
}
