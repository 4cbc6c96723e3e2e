/// What a download tells a shared cache (an edge, a CDN) in its `Cache-Control`: how long it
/// may keep the download, and how long past that it may still serve it while the origin cannot
/// answer or is being asked again — every time bounded by the end of the download's access
/// (its token's or its object's end, the sooner), so that no copy outlives its token.
struct EdgeCaching: Sendable {
    /// Seconds a shared cache may keep a download (0: none may).
    var maxAge: Int64
    /// Seconds past that it may serve it stale.
    var stale: Int64

    init(maxAge: Int64, stale: Int64) {
        self.maxAge = maxAge
        self.stale = stale
    }

    init(_ configuration: ServerConfiguration) {
        self.init(
            maxAge: configuration.edgeMaxAge.components.seconds, stale: configuration.edgeStale.components.seconds)
    }

    /// The longest edge time a setting may give (a day), the service's or a tenant's.
    static let maxAgeLimit: Int64 = 86_400

    /// This with the edge time of an object `holders` hold (tenant ids, `""` for a caller with
    /// none): the shortest of theirs, each holder without an age of its own in `ages` taking
    /// the service's.
    func held(by holders: Set<String>, ages: [String: Int64]) -> EdgeCaching {
        var held = self
        held.maxAge = holders.map { ages[$0] ?? maxAge }.min() ?? maxAge
        return held
    }

    /// A download's `Cache-Control` when its access ends at `ends`: the device may keep it
    /// until then (`max-age`); a shared cache for ``maxAge`` within that (`s-maxage`), and for
    /// ``stale`` more within what is left (`stale-while-revalidate`, `stale-if-error`: RFC
    /// 5861), the bytes under one content hash never changing (`immutable`). With no edge age,
    /// `private`: no shared cache may keep it.
    func cacheControl(ends: Int64, now: Int64) -> String {
        let left = max(0, ends - now)
        guard maxAge > 0 else { return "private, max-age=\(left)" }
        let shared = min(left, maxAge)
        let stale = min(self.stale, left - shared)
        let extensions = stale > 0 ? ", stale-while-revalidate=\(stale), stale-if-error=\(stale)" : ""
        return "public, max-age=\(left), s-maxage=\(shared)\(extensions), immutable"
    }
}
