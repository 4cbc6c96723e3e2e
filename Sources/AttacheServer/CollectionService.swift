import AttacheBase
import AttacheStore
import Dispatch
import Logging
import ServiceLifecycle

/// Store garbage collection on an interval, as a lifecycle service: it stops with the
/// server, and a pass runs on a dispatch thread so it never holds up request handling.
struct CollectionService: Service {
    let store: AttachmentStore
    let interval: Duration
    let metrics: ServerMetrics
    let logger: Logger

    func run() async throws {
        guard interval > .zero else {
            try? await gracefulShutdown()
            return
        }
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: interval)
                    await collect()
                }
            }
        } catch is CancellationError {
            return
        }
    }

    /// One pass: collect, then refresh the store gauges.
    func collect() async {
        let store = self.store
        let outcome: Result<(CollectionReport, StoreStats), AttacheError> = await withCheckedContinuation { done in
            DispatchQueue.global(qos: .utility).async {
                done.resume(returning: Result { () throws(AttacheError) in (try store.collect(), try store.stats()) })
            }
        }
        switch outcome {
        case .success(let (report, stats)):
            metrics.collected(objects: report.removed.count, bytes: report.removedBytes)
            metrics.store(objects: stats.objects, bytes: stats.bytes)
            logger.info(
                "store collected",
                metadata: ["removed": "\(report.removed.count)", "removed_bytes": "\(report.removedBytes)"])
        case .failure(let error):
            logger.error("store collection failed", metadata: ["code": "\(error.code)", "message": "\(error.message)"])
        }
    }
}
