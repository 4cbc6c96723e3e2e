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
        let seconds = (ContinuousClock.now - start).milliseconds / 1000
        let route = context.notes.route ?? Self.routeName(context.endpointPath)
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code, seconds: seconds)
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(response.status.code)",
            "ms": "\((seconds * 10_000).rounded() / 10)",
        ]
        let outcomes = context.notes.outcomes
        if !outcomes.isEmpty { metadata["outcomes"] = "\(outcomes.joined(separator: ","))" }
        if let code = context.notes.code { metadata["code"] = "\(code)" }
        context.logger.info("request", metadata: metadata)
        return response
    }

    /// A route's name for metrics: the matched pattern (never the raw path, which may hold a
    /// token), or `unmatched`.
    static func routeName(_ endpoint: String?) -> String {
        switch endpoint {
        case "/healthz": "healthz"
        case "/readyz": "readyz"
        case "/metrics": "metrics"
        case "/openapi.yaml": "openapi"
        case "/v1/notifications": "notifications"
        case nil: "unmatched"
        default: "attachment"
        }
    }

    /// The methods a known path takes, or nil for a path no route has.
    func allowedMethods(_ path: String) -> String? {
        switch path {
        case "/v1/notifications": return "POST"
        case "/healthz", "/readyz", "/metrics", "/openapi.yaml": return "GET"
        default:
            let prefix = attachmentsPath + "/"
            guard path.hasPrefix(prefix), path.count > prefix.count else { return nil }
            return "GET, HEAD"
        }
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
