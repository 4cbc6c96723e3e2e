extension AttacheError.Code {
    /// The host name did not resolve.
    public static let dnsFailed = Self(rawValue: "dns_failed")
    /// No connection could be made (refused, reset, unreachable, connect timeout).
    public static let connectFailed = Self(rawValue: "connect_failed")
    /// Every address of the host is denied by the address policy (the rule is the `detail`).
    public static let blockedAddress = Self(rawValue: "blocked_address")
    /// A hop names a host off the configured allowlist.
    public static let hostNotAllowed = Self(rawValue: "host_not_allowed")
    /// The URL cannot be used: unparseable, userinfo, too long.
    public static let invalidURL = Self(rawValue: "invalid_url")
    /// The URL or a redirect uses a scheme the policy does not allow.
    public static let schemeNotAllowed = Self(rawValue: "scheme_not_allowed")
    /// More redirects than the policy allows (loops included).
    public static let tooManyRedirects = Self(rawValue: "too_many_redirects")
    /// The body is larger than the byte cap (declared or streamed).
    public static let tooLarge = Self(rawValue: "too_large")
    /// The transfer stayed below the low-speed limit for too long.
    public static let tooSlow = Self(rawValue: "too_slow")
    /// The server answered with an error status (the status is the `detail`).
    public static let httpStatus = Self(rawValue: "http_status")
    /// The TLS handshake or certificate verification failed.
    public static let tlsFailed = Self(rawValue: "tls_failed")
    /// The server's reply is not valid HTTP.
    public static let badResponse = Self(rawValue: "bad_response")
    /// The caller cancelled the fetch.
    public static let cancelled = Self(rawValue: "cancelled")
    /// Any other transfer failure (libcurl's message says which).
    public static let fetchFailed = Self(rawValue: "fetch_failed")
}
