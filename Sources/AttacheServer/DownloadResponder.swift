import AttacheBase
import AttacheStore
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Attachment downloads answered on the connection's event loop: the check, remembered for a
/// second; the head; the body handed to the kernel with `sendfile`; the counts and the log line;
/// and a shutdown's request to close held while a download is checked or written. One per
/// connection, behind each of two thin adapters that only read requests: ``RawDownloads``
/// (beneath the HTTP/1 codec, on connections that only download) and ``DecodedDownloads``
/// (behind the decoder, for ranges and the connections that also did something else). What it
/// does not send — `HEAD`, 304, every refusal, an object without a local copy — the router
/// answers through ``AttachmentRoute``, the same check, so the paths cannot disagree.
///
/// **Checks remembered for a second.** A whole-object download's check (signature, key ring,
/// expiry, scope, the catalog row, revocation) is remembered by the event loop that made it,
/// with its lease, until a second after the oldest reading it rests on (the key ring as last
/// looked at; a shared store's row as read): another `GET` of the same URL meanwhile is sent at
/// once (the token's and the object's expiry are still checked on every request). So a
/// revocation, a key retirement or a collection by another process is honoured within a
/// second, as a replica of a shared store honours them; one made through this process's store
/// (its change count moves) ends every remembered check at once. The lease keeps the object
/// from being collected meanwhile.
///
/// With a shared store a check that needs a catalog query runs on the blocking pool, never on
/// the event loop; the adapter holds the connection's next bytes until it is answered.
final class DownloadResponder {
    /// How an adapter's answers go on the wire.
    enum Wire {
        /// Through the HTTP/1 encoder (which pairs each answer with its request's method).
        case parts
        /// As bytes, beneath the codec.
        case bytes
    }

    /// What became of a request.
    enum Answer {
        /// Sent here.
        case sent
        /// Not one to send here: the router's.
        case router
        /// Its check runs on the blocking pool: true when the download was then sent here.
        case checking(EventLoopFuture<Bool>)
    }

    private let route: AttachmentRoute
    private let metrics: ServerMetrics
    private let logger: Logger
    /// The log's handler when it is the service's own: each download's line is then built
    /// straight into bytes (``LineLogHandler/request(id:method:route:status:milliseconds:outcome:)``).
    private let lines: LineLogHandler?
    private let wire: Wire
    /// The event loop's remembered checks (a responder runs only on its channel's loop).
    private lazy var cache = DownloadCache.current
    /// Downloads being written, and whether a check runs on the pool.
    private(set) var sending = 0
    private(set) var checking = false
    /// A shutdown's request to close, held while a download is checked or written.
    private var quiesce: Any?

    init(route: AttachmentRoute, metrics: ServerMetrics, logger: Logger, wire: Wire) {
        self.route = route
        self.metrics = metrics
        self.logger = logger
        self.lines = logger.handler as? LineLogHandler
        self.wire = wire
    }

