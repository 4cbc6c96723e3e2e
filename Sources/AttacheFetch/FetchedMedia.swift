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
    /// The port the body came from (0: not known).
    public var remotePort: Int = 0
    /// libcurl's phase times of the attempt that brought the body.
    public var phases = TransferPhases()
}

/// When each phase of one transfer ended, counted from its last hop's start, in seconds
/// (libcurl's `CURLINFO_*_TIME_T`): what a trace shows of a slow host.
public struct TransferPhases: Hashable, Sendable {
    /// The host name resolved.
    public var nameLookup: Double = 0
    /// The TCP connection made.
    public var connect: Double = 0
    /// The TLS handshake done (0 without TLS).
    public var tls: Double = 0
    /// The first byte of the answer received.
    public var firstByte: Double = 0
    /// The whole transfer.
    public var total: Double = 0

    public init() {}
}
