import AttacheBase
import Hummingbird
import Logging

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

    func handle(
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
        } catch {
            // Only a fault of the service itself gets here.
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            context.notes.code = AttacheError.Code.internalError.rawValue
            response = Problem(.internalServerError, .internalError, "the service failed to answer").response(
                head: head)
        }
        Self.record(
            route: context.notes.route ?? Self.routeName(context.endpointPath), method: request.method.rawValue,
            status: response.status.code, since: start, outcomes: context.notes.outcomes, code: context.notes.code,
            metrics: metrics, logger: context.logger)
        return response
    }

    /// Counts a request and writes its one log line (the router's requests and the downloads
    /// answered in front of it).
    static func record(
        route: String, method: String, status: Int, since start: ContinuousClock.Instant, outcomes: [String] = [],
        code: String? = nil, extra: Logger.Metadata = [:], metrics: ServerMetrics, logger: Logger
    ) {
        let seconds = (ContinuousClock.now - start).milliseconds / 1000
        metrics.request(route: route, method: method, status: status, seconds: seconds)
        var metadata = extra
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
    ]

    /// A route's name for metrics: the matched pattern (never the raw path, which may hold a
    /// token), or `unmatched`.
    static func routeName(_ endpoint: String?) -> String {
        guard let endpoint else { return "unmatched" }
        return fixedRoutes[endpoint]?.name ?? "attachment"
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
