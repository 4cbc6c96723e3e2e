import AttacheBase
import AttacheCore
import AttacheMedia
import AttachePreview
import AttacheSeal
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `POST /v1/notifications`: the payload in, the payload to send out.
///
/// The answer's body is the mutated payload byte for byte as `attache process` prints it (or
/// the payload unchanged when it cannot be mutated), with a summary in `Attache-*` headers.
/// `?envelope=true` answers a JSON envelope instead: the payload (as JSON and as base64 of
/// its exact bytes) beside the per-attachment report.
struct NotificationRoute: Sendable {
    let pipelines: PipelineSlot
    let configuration: ServerConfiguration
    let tenants: Tenants
    let admission: Admission
    let metrics: ServerMetrics
    let hangUps: HangUps

    func handle(_ request: Request, context: AttacheRequestContext) async throws -> Response {
        context.notes.route = "notifications"
        let terms = try QueryTerms(request.uri.queryParameters)
        let envelope = try terms.flag("envelope") ?? false
        let (result, _) = try await process(request, context: context, terms: terms, payload: nil)
        return envelope ? Self.envelope(result) : Self.plain(result)
    }

    /// `POST /v1/preview` (the payload as the body) and `GET /v1/preview?payload=` (the payload
    /// as base64url): the payload processed as `POST /v1/notifications` would, answered with the
    /// page that shows it on each platform (``NotificationPreview``), under the same key, limits
    /// and terms.
    func preview(_ request: Request, context: AttacheRequestContext) async throws -> Response {
        context.notes.route = "preview"
        let terms = try QueryTerms(request.uri.queryParameters)
        var payload: [UInt8]?
        if request.method == .get {
            guard let text = terms.value("payload") else {
                throw Problem(.badRequest, .invalidRequest, "payload is required: the payload as base64url")
            }
            guard text.utf8.count <= Self.previewQueryLimit else {
                throw Problem(
                    .badRequest, .invalidRequest,
                    "payload is over \(Self.previewQueryLimit) characters: POST the payload to /v1/preview")
            }
            guard let bytes = Self.base64URL(text) else {
                throw Problem(.badRequest, .invalidRequest, "payload must be the payload as base64url")
            }
            payload = bytes
        }
        let (result, pipeline) = try await process(request, context: context, terms: terms, payload: payload)
        let page = await withCheckedContinuation { done in
            DispatchQueue.global().async {
                done.resume(
                    returning: NotificationPreview(title: "payload").render(
                        result, objects: NotificationPreview.objects(in: pipeline.store)))
            }
        }
        var headers = Self.summaryHeaders(result)
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentSecurityPolicy] = NotificationPreview.contentSecurityPolicy(for: page)
        headers[.xContentTypeOptions] = "nosniff"
        headers[.referrerPolicy] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// The longest `payload` a `GET /v1/preview` takes (an APNs payload of 4 KB is 5462).
    static let previewQueryLimit = 8192

