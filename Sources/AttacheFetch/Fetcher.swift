public import AttacheBase
internal import CAttacheFetch
internal import CAttacheShim
import Synchronization

/// Fetches remote media with libcurl under a ``FetchPolicy``: many transfers at once on one
/// event-loop thread, retries within the deadline, and one shared transfer for concurrent
/// requests of the same URL.
public final class Fetcher: Sendable {
    /// The policy every fetch uses.
    public let policy: FetchPolicy
    private let loop: FetchLoop
    private let flights = Mutex<[FlightKey: Flight]>([:])

    private struct FlightKey: Hashable {
        let url: String
        let headers: [String]
        let limits: MediaLimits?
        let sources: SourceRules?
    }

    private final class Flight: Sendable {
        let task: Task<Result<FetchedMedia, AttacheError>, Never>
        let waiters = Atomic<Int>(1)
        init(task: Task<Result<FetchedMedia, AttacheError>, Never>) { self.task = task }
    }

    /// Creates a fetcher and its event-loop thread.
    /// - Parameters:
    ///   - maxHostConnections: connections open to one host at a time (more transfers queue).
    ///   - maxTotalConnections: connections open at a time in all.
    ///   - threadNice: the loop thread's Linux nice value (0 to 19; 0: as the caller's). A
    ///     service runs it below request handling, as it runs its decodes: reading many bodies
    ///     at once then never delays an answer the event loop owes (a refusal, a health check).
    public init(
        policy: FetchPolicy = FetchPolicy(), maxHostConnections: Int = 64, maxTotalConnections: Int = 256,
        threadNice: Int32 = 0
    ) {
        self.policy = policy
        loop = FetchLoop(
            maxHostConnections: maxHostConnections, maxTotalConnections: maxTotalConnections,
            nice: min(19, max(0, threadNice)))
    }

    /// The event-loop thread's Linux thread id (0 until it has started).
    var loopThreadID: Int32 { loop.threadID.load(ordering: .acquiring) }

    deinit { loop.stop() }

    /// The libcurl in use.
    public static var curlVersion: String { String(cString: att_curl_version()) }

    /// Fetches `url` before `deadline` (default: now + the policy's total timeout).
    ///
    /// Concurrent calls for the same URL share one transfer. Cancelling the calling task
    /// aborts the transfer at once when no other caller shares it.
    /// - Parameters:
    ///   - headers: extra request headers, e.g. `If-None-Match` for a conditional re-fetch (a
    ///     304 answer is reported as `http_status` 304).
    ///   - limits: the byte cap of each kind, applied as soon as the first bytes tell the kind
    ///     (default Apple's: 10 MB image, 5 MB audio, 50 MB video); nil leaves only the
    ///     policy's ``FetchPolicy/maxBytes``. No fetch reads more than the largest of them.
    ///   - budget: bytes shared with other fetches (a payload's), taken as they arrive; the
    ///     fetch stops with `budget_exceeded` once it is spent. A fetch with a budget is never
    ///     shared with another caller.
    public func fetch(
        _ url: String, deadline: ContinuousClock.Instant? = nil, headers: [String] = [],
        limits: MediaLimits? = MediaLimits(), budget: ByteBudget? = nil, sources: SourceRules? = nil
    ) async throws(AttacheError) -> FetchedMedia {
        let deadline = deadline ?? .now + policy.totalTimeout
        let sources = sources?.isEmpty == true ? nil : sources
        if let budget {
            return try await fetchWithRetries(
                url, deadline: deadline, headers: headers, limits: limits, budget: budget, sources: sources
            ).get()
        }
        let key = FlightKey(url: url, headers: headers, limits: limits, sources: sources)
        let flight = flights.withLock { flights in
            if let existing = flights[key] {
                existing.waiters.add(1, ordering: .relaxed)
                return existing
            }
            let flight = Flight(
                task: Task { [self] in
                    let result = await self.fetchWithRetries(
                        url, deadline: deadline, headers: headers, limits: limits, sources: sources)
                    return result
                })
            flights[key] = flight
            return flight
        }
        let result = await withTaskCancellationHandler {
            await flight.task.value
        } onCancel: {
            if flight.waiters.subtract(1, ordering: .relaxed).newValue == 0 { flight.task.cancel() }
        }
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        return try result.get()
    }

