import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheWork
import Metrics
import Synchronization

/// The service's instruments, through swift-metrics: the executable bootstraps a Prometheus
/// registry behind them (`GET /metrics`); a library user may bootstrap any backend.
///
/// Names follow Prometheus' conventions (`_total` counters, `_seconds` histograms, `_bytes`).
///
/// The instruments every request touches are made once and kept: making one looks it up in
/// the backend's registry under its lock, which the event-loop threads would otherwise take
/// on every request.
final class ServerMetrics: Sendable {
    /// Downloads answered by the channel handlers, not the router; of them, the ones sent from a
    /// remembered token check, and the ones whose check ran on the blocking pool.
    final class DownloadPaths: Sendable {
        let answered = Atomic<Int>(0)
        let remembered = Atomic<Int>(0)
        let checkedOnPool = Atomic<Int>(0)
    }

    private struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private let requests = Mutex<[RequestKey: (count: Counter, time: Timer)]>([:])
    /// Which way this service's downloads went (the channel handlers answer them before the
    /// router sees them, so no route's counter says so; the tests read these).
    let downloadPaths = DownloadPaths()
    private let servedBytes = Counter(label: "attache_bytes_total", dimensions: [("direction", "served")])
    private let connectionsOpen = Gauge(label: "attache_connections_open")
    private let connectionsRefused = Counter(label: "attache_connections_refused_total")
    private let connectionTimeouts = Dictionary(
        uniqueKeysWithValues: ["head", "body", "idle", "send"].map {
            ($0, Counter(label: "attache_connection_timeouts_total", dimensions: [("timeout", $0)]))
        })

    /// Requests answered, by route and status.
    func request(route: String, method: String, status: Int, seconds: Double) {
        let key = RequestKey(route: route, method: method, status: status)
        let instruments = requests.withLock { known in
            if let found = known[key] { return found }
            let made = (
                count: Counter(
                    label: "attache_http_requests_total",
                    dimensions: [("route", route), ("method", method), ("status", String(status))]),
                time: Timer(label: "attache_http_request_duration_seconds", dimensions: [("route", route)])
            )
            known[key] = made
            return made
        }
        instruments.count.increment()
        instruments.time.recordSeconds(seconds)
    }

    private struct TenantKey: Hashable {
        var tenant: String
        var status: Int
    }

    private let tenantRequests = Mutex<[TenantKey: Counter]>([:])

    /// Payloads answered, by tenant (ids from the tenants file and `key-N`: a bounded set) and
    /// status.
    func tenantRequest(tenant: String, status: Int) {
        let key = TenantKey(tenant: tenant, status: status)
        let counter = tenantRequests.withLock { known in
            if let found = known[key] { return found }
            let made = Counter(
                label: "attache_tenant_requests_total", dimensions: [("tenant", tenant), ("status", String(status))])
            known[key] = made
            return made
        }
        counter.increment()
    }

    /// A payload refused for its tenant's rate.
    func rateLimited(tenant: String) {
        Counter(label: "attache_tenant_rate_limited_total", dimensions: [("tenant", tenant)]).increment()
    }

    /// A tenants file read again: `applied`, or `refused` (the old one kept). The gauge
    /// `attache_tenants_last_reload_successful` says whether the last read was applied (1) or
    /// the tenants in use are older than the file or catalog rows (0).
    func tenantsReload(_ result: String) {
        Counter(label: "attache_tenants_reloads_total", dimensions: [("result", result)]).increment()
        tenantsInStep(result == "applied")
    }

    /// Whether the tenants in use are those of the file or the catalog rows as they are now.
    func tenantsInStep(_ inStep: Bool) {
        Gauge(label: "attache_tenants_last_reload_successful").record(inStep ? 1 : 0)
    }

    /// What each tenant with a store quota holds and its quota, as Prometheus text: written at
    /// scrape time for the tenants in use only (one that left the file leaves the metrics), as
    /// the admission counts are.
    static func tenantStores(_ used: [(tenant: Tenant, objects: Int, bytes: Int64)]) -> String {
        guard !used.isEmpty else { return "" }
        func lines(_ name: String, _ value: (Tenant, Int, Int64) -> String?) -> String {
            let samples = used.compactMap { entry in
                value(entry.tenant, entry.objects, entry.bytes).map { "\(name){tenant=\"\(entry.tenant.id)\"} \($0)\n" }
            }
            return samples.isEmpty ? "" : "# TYPE \(name) gauge\n" + samples.joined()
        }
        return lines("attache_tenant_store_objects") { _, objects, _ in String(objects) }
            + lines("attache_tenant_store_bytes") { _, _, bytes in String(bytes) }
            + lines("attache_tenant_store_max_objects") { tenant, _, _ in tenant.storeMaxObjects.map(String.init) }
            + lines("attache_tenant_store_max_bytes") { tenant, _, _ in tenant.storeMaxBytes.map(String.init) }
    }

