import AttacheBase
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// Turns payloads away on the event loop when the service is full: a `POST /v1/notifications`
/// whose head arrives while the payloads already in the service (from their heads to the end of
/// their answers) fill every pipeline slot and queue place is answered 503 with `Retry-After`
/// at once — before its body is read, before a task is made for it, before the requests that
/// were admitted beside it take the cores. The connection stays open (the client may try again
/// after `Retry-After`); the refused request's body is read and dropped.
///
/// A burst of payloads arriving together is decided as it arrives, in order: the first `slots
/// + queue` go on to the router, where ``Admission`` gives them slots or queue places; the rest
/// are refused here. ``Admission`` still refuses what gets past this gate between two counts.
///
/// A connection may send its next request before its last is answered (HTTP/1.1 pipelining):
/// a payload is refused here only when nothing before it on its connection awaits an answer,
/// so an answer written here is always the connection's next; behind an unanswered request it
/// goes on to the router uncounted, and ``Admission`` decides.
final class LoadShedding: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The payloads in the service, shared by every connection, by tenant (``TenantShares``:
    /// each tenant's first few places are its own, so one sending as fast as it can never
    /// leaves another's payloads refused).
    final class Gate: Sendable {
        /// Payloads at once, from their heads to the end of their answers.
        let limit: Int
        let retryAfterSeconds: Int
        /// The tenant of a request's `Authorization` (``Tenants/anonymous`` for no key).
        let tenant: @Sendable (String?) -> String
        private let shares: Mutex<TenantShares>

        init(
            limit: Int, retryAfterSeconds: Int, shares: [String: Int] = [:],
            tenant: @escaping @Sendable (String?) -> String = { _ in "" }
        ) {
            self.limit = max(1, limit)
            self.retryAfterSeconds = retryAfterSeconds
            self.tenant = tenant
            self.shares = Mutex(TenantShares(total: max(1, limit), shares: shares))
        }

        /// Payloads counted now.
        var count: Int { shares.withLock { $0.sum } }

        /// Counts one more payload of `tenant`; false (and nothing counted) when the places it
        /// may take are taken.
        func enter(tenant: String = "") -> Bool { shares.withLock { $0.take(tenant) } }

        func leave(tenant: String = "") { shares.withLock { $0.give(tenant) } }

        /// Takes new shares (the tenants file read again).
        func share(_ shares: [String: Int]) { self.shares.withLock { $0.share(shares) } }
    }

    private let gate: Gate
    private let path: String
    private let metrics: ServerMetrics
    private let logger: Logger
    /// The requests handed on and not yet answered on this connection, in order: the tenant
    /// each was counted for at the gate, nil when it was not counted.
    private var unanswered: [String?] = []
    /// The body of a request refused here is being dropped.
    private var dropping = false

    init(gate: Gate, path: String = "/v1/notifications", metrics: ServerMetrics, logger: Logger) {
        self.gate = gate
        self.path = path
        self.metrics = metrics
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where head.method == .POST && isPayloadPath(head.uri):
            let tenant = gate.tenant(head.headers.first(name: "Authorization"))
            if gate.enter(tenant: tenant) {
                unanswered.append(tenant)
                context.fireChannelRead(data)
            } else if unanswered.isEmpty {
                dropping = true
                refuse(context, head: head, tenant: tenant)
            } else {
                unanswered.append(nil)
                context.fireChannelRead(data)
            }
        case .head:
            unanswered.append(nil)
            context.fireChannelRead(data)
        case .end where dropping:
            dropping = false
        case .body where dropping:
            break
        default:
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), !unanswered.isEmpty, let tenant = unanswered.removeFirst() {
            gate.leave(tenant: tenant)
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        leaveAll()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { leaveAll() }

    /// The connection's requests will not be answered: none counts any more.
    private func leaveAll() {
        for tenant in unanswered { if let tenant { gate.leave(tenant: tenant) } }
        unanswered.removeAll()
    }

    /// `/v1/notifications`, with or without a query.
    private func isPayloadPath(_ uri: String) -> Bool {
        guard uri.hasPrefix(path) else { return false }
        let rest = uri.utf8.dropFirst(path.utf8.count)
        return rest.first == nil || rest.first == UInt8(ascii: "?")
    }

    private func refuse(_ context: ChannelHandlerContext, head request: HTTPRequestHead, tenant: String) {
        let started = ContinuousClock.now
        metrics.overloaded()
        let problem = Problem(
            .serviceUnavailable, .overloaded,
            "every pipeline slot and queue place this caller may take (of \(gate.limit)) is taken", limit: .maxQueued)
        let body = context.channel.allocator.buffer(string: problem.body)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/problem+json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Retry-After", value: String(gate.retryAfterSeconds))
        let head = HTTPResponseHead(version: request.version, status: .serviceUnavailable, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        RequestLogMiddleware.record(
            route: "notifications", method: "POST", status: 503, since: started,
            code: AttacheError.Code.overloaded.rawValue, tenant: tenant, metrics: metrics, logger: logger)
    }
}
