import AttacheBase
import AttacheStore
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Downloads answered beneath the HTTP/1 codec, on connections that only download (a device's,
/// an edge's): the request's bytes recognised as a plain `GET` of an attachment and the answer
/// written as bytes, with no request head, header table, response encoder or pipelining
/// handler between the socket and the file.
///
/// It is the first handler of each connection. While a connection has sent nothing but such
/// `GET`s, each is answered here exactly as ``DownloadFastPath`` answers it (the same check,
/// remembered the same second, the same head, the same log line); the bytes of anything else —
/// another method or path, a body, `Connection: close`, `Range` or a condition, a header that
/// is not plainly written, a head over 8 KiB, a refusal, an object without a local copy — go
/// to the HTTP/1 decoder, and from then on the whole connection does (no answer here can then
/// come between the router's). So what is answered here is only ever what the codec would have
/// read the same way. A shared store's check that needs a catalog query runs on the blocking
/// pool, as ``DownloadFastPath``'s does; the connection's next bytes wait until it is answered.
final class RawDownloads: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private let route: AttachmentRoute
    private let prefix: [UInt8]
    private let metrics: ServerMetrics
    private let logger: Logger
    private let lines: LineLogHandler?
    /// Bytes of a request head not yet complete.
    private var pending: ByteBuffer?
    /// Once anything went to the decoder, everything does.
    private var passing = false
    /// A shared store's check is running for the first request in `pending`.
    private var checking = false
    /// Downloads being written here, and a shutdown's request to close held until they end.
    private var sending = 0
    private var quiesce: Any?
    /// The event loop's remembered checks (a handler runs only on its channel's loop).
    private lazy var cache = DownloadCache.current

    init(route: AttachmentRoute, attachmentsPath: String, metrics: ServerMetrics, logger: Logger) {
        self.route = route
        self.prefix = Array((attachmentsPath + "/").utf8)
        self.metrics = metrics
        self.logger = logger
        self.lines = logger.handler as? LineLogHandler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        if var held = pending {
            held.writeBuffer(&buffer)
            buffer = held
            pending = nil
        }
        if checking {
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
                switch answer(context, path: path) {
                case .sent: buffer.moveReaderIndex(forwardBy: length)
                case .router: return pass(context, buffer)
                case .checking(let check): return wait(context, for: check, buffer: buffer, length: length)
                }
            }
        }
    }

    /// Holds `buffer` (the request being checked first, `length` bytes) and what arrives after
    /// it until `check` ends, then answers it here or hands it all to the decoder.
    private func wait(
        _ context: ChannelHandlerContext, for check: EventLoopFuture<CheckedDownload?>, buffer: ByteBuffer, length: Int
    ) {
        checking = true
        pending = buffer
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check.whenComplete { result in
            let (handler, context) = bound.value
            handler.checking = false
            guard var held = handler.pending, context.channel.isActive else { return }
            handler.pending = nil
            if case .success(.some) = result {
                held.moveReaderIndex(forwardBy: length)
                handler.take(context, held)
            } else {
                handler.pass(context, held)
                // What was passed on outside a read cycle is delivered at the end of one.
                context.fireChannelReadComplete()
            }
            handler.quiesceIfIdle(context)
        }
    }

    /// Passes on a shutdown's request to close, held while a download was being checked or
    /// written here, once none is.
    private func quiesceIfIdle(_ context: ChannelHandlerContext) {
        guard sending == 0, !checking, let event = quiesce else { return }
        quiesce = nil
        context.fireUserInboundEventTriggered(event)
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
        // The connection handler behind closes a connection it thinks idle; one writing a
        // download is not.
        if event is ChannelShouldQuiesceEvent, sending > 0 || checking {
            quiesce = event
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private enum Answer {
        case sent
        case router
        /// The check runs on the blocking pool; its download is sent there when it passes.
        case checking(EventLoopFuture<CheckedDownload?>)
    }

    /// Answers a `GET` of `path` (after the attachments prefix, without the query) when its
    /// check passes; the router answers it when not.
    private func answer(_ context: ChannelHandlerContext, path: Substring) -> Answer {
        let started = ContinuousClock.now
        let store = route.store
        let now = store.configuration.clock()
        if let entry = cache.entry(for: path, now: now, changes: store.changes) {
            metrics.downloadPaths.remembered.add(1, ordering: .relaxed)
            send(context, entry, now: now, started: started)
            return .sent
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let since = route.checkBegins(segments)
        // No conditions: a whole object (200) or nothing here.
        let (route, logger) = (self.route, self.logger)
        let immediate = Result {
            try route.prepare(segments: segments, headers: HTTPFields(), logger: logger, immediately: true)
        }
        guard case .failure(let error) = immediate, error is AttachmentRoute.WouldWait else {
            let entry = route.checked(try? immediate.get(), since: since, started: started)
            guard let entry else { return .router }
            sent(context, entry, path: path, started: started)
            return .sent
        }
        let key = String(path)
        let checked = AttachmentRoute.blocking.runIfActive(eventLoop: context.eventLoop) {
            try route.prepare(segments: segments, headers: HTTPFields(), logger: logger)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        return .checking(
            checked.map { prepared in
                let (handler, context) = bound.value
                guard let entry = route.checked(prepared, since: since, started: started) else { return nil }
                handler.metrics.downloadPaths.checkedOnPool.add(1, ordering: .relaxed)
                handler.sent(context, entry, path: Substring(key), started: started)
                return entry
            })
    }

    /// Sends a download just checked and remembers the check.
    private func sent(
        _ context: ChannelHandlerContext, _ entry: CheckedDownload, path: Substring, started: ContinuousClock.Instant
    ) {
        send(context, entry, now: route.store.configuration.clock(), started: started)
        cache.remember(entry, for: path, on: context.eventLoop)
    }

    private func send(
        _ context: ChannelHandlerContext, _ entry: CheckedDownload, now: Int64, started: ContinuousClock.Instant
    ) {
        let (file, region) = entry.region(counted: metrics)
        // Corked as in ``DownloadFastPath``: measured against no cork, 5–15% more downloads a
        // second (the head otherwise leaves in a packet of its own).
        let options = context.channel.syncOptions
        try? options?.setOption(DownloadFastPath.cork, value: 1)
        context.write(wrapOutboundOut(.byteBuffer(entry.rawHead(now: now))), promise: nil)
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.fileRegion(region)), promise: done)
        try? options?.setOption(DownloadFastPath.cork, value: 0)
        let (metrics, logger, lines) = (self.metrics, self.logger, self.lines)
        sending += 1
        done.futureResult.assumeIsolated().whenComplete { result in
            entry.written(result, file: file, started: started, metrics: metrics, logger: logger, lines: lines)
            self.sending -= 1
            self.quiesceIfIdle(context)
        }
    }
}
