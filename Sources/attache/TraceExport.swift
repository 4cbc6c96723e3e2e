import AttacheServer
import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Traces over OTLP/HTTP through swift-otel, for every command that runs payloads (`serve`,
/// `batch`, `process`): on when a collector is named (the `otelEndpoint` setting, or the
/// standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and not
/// turned off (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`). The other `OTEL_*`
/// variables (service name, resource attributes, sampler, protocol, batch timings) apply as
/// the OpenTelemetry specification says, over the settings. Only traces: the metrics stay
/// Prometheus's and the logs stay lines.
struct TraceExport: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// Whether the environment and `settings` name a collector.
    static func wanted(
        _ settings: ServerSettings.TraceSettings, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Bool {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return false }
        if environment["OTEL_TRACES_EXPORTER"]?.lowercased() == "none" { return false }
        return settings.endpoint != nil || environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != nil
            || environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != nil
    }

    /// Bootstraps the process's tracer and starts its exporter; nil when no collector is named.
    /// Call once, before anything traced starts.
    static func start(_ settings: ServerSettings.TraceSettings, logger: Logger) throws -> TraceExport? {
        guard wanted(settings) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        if let endpoint = settings.endpoint {
            let base = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
            configuration.traces.otlpExporter.endpoint = base + "/v1/traces"
        }
        configuration.traces.sampler = sampler(settings)
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        return TraceExport(group: group, running: Task { try await group.run() })
    }

    /// Runs `body` with traces exported as the `OTEL_*` environment says (`batch`, `process`),
    /// the spans still buffered sent before it returns.
    static func around<T>(_ body: () async throws -> T) async throws -> T {
        let export = try start(.init(), logger: Logger(label: "attache.traces"))
        do {
            let value = try await body()
            await export?.finish()
            return value
        } catch {
            await export?.finish()
            throw error
        }
    }

    /// Runs one payload's work under a span of its own (`attache process`).
    static func payload<T>(_ name: String, _ body: () async -> T) async -> T {
        let span = startSpan("payload")
        span.attributes["attache.payload.file"] = name
        defer { span.end() }
        return await ServiceContext.$current.withValue(span.context) { await body() }
    }

    /// Sends what is buffered and stops the exporter.
    func finish() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }

    static func sampler(
        _ settings: ServerSettings.TraceSettings
    ) -> OTel.Configuration.TracesConfiguration.SamplerConfiguration {
        switch settings.sampler {
        case "always_on": .alwaysOn
        case "always_off": .alwaysOff
        case "traceidratio": .traceIDRatio(ratio: settings.samplerRatio) ?? .traceIDRatio
        case "parentbased_always_off": .parentBasedAlwaysOff
        case "parentbased_traceidratio":
            .parentBasedTraceIDRatio(ratio: settings.samplerRatio) ?? .parentBasedTraceIDRatio
        default: .parentBasedAlwaysOn
        }
    }
}
