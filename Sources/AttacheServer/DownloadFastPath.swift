import AttacheBase
import AttacheStore
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Attachment downloads answered on the connection's event loop, in front of the conversion to
/// HTTP types, the body handed to the kernel with `sendfile` instead of being copied through
/// the process.
///
/// It sits in each connection's pipeline right after the HTTP/1 decoder (and the framing
/// checks), in front of the router. A keep-alive `GET` under the attachments path that the
/// token opens is answered here: the head (made once a second per download, see below), then a
/// file region of the leased object, corked into full segments, the lease released when the
/// last byte is written. Everything else — `HEAD`, 304, every refusal,
/// `Connection: close`, a request while the router still owes an answer on this connection —
/// goes on to the router unchanged, which answers it the same way (`AttachmentRoute`), so the
/// two paths cannot disagree on what is served.
///
/// **Checks remembered for a second.** A whole-object download's check (signature, key ring,
/// expiry, scope, the catalog row, revocation) is remembered by the event loop that made it,
/// with its lease, until a second after the oldest reading it rests on (the key ring as last
/// looked at; a shared store's row as read): another `GET` of the same URL meanwhile is sent at
/// once (the token's and the object's expiry are still checked on every request). So a
/// revocation, a key retirement or a collection by another process is honoured within a
/// second, as a replica of a shared store honours them; one made through this process's store
/// (its change count moves) ends every remembered check at once. The lease keeps the object
/// from being collected meanwhile. Answers are written through the HTTP/1 encoder, which pairs
/// each with its request's method (a `HEAD` answered by the router keeps no body).
///
/// With a shared store a check that needs a catalog query runs on the blocking pool, never on
/// the event loop; the connection's next request parts wait until it is answered. Objects with a
/// local copy are sent from it; the others go to the router, which streams them.
final class DownloadFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let route: AttachmentRoute
    private let prefix: String
    private let metrics: ServerMetrics
    private let logger: Logger
    /// The request being considered, held until its end.
    private var held: [HTTPServerRequestPart]?
    /// Requests passed to the router whose answers have not ended.
    private var owed = 0
    /// Downloads being written here.
    private var sending = 0
    /// A graceful shutdown asked the connection to close while a download was being written:
    /// passed on (to the handler that closes idle connections) once the download is done.
    private var quiesce: Any?
    /// A shared store's check is running for the held request; parts that arrive meanwhile wait.
    private var checking = false
    private var waiting: [HTTPServerRequestPart] = []

    /// The log's handler when it is the service's own: each download's line is then built
    /// straight into bytes (``LineLogHandler/request(id:method:route:status:milliseconds:outcome:)``).
    private let lines: LineLogHandler?
    /// Off while requests are traced: every request then goes through the router, whose
    /// middleware gives it its server span.
    private let enabled: Bool

    init(route: AttachmentRoute, attachmentsPath: String, metrics: ServerMetrics, logger: Logger, enabled: Bool = true)
    {
        self.enabled = enabled
        self.lines = logger.handler as? LineLogHandler
        self.route = route
        self.prefix = attachmentsPath + "/"
        self.metrics = metrics
        self.logger = logger
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
            if enabled, owed == 0, quiesce == nil, Self.candidate(request, prefix: prefix) {
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

    static let cork = ChannelOptions.Types.SocketOption(
        level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_TCP)), name: NIOBSDSocket.Option(rawValue: TCP_CORK))

    /// A plain keep-alive HTTP/1.1 `GET` of `<prefix><token>/<file>` (no escapes to decode).
    static func candidate(_ request: HTTPRequestHead, prefix: String) -> Bool {
        guard request.method == .GET, request.version == .http1_1 else { return false }
        let uri = request.uri.utf8
        guard uri.starts(with: prefix.utf8), !uri.contains(UInt8(ascii: "%")) else { return false }
        return request.isKeepAlive
    }

    /// Whether the request asks for part of the object or sets a condition.
    static func conditional(_ headers: HTTPHeaders) -> Bool {
        headers.contains(name: "range") || headers.contains(name: "if-none-match")
            || headers.contains(name: "if-range")
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
        let started = ContinuousClock.now
        // By bytes: the path is ASCII (a token, an id and an extension), and walking it by
        // Characters would cost more than the rest of the answer.
        let uri = request.uri.utf8
        let from = uri.index(uri.startIndex, offsetBy: prefix.utf8.count)
        let path = Substring(uri[from..<(uri[from...].firstIndex(of: UInt8(ascii: "?")) ?? uri.endIndex)])
        let plain = !Self.conditional(request.headers)
        let cache = DownloadCache.current
        let now = self.route.store.configuration.clock()
        if plain, let entry = cache.entry(for: path, now: now, changes: self.route.store.changes) {
            metrics.downloadPaths.remembered.add(1, ordering: .relaxed)
            return send(context, entry, now: now, started: started)
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let since = route.checkBegins(segments)
        // Only the conditions matter to the check; a plain GET has none.
        var fields = HTTPFields()
        if !plain {
            for (name, value) in request.headers {
                if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
            }
        }
        // A directory store answers here; a shared one too when it needs no query (the row read
        // within the last second and a local copy at hand), else its check runs on the pool.
        let immediate = Result {
            try self.route.prepare(segments: segments, headers: fields, logger: self.logger, immediately: true)
        }
        if case .failure(let error) = immediate, error is AttachmentRoute.WouldWait {
            // Checked below.
        } else {
            return prepared(context, try? immediate.get(), key: plain ? path : nil, since: since, started: started)
        }
        checking = true
        let (route, logger, conditions, key) = (self.route, self.logger, fields, plain ? path : nil)
        let checked = AttachmentRoute.blocking.runIfActive(eventLoop: context.eventLoop) {
            try route.prepare(segments: segments, headers: conditions, logger: logger)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        checked.whenComplete { result in
            let (handler, context) = bound.value
            handler.checking = false
            handler.prepared(context, try? result.get(), key: key, since: since, started: started)
            let waiting = handler.waiting
            handler.waiting = []
            for part in waiting { handler.channelRead(context: context, data: NIOAny(part)) }
            // What was passed on outside a read cycle is delivered at the end of one.
            context.fireChannelReadComplete()
        }
    }

    /// Sends what `route.prepare` gave, when it is a body this handler can send; a whole
    /// object's check is remembered under `key`.
    private func prepared(
        _ context: ChannelHandlerContext, _ prepared: AttachmentRoute.Prepared?, key: Substring?,
        since: ContinuousClock.Instant?, started: ContinuousClock.Instant
    ) {
        // 304, refusals and objects without a local file: the router answers them (and runs
        // the same checks again).
        guard let entry = route.checked(prepared, since: since, started: started) else { return pass(context) }
        send(context, entry, now: route.store.configuration.clock(), started: started)
        // Remembered once it is in use, so a full cache closes the lease only after this send.
        if let key, entry.status == .ok {
            DownloadCache.current.remember(entry, for: key, on: context.eventLoop)
        } else {
            entry.forget()
        }
    }

    /// Writes the head and the file region of `entry`.
    private func send(
        _ context: ChannelHandlerContext, _ entry: CheckedDownload, now: Int64, started: ContinuousClock.Instant
    ) {
        held = nil
        let (file, region) = entry.region(counted: metrics)
        // Corked while the head and the file go out, so the head leaves in the file's first
        // segment rather than in a packet of its own (nginx's tcp_nopush).
        let options = context.channel.syncOptions
        try? options?.setOption(Self.cork, value: 1)
        // Through the HTTP/1 encoder, which pairs each response with its request's method.
        context.write(wrapOutboundOut(.head(entry.head(now: now))), promise: nil)
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: nil)
        let done = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
        try? options?.setOption(Self.cork, value: 0)
        let (metrics, logger, lines) = (self.metrics, self.logger, self.lines)
        sending += 1
        // Completed on this event loop: the handler, its context and the entry stay on it.
        done.futureResult.assumeIsolated().whenComplete { result in
            entry.written(result, file: file, started: started, metrics: metrics, logger: logger, lines: lines)
            self.sent(context)
        }
    }

    /// The request's metrics and log line (built only when the log takes it).
    static func record(
        status: Int, gone: Bool, started: ContinuousClock.Instant, metrics: ServerMetrics, logger: Logger,
        lines: LineLogHandler?
    ) {
        let seconds = (ContinuousClock.now - started).milliseconds / 1000
        guard logger.logLevel <= .info else {
            metrics.request(route: "attachment", method: "GET", status: status, seconds: seconds)
            return
        }
        if let lines,
            lines.request(
                id: (idPrefix, idCounter.add(1, ordering: .relaxed).newValue), method: "GET", route: "attachment",
                status: status, milliseconds: (seconds * 10_000).rounded() / 10, outcome: gone ? "client_gone" : nil)
        {
            metrics.request(route: "attachment", method: "GET", status: status, seconds: seconds)
            return
        }
        var extra: Logger.Metadata = ["hb.request.id": "\(requestID())"]
        if gone { extra["outcome"] = "client_gone" }
        RequestLogMiddleware.record(
            route: "attachment", method: "GET", status: status, since: started, extra: extra, metrics: metrics,
            logger: logger)
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

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

/// A download the route has checked: its lease and answer, shared by the requests sent from it
/// (on one event loop); the lease closes when it is forgotten and the last of them is written.
final class CheckedDownload {
    let lease: AttachmentLease
    let status: HTTPResponse.Status
    let fields: HTTPFields
    let start: Int64
    let length: Int64
    let descriptor: Int32
    /// The check stands until then (a second after the oldest reading it rests on), and the
    /// access until this Unix second.
    let checkedUntil: ContinuousClock.Instant
    let accessEnds: Int64
    /// How long a shared cache may keep it (``AttachmentRoute/edge``).
    let edge: EdgeCaching
    /// The store's change count when it was made (a change in this process ends it at once).
    let changes: Int
    var users = 0
    private var forgotten = false
    private var encoded: (second: Int64, head: HTTPResponseHead)?

    init(
        lease: AttachmentLease, status: HTTPResponse.Status, fields: HTTPFields, start: Int64, length: Int64,
        changes: Int, checked: ContinuousClock.Instant, edge: EdgeCaching
    ) {
        self.changes = changes
        self.edge = edge
        checkedUntil = checked + .seconds(1)
        self.lease = lease
        self.status = status
        self.fields = fields
        self.start = start
        self.length = length
        descriptor = lease.sendableDescriptor
        accessEnds = min(lease.access.expires, lease.attachment.expires)
    }

    /// The response head; `Cache-Control` counts down to the end of access, so it is made
    /// again when the second changes.
    func head(now: Int64) -> HTTPResponseHead {
        if let encoded, encoded.second == now { return encoded.head }
        var headers = HTTPHeaders()
        for field in fields {
            let value =
                field.name == .cacheControl
                ? edge.cacheControl(ends: accessEnds, now: now) : field.value
            headers.add(name: field.name.rawName, value: value)
        }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: status.code), headers: headers)
        encoded = (now, head)
        return head
    }

    private var raw: (second: Int64, head: ByteBuffer)?

    /// The head as bytes on the wire, as the HTTP/1 encoder writes ``head(now:)``.
    func rawHead(now: Int64) -> ByteBuffer {
        if let raw, raw.second == now { return raw.head }
        let head = self.head(now: now)
        var buffer = ByteBufferAllocator().buffer(capacity: 512)
        buffer.writeString("HTTP/1.1 \(head.status.code) \(head.status.reasonPhrase)\r\n")
        for (name, value) in head.headers {
            buffer.writeString(name)
            buffer.writeString(": ")
            buffer.writeString(value)
            buffer.writeString("\r\n")
        }
        buffer.writeString("\r\n")
        raw = (now, buffer)
        return buffer
    }

    /// The file region of one more request sent from it (counted as answered in `metrics`).
    func region(counted metrics: ServerMetrics) -> (NIOFileHandle, FileRegion) {
        metrics.downloadPaths.answered.add(1, ordering: .relaxed)
        users += 1
        let file = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: descriptor)
        return (file, FileRegion(fileHandle: file, readerIndex: Int(start), endIndex: Int(start + length)))
    }

    /// A request sent from it is written (or its client gone): the descriptor given back to the
    /// lease, which closes it; the bytes served, the request's metrics and log line.
    func written(
        _ result: Result<Void, any Error>, file: NIOFileHandle, started: ContinuousClock.Instant,
        metrics: ServerMetrics, logger: Logger, lines: LineLogHandler?
    ) {
        _ = try? file.takeDescriptorOwnership()
        release()
        if case .success = result { metrics.served(bytes: Int(length)) }
        DownloadFastPath.record(
            status: status.code, gone: result.isFailure, started: started, metrics: metrics, logger: logger,
            lines: lines)
    }

    /// One request sent from it is written.
    func release() {
        users -= 1
        if forgotten && users == 0 { lease.close() }
    }

    /// No request will be sent from it any more.
    func forget() {
        forgotten = true
        if users == 0 { lease.close() }
    }
}