    /// Per attachment of a processed payload: stage times, outcomes, refusals and bytes.
    func pipeline(_ result: PipelineResult) {
        for outcome in result.outcomes {
            Counter(label: "attache_attachments_total", dimensions: [("reason", outcome.reason)]).increment()
            // Other receivers' pictures (FCM and OneSignal bodies): made, reused or why not.
            for target in outcome.targets {
                let reason = target.error?.code.rawValue ?? (target.cached ? "reused" : "made")
                Counter(
                    label: "attache_target_pictures_total",
                    dimensions: [("target", target.target.rawValue), ("reason", reason)]
                ).increment()
            }
            let timings = outcome.timings
            for (stage, milliseconds) in [
                ("fetch", timings.fetch), ("validate", timings.validate), ("transform", timings.transform),
                ("store", timings.store),
            ] where milliseconds > 0 {
                Timer(label: "attache_stage_duration_seconds", dimensions: [("stage", stage)])
                    .recordSeconds(milliseconds / 1000)
            }
            // The quality each JPEG or WebP re-encode chose, its score and the encodes it took.
            var chosen = outcome.quality.map { [("rendition", $0.quality, $0.score, $0.encodes)] } ?? []
            for target in outcome.targets where !target.cached {
                if let quality = target.quality, let encodes = target.encodes {
                    chosen.append((target.target.rawValue, quality, target.score, encodes))
                }
            }
            for (picture, quality, score, encodes) in chosen {
                Counter(label: "attache_quality_encodes_total", dimensions: [("picture", picture)])
                    .increment(by: encodes)
                Recorder(label: "attache_quality_chosen", dimensions: [("picture", picture)]).record(quality)
                if let score {
                    Recorder(label: "attache_quality_score", dimensions: [("picture", picture)]).record(score)
                }
            }
            if outcome.failedStage == "fetch", let error = outcome.error {
                Counter(label: "attache_fetch_refusals_total", dimensions: [("reason", error.code.rawValue)])
                    .increment()
            }
            if outcome.fetchedBytes > 0 {
                Counter(label: "attache_bytes_total", dimensions: [("direction", "fetched")])
                    .increment(by: outcome.fetchedBytes)
            }
            if let attachment = outcome.attachment, !outcome.cached {
                Counter(label: "attache_bytes_total", dimensions: [("direction", "stored")])
                    .increment(by: attachment.bytes + (attachment.small?.bytes ?? 0))
            }
        }
        if result.bestAttempt { Counter(label: "attache_best_attempts_total").increment() }
        if !result.trimmed.isEmpty { Counter(label: "attache_trimmed_payloads_total").increment() }
    }

    /// Bytes of attachment bodies sent.
    func served(bytes: Int) {
        servedBytes.increment(by: Int64(bytes))
    }

    /// Payloads in the pipeline and waiting for a slot, as Prometheus text.
    static func admission(running: Int, waiting: Int) -> String {
        """
        # TYPE attache_pipeline_in_flight gauge
        attache_pipeline_in_flight \(running)
        # TYPE attache_pipeline_queued gauge
        attache_pipeline_queued \(waiting)

        """
    }

    /// The decodes as the workers' scheduler holds them now, as Prometheus text: memory held
    /// and its limit, decodes running, heavy places taken, and the decodes waiting by class
    /// (`light`, `heavy`, and `unread`: not started, their header not read).
    static func decodes(_ load: WorkScheduler.Load, limit: Int) -> String {
        """
        # TYPE attache_pipeline_decode_memory_bytes gauge
        attache_pipeline_decode_memory_bytes \(load.memory)
        # TYPE attache_pipeline_decode_memory_limit_bytes gauge
        attache_pipeline_decode_memory_limit_bytes \(limit)
        # TYPE attache_pipeline_decodes_running gauge
        attache_pipeline_decodes_running \(load.running)
        # TYPE attache_pipeline_decodes_heavy gauge
        attache_pipeline_decodes_heavy \(load.heavy)
        # TYPE attache_pipeline_decodes_waiting gauge
        attache_pipeline_decodes_waiting{class="light"} \(load.waitingLight)
        attache_pipeline_decodes_waiting{class="heavy"} \(load.waitingHeavy)
        attache_pipeline_decodes_waiting{class="unread"} \(load.queued)

        """
    }

    /// A device's delivery receipt.
    func receipt(result: String, code: String?, milliseconds: Int?) {
        Counter(label: "attache_device_receipts_total", dimensions: [("result", result), ("code", code ?? "none")])
            .increment()
        if let milliseconds {
            Timer(label: "attache_device_receipt_seconds", dimensions: [("result", result)])
                .recordMilliseconds(milliseconds)
        }
    }

    /// A download's body stopped because the store could not be read past its first bytes.
    func downloadCut() {
        Counter(label: "attache_downloads_cut_total").increment()
    }

    /// Connections open now.
    func connections(open: Int) {
        connectionsOpen.record(open)
    }

    /// A connection closed as it was accepted: the open connections' limit was reached.
    func connectionRefused() {
        connectionsRefused.increment()
    }

    /// A connection closed by one of its timeouts (`head`, `body`, `idle`, `send`).
    func connectionTimedOut(_ phase: String) {
        connectionTimeouts[phase, default: connectionTimeouts["idle"]!].increment()
    }

    func overloaded() {
        Counter(label: "attache_overloaded_total").increment()
    }

    /// The store's size.
    func store(objects: Int, bytes: Int64) {
        Gauge(label: "attache_store_objects").record(objects)
        Gauge(label: "attache_store_bytes").record(bytes)
    }

    /// The store's quotas (what `attache_store_objects` and `attache_store_bytes` may reach).
    func quotas(objects: Int, bytes: Int64) {
        Gauge(label: "attache_store_max_objects").record(objects)
        Gauge(label: "attache_store_max_bytes").record(bytes)
    }

    /// One garbage-collection pass.
    func collected(objects: Int, bytes: Int64) {
        Counter(label: "attache_store_collected_objects_total").increment(by: objects)
        Counter(label: "attache_store_collected_bytes_total").increment(by: bytes)
    }
}
