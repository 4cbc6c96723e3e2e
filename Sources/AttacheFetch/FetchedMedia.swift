public import AttacheBase

/// A fetched body with what the transfer learned about it.
public struct FetchedMedia: Sendable {
    /// The URL asked for.
    public var url: String
    /// The URL the body came from, after redirects.
    public var finalURL: String
    /// The final HTTP status (2xx).
    public var status: Int
    /// The body.
    public var bytes: MediaBytes
    /// The kind the early type check found in the first bytes as they arrived (nil when the
    /// check is off). The later stages use it instead of sniffing again.
    public var kind: MediaKind?
    /// The server's `Content-Type`, for reporting mismatches only; it never decides the kind.
    public var contentType: String?
    /// The origin's `ETag`.
    public var etag: String?
    /// The origin's `Last-Modified`.
    public var lastModified: String?
    /// Redirects followed.
    public var redirects: Int
    /// Attempts made (1 + retries).
    public var attempts: Int
    /// Wall time of the whole fetch, retries included.
    public var elapsed: Duration
    /// The address the body came from.
    public var remoteAddress: String
}