/// Each event loop's remembered checks (a thread's own: no lock between loops), each for a
/// second, at most ``limit`` of them (each holds a descriptor); swept a second after the
/// first is remembered while any is left.
final class DownloadCache: @unchecked Sendable {  // each used only by the thread it belongs to
    static let limit = 256
    private static let perThread = ThreadSpecificVariable<DownloadCache>()
    private var entries: [Substring: CheckedDownload] = [:]
    private var sweeping = false

    /// The calling event loop's cache.
    static var current: DownloadCache {
        if let cache = perThread.currentValue { return cache }
        let cache = DownloadCache()
        perThread.currentValue = cache
        return cache
    }

    /// The check remembered for `key`, while it stands and its access has not ended.
    func entry(for key: Substring, now: Int64, changes: Int) -> CheckedDownload? {
        guard let entry = entries[key] else { return nil }
        guard ContinuousClock.now < entry.checkedUntil, now < entry.accessEnds, entry.changes == changes,
            entry.lease.isOpen
        else {
            entries[key] = nil
            entry.forget()
            return nil
        }
        return entry
    }

    func remember(_ entry: CheckedDownload, for key: Substring, on loop: any EventLoop) {
        guard entries.count < Self.limit else {
            entry.forget()
            return
        }
        entries[key]?.forget()
        entries[key] = entry
        if !sweeping {
            sweeping = true
            let cache = NIOLoopBound(self, eventLoop: loop)
            loop.scheduleTask(in: .milliseconds(1100)) { cache.value.sweep(on: loop) }
        }
    }