    /// base64url (RFC 4648 §5), padded or not, its last character's spare bits ignored; nil
    /// when it is not (another character, a length of 4n + 1, padding where none belongs).
    static func base64URL(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        let body = characters.prefix { $0 != UInt8(ascii: "=") }
        let padding = characters.count - body.count
        guard body.count % 4 != 1, padding == 0 || (body.count + padding) % 4 == 0, padding <= 2,
            characters.suffix(padding).allSatisfy({ $0 == UInt8(ascii: "=") })
        else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count * 3 / 4)
        var bits = 0
        var count = 0
        for character in body {
            let value: Int
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = Int(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = Int(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            bits = (bits << 6 | value) & 0xFFFF
            count += 6
            if count >= 8 {
                count -= 8
                bytes.append(UInt8(truncatingIfNeeded: bits >> count))
            }
        }
        return bytes
    }

    /// The payload (the request's body, or `payload` when given) through the pipeline, with the
    /// caller's key, rate, admission place, terms and deadline: the result, and the pipeline
    /// that made it (its store holds the renditions).
    private func process(
        _ request: Request, context: AttacheRequestContext, terms: QueryTerms, payload: [UInt8]?
    ) async throws -> (PipelineResult, Pipeline) {
        let arrived = ContinuousClock.now
        let tenant = try authenticate(request)
        let id = tenant?.id ?? Tenants.anonymous
        context.notes.tenant = id
        if let tenant, let wait = tenants.admit(tenant) {
            metrics.rateLimited(tenant: id)
            throw Problem(
                .tooManyRequests, .rateLimited,
                "this tenant's requests a second (\(tenant.rate ?? 0), burst \(tenant.burst)) are spent",
                limit: .tenantRate, headers: [.retryAfter: String(wait)])
        }
        // The service's settings, the tenant's over them, the request's terms over those.
        let pipeline = pipelines.current
        let asked = try requestedSettings(
            terms, tenant?.applied(to: pipeline.configuration) ?? pipeline.configuration,
            deadline: request.headers[.attacheDeadline])
        let deadline = arrived + min(asked.deadline, configuration.maxDeadline)
        let seal = try requestedSeal(request)
        let focus = try requestedFocus(terms)

        let bytes: [UInt8]
        if let payload {
            guard payload.count <= configuration.maxRequestBytes else {
                throw Self.tooLarge(configuration.maxRequestBytes)
            }
            bytes = payload
        } else {
            bytes = try await body(request)
        }
        context.notes.bytesIn = bytes.count
        guard await admission.enter(tenant: id) else {
            metrics.overloaded()
            throw Problem(
                .serviceUnavailable, .overloaded,
                "every pipeline slot (\(admission.slots)) and queue place (\(admission.queue)) is taken",
                limit: .maxQueued, headers: [.retryAfter: String(configuration.retryAfterSeconds)])
        }
        defer { admission.leave(tenant: id) }

        // The work stops when the client hangs up (its connection closes) or the deadline passes.
        let configured = pipeline.configured(asked).fetching(from: tenant?.sources)
        let work = Task {
            await configured.process(bytes, deadline: deadline, seal: seal, tenant: id, focus: focus)
        }
        let watch = hangUps.watch(context.channel) { work.cancel() }
        let result = await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
        watch.set(nil)

        metrics.pipeline(result)
        context.notes.outcomes = result.outcomes.map(\.reason)
        context.notes.bytesOut = result.payload.count
        return (result, configured)
    }

    /// The request's body, whole: the cap checked from Content-Length before a byte is read,
    /// and again while reading.
    private func body(_ request: Request) async throws -> [UInt8] {
        let cap = configuration.maxRequestBytes
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > cap {
            throw Self.tooLarge(cap)
        }
        do {
            return Array(buffer: try await request.body.collect(upTo: cap))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw Self.tooLarge(cap)
        } catch is NIOTooManyBytesError {
            // A body without Content-Length (chunked) runs over the cap while it is read.
            throw Self.tooLarge(cap)
        }
    }

    /// `Attache-Seal-Key` (the device's public key, base64) with `Attache-Seal-Kid`: seal this
    /// payload to that device. Headers that break the document's patterns are refused (400); a
    /// seal asked for that cannot be made goes to the pipeline as such (the placeholder alone).
    private func requestedSeal(_ request: Request) throws -> Result<SealRecipient, AttacheError>? {
        let key = request.headers[.attacheSealKey]
        let kid = request.headers[.attacheSealKid]
        guard key != nil || kid != nil else { return nil }
        if let key, key.isEmpty || key.utf8.count > 512 || !key.utf8.allSatisfy(Self.base64Byte) {
            throw Problem(.badRequest, .invalidRequest, "Attache-Seal-Key is the base64 of a public key")
        }
        if let kid, (try? SealRecipient.check(kid)) == nil {
            throw Problem(.badRequest, .invalidRequest, "Attache-Seal-Kid is 1–64 of A-Z a-z 0-9 . _ : -")
        }
        guard let key, let kid else {
            return .failure(AttacheError(.sealFailed, "Attache-Seal-Key and Attache-Seal-Kid go together"))
        }
        do {
            return .success(try SealRecipient(encoded: Array(key.utf8), keyID: kid))
        } catch SealError.badKey(let why) where why.hasPrefix("a key id") {
            throw Problem(.badRequest, .invalidRequest, "Attache-Seal-Kid: \(why)")
        } catch {
            return .failure(AttacheError(.sealFailed, "Attache-Seal-Key: \(error)"))
        }
    }

    private static func base64Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="),
            UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// A request without credentials passes only with `--allow-anonymous`; one that presents
    /// credentials passes only when they are an accepted key, whatever `--allow-anonymous` says
    /// (a wrong key is a client to tell, not one to let through). Returns the tenant the
    /// payload's work is counted for (the tenants file's, `key-N` for the N-th `--api-keys`
    /// key), nil for an anonymous caller.
    private func authenticate(_ request: Request) throws -> Tenant? {
        guard let header = request.headers[.authorization] else {
            if configuration.allowAnonymous { return nil }
            throw Problem.unauthorized("an API key is required: Authorization: Bearer <key>")
        }
        guard APIKeys.bearer(header) != nil else {
            throw Problem.unauthorized("the Authorization header is not Bearer <key>")
        }
        guard let tenant = tenants.tenant(authorization: header) else {
            throw Problem.unauthorized("the API key is not accepted")
        }
        return tenant
    }

    /// The sender's own terms over the service's settings, each read by its row in
    /// ``PipelineSettings/all`` (the row's `term`): `format`, `quality`, `quality_target`,
    /// `android_max_bytes`, `web_max_bytes`, `android_aspect` and `faces`. A value a row refuses
    /// is 400, saying what the term must be.
    ///
    /// The `Attache-Deadline` header is the `deadline` term's value when the query has none (the
    /// query wins; both are read by the row when both are given). The deadline asked for is
    /// capped by `--max-deadline` where it is used.
    private func requestedSettings(
        _ terms: QueryTerms, _ service: PipelineConfiguration, deadline header: String?
    ) throws -> PipelineConfiguration {
        if let header {
            var probe = service
            for refused in PipelineSettings.read({ $0 == "deadline" ? header : nil }, into: &probe) {
                throw Problem(
                    .badRequest, .invalidRequest,
                    "Attache-Deadline must be \(refused.refusal.accepted ?? refused.refusal.message)")
            }
        }
        var asked = service
        // A yes-or-no term is `true` or `false` (bare: true), as every term of the request.
        for row in PipelineSettings.all where row.boolean { _ = try row.term.map(terms.flag) }
        func given(_ key: String) -> String? {
            guard let row = PipelineSettings.named(key), let term = row.term, let value = terms.value(term) else {
                return key == "deadline" ? header : nil
            }
            // A bare yes-or-no term (`?faces`) is true.
            return row.boolean && value.isEmpty ? "true" : value
        }
        for refused in PipelineSettings.read(given, into: &asked) {
            let term = refused.setting.term ?? refused.setting.key
            let why = refused.refusal.accepted.map { "\(term) must be \($0)" } ?? "\(term): \(refused.refusal.message)"
            throw Problem(.badRequest, .invalidRequest, why)
        }
        return asked
    }

    /// `focus=x,y` (each 0 to 1): the subject of a send body's pictures, over the body's own
    /// `attache-focus`.
    private func requestedFocus(_ terms: QueryTerms) throws -> FocalPoint? {
        guard let value = terms.value("focus") else { return nil }
        let parts = value.split(separator: ",", omittingEmptySubsequences: false).compactMap { DecimalText.number($0) }
        guard parts.count == 2, let point = FocalPoint(x: parts[0], y: parts[1]) else {
            throw Problem(.badRequest, .invalidRequest, "focus must be x,y with both from 0 to 1")
        }
        return point
    }

    static func tooLarge(_ cap: Int) -> Problem {
        Problem(
            .contentTooLarge, .requestTooLarge, "the request body is over \(cap) bytes", limit: .maxRequestBytes)
    }

    /// What happened, in one word: `mutated`, `best_attempt`, `passed_through`, `unreadable`, or
    /// `withheld` (a seal asked for and impossible: the placeholder went out alone).
    static func outcome(_ result: PipelineResult) -> String {
        if result.payloadError?.code == .sealFailed { return "withheld" }
        if result.payloadError != nil { return "unreadable" }
        if result.passedThrough { return "passed_through" }
        return result.bestAttempt ? "best_attempt" : "mutated"
    }

    static func summaryHeaders(_ result: PipelineResult) -> HTTPFields {
        var headers: HTTPFields = [:]
        headers[.attacheOutcome] = outcome(result)
        headers[.attacheAttached] = String(result.outcomes.filter { $0.attachment != nil }.count)
        headers[.attacheFailed] = String(result.outcomes.filter { $0.attachment == nil }.count)
        headers[.attacheTrimmed] = String(result.trimmed.count)
        if let error = result.payloadError { headers[.attachePayloadError] = error.code.rawValue }
        headers[.cacheControl] = "no-store"
        return headers
    }

    static func plain(_ result: PipelineResult) -> Response {
        var headers = summaryHeaders(result)
        // Bytes that are not a JSON payload go back unchanged, and are not called JSON.
        headers[.contentType] = result.unreadable ? "application/octet-stream" : "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: result.payload)))
    }

    static func envelope(_ result: PipelineResult) -> Response {
        var headers = summaryHeaders(result)
        headers[.contentType] = "application/json"
        var line = JSONLine()
        line.add("outcome", outcome(result))
        // The payload as JSON when it is JSON (it was parsed, or it could not be and is null).
        line.addRaw("payload", result.unreadable ? "null" : String(decoding: result.payload, as: UTF8.self))
        line.add("payload_base64", Data(result.payload).base64EncodedString())
        line.addRaw("report", result.report())
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: line.text)))
    }
}