    private func fetchWithRetries(
        _ url: String, deadline: ContinuousClock.Instant, headers: [String], limits: MediaLimits?,
        budget: ByteBudget? = nil, sources: SourceRules? = nil
    ) async -> Result<
        FetchedMedia, AttacheError
    > {
        let start = ContinuousClock.now
        if let refusal = refusal(for: url, sources: sources) { return .failure(refusal) }
        var attempt = 0
        // Body bytes earlier attempts read (a failure reports every byte the fetch read).
        var read: Int64 = 0
        while true {
            attempt += 1
            let remaining = deadline - .now
            guard remaining > .milliseconds(1) else {
                return .failure(AttacheError(.timedOut, "the deadline passed before the fetch could finish"))
            }
            var result = await once(
                url, timeout: remaining, headers: headers, limits: limits, budget: budget, sources: sources)
            if Task.isCancelled { return .failure(AttacheError(.cancelled, "the fetch was cancelled")) }
            switch result {
            case .success(var media):
                media.attempts = attempt
                media.elapsed = .now - start
                result = .success(media)
            case .failure(var error):
                read += error.fetchedBytes
                error.fetchedBytes = read
                result = .failure(error)
                let delay = policy.retryDelay * (1 << (attempt - 1))
                if attempt <= policy.maxRetries, Self.isRetryable(error), deadline - .now > delay + .milliseconds(50) {
                    do { try await Task.sleep(for: delay) } catch {
                        return .failure(AttacheError(.cancelled, "the fetch was cancelled"))
                    }
                    continue
                }
            }
            return result
        }
    }

    private func once(
        _ url: String, timeout: Duration, headers: [String], limits: MediaLimits?, budget: ByteBudget?,
        sources: SourceRules?
    ) async -> Result<FetchedMedia, AttacheError> {
        let transfer: TransferHandle
        do {
            transfer = try Transfer.make(
                url: url, policy: policy, limits: limits, budget: budget, timeout: timeout, headers: headers,
                sources: sources)
        } catch {
            return .failure(error)
        }
        let code = await loop.perform(transfer)
        return Transfer.outcome(transfer, code: code, url: url, timeout: timeout, budget: budget)
    }

    /// What can be refused before any connection, or nil: an unparseable or overlong URL, NUL,
    /// userinfo, a scheme or host the policy does not allow (libcurl's own URL parser decides
    /// what the URL says).
    public func refusal(for url: String, sources: SourceRules? = nil) -> AttacheError? {
        guard url.utf8.count <= 8192 else { return AttacheError(.invalidURL, "the URL is longer than 8192 bytes") }
        guard !url.utf8.contains(0) else { return AttacheError(.invalidURL, "the URL holds NUL") }
        var parts = att_url_parts()
        var error = att_error()
        guard att_url_parse(url, &parts, &error) == 0 else {
            return AttacheError(.invalidURL, "cannot parse the URL: " + AttacheError.line(error.message))
        }
        let scheme = Transfer.text(parts.scheme).lowercased()
        guard policy.protocols.split(separator: ",").contains(Substring(scheme)) else {
            return AttacheError(.schemeNotAllowed, "scheme \(scheme) is not allowed", detail: scheme)
        }
        guard parts.has_userinfo == 0 else {
            return AttacheError(.invalidURL, "URLs with user:password are refused")
        }
        let host = Transfer.text(parts.host).lowercased()
        if let allowed = policy.allowedHosts, !Self.hostMatches(host, allowed) {
            return AttacheError(.hostNotAllowed, "\(host) is not on the host allowlist", detail: host)
        }
        if let sources, !sources.permits(host) {
            return AttacheError(.sourceNotAllowed, "\(host) is not one of this caller's media hosts", detail: host)
        }
        return nil
    }

    static func hostMatches(_ host: String, _ allowed: [String]) -> Bool {
        allowed.contains { rule in
            let rule = rule.lowercased()
            if rule.hasPrefix("*.") { return host.hasSuffix(rule.dropFirst()) && host.count > rule.count - 1 }
            return host == rule
        }
    }

    static func isRetryable(_ error: AttacheError) -> Bool {
        switch error.code {
        case .connectFailed: return true
        case .httpStatus: return error.detail == "429" || error.detail?.hasPrefix("5") == true
        default: return false
        }
    }
}
