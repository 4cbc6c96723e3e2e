import AttacheBase
package import HTTPTypes
import Logging
import NIOCore
package import NIOHTTP1
import NIOHTTPTypesHTTP1

/// Refuses, before anything reads them, requests whose framing or target HTTP/1.1 forbids
/// (RFC 9112): an HTTP/1.1 request without `Host`, any request with two, an empty `Host` or
/// one that is not a host and port; a transfer coding
/// other than `chunked` alone (501: the service decodes no other); `chunked` twice or an empty
/// `Transfer-Encoding` (400); any `Transfer-Encoding` on HTTP/1.0 (400: its framing cannot be
/// trusted). The answer is a problem with `invalid_request`, and the connection is closed after
/// it: whatever follows on it cannot be framed.
///
/// It sits in front of the conversion to HTTP types, which keeps neither the version nor a
/// second `Host`; ``install(before:)`` puts it there.
final class RequestFraming: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let metrics: ServerMetrics
    private let logger: Logger
    /// A request was refused: everything after it on this connection is dropped.
    private var refused = false

    init(metrics: ServerMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if case .head(let head) = unwrapInboundIn(data), let (status, detail) = Self.check(head) {
            refused = true
            refuse(context, head: head, status: status, detail: detail)
            return
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The decoder's complaint about the body of a request already refused.
        if refused { return }
        context.fireErrorCaught(error)
    }

    /// What is wrong with a request's head, or nil.
    static func check(_ head: HTTPRequestHead) -> (HTTPResponse.Status, String)? {
        FramingRules.check(head)
    }

    static func isHost(_ value: some Collection<UInt8>) -> Bool { FramingRules.isHost(value) }

    private func refuse(
        _ context: ChannelHandlerContext, head request: HTTPRequestHead, status: HTTPResponse.Status, detail: String
    ) {
        let started = ContinuousClock.now
        let problem = Problem(status, .invalidRequest, detail)
        let body = context.channel.allocator.buffer(string: problem.body)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/problem+json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase),
            headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        RequestLogMiddleware.record(
            route: "unmatched", method: request.method.rawValue, status: status.code, since: started,
            code: AttacheError.Code.invalidRequest.rawValue, extra: ["reason": "\(detail)"], metrics: metrics,
            logger: logger)
    }

    /// Puts ``ConnectionPhases``, ``RequestFraming``, ``DecodedDownloads`` and
    /// ``LoadShedding``, in that order, in front of the HTTP/1-to-HTTP-types codec, then leaves
    /// the pipeline (Hummingbird adds its extra handlers behind that codec).
    /// With `raw`, that handler goes in front of the HTTP/1 decoder, and the ``ConnectionClock``
    /// in front of everything.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = Never
        private let clock: ConnectionClock
        private let framing: RequestFraming
        private let downloads: DecodedDownloads
        private let raw: RawDownloads?
        private let shedding: LoadShedding?

        init(
            _ clock: ConnectionClock, _ framing: RequestFraming, _ downloads: DecodedDownloads,
            raw: RawDownloads? = nil, shedding: LoadShedding? = nil
        ) {
            self.clock = clock
            self.framing = framing
            self.downloads = downloads
            self.raw = raw
            self.shedding = shedding
        }

        func handlerAdded(context: ChannelHandlerContext) {
            let pipeline = context.pipeline.syncOperations
            if let codec = try? pipeline.handler(type: HTTP1ToHTTPServerCodec.self) {
                try? pipeline.addHandler(ConnectionPhases(clock: clock), position: .before(codec))
                try? pipeline.addHandler(framing, position: .before(codec))
                try? pipeline.addHandler(downloads, position: .before(codec))
                if let shedding { try? pipeline.addHandler(shedding, position: .before(codec)) }
                if let raw { try? pipeline.addHandler(raw, position: .first) }
                try? pipeline.addHandler(clock, position: .first)
            }
            pipeline.removeHandler(context: context, promise: nil)
        }
    }
}

/// The framing rules of every path (``RequestFraming``, ``DownloadHead``), in one place.
package enum FramingRules {
    /// What is wrong with a request's head, or nil.
    package static func check(_ head: HTTPRequestHead) -> (HTTPResponse.Status, String)? {
        let hosts = head.headers["Host"]
        if hosts.count > 1 { return (.badRequest, "a request has one Host header, not \(hosts.count)") }
        if hosts.isEmpty, head.version == .http1_1 { return (.badRequest, "an HTTP/1.1 request needs a Host header") }
        // A field's value is without the blanks around it (RFC 9110 5.5).
        if let host = hosts.first,
            !isHost(host.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 })
        {
            return (.badRequest, "the Host header is not a host name or address")
        }
        let codings = head.headers["Transfer-Encoding"].flatMap {
            $0.split(separator: ",", omittingEmptySubsequences: false)
        }
        guard !codings.isEmpty else { return nil }
        if head.version.major < 1 || (head.version.major == 1 && head.version.minor == 0) {
            return (.badRequest, "HTTP/1.0 has no Transfer-Encoding; the body cannot be framed")
        }
        // A coding's name, without parameters or the blanks around it.
        let names = codings.map { coding in
            let name = coding.prefix { $0 != ";" }.drop { $0 == " " || $0 == "\t" }
            return String(name.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
        }
        if let other = names.first(where: { $0 != "chunked" && !$0.isEmpty }) {
            return (.notImplemented, "the transfer coding \(other.prefix(40)) is not supported; send chunked alone")
        }
        if names != ["chunked"] { return (.badRequest, "Transfer-Encoding must name chunked once") }
        return nil
    }

    /// Whether a Host value is `uri-host [ ":" port ]` (RFC 3986's characters, not empty): the
    /// one rule for every path, ``DownloadHead`` included.
    package static func isHost(_ value: some Collection<UInt8>) -> Bool {
        !value.isEmpty && value.allSatisfy(hostByte)
    }

    /// `uri-host [ ":" port ]` characters (RFC 3986: reg-name, IP literals, port).
    private static func hostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: Array("-._~%!$&'()*+,;=:[]".utf8).contains(byte)
        }
    }
}
