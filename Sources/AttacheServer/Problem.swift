public import AttacheBase
import AttacheCore
public import Hummingbird

/// An RFC 9457 problem answer carrying Attache's error code: `type` is `about:blank` with the
/// status' title, `code` and `limit` are the catalogue's strings, `detail` says what happened
/// in words (never a token, key or payload text).
public struct Problem: Error, Sendable {
    public var status: HTTPResponse.Status
    public var code: AttacheError.Code
    public var detail: String
    public var limit: AttacheError.Limit?
    /// Extra headers (`WWW-Authenticate`, `Retry-After`).
    public var headers: HTTPFields = [:]

    public init(
        _ status: HTTPResponse.Status, _ code: AttacheError.Code, _ detail: String,
        limit: AttacheError.Limit? = nil, headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.detail = detail
        self.limit = limit
        self.headers = headers
    }

    /// The problem document.
    public var body: String {
        var line = JSONLine()
        line.add("type", "about:blank")
        line.add("title", status.reasonPhrase)
        line.add("status", status.code)
        line.add("code", code.rawValue)
        line.add("detail", detail)
        if let limit { line.add("limit", limit.rawValue) }
        return line.text
    }

    /// The answer, with `Content-Type: application/problem+json`.
    public func response(head: Bool = false) -> Response {
        let bytes = ByteBuffer(string: body)
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        headers[.cacheControl] = "no-store"
        if head {
            headers[.contentLength] = String(bytes.readableBytes)
            return Response(status: status, headers: headers)
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: bytes))
    }

    /// 401 with the challenge.
    static func unauthorized(_ detail: String) -> Problem {
        Problem(.unauthorized, .unauthorized, detail, headers: [.wwwAuthenticate: "Bearer"])
    }
}
