import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheServer
import AttacheStore
import Configuration
import Foundation
import Logging
import Metrics
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
            """
    )

    @Option(help: "JSON file of settings (keys as camelCase setting names). Also ATTACHE_CONFIG.")
    var config: String?

    @Flag(
        help:
            "Check every setting and open the store, print what would be served, and exit (0: ready to start, 2: a setting is wrong, 1: the store cannot be opened)."
    )
    var checkConfig = false

    @Option(help: Self.help("host")) var host: String?
    @Option(help: Self.help("port")) var port: String?
    @Option(help: Self.help("baseUrl")) var baseUrl: String?
    @Option(help: Self.help("store")) var store: String?
    @Option(help: Self.help("blobs")) var blobs: String?
    @Option(help: Self.help("blobCache")) var blobCache: String?
    @Option(help: Self.help("catalogOutageGrace")) var catalogOutageGrace: String?
    @Option(help: Self.help("catalogTimeout")) var catalogTimeout: String?
    @Option(help: Self.help("storeMaxBytes")) var storeMaxBytes: String?
    @Option(help: Self.help("storeMaxObjects")) var storeMaxObjects: String?
    @Option(help: Self.help("apiKeys")) var apiKeys: String?
    @Option(help: Self.help("apiKeyFiles")) var apiKeyFiles: String?
    @Flag(inversion: .prefixedNo, help: Self.help("allowAnonymous")) var allowAnonymous: Bool?
    @Option(help: Self.help("maxRequestBytes")) var maxRequestBytes: String?
    @Option(help: Self.help("deadline")) var deadline: String?
    @Option(help: Self.help("maxDeadline")) var maxDeadline: String?
    @Option(help: Self.help("maxConcurrent")) var maxConcurrent: String?
    @Option(help: Self.help("maxQueued")) var maxQueued: String?
    @Option(help: Self.help("retryAfter")) var retryAfter: String?
    @Option(help: Self.help("gracePeriod")) var gracePeriod: String?
    @Option(help: Self.help("workerNice")) var workerNice: String?
    @Option(help: Self.help("gcInterval")) var gcInterval: String?
    @Option(help: Self.help("maxSide")) var maxSide: String?
    @Option(help: Self.help("maxSources")) var maxSources: String?
    @Flag(inversion: .prefixedNo, help: Self.help("transcode")) var transcode: Bool?
    @Option(help: Self.help("videoPreset")) var videoPreset: String?
    @Option(help: Self.help("smallSide")) var smallSide: String?
    @Option(help: Self.help("androidMaxBytes")) var androidMaxBytes: String?
    @Option(help: Self.help("webMaxBytes")) var webMaxBytes: String?
    @Option(help: Self.help("webFormat")) var webFormat: String?
    @Flag(inversion: .prefixedNo, help: Self.help("faces")) var faces: Bool?
    @Option(help: Self.help("sealPlaceholder")) var sealPlaceholder: String?
    @Option(help: Self.help("categories")) var categories: String?
    @Option(help: Self.help("maxPayloadFetchBytes")) var maxPayloadFetchBytes: String?
    @Option(help: Self.help("maxPayloadStoreBytes")) var maxPayloadStoreBytes: String?
    @Option(help: Self.help("storeTtl")) var storeTtl: String?
    @Option(help: Self.help("tokenTtl")) var tokenTtl: String?
    @Flag(inversion: .prefixedNo, help: Self.help("allowLoopback")) var allowLoopback: Bool?
    @Flag(inversion: .prefixedNo, help: Self.help("receipts")) var receipts: Bool?
    @Flag(inversion: .prefixedNo, help: Self.help("allowPrivate")) var allowPrivate: Bool?
    @Option(help: Self.help("logLevel")) var logLevel: String?

    static func help(_ key: String) -> ArgumentHelp {
        let setting = ServerSettings.setting(key)
        return ArgumentHelp("\(setting.help) [\(setting.environment); default \(setting.defaultText)]")
    }

    func run() async throws {
        var flags: [String: String] = [:]
        let given: [(String, String?)] = [
            ("host", host),
            ("port", port),
            ("baseUrl", baseUrl),
            ("store", store),
            ("blobs", blobs),
            ("blobCache", blobCache),
            ("catalogOutageGrace", catalogOutageGrace),
            ("catalogTimeout", catalogTimeout),
            ("storeMaxBytes", storeMaxBytes),
            ("storeMaxObjects", storeMaxObjects),
            ("apiKeys", apiKeys),
            ("apiKeyFiles", apiKeyFiles),
            ("allowAnonymous", allowAnonymous.map(String.init)),
            ("maxRequestBytes", maxRequestBytes),
            ("deadline", deadline),
            ("maxDeadline", maxDeadline),
            ("maxConcurrent", maxConcurrent),
            ("maxQueued", maxQueued),
            ("retryAfter", retryAfter),
            ("gracePeriod", gracePeriod),
            ("workerNice", workerNice),
            ("gcInterval", gcInterval),
            ("maxSide", maxSide),
            ("maxSources", maxSources),
            ("transcode", transcode.map(String.init)),
            ("videoPreset", videoPreset),
            ("smallSide", smallSide),
            ("androidMaxBytes", androidMaxBytes),
            ("webMaxBytes", webMaxBytes),
            ("webFormat", webFormat),
            ("faces", faces.map(String.init)),
            ("sealPlaceholder", sealPlaceholder),
            ("categories", categories),
            ("maxPayloadFetchBytes", maxPayloadFetchBytes),
            ("maxPayloadStoreBytes", maxPayloadStoreBytes),
            ("storeTtl", storeTtl),
            ("tokenTtl", tokenTtl),
            ("allowLoopback", allowLoopback.map(String.init)),
            ("receipts", receipts.map(String.init)),
            ("allowPrivate", allowPrivate.map(String.init)),
            ("logLevel", logLevel),
        ]
        for (key, value) in given {
            if let value { flags[key] = value }
        }
        let environment = ProcessInfo.processInfo.environment
        let file = config ?? environment["ATTACHE_CONFIG"]
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

        if checkConfig {
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
                print(lines.joined(separator: "\n"))
            } catch {
                FileHandle.standardError.write(
                    Data("attache serve: cannot open the store (store / ATTACHE_STORE): \(error.message)\n".utf8))
                throw ExitCode(1)
            }
            return
        }

        let level = Logger.Level(rawValue: loaded.logLevel) ?? .info
        ImageProcessor.routeLibraryOutput(level <= .debug ? .logged : .hidden)
        LoggingSystem.bootstrap { label in
            var handler = LineLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10), .seconds(25),
        ]
        MetricsSystem.bootstrap(factory)

        let logger = Logger(label: "attache")
        let service: AttacheService
        do {
            service = try AttacheService(configuration: loaded.configuration) { registry.emitToString() }
        } catch {
            FileHandle.standardError.write(
                Data("attache serve: cannot open the store (store / ATTACHE_STORE): \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        let configuration = loaded.configuration
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
