import Logging
import NIOCore

/// Downloads answered beneath the HTTP/1 codec, on connections that only download (a device's,
/// an edge's): the ``DownloadResponder``'s adapter that recognises a plain `GET` of an attachment
/// from the request's bytes (``DownloadHead``), with no request head, header table, response
/// encoder or pipelining handler between the socket and the file.
///
/// It is the first handler of each connection. While a connection has sent nothing but such
/// `GET`s, each is given to the responder; the bytes of anything else — another method or path,
/// a body, `Connection: close`, `Range` or a condition, a header that is not plainly written, a
/// head over 8 KiB, a request the responder does not send (a refusal, an object without a local
/// copy) — go to the HTTP/1 decoder, and from then on the whole connection does (no answer here
/// can then come between the router's). So what is answered here is only ever what the codec
/// would have read the same way. While a check runs on the pool, the connection's next bytes
/// wait.
final class RawDownloads: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let responder: DownloadResponder
    private let prefix: [UInt8]
    /// Bytes of a request head not yet complete, or held while a check runs.
    private var pending: ByteBuffer?
    /// Once anything went to the decoder, everything does.
    private var passing = false

    init(route: AttachmentRoute, attachmentsPath: String, metrics: ServerMetrics, logger: Logger) {
        self.responder = DownloadResponder(route: route, metrics: metrics, logger: logger, wire: .bytes)
        self.prefix = Array((attachmentsPath + "/").utf8)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        if var held = pending {
            held.writeBuffer(&buffer)
            buffer = held
            pending = nil
        }
        if responder.checking {
            pending = buffer
            return
        }
        take(context, buffer)
    }

    /// Answers the plain downloads at the start of `buffer`, until one must wait for its check
    /// or the rest goes to the decoder.
    private func take(_ context: ChannelHandlerContext, _ buffer: ByteBuffer) {
        var buffer = buffer
        while buffer.readableBytes > 0 {
            let parsed = buffer.withUnsafeReadableBytes { DownloadHead.parse($0, prefix: prefix) }
            switch parsed {
            case .incomplete:
                pending = buffer
                return
            case .other:
                return pass(context, buffer)
            case .get(let path, let length):
                switch responder.answer(context, path: path, conditions: nil) {
                case .sent: buffer.moveReaderIndex(forwardBy: length)
                case .router: return pass(context, buffer)
                case .checking(let check): return wait(context, for: check, buffer: buffer, length: length)
                }
            }
        }
    }

    /// Holds `buffer` (the request being checked first, `length` bytes) and what arrives after
    /// it until `check` ends, then goes on here or hands it all to the decoder.
    private func wait(
        _ context: ChannelHandlerContext, for check: EventLoopFuture<Bool>, buffer: ByteBuffer, length: Int
    ) {
        pending = buffer
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check.whenSuccess { sent in
            let (handler, context) = bound.value
            defer { handler.responder.quiesceIfIdle(context) }
            guard var held = handler.pending, context.channel.isActive else { return }
            handler.pending = nil
            if sent {
                held.moveReaderIndex(forwardBy: length)
                handler.take(context, held)
            } else {
                handler.pass(context, held)
                // What was passed on outside a read cycle is delivered at the end of one.
                context.fireChannelReadComplete()
            }
        }
    }

    /// Hands `buffer` and everything after it to the decoder.
    private func pass(_ context: ChannelHandlerContext, _ buffer: ByteBuffer) {
        passing = true
        // The handlers behind were not told of writability while downloads went out here.
        if !context.channel.isWritable { context.fireChannelWritabilityChanged() }
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The handlers behind have read nothing while this one answers: the end of a read
        // cycle is news only to a decoder that was handed bytes.
        if passing { context.fireChannelReadComplete() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // A download's file region passes the write buffer's mark and back: nothing behind
        // this handler writes on a connection it answers, so they need not hear of it.
        if passing { context.fireChannelWritabilityChanged() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !responder.holds(event) { context.fireUserInboundEventTriggered(event) }
    }
}