/// The request's query terms, read by one rule: a term given twice is refused (which one was
/// meant?), and a yes-or-no term is `true` or `false` (a bare `?envelope` is `true`).
struct QueryTerms {
    private let parameters: Parameters

    init(_ parameters: Parameters) throws {
        self.parameters = parameters
        var seen = Set<Substring>()
        for (name, _) in parameters where !seen.insert(name).inserted {
            throw Problem(.badRequest, .invalidRequest, "\(name) is given more than once")
        }
    }

    /// The term's value; nil when it is not given.
    func value(_ name: String) -> String? {
        parameters.get(name)
    }

    /// A yes-or-no term: `true` or `false` (or bare: true); nil when it is not given.
    func flag(_ name: String) throws -> Bool? {
        guard let value = value(name) else { return nil }
        switch value {
        case "true", "": return true
        case "false": return false
        default: throw Problem(.badRequest, .invalidRequest, "\(name) must be true or false")
        }
    }
}

extension HTTPField.Name {
    static let attacheDeadline = Self("Attache-Deadline")!
    static let attacheOutcome = Self("Attache-Outcome")!
    static let referrerPolicy = Self("Referrer-Policy")!
    static let attacheAttached = Self("Attache-Attached")!
    static let attacheFailed = Self("Attache-Failed")!
    static let attacheTrimmed = Self("Attache-Trimmed")!
    static let attachePayloadError = Self("Attache-Payload-Error")!
    static let attacheSealKey = Self("Attache-Seal-Key")!
    static let attacheSealKid = Self("Attache-Seal-Kid")!
}

extension PipelineResult {
    /// The payload could not be read (it went out as it came, maybe not JSON at all).
    var unreadable: Bool { payloadError != nil && payloadError?.code != .sealFailed }
}
