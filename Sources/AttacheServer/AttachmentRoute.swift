import AttacheBase
import AttacheCore
import AttacheStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// `GET` and `HEAD <attachments path>/<token>/<id>.<ext>`: the URLs the pipeline writes.
///
/// The token is checked (signature, key ring, expiry, scope, revocation) before anything else;
/// every refusal is the same 403 (the reason goes to the debug log only). Bodies stream from
/// the open object under its lease, which is held until the last byte is written.
struct AttachmentRoute: Sendable {
    let store: AttachmentStore
    let metrics: ServerMetrics
    /// How long a shared cache may keep a download, and serve it past that (the service's).
    let edge: EdgeCaching
    /// The tenants: those with an edge time of their own shorten or lengthen their objects'.
    var tenants: Tenants? = nil
    /// Bytes read from the object per write (a local file).
    static let chunk = 64 << 10
    /// Bytes per ranged GET when the object is in a shared store's bucket.
    static let remoteChunk = 1 << 20
    /// Threads for a shared store's blocking calls (catalog queries, GETs), so they never hold
    /// an event loop or a task executor thread.
    static let blocking: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 32)
        pool.start()
        return pool
    }()

    /// Runs `body` on the blocking pool for a shared store, inline for a local one.
    func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard store.isShared else { return try body() }
        return try await Self.blocking.runIfActive(body)
    }

    /// The answer needs a shared store's catalog (see ``prepare(segments:headers:logger:immediately:)``).
    struct WouldWait: Error {}

    /// What a download answers, before any byte of the body.
    enum Prepared {
        /// 304, with the validators.
        case notModified(HTTPFields)
        /// 200 or 206: `length` bytes from `start` of the leased object.
        case send(AttachmentLease, HTTPResponse.Status, HTTPFields, start: Int64, length: Int64, edge: EdgeCaching)
    }

    /// Checks the token and the request's conditions for `<token>/<id>.<ext>` (`segments`
    /// after the attachments path) and says what to answer; refusals are thrown as problems.
    /// A `.send` holds the lease: the caller closes it once the body is written.
    ///
    /// With `immediately`, a shared store is not asked to wait on its catalog: when the answer
    /// needs it, ``WouldWait`` is thrown and nothing is held.
    func prepare(
        segments: [Substring], headers requestHeaders: HTTPFields, logger: Logger, immediately: Bool = false
    ) throws -> Prepared {
        guard segments.count <= 2 else { throw Problem(.notFound, .notFound, "no such attachment") }
        guard segments.count == 2, !segments[0].isEmpty else {
            throw Problem.unauthorized("an access token is required: <base>/<token>/<id>.<ext>")
        }
        let token = String(segments[0])
        let file = String(segments[1])
        // The id the token must open; a name that is no id still goes through the token check
        // (with an id no token opens) so that it is refused the same way.
        let name = file.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let id = AttachmentID(hex: name[0]) ?? AttachmentID(bytes: [UInt8](repeating: 0, count: 32))!
        let lease = try open(id, token: token, logger: logger, immediately: immediately)
        let stored = lease.attachment
        guard name.count == 2, name[1] == stored.kind.fileExtension else {
            lease.close()
            throw Problem(.notFound, .notFound, "no such attachment")
        }

        let edge: EdgeCaching
        do {
            edge = try self.edge(for: stored.id, immediately: immediately)
        } catch {
            lease.close()
            throw error
        }
        let now = store.configuration.clock()
        var headers: HTTPFields = [:]
        let etag = "\"\(stored.id.hex)\""
        headers[.eTag] = etag
        headers[.cacheControl] = edge.cacheControl(ends: min(lease.access.expires, stored.expires), now: now)
        headers[.acceptRanges] = "bytes"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "sandbox"

        if let match = requestHeaders[.ifNoneMatch], Self.matches(match, etag) {
            lease.close()
            return .notModified(headers)
        }
        headers[.contentType] = stored.kind.mimeType

        let size = stored.bytes
        var range: ClosedRange<Int64>? = nil
        if let header = requestHeaders[.range], Self.rangeApplies(requestHeaders, etag: etag) {
            switch ByteRange.parse(header, size: size) {
            case .whole:
                break
            case .unsatisfiable:
                lease.close()
                headers[.contentRange] = "bytes */\(size)"
                throw Problem(
                    .rangeNotSatisfiable, .invalidRequest, "the range is outside the attachment's \(size) bytes",
                    headers: headers)
            case .range(let r):
                range = r
                headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound)/\(size)"
            }
        }
        let start = range?.lowerBound ?? 0
        let length = range.map { $0.upperBound - $0.lowerBound + 1 } ?? size
        headers[.contentLength] = String(length)
        return .send(lease, range == nil ? .ok : .partialContent, headers, start: start, length: length, edge: edge)
    }

    /// Reads `want` bytes of `lease`'s object at `at`: a local file (a directory store's object,
    /// a shared store's copy) in place, an object in a bucket with ranged GETs on the blocking
    /// pool. The object is immutable and held open, so a short read means it was damaged.
    func reader(_ lease: AttachmentLease) -> @Sendable (_ at: Int64, _ want: Int) async throws -> ByteBuffer {
        let remote = lease.sendableDescriptor < 0
        let route = self
        return { at, want in
            let read = { @Sendable () throws -> ByteBuffer in
                var buffer = ByteBufferAllocator().buffer(capacity: want)
                let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
                    try lease.read(into: UnsafeMutableRawBufferPointer(rebasing: pointer[..<want]), at: at)
                }
                guard count == want else {
                    throw AttacheError(.ioError, "attachment \(lease.attachment.id) ended early")
                }
                return buffer
            }
            return remote ? try await route.blocking(read) : try read()
        }
    }

    /// The lease on `id` that `token` opens, or the problem to answer (``WouldWait`` when
    /// `immediately` and the catalog would have to be waited on).
    func open(_ id: AttachmentID, token: String, logger: Logger, immediately: Bool) throws -> AttachmentLease {
        let refused = { (refusal: TokenRefusal) in
            logger.debug("token refused", metadata: ["reason": "\(refusal.rawValue)"])
        }
        let opened = Result { () throws(AttacheError) -> AttachmentLease? in
            immediately
                ? try store.openWithoutWaiting(id, token: token, onRefusal: refused)
                : try store.open(id, token: token, onRefusal: refused)
        }
        switch opened {
        case .success(let open):
            guard let open else { throw WouldWait() }
            return open
        case .failure(let error):
            switch error.code {
            case .accessDenied: throw Problem(.forbidden, .accessDenied, "the token does not open this attachment")
            case .notFound: throw Problem(.notFound, .notFound, "no such attachment")
            case .storeUnavailable:
                logger.debug("store unavailable", metadata: ["error": "\(error.message)"])
                throw Self.unavailable("the store's catalog cannot be reached now")
            default: throw Problem(.internalServerError, .internalError, "the store could not open the attachment")
            }
        }
    }

    /// How long a shared cache may keep this object's downloads: the service's edge time, or
    /// when tenants have their own, the shortest of its holders' (a holder without one: the
    /// service's), so that no tenant's copy outlives the time it asked for. Who holds it is a
    /// catalog read: a shared store's is not made `immediately`.
    func edge(for id: AttachmentID, immediately: Bool) throws -> EdgeCaching {
        guard let ages = tenants?.edgeMaxAges, !ages.isEmpty else { return edge }
        if immediately && store.isShared { throw WouldWait() }
        // Who holds it cannot be said now: the shortest of all.
        let holders = (try? store.holders(of: id)) ?? Set(ages.keys).union([""])
        return edge.held(by: holders, ages: ages)
    }

    /// `POST <attachments path>/<token>/<id>.<ext>` (when receipts are on): what the device
    /// made of this attachment, `{"result": "full"|"small"|"failed", "code": "…", "ms": n}`,
    /// opened by the attachment's own token and counted in the metrics. Answers 204. A body
    /// up to 64 KiB is read and judged by its shape (400); a longer one is 413.
    func receipt(_ request: Request, context: AttacheRequestContext) async throws -> Response {
        context.notes.route = "receipt"
        // No conditions and no range: only whether the token opens the attachment.
        let (segments, logger) = (context.parameters.getCatchAll(), context.logger)
        let prepared = try await blocking { try prepare(segments: segments, headers: HTTPFields(), logger: logger) }
        switch prepared {
        case .send(let lease, _, _, _, _, _): lease.close()
        case .notModified: break
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 64 << 10)
        } catch {
            throw Problem(.contentTooLarge, .requestTooLarge, "a receipt is far shorter than 64 KiB")
        }
        // The strict parser: `false` is no number; `0.0` is an integer, as JSON Schema reads it.
        let object = try? JSONParser.parse(Array(body.readableBytesView))
        let result = object?["result"]?.stringValue
        let code = object?["code"]?.stringValue
        var milliseconds: Int?
        if case .number(let text)? = object?["ms"], let value = Double(text), value == value.rounded(),
            abs(value) < 1e12
        {
            milliseconds = Int(value)
        }
        let typed = (object?["code"] == nil || code != nil) && (object?["ms"] == nil || milliseconds != nil)
        guard typed, let result, ["full", "small", "placeholder", "failed"].contains(result),
            code.map({ (1...64).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") } })
                ?? true,
            milliseconds.map({ (0...3_600_000).contains($0) }) ?? true
        else {
            throw Problem(
                .badRequest, .invalidRequest,
                #"a receipt is {"result": "full"|"small"|"placeholder"|"failed", "code": "<letters and _>", "ms": 0…3600000}"#
            )
        }
        metrics.receipt(result: result, code: code, milliseconds: milliseconds)
        return Response(status: .noContent)
    }

    func handle(_ request: Request, context: AttacheRequestContext) async throws -> Response {
        context.notes.route = "attachment"
        // `<token>/<id>.<ext>` exactly: an empty segment (a trailing or doubled `/`) is no URL
        // the pipeline wrote, and is refused as the download path beneath the codec refuses it
        // (an edge must never keep a second copy under another spelling).
        let path = request.uri.path
        guard !path.hasSuffix("/"), !path.contains("//") else {
            throw Problem(.notFound, .notFound, "no such attachment")
        }
        let segments = context.parameters.getCatchAll()
        let (requestHeaders, logger) = (request.headers, context.logger)
        let prepared = try await blocking { try prepare(segments: segments, headers: requestHeaders, logger: logger) }
        let lease: AttachmentLease
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let start: Int64
        let length: Int64
        switch prepared {
        case .notModified(let fields):
            return Response(status: .notModified, headers: fields)
        case .send(let open, let code, let fields, let from, let count, _):
            (lease, status, headers, start, length) = (open, code, fields, from, count)
        }
        if request.method == .head {
            lease.close()
            return Response(status: status, headers: headers)
        }
        let metrics = self.metrics
        let remote = lease.sendableDescriptor < 0
        let chunk = remote ? Self.remoteChunk : Self.chunk
        let readChunk = reader(lease)
        // The first bytes are read before the status line, so a bucket that cannot be read is
        // answered 503 with Retry-After, not a 200 whose body stops.
        let first: ByteBuffer
        do {
            first = try await readChunk(start, Int(min(Int64(chunk), length)))
        } catch {
            lease.close()
            if let error = error as? AttacheError, error.code == .storeUnavailable {
                logger.debug("store unavailable", metadata: ["error": "\(error.message)"])
                throw Self.unavailable("the store's bucket cannot be read now")
            }
            throw error
        }
        let body = ResponseBody(contentLength: Int(length)) { writer in
            defer { lease.close() }
            var offset = start + Int64(first.readableBytes)
            let end = start + length
            try await writer.write(first)
            do {
                while offset < end {
                    let buffer = try await readChunk(offset, Int(min(Int64(chunk), end - offset)))
                    try await writer.write(buffer)
                    offset += Int64(buffer.readableBytes)
                }
            } catch let error as AttacheError {
                // Past the status line nothing but the connection's end can say it: logged and
                // counted, so a body cut by the store is told from one the client left.
                logger.warning(
                    "download cut by the store",
                    metadata: [
                        "id": "\(lease.attachment.id)", "sent": "\(offset - start)", "error": "\(error.message)",
                    ])
                metrics.downloadCut()
                throw error
            }
            metrics.served(bytes: Int(length))
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// How long a client is asked to wait before it tries again when the store cannot be reached.
    static let retryAfterSeconds = 2

    /// The answer when the store (its catalog or its bucket) cannot be reached: 503 with
    /// `Retry-After`, never a 500 and never a 200 cut short.
    static func unavailable(_ detail: String) -> Problem {
        var headers = HTTPFields()
        headers[.retryAfter] = String(retryAfterSeconds)
        return Problem(.serviceUnavailable, .storeUnavailable, detail + "; try again shortly", headers: headers)
    }

    /// Whether an `If-None-Match` list names `etag` (or is `*`).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { item in
            let tag = item.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// A `Range` counts unless `If-Range` names another representation.
    static func rangeApplies(_ headers: HTTPFields, etag: String) -> Bool {
        guard let condition = headers[.ifRange] else { return true }
        return condition.trimmingCharacters(in: .whitespaces) == etag
    }
}

/// One `bytes=` range of an object of `size` bytes (RFC 9110 §14.1.2). Several ranges, or a
/// unit other than bytes, are served whole, as the RFC allows.
enum ByteRange: Equatable {
    case whole
    case range(ClosedRange<Int64>)
    case unsatisfiable

    static func parse(_ header: String, size: Int64) -> ByteRange {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ s: String) -> Int64? {
            guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return Int64(s) ?? .max
        }
        if first.isEmpty {
            // The last N bytes.
            guard let suffix = number(last) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - suffix)...(size - 1))
        }
        guard let from = number(first) else { return .whole }
        if !last.isEmpty && number(last) == nil { return .whole }
        guard from < size else { return .unsatisfiable }
        let to = number(last).map { min($0, size - 1) } ?? (size - 1)
        guard to >= from else { return .whole }
        return .range(from...to)
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
