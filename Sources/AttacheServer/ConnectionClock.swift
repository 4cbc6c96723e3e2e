import AttacheBase
import Glibc
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// How long a connection may take over each part of its life, and how many may be open at
/// once: the defaults are nginx's (`client_header_timeout`, `client_body_timeout`,
/// `keepalive_timeout`, `send_timeout`).
public struct ConnectionLimits: Sendable, Equatable {
    /// From a request head's first byte (or a new connection's start) to its last.
    public var headTimeout: Duration = .seconds(60)
    /// Between two reads of a request body.
    public var bodyTimeout: Duration = .seconds(60)
    /// A connection with nothing asked and nothing to answer, after its last answer.
    public var idleTimeout: Duration = .seconds(75)
    /// Between two writes that make progress while an answer is being sent.
    public var sendTimeout: Duration = .seconds(60)
    /// Connections open at once; the newest beyond is closed as it is accepted. 0: from the
    /// descriptor limit (``defaultMaxConnections(descriptors:maxConcurrent:)``).
    public var maxConnections = 0

    public init() {}

    /// Descriptors kept for everything but the clients' connections: the store's files and
    /// catalog, the fetches of the payloads admitted (a few each) and the process's own.
    public static func reserve(maxConcurrent: Int) -> Int { 64 + 4 * maxConcurrent }

    /// The connections that fit beside ``reserve(maxConcurrent:)`` when each may hold two
    /// descriptors (its socket and the file of a download it is sent); at least 16.
    public static func defaultMaxConnections(descriptors: Int, maxConcurrent: Int) -> Int {
        max(16, (descriptors - reserve(maxConcurrent: maxConcurrent)) / 2)
    }

    /// The limit in force: ``maxConnections``, or the default for the process's descriptor
    /// limit as it is now.
    public func connectionLimit(maxConcurrent: Int) -> Int {
        if maxConnections > 0 { return maxConnections }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return 1 << 20
        }
        return Self.defaultMaxConnections(descriptors: Int(limit.rlim_cur), maxConcurrent: maxConcurrent)
    }

    /// Raises the process's soft descriptor limit to its hard one (as Go's runtime and nginx's
    /// `worker_rlimit_nofile` do): the soft limit of 1,024 is there for programs that use
    /// `select`, which none here does. The limit after.
    @discardableResult
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}

/// The connections open now, shared by every connection of a service.
final class ConnectionCount: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    /// Refused connections held a moment after their 503 (so that the client reads it before the
    /// close), at most ``lingerLimit`` at once: past that, one is closed as soon as it is written.
    let lingering = Atomic<Int>(0)
    static let lingerLimit = 32

    init(limit: Int) { self.limit = max(1, limit) }

    var count: Int { open.load(ordering: .relaxed) }

    /// Counts one more; false (nothing counted) when the limit is reached.
    func enter() -> Bool {
        if open.add(1, ordering: .relaxed).newValue <= limit { return true }
        open.subtract(1, ordering: .relaxed)
        return false
    }

    func leave() { open.subtract(1, ordering: .relaxed) }
}

