import AttacheBase

extension PipelineResult {
    /// One JSON object: the payload's name (nil: none), whether it was passed through or a
    /// best attempt, wall milliseconds, answer bytes, the payload error, what was trimmed, and
    /// per attachment its URL, convention, reason, cache use, entry, error, warnings and
    /// milliseconds per stage. `attache process --report` prints it; the service's envelope
    /// carries it.
    public func report(name: String? = nil) -> String {
        let result = self
        var line = JSONLine()
        if let name { line.add("payload", name) }
        line.add("passed_through", result.passedThrough)
        line.add("best_attempt", result.bestAttempt)
        line.add("ms", (result.elapsed.milliseconds * 10).rounded() / 10)
        line.add("bytes", result.payload.count)
        if let error = result.payloadError { line.add("payload_error", object: JSONLine.error(error)) }
        line.addRaw("trimmed", "[" + result.trimmed.map(JSONLine.quote).joined(separator: ",") + "]")
        let outcomes = result.outcomes.map { outcome -> String in
            var item = JSONLine()
            item.add("url", outcome.url)
            item.add("convention", outcome.convention)
            item.add("reason", outcome.reason)
            item.add("cached", outcome.cached)
            if let attachment = outcome.attachment {
                item.add("id", attachment.id)
                item.add("type", attachment.type)
                item.add("bytes", Int(attachment.bytes))
                item.add("width", attachment.width)
                item.add("height", attachment.height)
            }
            if let error = outcome.error { item.add("error", object: JSONLine.error(error)) }
            if let stage = outcome.failedStage { item.add("failed_stage", stage) }
            item.addRaw("warnings", "[" + outcome.warnings.map(JSONLine.quote).joined(separator: ",") + "]")
            var timings = JSONLine()
            timings.add("fetch", (outcome.timings.fetch * 10).rounded() / 10)
            timings.add("validate", (outcome.timings.validate * 10).rounded() / 10)
            timings.add("transform", (outcome.timings.transform * 10).rounded() / 10)
            timings.add("store", (outcome.timings.store * 10).rounded() / 10)
            item.add("ms", object: timings)
            return item.text
        }
        line.addRaw("attachments", "[" + outcomes.joined(separator: ",") + "]")
        return line.text
    }
}
