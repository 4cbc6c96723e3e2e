import Foundation

/// The standard `OTEL_*` variables checked before traces are set up: a value this build cannot
/// honour is said at start, by name, instead of crashing the exporter's set-up (swift-otel stops
/// the process on some: the gRPC protocol, the Jaeger and X-Ray samplers, the propagators it
/// lacks) or sending nothing without a word (an endpoint that is no URL, an exporter it lacks).
///
/// - What decides where traces go or whether they go at all — the protocol, the endpoints, the
///   exporter, the certificate files — stops the start when it cannot be honoured (exit 2).
/// - `OTEL_PROPAGATORS`, whose default in the specification is `tracecontext,baggage`, keeps
///   what this build reads and writes (`tracecontext`); the rest is dropped with a note.
/// - A sampler or a ratio this build does not know stops the start, as the `otel-sampler`
///   setting does.
///
/// Empty values are unset, as the specification says.
public struct TraceEnvironment: Sendable {
    /// Values that stop the start, each naming its variable.
    public var problems: [String] = []
    /// What was changed to be honoured, for the log.
    public var notes: [String] = []
    /// The environment to set traces up from: empty values removed, the propagators this build
    /// has, and no `OTEL_SDK_DISABLED` (already read: only traces are set up here).
    public var environment: [String: String] = [:]
    /// Whether traces are set up at all: a collector named, traces not turned off.
    public var wanted = false

    /// The protocols this build sends traces with.
    public static let protocols: Set<String> = ["http/protobuf", "http/json"]
    /// The propagators this build reads and writes.
    public static let propagators: Set<String> = ["tracecontext", "none"]

    /// Checks `environment` for traces set up with `settings`; nothing is checked (and nothing
    /// refused) when no collector is named or traces are turned off.
    public init(_ environment: [String: String], settings: ServerSettings.TraceSettings) {
        let otel = environment.filter { $0.key.hasPrefix("OTEL_") && !$0.value.isEmpty }
        self.environment = environment.filter { !($0.key.hasPrefix("OTEL_") && $0.value.isEmpty) }
        self.environment["OTEL_SDK_DISABLED"] = nil
        wanted = Self.wanted(settings, environment: otel)
        guard wanted else { return }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"] {
            if let value = otel[name], !Self.isHTTPURL(value) {
                problems.append("\(name)='\(value)' is not an http:// or https:// URL")
            }
        }
        let protocolName =
            otel["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] != nil
            ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL"
        if let value = otel[protocolName], !Self.protocols.contains(value) {
            problems.append(
                value == "grpc"
                    ? "\(protocolName)=grpc: this build sends traces over OTLP/HTTP only; set http/protobuf "
                        + "(a collector's port 4318)"
                    : "\(protocolName)='\(value)' is not http/protobuf or http/json")
        }
        if let value = otel["OTEL_TRACES_EXPORTER"] {
            let unsupported = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { $0 != "otlp" }
            if !unsupported.isEmpty {
                problems.append(
                    "OTEL_TRACES_EXPORTER='\(value)': this build exports traces with otlp only (or none to turn "
                        + "them off), not \(unsupported.joined(separator: ", "))")
            }
        }
        if let value = otel["OTEL_TRACES_SAMPLER"], !ServerSettings.TraceSettings.samplers.contains(value) {
            problems.append(
                "OTEL_TRACES_SAMPLER='\(value)' is not one of "
                    + ServerSettings.TraceSettings.samplers.sorted().joined(separator: ", "))
        }
        if let value = otel["OTEL_TRACES_SAMPLER_ARG"], Double(value).map({ (0...1).contains($0) }) != true {
            problems.append("OTEL_TRACES_SAMPLER_ARG='\(value)' is not a ratio from 0 to 1")
        }
        for suffix in ["CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE"] {
            let name =
                otel["OTEL_EXPORTER_OTLP_TRACES_" + suffix] != nil
                ? "OTEL_EXPORTER_OTLP_TRACES_" + suffix : "OTEL_EXPORTER_OTLP_" + suffix
            if let path = otel[name], !FileManager.default.isReadableFile(atPath: path) {
                problems.append("\(name)='\(path)' cannot be read")
            }
        }
        if let value = otel["OTEL_PROPAGATORS"] {
            let named = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let kept = named.filter(Self.propagators.contains)
            let dropped = named.filter { !Self.propagators.contains($0) }
            if !dropped.isEmpty {
                let used = kept.isEmpty ? ["tracecontext"] : kept
                self.environment["OTEL_PROPAGATORS"] = used.joined(separator: ",")
                notes.append(
                    "OTEL_PROPAGATORS='\(value)': this build reads and writes tracecontext only; "
                        + "\(dropped.joined(separator: ", ")) dropped, \(used.joined(separator: ",")) used")
            }
        }
    }

    /// Whether `settings` and the environment name a collector and traces are not turned off
    /// (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
    public static func wanted(_ settings: ServerSettings.TraceSettings, environment: [String: String]) -> Bool {
        func set(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if set("OTEL_SDK_DISABLED")?.lowercased() == "true" { return false }
        if set("OTEL_TRACES_EXPORTER")?.lowercased() == "none" { return false }
        return settings.endpoint != nil || set("OTEL_EXPORTER_OTLP_ENDPOINT") != nil
            || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != nil
    }

    /// An absolute `http(s)` URL with a host.
    static func isHTTPURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host else {
            return false
        }
        return ["http", "https"].contains(scheme) && !host.isEmpty
    }
}