/// Holds a connection to its timeouts and counts it against the open connections' limit.
///
/// It is the first handler of each connection, so it sees every byte read and written,
/// whether the HTTP/1 codec or ``RawDownloads`` answers; ``ConnectionPhases``, behind the
/// decoder, tells it where a request's head and body end. One timer per connection looks at
/// the times the events wrote, a few times a timeout (an event only writes a time).
///
/// - a new connection, or bytes after an answer: the head must be whole within the head
///   timeout of its first byte (one byte every 10 s does not keep it open);
/// - a body: each read within the body timeout of the last, while the service asks for more;
/// - an answer being written: progress within the send timeout while the socket is full;
/// - nothing asked and nothing to answer: closed after the idle timeout.
///
/// A request the service is working on has no read timeout here (its deadline bounds it).
final class ConnectionClock: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    enum Phase: String, CaseIterable {
        case head, body, idle, send
    }

    private let limits: ConnectionLimits
    private let connections: ConnectionCount
    private let metrics: ServerMetrics
    private let logger: Logger

    private var counted = false
    /// Closed as it was accepted: the open connections' limit was reached.
    private var refused = false
    /// Requests whose head was decoded, whose end was decoded, and whose answer was written to
    /// its end (an answer may end before its request's body: a refusal).
    private var heads = 0
    private var ends = 0
    private var answers = 0
    /// A request's head was decoded and its end not yet.
    private var readingBody: Bool { heads > ends }
    /// Requests read whole and not yet answered whole.
    private var awaitingAnswers: Int { ends - answers }
    /// Bytes handed to the socket in all, and how many of them had left when the timer last
    /// looked, and when it last saw some leave.
    private var enqueued = 0
    private var lastSent = 0
    private var lastProgress: NIODeadline = .now()
    /// An answer was written beneath the codec since the timer last looked.
    private var rawAnswered = false
    /// The first byte of a head not yet whole; nil when none is arriving.
    private var headStarted: NIODeadline?
    private var lastRead: NIODeadline = .now()
    /// The last answer's end, or the connection's start.
    private var lastAnswer: NIODeadline = .now()
    /// An answer was ever written: the idle timeout applies between requests, the head
    /// timeout before the first.
    private var answered = false
    /// The handlers behind asked for more bytes and none came yet.
    private var readRequested = false
    private var timer: Scheduled<Void>?

    init(limits: ConnectionLimits, connections: ConnectionCount, metrics: ServerMetrics, logger: Logger) {
        self.limits = limits
        self.connections = connections
        self.metrics = metrics
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { started(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        started(context)
        context.fireChannelActive()
    }

    private func started(_ context: ChannelHandlerContext) {
        guard !counted, !refused else { return }
        guard connections.enter() else { return refuse(context) }
        counted = true
        metrics.connections(open: connections.count)
        let now = NIODeadline.now()
        (lastRead, lastAnswer, lastProgress) = (now, now, now)
        arm(context, at: now + tick)
    }

    /// Answers a connection beyond the limit with a 503 and closes it: its side as soon as the
    /// answer is written, the whole a quarter of a second later or when the client closes (the
    /// request it sent meanwhile is read and dropped, so no reset cuts the answer before the
    /// client reads it) — for at most ``ConnectionCount/lingerLimit`` connections at once; past
    /// them, the whole at once.
    private func refuse(_ context: ChannelHandlerContext) {
        refused = true
        metrics.connectionRefused()
        let problem = Problem(
            .serviceUnavailable, .overloaded, "every connection place (\(connections.limit)) is taken",
            limit: .maxConnections)
        var answer = context.channel.allocator.buffer(capacity: 256 + problem.body.utf8.count)
        answer.writeString(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                + "Content-Length: \(problem.body.utf8.count)\r\nCache-Control: no-store\r\nRetry-After: 1\r\n"
                + "Connection: close\r\n\r\n" + problem.body)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let connections = self.connections
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(answer))).whenComplete { _ in
            let context = bound.value
            guard connections.lingering.add(1, ordering: .relaxed).newValue <= ConnectionCount.lingerLimit else {
                connections.lingering.subtract(1, ordering: .relaxed)
                return context.close(promise: nil)
            }
            context.close(mode: .output, promise: nil)
            context.eventLoop.scheduleTask(in: .milliseconds(250)) {
                connections.lingering.subtract(1, ordering: .relaxed)
                bound.value.close(promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { finish() }

    private func finish() {
        timer?.cancel()
        timer = nil
        if counted {
            counted = false
            connections.leave()
            metrics.connections(open: connections.count)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection's request is dropped.
        if refused { return }
        let now = NIODeadline.now()
        lastRead = now
        readRequested = false
        if !readingBody, awaitingAnswers <= 0, headStarted == nil { headStarted = now }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        readRequested = true
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(let buffer): enqueued &+= buffer.readableBytes
        case .fileRegion(let region): enqueued &+= region.readableBytes
        }
        // An answer written while no request is open here was read beneath the codec
        // (``RawDownloads``): its head was whole, and the connection is idle once it is sent.
        if !readingBody, awaitingAnswers <= 0 {
            headStarted = nil
            rawAnswered = true
        }
        context.write(data, promise: promise)
    }

    // MARK: - Told by ``ConnectionPhases``

    /// A request's head was decoded.
    func headRead() {
        headStarted = nil
        heads += 1
        lastRead = .now()
    }

    /// A request's end was decoded.
    func requestRead() { ends += 1 }

    /// A request's answer was written to its end.
    func answerWritten() {
        answers += 1
        answered = true
        lastAnswer = .now()
    }

    // MARK: - The timer

    private func arm(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer?.cancel()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (clock, context) = bound.value
            clock.fired(context)
        }
    }

    /// The phase the connection is in and when it times out there; nil when no timeout runs
    /// (the service is working on a request and nothing waits to be written). `buffered`: the
    /// bytes waiting to be written.
    private func due(buffered: Int) -> (phase: Phase, at: NIODeadline)? {
        if readingBody {
            return (.body, lastRead + TimeAmount(limits.bodyTimeout))
        }
        if buffered > 0 {
            return (.send, lastProgress + TimeAmount(limits.sendTimeout))
        }
        if awaitingAnswers > 0 { return nil }
        if let headStarted { return (.head, headStarted + TimeAmount(limits.headTimeout)) }
        if answered { return (.idle, lastAnswer + TimeAmount(limits.idleTimeout)) }
        return (.head, lastAnswer + TimeAmount(limits.headTimeout))
    }

    private func fired(_ context: ChannelHandlerContext) {
        timer = nil
        guard counted, context.channel.isActive else { return }
        let now = NIODeadline.now()
        let next = now + tick
        let buffered = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        // Bytes that left since the last look are progress, whoever is slow.
        if enqueued &- buffered != lastSent {
            lastSent = enqueued &- buffered
            lastProgress = now
        }
        if rawAnswered {
            // Answered beneath the codec within the last look: idle from now (a tick late at most).
            rawAnswered = false
            answered = true
            lastAnswer = now
        }
        guard let (phase, due) = due(buffered: buffered) else { return arm(context, at: next) }
        switch phase {
        case .head, .body:
            // Bytes the handlers behind did not ask for are not the client's delay.
            if !readRequested {
                lastRead = now
                if phase == .head { headStarted = now }
                return arm(context, at: next)
            }
        case .send:
            // A slow reader of a large file keeps going (bytes leave between looks); one that
            // reads nothing does not.
            if due > now { return arm(context, at: next) }
        case .idle: break
        }
        guard due <= now || phase == .send else { return arm(context, at: min(due, next)) }
        metrics.connectionTimedOut(phase.rawValue)
        logger.debug("connection closed: \(phase.rawValue) timeout", metadata: ["timeout": "\(phase.rawValue)"])
        context.close(promise: nil)
    }

    /// How often the timer looks: a quarter of the shortest timeout, from a quarter of a second
    /// to five seconds (a 60 s timeout is kept within 5 s, a 1 s one within 0.25 s).
    private var tick: TimeAmount {
        let shortest = [limits.headTimeout, limits.bodyTimeout, limits.idleTimeout, limits.sendTimeout].min()!
        return TimeAmount(min(.seconds(5), max(.milliseconds(250), shortest / 4)))
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Tells the connection's ``ConnectionClock`` where requests' heads and bodies end and where
/// answers end: behind the HTTP/1 decoder, in front of the conversion to HTTP types.
final class ConnectionPhases: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let clock: ConnectionClock

    init(clock: ConnectionClock) { self.clock = clock }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: clock.headRead()
        case .body: break
        case .end: clock.requestRead()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { clock.answerWritten() }
        context.write(data, promise: promise)
    }
}