    /// Answers a `GET` of `path` (after the attachments prefix, without the query) with the
    /// request's `conditions` (nil: none, a whole object whose check is remembered) when its
    /// check passes and the object has a local file.
    func answer(_ context: ChannelHandlerContext, path: Substring, conditions: HTTPFields?) -> Answer {
        let started = ContinuousClock.now
        let store = route.store
        let now = store.configuration.clock()
        if conditions == nil, let entry = cache.entry(for: path, now: now, changes: store.changes) {
            metrics.downloadPaths.remembered.add(1, ordering: .relaxed)
            send(context, entry, now: now, started: started)
            return .sent
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let since = route.checkBegins(segments)
        let (route, logger, fields) = (self.route, self.logger, conditions ?? HTTPFields())
        let key = conditions == nil ? String(path) : nil
        // A directory store answers here; a shared one too when it needs no query (the row read
        // within the last second and a local copy at hand), else its check runs on the pool.
        let immediate = Result {
            try route.prepare(segments: segments, headers: fields, logger: logger, immediately: true)
        }
        guard case .failure(let error) = immediate, error is AttachmentRoute.WouldWait else {
            let entry = route.checked(try? immediate.get(), since: since, started: started)
            return sent(context, entry, key: key, started: started) ? .sent : .router
        }
        checking = true
        let checked = AttachmentRoute.blocking.runIfActive(eventLoop: context.eventLoop) {
            try route.prepare(segments: segments, headers: fields, logger: logger)
        }
        let done = context.eventLoop.makePromise(of: Bool.self)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        checked.whenComplete { result in
            let (responder, context) = bound.value
            responder.checking = false
            let entry = route.checked(try? result.get(), since: since, started: started)
            if entry != nil { responder.metrics.downloadPaths.checkedOnPool.add(1, ordering: .relaxed) }
            done.succeed(responder.sent(context, entry, key: key, started: started))
        }
        return .checking(done.futureResult)
    }

    /// Sends a download just checked; a whole object's check is remembered under `key`.
    private func sent(
        _ context: ChannelHandlerContext, _ entry: CheckedDownload?, key: String?, started: ContinuousClock.Instant
    ) -> Bool {
        // 304, refusals and objects without a local file: the router's.
        guard let entry else { return false }
        send(context, entry, now: route.store.configuration.clock(), started: started)
        // Remembered once it is in use, so a full cache closes the lease only after this send.
        if let key, entry.status == .ok {
            cache.remember(entry, for: Substring(key), on: context.eventLoop)
        } else {
            entry.forget()
        }
        return true
    }

    static let cork = ChannelOptions.Types.SocketOption(
        level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_TCP)), name: NIOBSDSocket.Option(rawValue: TCP_CORK))

    /// Writes the head and the file region of `entry`.
    private func send(
        _ context: ChannelHandlerContext, _ entry: CheckedDownload, now: Int64, started: ContinuousClock.Instant
    ) {
        let (file, region) = entry.region(counted: metrics)
        // Corked while the head and the file go out, so the head leaves in the file's first
        // segment rather than in a packet of its own (nginx's tcp_nopush): measured against no
        // cork, 5–15% more downloads a second.
        let options = context.channel.syncOptions
        try? options?.setOption(Self.cork, value: 1)
        let done = context.eventLoop.makePromise(of: Void.self)
        switch wire {
        case .parts:
            context.write(NIOAny(HTTPServerResponsePart.head(entry.head(now: now))), promise: nil)
            context.write(NIOAny(HTTPServerResponsePart.body(.fileRegion(region))), promise: nil)
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: done)
        case .bytes:
            context.write(NIOAny(IOData.byteBuffer(entry.rawHead(now: now))), promise: nil)
            context.writeAndFlush(NIOAny(IOData.fileRegion(region)), promise: done)
        }
        try? options?.setOption(Self.cork, value: 0)
        let (metrics, logger, lines) = (self.metrics, self.logger, self.lines)
        sending += 1
        // Completed on this event loop: the responder, its context and the entry stay on it.
        done.futureResult.assumeIsolated().whenComplete { result in
            entry.written(result, file: file, started: started, metrics: metrics, logger: logger, lines: lines)
            self.sending -= 1
            self.quiesceIfIdle(context)
        }
    }

    /// Whether `event` is a shutdown's request to close that is held here (a download is being
    /// checked or written: the handler behind closes a connection it thinks idle).
    func holds(_ event: Any) -> Bool {
        guard event is ChannelShouldQuiesceEvent, sending > 0 || checking else { return false }
        quiesce = event
        return true
    }

    /// A shutdown asked the connection to close: no new download is taken here.
    var holdsQuiesce: Bool { quiesce != nil }

    /// Passes on a held request to close once no download is checked or written.
    func quiesceIfIdle(_ context: ChannelHandlerContext) {
        guard sending == 0, !checking, let event = quiesce else { return }
        quiesce = nil
        context.fireUserInboundEventTriggered(event)
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
        DownloadResponder.record(
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
