import AttacheBase

extension PipelineResult {
    /// One JSON object: the payload's name (nil: none), whether it was passed through or a
    /// best attempt, wall milliseconds, answer bytes, the payload error, what was trimmed, and
    /// per attachment its URL, convention, reason, cache use, entry, error, warnings and
    /// milliseconds per stage. `attache process --report` prints it; the service's envelope
    /// carries it.
    public func report(name: String? = nil) -> String {
        var line = JSONLine()
        if let name { line.add("payload", name) }
        line.add("passed_through", passedThrough)
        line.add("best_attempt", bestAttempt)
        line.add("ms", (elapsed.milliseconds * 10).rounded() / 10)
        line.add("bytes", payload.count)
        if let error = payloadError { line.add("payload_error", object: JSONLine.error(error)) }
        line.addRaw("trimmed", "[" + trimmed.map(JSONLine.quote).joined(separator: ",") + "]")
        let items = outcomes.map { outcome -> String in
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
            item.add("fetched_bytes", Int(outcome.fetchedBytes))
            if let kind = outcome.sourceKind { item.add("source_type", kind) }
            if let width = outcome.sourceWidth { item.add("source_width", width) }
            if let height = outcome.sourceHeight { item.add("source_height", height) }
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
        line.addRaw("attachments", "[" + items.joined(separator: ",") + "]")
        return line.text
    }
}
