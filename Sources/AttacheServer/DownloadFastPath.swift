import AttacheBase
import AttacheStore
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix
import Synchronization

/// Attachment downloads answered on the connection's event loop, the body handed to the
/// kernel with `sendfile` instead of being copied through the process.
///
/// It sits in each connection's pipeline after the HTTP/1 codec, in front of the router. A
/// `GET` under the attachments path that the token opens is answered here: the head, then a
/// file region of the leased object (written below the HTTP-types codec, where NIO's encoder
/// takes file regions), the lease released when the last byte is written. Everything else —
/// `HEAD`, 304, every refusal, `Connection: close`, a request while the router still owes an
/// answer on this connection — goes on to the router unchanged, which answers it the same way
/// (`AttachmentRoute`), so the two paths cannot disagree on what is served.
///
/// With a shared store a check that needs a catalog query runs on the blocking pool, never on
/// the event loop; the connection's next request parts wait until it is answered. Objects with a
/// local copy are sent from it; the others go to the router, which streams them.
final class DownloadFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Downloads answered here (for tests and the curious).
    static let answered = Atomic<Int>(0)

    private let route: AttachmentRoute
    private let prefix: String
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Where writes bypass the HTTP-types codec (NIO's HTTP/1 parts, file regions allowed).
    private var codec: ChannelHandlerContext?
    /// The request being considered, held until its end.
    private var held: [HTTPRequestPart]?
    /// Requests passed to the router whose answers have not ended.
    private var owed = 0
    /// Downloads being written here.
    private var sending = 0
    /// A graceful shutdown asked the connection to close while a download was being written:
    /// passed on (to the handler that closes idle connections) once the download is done.
    private var quiesce: Any?
    /// A shared store's check is running for the held request; parts that arrive meanwhile wait.
    private var checking = false
    private var waiting: [HTTPRequestPart] = []

    init(route: AttachmentRoute, attachmentsPath: String, metrics: ServerMetrics, logger: Logger) {
        self.route = route
        self.prefix = attachmentsPath + "/"
        self.metrics = metrics
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        codec = try? context.pipeline.syncOperations.context(handlerType: HTTP1ToHTTPServerCodec.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        codec = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if checking {
            waiting.append(part)
            return
        }
        if held != nil {
            held!.append(part)
            // A GET has no body to speak of; one that does goes to the router.
            if case .body = part { pass(context) }
            if case .end = part { answer(context) }
            return
        }
        if case .head(let request) = part {
            if owed == 0, quiesce == nil, codec != nil, Self.candidate(request, prefix: prefix) {
                held = [part]
                return
            }
            owed += 1
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The next handler closes a connection it thinks idle; one writing a download is not.
        if event is ChannelShouldQuiesceEvent, sending > 0 {
            quiesce = event
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { owed = max(0, owed - 1) }
        context.write(data, promise: promise)
    }

    /// A plain keep-alive `GET` of `<prefix><token>/<file>` (no escapes, no query to decode).
    static func candidate(_ request: HTTPRequest, prefix: String) -> Bool {
        guard request.method == .get, let path = request.path, path.hasPrefix(prefix) else { return false }
        guard !path.utf8.contains(UInt8(ascii: "%")), request.headerFields[.connection]?.lowercased() != "close" else {
            return false
        }
        return true
    }

    /// Hands the held request to the router.
    private func pass(_ context: ChannelHandlerContext) {
        guard let parts = held else { return }
        held = nil
        owed += 1
        for part in parts { context.fireChannelRead(wrapInboundOut(part)) }
    }

    private func answer(_ context: ChannelHandlerContext) {
        guard let parts = held, case .head(let request) = parts.first, codec != nil else { return pass(context) }
        let started = ContinuousClock.now
        var path = Substring(request.path ?? "").dropFirst(prefix.count)
        if let query = path.firstIndex(of: "?") { path = path[..<query] }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        // A directory store answers here; a shared one too when it needs no query (the row read
        // within the last second and a local copy at hand), else its check runs on the pool.
        let immediate = Result {
            try self.route.prepare(
                segments: segments, headers: request.headerFields, logger: self.logger, immediately: true)
        }
        if case .failure(let error) = immediate, error is AttachmentRoute.WouldWait {
            // Checked below.
        } else {
            return send(context, try? immediate.get(), started: started)
        }
        checking = true
        let (route, logger, fields) = (self.route, self.logger, request.headerFields)
        let checked = AttachmentRoute.blocking.runIfActive(eventLoop: context.eventLoop) {
            try route.prepare(segments: segments, headers: fields, logger: logger)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        checked.whenComplete { result in
            let (handler, context) = bound.value
            handler.checking = false
            handler.send(context, try? result.get(), started: started)
            let waiting = handler.waiting
            handler.waiting = []
            for part in waiting { handler.channelRead(context: context, data: NIOAny(part)) }
            // What was passed on outside a read cycle is delivered at the end of one (the async
            // channel behind the router hands reads over on read-complete).
            context.fireChannelReadComplete()
        }
    }

    /// Writes the answer `route.prepare` gave, when it is a body this handler can send.
    private func send(
        _ context: ChannelHandlerContext, _ prepared: AttachmentRoute.Prepared?, started: ContinuousClock.Instant
    ) {
        guard let codec,
            case .send(let lease, let status, let fields, let start, let length)? = prepared
        else {
            // 304 and refusals: the router answers them (and runs the same checks again).
            return pass(context)
        }
        let descriptor = lease.sendableDescriptor
        guard descriptor >= 0 else {
            lease.close()
            return pass(context)
        }
        held = nil
        Self.answered.add(1, ordering: .relaxed)

        var headers = HTTPHeaders()
        for field in fields { headers.add(name: field.name.rawName, value: field.value) }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: status.code), headers: headers)
        let file = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
        let region = FileRegion(fileHandle: file, readerIndex: Int(start), endIndex: Int(start + length))
        codec.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        codec.write(NIOAny(HTTPServerResponsePart.body(.fileRegion(region))), promise: nil)
        let done = context.eventLoop.makePromise(of: Void.self)
        codec.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: done)
        let metrics = self.metrics
        let logger = self.logger
        sending += 1
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        done.futureResult.whenComplete { result in
            // The descriptor is the lease's: the lease closes it.
            _ = try? file.takeDescriptorOwnership()
            lease.close()
            handler.value.sent(boundContext.value)
            if case .success = result { metrics.served(bytes: Int(length)) }
            var extra: Logger.Metadata = ["hb.request.id": "\(Self.requestID())"]
            if case .failure = result { extra["outcome"] = "client_gone" }
            RequestLogMiddleware.record(
                route: "attachment", method: "GET", status: status.code, since: started, extra: extra,
                metrics: metrics, logger: logger)
        }
    }

    /// A request id for the log: a random per-process prefix and a counter (no system call
    /// for randomness on every download).
    private static let idPrefix = String(UInt32.random(in: 0 ... .max), radix: 16)
    private static let idCounter = Atomic<UInt64>(0)
    static func requestID() -> String {
        let next = idCounter.add(1, ordering: .relaxed).newValue
        return idPrefix + "-" + String(next, radix: 16)
    }

    /// A download's last byte is written (or the client is gone).
    private func sent(_ context: ChannelHandlerContext) {
        sending -= 1
        if sending == 0, let event = quiesce {
            quiesce = nil
            context.fireUserInboundEventTriggered(event)
        }
    }
}
