import AttacheBase
import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
import Tracing

/// Around every request: errors become RFC 9457 problems (never a 500 for what a client
/// sent), then one structured log line (request id, method, route, status, milliseconds,
/// outcome codes; never a token, key or payload text) and the request metrics.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AttacheRequestContext
    let metrics: ServerMetrics
    /// The attachments' path prefix (`/attachments`), for 405 answers under it.
    let attachmentsPath: String
    /// Whether attachment URLs take receipts (`POST`).
    var receipts = false
    /// Whether a tracer is bootstrapped: each request then gets a server span, continuing the
    /// caller's W3C `traceparent`, current while the request is answered (its log line included).
    var tracing = false

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard tracing else { return try await answer(request, context: context, next: next) }
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: FieldsExtractor())
        let span = startSpan(request.method.rawValue, context: parent, ofKind: .server)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["url.scheme"] = "http"
            // The path only when it is a fixed route's: an attachment's path holds its token.
            if Self.fixedRoutes[request.uri.path] != nil { attributes["url.path"] = request.uri.path }
            attributes["user_agent.original"] = request.headers[.userAgent]
            if let length = request.headers[.contentLength].flatMap({ Int($0) }) {
                attributes["http.request.body.size"] = length
            }
        }
        let response = try await ServiceContext.$current.withValue(span.context) {
            try await answer(request, context: context, next: next)
        }
        let route = context.endpointPath.map {
            $0 == attachmentsPath + "/**" ? attachmentsPath + "/{token}/{file}" : $0
        }
        if let route { span.operationName = request.method.rawValue + " " + route }
        span.updateAttributes { attributes in
            attributes["http.route"] = route
            attributes["http.response.status_code"] = context.notes.hungUp ? Self.clientClosed : response.status.code
            if let code = context.notes.code { attributes["error.type"] = code }
            if !context.notes.outcomes.isEmpty { attributes["attache.outcomes"] = context.notes.outcomes }
        }
        if response.status.code >= 500 { span.setStatus(.init(code: .error, message: context.notes.code)) }
        span.end()
        return response
    }

    /// The request answered: errors become problems, then its log line and metrics.
    private func answer(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let head = request.method == .head
        var response: Response
        do {
            response = try await next(request, context)
        } catch let problem as Problem {
            context.notes.code = problem.code.rawValue
            response = problem.response(head: head)
        } catch let error as HTTPError {
            var problem = Self.problem(for: error)
            // A path that exists answers 405 with the methods it takes, not 404.
            if error.status == .notFound, let allowed = allowedMethods(request.uri.path) {
                problem = Problem(
                    .methodNotAllowed, .invalidRequest, "\(request.method.rawValue) is not allowed here",
                    headers: [.allow: allowed])
            }
            context.notes.code = problem.code.rawValue
            response = problem.response(head: head)
        } catch let error as HTTPParserError {
            // The body could not be framed (a bad chunk size or line end) or ended before its
            // length: the client's fault, never a 500. The connection closes after the answer.
            let hungUp = error == .invalidEOFState || !context.channel.isActive
            let detail =
                hungUp
                ? "the request body ended before its length: the client closed its side"
                : "the request body is not framed as HTTP/1.1 says (a chunk size or a line end): \(error)"
            context.notes.code = AttacheError.Code.invalidRequest.rawValue
            if hungUp { context.notes.hungUp = true }
            var problem = Problem(.badRequest, .invalidRequest, detail)
            problem.headers[.connection] = "close"
            response = problem.response(head: head)
        } catch {
            // Only a fault of the service itself gets here.
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            context.notes.code = AttacheError.Code.internalError.rawValue
            response = Problem(.internalServerError, .internalError, "the service failed to answer").response(
                head: head)
        }
        // A client that hung up mid-request is counted as nginx counts it (499), not as a refusal.
        let hungUp = context.notes.hungUp
        // A payload's line is its audit line too: the tenant and the bytes in and out.
        var extra: Logger.Metadata = [:]
        if let bytes = context.notes.bytesIn { extra["bytes_in"] = "\(bytes)" }
        if let bytes = context.notes.bytesOut { extra["bytes_out"] = "\(bytes)" }
        Self.record(
            route: context.notes.route ?? routeName(context.endpointPath), method: request.method.rawValue,
            status: hungUp ? Self.clientClosed : response.status.code, since: start,
            outcomes: context.notes.outcomes, code: hungUp ? "client_gone" : context.notes.code,
            tenant: context.notes.tenant, extra: extra, metrics: metrics, logger: context.logger)
        return response
    }

    /// The status a request is counted with when its client closed its side before the request
    /// was complete (nginx's 499; no answer with it is sent).
    static let clientClosed = 499

    /// Counts a request and writes its one log line (the router's requests and the downloads
    /// answered in front of it).
    static func record(
        route: String, method: String, status: Int, since start: ContinuousClock.Instant, outcomes: [String] = [],
        code: String? = nil, tenant: String? = nil, extra: Logger.Metadata = [:], metrics: ServerMetrics,
        logger: Logger
    ) {
        let seconds = (ContinuousClock.now - start).milliseconds / 1000
        metrics.request(route: route, method: method, status: status, seconds: seconds)
        if let tenant { metrics.tenantRequest(tenant: tenant, status: status) }
        guard logger.logLevel <= .info else { return }
        var metadata = extra
        if let tenant { metadata["tenant"] = "\(tenant)" }
        metadata["method"] = "\(method)"
        metadata["route"] = "\(route)"
        metadata["status"] = "\(status)"
        metadata["ms"] = "\((seconds * 10_000).rounded() / 10)"
        if !outcomes.isEmpty { metadata["outcomes"] = "\(outcomes.joined(separator: ","))" }
        if let code { metadata["code"] = "\(code)" }
        logger.info("request", metadata: metadata)
    }

    /// The routes at fixed paths: their names for metrics and the methods they take.
    static let fixedRoutes: [String: (name: String, methods: String)] = [
        "/healthz": ("healthz", "GET"), "/readyz": ("readyz", "GET"), "/metrics": ("metrics", "GET"),
        "/openapi.yaml": ("openapi", "GET"), "/v1/notifications": ("notifications", "POST"),
        "/v1/preview": ("preview", "GET, POST"),
    ]

    /// A route's name for metrics: the matched pattern's (never the raw path, which may hold a
    /// token), or `unmatched` for a request no route took (an unknown path, a method the path does
    /// not take: the router names both `NotFound`).
    func routeName(_ endpoint: String?) -> String {
        guard let endpoint else { return "unmatched" }
        if let route = Self.fixedRoutes[endpoint] { return route.name }
        return endpoint == attachmentsPath + "/**" ? "attachment" : "unmatched"
    }

    /// The methods a known path takes, or nil for a path no route has.
    func allowedMethods(_ path: String) -> String? {
        if let route = Self.fixedRoutes[path] { return route.methods }
        let prefix = attachmentsPath + "/"
        guard path.hasPrefix(prefix), path.count > prefix.count else { return nil }
        return receipts ? "GET, HEAD, POST" : "GET, HEAD"
    }

    static func problem(for error: HTTPError) -> Problem {
        switch error.status {
        case .notFound: Problem(.notFound, .notFound, "no such route")
        case .methodNotAllowed: Problem(.methodNotAllowed, .invalidRequest, "method not allowed on this route")
        case .contentTooLarge: NotificationRoute.tooLarge(0)
        case let status where (400..<500).contains(status.code):
            Problem(status, .invalidRequest, error.body ?? status.reasonPhrase)
        default: Problem(.internalServerError, .internalError, "the service failed to answer")
        }
    }
}

/// Reads the W3C trace headers of a request for the tracer's propagator.
struct FieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { fields[$0] }
    }
}
