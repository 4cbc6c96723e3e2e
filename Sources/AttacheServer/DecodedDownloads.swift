import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// Attachment downloads behind the HTTP/1 decoder, in front of the conversion to HTTP types: the
/// ``DownloadResponder``'s adapter for requests that ``RawDownloads`` leaves to the codec (a
/// `Range` or a condition, or a connection that also did something else).
///
/// It sits in each connection's pipeline right after the decoder (and the framing checks), in
/// front of the router. A keep-alive `GET` under the attachments path is held until its end and
/// given to the responder; what the responder does not send — and `HEAD`, `Connection: close`,
/// a request while the router still owes an answer on this connection — goes on to the router
/// unchanged. Answers are written through the HTTP/1 encoder, which pairs each with its
/// request's method (a `HEAD` answered by the router keeps no body).
final class DecodedDownloads: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: DownloadResponder
    private let prefix: String
    /// The request being considered, held until its end.
    private var held: [HTTPServerRequestPart]?
    /// Requests passed to the router whose answers have not ended.
    private var owed = 0
    /// Parts that arrived while the held request's check runs on the pool.
    private var waiting: [HTTPServerRequestPart] = []
    /// Off while requests are traced: every request then goes through the router, whose
    /// middleware gives it its server span.
    private let enabled: Bool

    init(route: AttachmentRoute, attachmentsPath: String, metrics: ServerMetrics, logger: Logger, enabled: Bool = true)
    {
        self.enabled = enabled
        self.responder = DownloadResponder(route: route, metrics: metrics, logger: logger, wire: .parts)
        self.prefix = attachmentsPath + "/"
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if responder.checking {
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
            if enabled, owed == 0, !responder.holdsQuiesce, Self.candidate(request, prefix: prefix) {
                held = [part]
                return
            }
            owed += 1
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !responder.holds(event) { context.fireUserInboundEventTriggered(event) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { owed = max(0, owed - 1) }
        context.write(data, promise: promise)
    }

    /// A plain keep-alive HTTP/1.1 `GET` of `<prefix><token>/<file>` (no escapes to decode).
    static func candidate(_ request: HTTPRequestHead, prefix: String) -> Bool {
        guard request.method == .GET, request.version == .http1_1 else { return false }
        let uri = request.uri.utf8
        guard uri.starts(with: prefix.utf8), !uri.contains(UInt8(ascii: "%")) else { return false }
        return request.isKeepAlive
    }

    /// The request's conditions for the check (`Range`, `If-None-Match`, `If-Range`), or nil
    /// when it sets none.
    static func conditions(_ headers: HTTPHeaders) -> HTTPFields? {
        guard
            headers.contains(name: "range") || headers.contains(name: "if-none-match")
                || headers.contains(name: "if-range")
        else { return nil }
        var fields = HTTPFields()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        return fields
    }

    /// Hands the held request to the router.
    private func pass(_ context: ChannelHandlerContext) {
        guard let parts = held else { return }
        held = nil
        owed += 1
        for part in parts { context.fireChannelRead(wrapInboundOut(part)) }
    }

    private func answer(_ context: ChannelHandlerContext) {
        guard let parts = held, case .head(let request) = parts.first else { return pass(context) }
        // By bytes: the path is ASCII (a token, an id and an extension), and walking it by
        // Characters would cost more than the rest of the answer.
        let uri = request.uri.utf8
        let from = uri.index(uri.startIndex, offsetBy: prefix.utf8.count)
        let path = Substring(uri[from..<(uri[from...].firstIndex(of: UInt8(ascii: "?")) ?? uri.endIndex)])
        switch responder.answer(context, path: path, conditions: Self.conditions(request.headers)) {
        case .sent: held = nil
        case .router: pass(context)
        case .checking(let check):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            check.whenSuccess { sent in
                let (handler, context) = bound.value
                if sent { handler.held = nil } else { handler.pass(context) }
                let waiting = handler.waiting
                handler.waiting = []
                for part in waiting { handler.channelRead(context: context, data: NIOAny(part)) }
                // What was passed on outside a read cycle is delivered at the end of one.
                context.fireChannelReadComplete()
                handler.responder.quiesceIfIdle(context)
            }
        }
    }
}
