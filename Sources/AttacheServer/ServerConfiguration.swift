public import AttacheCore
public import AttacheFetch
public import AttacheStore
import Foundation

#if canImport(Glibc)
import Glibc
import AttacheWork
#endif

/// Everything `attache serve` runs with. ``ServerSettings`` fills it from flags, the
/// environment and a file; a library user may build one directly.
public struct ServerConfiguration: Sendable {
    /// Address to listen on (default loopback).
    public var host = "127.0.0.1"
    /// Port to listen on (0: any free port).
    public var port = 8080
    /// How payloads are treated; its `baseURL` is also where attachments are served: the
    /// service answers `GET <path of baseURL>/<token>/<id>.<ext>`.
    public var pipeline = PipelineConfiguration()
    /// How media are fetched.
    public var fetch = FetchPolicy()
    /// A shared store's tuning (``SharedStoreConfiguration``): how long objects whose row was
    /// read are still served while its catalog is away, and how long one statement may take.
    public var catalogOutageGrace = SharedStoreConfiguration.defaultOutageGrace
    public var catalogTimeout = SharedStoreConfiguration.defaultTimeout
    /// The log's level (`trace` … `critical`) and format (`text` or `json`).
    public var logLevel = "info"
    public var logFormat = "text"
    /// Where traces go, as the settings say (the process's `OTEL_*` variables win over them).
    public var traces = ServerSettings.TraceSettings()
    /// The attachment store.
    public var store: StoreConfiguration
    /// API keys accepted in `Authorization: Bearer`; several at once for rotation. Empty: no
    /// key is accepted (the service refuses to start that way unless told to run open).
    public var apiKeys: [String] = []
    /// A tenants file (`--tenants`): named tenants with their key digests, shares, rates and
    /// media hosts (docs/tenants.md), read again on SIGHUP and when it changes. Each
    /// ``apiKeys`` key is a tenant of its own beside them (`key-N`).
    public var tenantsFile: String?
    /// Read the tenants a shared store keeps in its catalog for every replica (`--tenants
    /// catalog`) instead of a file: read when the service starts and again when their version
    /// changes.
    public var tenantsInCatalog = false
    /// The tenants the file held when the service was set up.
    var tenants = TenantTable()
    /// Run `POST /v1/notifications` without caller authentication (tests, demos on loopback).
    public var allowAnonymous = false
    /// Take delivery receipts: `POST <attachment URL>` with `{"result", "code", "ms"}` from the
    /// device kit, counted in the metrics (default off: the route is not there).
    public var receipts = false
    /// Largest request body read (default 64 KiB); a larger one is answered 413.
    public var maxRequestBytes = 64 << 10
    /// Longest deadline a request may ask for; a request without one gets the pipeline's.
    public var maxDeadline: Duration = .seconds(25)
    /// Payloads in the pipeline at once (default: 16 × cores). A payload holds its place while
    /// it fetches and while its transforms wait: the cores and the decoders' memory are shared
    /// between the payloads admitted by the workers' scheduler (by tenant, payload and expected
    /// cost, within ``maxDecodeMemory``), so this bounds the fetched bytes held, not how the CPU
    /// or the decoders' memory is shared. It is high enough that a light payload finds a place
    /// beside every client of a busy sender: a place waited for is waited for in arrival order,
    /// whatever the payload costs.
    public var maxConcurrent = 16 * max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// Memory the decodes may hold together, in bytes: a decode goes past its header only while
    /// what it will hold fits beside the others' (default: 96 MiB × the cores, at most a quarter
    /// of the machine's memory). The service's decode memory follows this, not the number of
    /// clients. Set before the first payload (the workers' scheduler is the process's).
    public var maxDecodeMemory = PipelineWorkers.defaultMemory
    /// Payloads waiting for a slot (default: 4 × cores); beyond them, 503 at once.
    public var maxQueued = 4 * max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    /// How long a connection may take over each part of its life, and how many may be open.
    public var connections = ConnectionLimits()
    /// The `Retry-After` a 503 carries, in seconds.
    public var retryAfterSeconds = 1
    /// Time given to in-flight requests after SIGTERM or SIGINT before the process exits.
    public var gracePeriod: Duration = .seconds(10)
    /// Linux nice value of the pipeline's worker threads while `run()` serves (0-19): decoding
    /// yields the cores to request handling, so health checks, 503s and downloads answer at
    /// once while every core decodes.
    public var workerNice: Int32 = 5
    /// Linux nice value of the event loop threads while `run()` serves (−20 to 0): above the
    /// payload handlers and the catalog, so a 503, a health check or a download is answered as
    /// soon as it arrives. Below 0 needs CAP_SYS_NICE or a nice limit (systemd `LimitNICE=`);
    /// without either the loops stay at 0 and the service says so once.
    public var eventLoopNice: Int32 = -5
    /// How often store garbage collection runs (0: never).
    public var collectionInterval: Duration = .seconds(300)
    /// How long a shared cache (an edge, a CDN) may keep a download: `s-maxage`, never past
    /// the token's or the object's end (0: `private`, kept by the device alone). A revocation
    /// is honoured at an edge within this time.
    public var edgeMaxAge: Duration = .seconds(60)
    /// How long past its edge time a shared cache may still serve a download while the origin
    /// cannot answer (`stale-if-error`) or while it asks the origin again
    /// (`stale-while-revalidate`), never past the token's or the object's end (0: never).
    public var edgeStale: Duration = .seconds(3600)

    /// A configuration with the store at `storeRoot` and every other setting at its default.
    public init(store: StoreConfiguration) {
        self.store = store
    }

    /// The path part of the pipeline's `baseURL` (no trailing slash; empty for the root).
    public var attachmentsPath: String {
        var rest = Substring(pipeline.baseURL)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        guard let slash = rest.firstIndex(of: "/") else { return "" }
        var path = String(rest[slash...])
        if let query = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<query]) }
        while path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
