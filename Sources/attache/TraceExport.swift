import ArgumentParser
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
/// the OpenTelemetry specification says, over the settings, once checked against what this
/// build can honour (``AttacheServer/TraceEnvironment``). Only traces: the metrics stay
/// Prometheus's and the logs stay lines.
struct TraceExport: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// Bootstraps the process's tracer and starts its exporter; nil when no collector is named.
    /// Call once, before anything traced starts, with an environment whose problems were said.
    static func start(
        _ settings: ServerSettings.TraceSettings, _ checked: TraceEnvironment, logger: Logger
    ) throws -> TraceExport? {
        guard checked.wanted else { return nil }
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
        let service = try OTel.bootstrap(configuration: configuration, environment: checked.environment)
        let group = ServiceGroup(configuration: .init(services: [service], logger: logger))
        return TraceExport(group: group, running: Task { try await group.run() })
    }

    /// Runs `body` with traces exported as the `OTEL_*` environment says (`batch`, `process`),
    /// the spans still buffered sent before it returns. A variable this build cannot honour
    /// is said by name and the command exits 2.
    static func around<T>(_ command: String, _ body: () async throws -> T) async throws -> T {
        let checked = TraceEnvironment(ProcessInfo.processInfo.environment, settings: .init())
        for problem in checked.problems {
            FileHandle.standardError.write(Data("attache \(command): \(problem)\n".utf8))
        }
        guard checked.problems.isEmpty else { throw ExitCode(2) }
        for note in checked.notes { FileHandle.standardError.write(Data("attache \(command): \(note)\n".utf8)) }
        let export: TraceExport?
        do {
            export = try start(.init(), checked, logger: Logger(label: "attache.traces"))
        } catch {
            FileHandle.standardError.write(Data("attache \(command): traces cannot be set up: \(error)\n".utf8))
            throw ExitCode(2)
        }
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