    /// Forgets every check that no longer stands; comes back while any is left.
    private func sweep(on loop: any EventLoop) {
        let now = ContinuousClock.now
        for (key, entry) in entries where now >= entry.checkedUntil {
            entries[key] = nil
            entry.forget()
        }
        if entries.isEmpty {
            sweeping = false
        } else {
            let cache = NIOLoopBound(self, eventLoop: loop)
            loop.scheduleTask(in: .milliseconds(500)) { cache.value.sweep(on: loop) }
        }
    }
}

extension AttachmentRoute {
    /// Taken before a download's check: the key ring looked at again when that look is 100 ms
    /// old (a directory store's key file), and when the object's row was read — what the check
    /// will rest on, so that it is remembered for most of a second and no longer.
    func checkBegins(_ segments: [Substring]) -> ContinuousClock.Instant? {
        store.refreshKeyRing(olderThan: .milliseconds(100))
        return segments.last.flatMap { AttachmentID(hex: $0.prefix { $0 != "." }) }.map { store.answeringSince($0) }
    }

    /// What ``prepare(segments:headers:logger:immediately:)`` gave, as a download an event loop
    /// can send from a local file; nil (nothing held) for a 304, a refusal or a remote object.
    func checked(
        _ prepared: Prepared?, since: ContinuousClock.Instant?, started: ContinuousClock.Instant
    )
        -> CheckedDownload?
    {
        guard case .send(let lease, let status, let fields, let start, let length, let edge)? = prepared else {
            return nil
        }
        guard lease.sendableDescriptor >= 0 else {
            lease.close()
            return nil
        }
        return CheckedDownload(
            lease: lease, status: status, fields: fields, start: start, length: length, changes: store.changes,
            checked: min(since ?? started, started), edge: edge)
    }
}
