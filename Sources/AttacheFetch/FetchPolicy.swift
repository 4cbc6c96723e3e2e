/// What a fetch may do. Defaults match what a notification backend should do unattended.
public struct FetchPolicy: Hashable, Sendable {
    /// Only `https` on the first request and every redirect (default: `http` and `https`).
    public var httpsOnly = false
    /// Redirects followed before `too_many_redirects` (default 5).
    public var maxRedirects = 5
    /// Time allowed to connect, TLS included (default 3 s).
    public var connectTimeout: Duration = .seconds(3)
    /// Time allowed for a whole transfer when the caller gives no deadline (default 20 s).
    public var totalTimeout: Duration = .seconds(20)
    /// Abort as `too_slow` below `lowSpeedBytes` per second for `lowSpeedSeconds` (1 KiB/s, 5 s).
    public var lowSpeedBytes = 1024
    /// See ``lowSpeedBytes``.
    public var lowSpeedSeconds = 5
    /// Largest body any fetch reads, by `Content-Length` and by bytes streamed, whatever its
    /// kind (default 50,000,000). Each fetch also applies the per-kind caps it is given (see
    /// ``Fetcher/fetch(_:deadline:headers:limits:)``), as soon as the first bytes tell the kind.
    public var maxBytes: Int64 = 50_000_000
    /// The `User-Agent` sent.
    public var userAgent = "Attache/0.1 (+notification media fetcher)"
    /// An explicit proxy URL; without one, proxies (and `*_proxy` variables) are never used.
    public var proxy: String?
    /// Allow 127.0.0.0/8 and ::1 (tests and demos only).
    public var allowLoopback = false
    /// Allow RFC 1918, 100.64/10 and fc00::/7 (cloud metadata addresses stay denied).
    public var allowPrivate = false
    /// When set, every hop must name one of these hosts (`example.com` or `*.example.com`).
    public var allowedHosts: [String]?
    /// Retries after a connection failure, 429 or 5xx, while the deadline allows (default 2).
    public var maxRetries = 2
    /// First retry delay; doubled for each further retry (default 200 ms).
    public var retryDelay: Duration = .milliseconds(200)
    /// Check the first bytes and abort at once when they are not an accepted type (default on).
    public var earlyTypeCheck = true
    /// `host:port:address` entries pinned like curl's `--resolve` (tests).
    public var resolve: [String] = []
    /// A CA bundle to verify against instead of the system's (verification is always on).
    public var caFile: String?

    /// The defaults.
    public init() {}

    /// Schemes for the first request and for redirects.
    var protocols: String { httpsOnly ? "https" : "http,https" }
}
