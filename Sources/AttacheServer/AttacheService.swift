public import AttacheBase
public import AttacheCore
import AttacheFetch
import AttacheMedia
public import AttacheStore
import AttacheStoreShared
public import AttacheWork
import Foundation
public import Hummingbird
public import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import Tracing
import UnixSignals

/// The service-extension backend: `POST /v1/notifications`, the attachment downloads, health,
/// readiness, metrics and the OpenAPI document, on Hummingbird.
public struct AttacheService: Sendable {
    public let configuration: ServerConfiguration
    public let store: AttachmentStore
    /// The pipeline requests go through. Its base URL names the bound port once the server
    /// listens, when the configured one named port 0 (`--port 0` without `--base-url`).
    public var pipeline: Pipeline { pipelines.current }
    let pipelines: PipelineSlot
    let metrics = ServerMetrics()
    let hangUps = HangUps()
    let admission: Admission
    /// The tenants (the tenants file's and one per API key) and whose key a request carries.
    let tenants: Tenants
    /// Payloads from their heads to their answers; beyond slots and queue, 503 on the event loop.
    let gate: LoadShedding.Gate
    /// The connections open, against ``ConnectionLimits/maxConnections``.
    let connections: ConnectionCount
    /// Renders the metrics registry as Prometheus text; nil answers `/metrics` with 404.
    let metricsText: (@Sendable () -> String)?

    /// Opens the store and builds the pipeline.
    /// - Parameter metricsText: renders the registry swift-metrics was bootstrapped with.
    public init(
        configuration: ServerConfiguration, metricsText: (@Sendable () -> String)? = nil
    ) throws(AttacheError) {
        self.configuration = configuration
        self.store = try AttachmentStore.open(configuration.store)
        self.pipelines = PipelineSlot(
            Pipeline(
                configuration: configuration.pipeline,
                fetcher: Fetcher(policy: configuration.fetch, threadNice: configuration.workerNice),
                store: store)
        )
        let metrics = self.metrics
        // The file's tenants and one per plain key; callers without a key have places kept
        // only when they are let in.
        let table =
            configuration.tenantsInCatalog
            ? try Self.catalogTenants(store, keys: configuration.apiKeys) : configuration.tenants
        let tenants = Tenants(table.adding(.keys(configuration.apiKeys)), allowAnonymous: configuration.allowAnonymous)
        self.tenants = tenants
        let admission = Admission(
            slots: configuration.maxConcurrent, queue: configuration.maxQueued, shares: tenants.shares)
        self.admission = admission
        let gate = LoadShedding.Gate(
            limit: admission.slots + admission.queue, retryAfterSeconds: configuration.retryAfterSeconds,
            shares: tenants.shares, tenant: { tenants.id(authorization: $0) })
        self.gate = gate
        tenants.observe { shares in
            gate.share(shares)
            admission.share(shares)
        }
        self.connections = ConnectionCount(
            limit: configuration.connections.connectionLimit(maxConcurrent: configuration.maxConcurrent))
        self.metricsText = metricsText
        if let stats = try? store.stats() { metrics.store(objects: stats.objects, bytes: stats.bytes) }
        metrics.quotas(objects: configuration.store.maxObjects, bytes: configuration.store.maxBytes)
    }

    /// Where the tenants are read again from, if anywhere.
    var tenantOrigin: TenantOrigin? {
        configuration.tenantsInCatalog ? .catalog(store) : configuration.tenantsFile.map(TenantOrigin.file)
    }

    /// The tenants the catalog keeps, read whole at start: a problem stops the service, as a bad
    /// tenants file does.
    static func catalogTenants(_ store: AttachmentStore, keys: [String]) throws(AttacheError) -> TenantTable {
        switch TenantOrigin.catalog(store).read() {
        case .success(let table):
            guard table.with(plainKeys: keys) != nil else {
                throw AttacheError(.invalidInput, "--tenants catalog: " + TenantTable.sharedKeyProblem)
            }
            return table
        case .failure(let error):
            throw AttacheError(.invalidInput, "--tenants catalog: " + error.problems.joined(separator: "; "))
        }
    }

