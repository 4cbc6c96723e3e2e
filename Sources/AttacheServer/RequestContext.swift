public import Hummingbird
public import NIOCore
import Synchronization

/// The per-request context: Hummingbird's core storage, the connection (to notice a client
/// that hangs up) and notes the handlers leave for the request log.
public struct AttacheRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's connection.
    public let channel: any Channel
    /// What the handler wants in the request's log line.
    let notes = RequestNotes()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The request body cap is the service's own (``ServerConfiguration/maxRequestBytes``),
    /// checked by the route; this only bounds what Hummingbird would collect by itself.
    public var maxUploadSize: Int { 1 << 20 }
}

/// Outcome codes and a route name a handler records for the request's log line and metrics.
final class RequestNotes: Sendable {
    private struct Fields {
        var route: String?
        var outcomes: [String] = []
        var code: String?
        var hungUp = false
        var tenant: String?
        var bytesIn: Int?
        var bytesOut: Int?
    }

    private let fields = Mutex(Fields())

    /// The route's name for logs and metrics (not the raw path, which holds tokens).
    var route: String? {
        get { fields.withLock { $0.route } }
        set { fields.withLock { $0.route = newValue } }
    }

    /// Per-attachment reasons of a processed payload.
    var outcomes: [String] {
        get { fields.withLock { $0.outcomes } }
        set { fields.withLock { $0.outcomes = newValue } }
    }

    /// The client closed its side before the request was complete.
    var hungUp: Bool {
        get { fields.withLock { $0.hungUp } }
        set { fields.withLock { $0.hungUp = newValue } }
    }

    /// The tenant a payload was counted for (its audit line and metrics).
    var tenant: String? {
        get { fields.withLock { $0.tenant } }
        set { fields.withLock { $0.tenant = newValue } }
    }

    /// The payload's bytes in, and the answer's payload bytes out.
    var bytesIn: Int? {
        get { fields.withLock { $0.bytesIn } }
        set { fields.withLock { $0.bytesIn = newValue } }
    }

    var bytesOut: Int? {
        get { fields.withLock { $0.bytesOut } }
        set { fields.withLock { $0.bytesOut = newValue } }
    }

    /// The error code of a refused request.
    var code: String? {
        get { fields.withLock { $0.code } }
        set { fields.withLock { $0.code = newValue } }
    }
}
