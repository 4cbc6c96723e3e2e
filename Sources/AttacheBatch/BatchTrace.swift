internal import AttacheBase
internal import AttacheCore
internal import Tracing

/// A run's spans (swift-distributed-tracing): one for the run, or for a campaign worker's run,
/// and under it one `batch.item` per item, whose attachments' spans the pipeline makes under it.
/// A slow campaign reads item by item. With no tracer bootstrapped every span is the no-op one.
struct BatchTrace: Sendable {
    private let run: any Span

    init(_ name: String) {
        run = startSpan(name)
    }

    /// Runs one item's work with its span current, and ends the span with what came of it.
    func item(_ item: BatchItem, _ work: () async -> PipelineResult?) async -> PipelineResult? {
        let span = startSpan("batch.item", context: run.context)
        guard span.isRecording else {
            span.end()
            return await work()
        }
        span.attributes["attache.batch.item"] = item.reference
        span.attributes["attache.batch.index"] = item.index
        let result = await ServiceContext.$current.withValue(span.context) { await work() }
        let failures =
            result.map { result in
                ([result.payloadError] + result.outcomes.map(\.error)).compactMap { $0?.code.rawValue }
            } ?? [item.readError?.code.rawValue ?? AttacheError.Code.internalError.rawValue]
        span.updateAttributes { attributes in
            if let result {
                attributes["attache.attachments"] = result.outcomes.count
                attributes["attache.best_attempt"] = result.bestAttempt
            }
            if !failures.isEmpty { attributes["attache.errors"] = failures }
        }
        if let first = failures.first { span.setStatus(.init(code: .error, message: first)) }
        span.end()
        return result
    }

    /// The run's end: its span closed with its totals; then its failure thrown, or its last
    /// progress said (`finished` set) and returned.
    func finish(
        _ state: BatchRunner.Progress, failure: AttacheError?, progress: (BatchRunner.Progress) -> Void
    ) throws(AttacheError) -> BatchRunner.Progress {
        end(state, error: failure)
        if let failure { throw failure }
        var state = state
        state.finished = true
        progress(state)
        return state
    }

    /// Ends the run's span with its totals.
    private func end(_ progress: BatchRunner.Progress, error: AttacheError?) {
        guard run.isRecording else { return run.end() }
        run.updateAttributes { attributes in
            attributes["attache.batch.total"] = progress.total
            attributes["attache.batch.done"] = progress.done
            attributes["attache.batch.failed"] = progress.failed
            attributes["attache.batch.skipped"] = progress.skipped
        }
        if let error { run.setStatus(.init(code: .error, message: error.code.rawValue)) }
        run.end()
    }
}