    /// The routes, behind the request log.
    /// Whether a tracer is bootstrapped (swift-distributed-tracing): requests then get spans.
    static var tracing: Bool { !(InstrumentationSystem.tracer is NoOpTracer) }

    public func router() -> Router<AttacheRequestContext> {
        let router = Router(context: AttacheRequestContext.self)
        router.add(
            middleware: RequestLogMiddleware(
                metrics: metrics, attachmentsPath: configuration.attachmentsPath, receipts: configuration.receipts,
                tracing: Self.tracing))
        let notifications = NotificationRoute(
            pipelines: pipelines, configuration: configuration, tenants: tenants,
            admission: admission, metrics: metrics, hangUps: hangUps)
        router.post("/v1/notifications", use: notifications.handle)
        router.post("/v1/preview", use: notifications.preview)
        router.get("/v1/preview", use: notifications.preview)

        let attachments = AttachmentRoute(
            store: store, metrics: metrics, edge: EdgeCaching(configuration), tenants: tenants)
        let base = configuration.attachmentsPath
        // One catch-all route: `<token>/<id>.<ext>`, and a URL missing its token is a 401.
        router.get("\(base)/**", use: attachments.handle)
        router.head("\(base)/**", use: attachments.handle)
        if configuration.receipts { router.post("\(base)/**", use: attachments.receipt) }

        router.get("/healthz") { _, _ in Self.text("ok\n") }
        let store = self.store
        router.get("/readyz") { _, _ in
            let failed = await withCheckedContinuation { done in
                DispatchQueue.global().async { done.resume(returning: Readiness.failures(store: store)) }
            }
            guard failed.isEmpty else {
                throw Problem(.serviceUnavailable, .internalError, "not ready: " + failed.joined(separator: ", "))
            }
            return Self.text("ready\n")
        }
        let metricsText = self.metricsText
        let metrics = self.metrics
        let admission = self.admission
        let downloads = attachments
        let tenants = self.tenants
        router.get("/metrics") { _, _ in
            guard let metricsText else { throw Problem(.notFound, .notFound, "metrics are not enabled") }
            // Gauges that are cheapest to read at scrape time (a shared store's off the event loop).
            if let stats = try? await downloads.blocking({ try store.stats() }) {
                metrics.store(objects: stats.objects, bytes: stats.bytes)
            }
            // The admission counts are this service's own, as they are now: written beside the
            // registry's text, not recorded into it (a registry is the process's, and another
            // service in it would record its own).
            let (running, waiting) = admission.counts
            var text = metricsText()
            if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
            text += ServerMetrics.admission(running: running, waiting: waiting)
            text += ServerMetrics.decodes(PipelineWorkers.load, limit: PipelineWorkers.memory)
            // Each tenant's store use beside its quota, for the tenants with a quota.
            let held = tenants.table.tenants.filter { $0.storeMaxBytes != nil || $0.storeMaxObjects != nil }
            if !held.isEmpty,
                let used = try? await downloads.blocking({
                    try held.map { tenant in
                        let (objects, bytes) = try store.stats(tenant: tenant.id)
                        return (tenant: tenant, objects: objects, bytes: bytes)
                    }
                })
            {
                text += ServerMetrics.tenantStores(used)
            }
            var headers: HTTPFields = [.contentType: "text/plain; version=0.0.4; charset=utf-8"]
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("/openapi.yaml") { _, _ in
            var headers: HTTPFields = [.contentType: "application/yaml"]
            headers[.cacheControl] = "no-cache"
            return Response(
                status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.bytes)))
        }
        return router
    }

    /// The application: the HTTP server plus store collection, as lifecycle services.
    /// - Parameter onServerRunning: told the bound port once the server listens.
    public func application(
        logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let collection = CollectionService(
            store: store, interval: configuration.collectionInterval, metrics: metrics, logger: logger)
        let downloads = AttachmentRoute(
            store: store, metrics: metrics, edge: EdgeCaching(configuration), tenants: tenants)
        let attachmentsPath = configuration.attachmentsPath
        let metrics = self.metrics
        let (limits, connections) = (configuration.connections, self.connections)
        return Application(
            router: router(),
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: [
                        RequestFraming.Installer(
                            ConnectionClock(
                                limits: limits, connections: connections, metrics: metrics, logger: logger),
                            RequestFraming(metrics: metrics, logger: logger),
                            DecodedDownloads(
                                route: downloads, attachmentsPath: attachmentsPath, metrics: metrics, logger: logger,
                                enabled: !Self.tracing),
                            // Off while requests are traced: each then goes through the router.
                            raw: Self.tracing
                                ? nil
                                : RawDownloads(
                                    route: downloads, attachmentsPath: attachmentsPath, metrics: metrics,
                                    logger: logger),
                            shedding: LoadShedding(gate: gate, metrics: metrics, logger: logger)
                        )
                    ])),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: [collection, DependencyWatch(store: store, logger: logger)]
                + (tenantOrigin.map {
                    [
                        TenantReload(
                            origin: $0, keys: configuration.apiKeys, tenants: tenants, metrics: metrics,
                            logger: logger)
                    ]
                } ?? []),
            onServerRunning: { [pipelines] channel in
                let port = channel.localAddress?.port ?? 0
                pipelines.bound(port: port)
                await onServerRunning(port)
            },
            logger: logger)
    }

    /// How a service runs the pipeline's work (its configuration's decode memory and worker
    /// nice value): for the executable to apply once before ``run(logger:onServerRunning:)``.
    public var runtime: PipelineRuntime {
        .service(memory: configuration.maxDecodeMemory, workerNice: configuration.workerNice)
    }

    /// Runs until SIGTERM or SIGINT: then stops accepting, lets in-flight requests finish for
    /// up to the grace period, and returns. The event loops run at `eventLoopNice`; the
    /// pipeline's workers as the process's ``runtime`` set them.
    public func run(logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        if configuration.eventLoopNice != 0 {
            let nice = configuration.eventLoopNice
            let outcomes = await EventLoopPriority.apply(nice, to: MultiThreadedEventLoopGroup.singleton)
            if let refused = outcomes.first(where: { $0.error != 0 }) {
                logger.warning(
                    "the event loops stay at nice 0: \(String(cString: strerror(refused.error))); nice \(nice) needs CAP_SYS_NICE or a nice limit (systemd LimitNICE=\(nice))"
                )
            }
        }
        let app = application(logger: logger, onServerRunning: onServerRunning)
        var group = ServiceGroupConfiguration(
            services: [.init(service: app)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = configuration.gracePeriod
        group.maximumCancellationDuration = .seconds(2)
        try await ServiceGroup(configuration: group).run()
    }

    static func text(_ string: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: string)))
    }
}

/// The OpenAPI 3.1 document the service answers by (`GET /openapi.yaml`).
public enum OpenAPIDocument {
    /// Its bytes, from the target's resources.
    public static let bytes: [UInt8] = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let data = try? Data(contentsOf: url)
        else { return Array("openapi: 3.1.0\n".utf8) }
        return Array(data)
    }()
}

/// The service's pipeline, replaced once when the server binds: a base URL naming port 0 (the
/// default for `--port 0`) becomes one naming the port the server got.
final class PipelineSlot: Sendable {
    private let pipeline: Mutex<Pipeline>

    init(_ pipeline: Pipeline) { self.pipeline = Mutex(pipeline) }

    var current: Pipeline { pipeline.withLock { $0 } }

    func bound(port: Int) {
        pipeline.withLock { pipeline in
            guard let base = Self.baseURL(pipeline.configuration.baseURL, bound: port) else { return }
            pipeline = pipeline.serving(at: base)
        }
    }

    /// `base` with `port` in place of port 0; nil when `base` names another port or none.
    static func baseURL(_ base: String, bound port: Int) -> String? {
        guard port > 0, var components = URLComponents(string: base), components.port == 0 else { return nil }
        components.port = port
        return components.string
    }
}
