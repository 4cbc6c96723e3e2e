import AttacheBase
import AttacheMedia

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
        line.add("shape", shape.rawValue)
        if !notes.isEmpty { line.addRaw("notes", "[" + notes.map(JSONLine.quote).joined(separator: ",") + "]") }
        let items = outcomes.map(\.json.text)
        line.addRaw("attachments", "[" + items.joined(separator: ",") + "]")
        return line.text
    }
}

extension AttachmentOutcome {
    /// One attachment's line in a report: URL, convention, reason, cache use, the entry's id,
    /// type, bytes and size, the bytes fetched and the source's kind and size, the error, the
    /// failed stage, warnings and milliseconds per stage.
    public var json: JSONLine {
        var item = JSONLine()
        item.add("url", shownURL)
        item.add("convention", convention)
        item.add("reason", reason)
        item.add("cached", cached)
        if let attachment {
            item.add("id", attachment.id)
            item.add("type", attachment.type)
            item.add("bytes", Int(attachment.bytes))
            item.add("width", attachment.width)
            item.add("height", attachment.height)
            if let placeholder = attachment.placeholder { item.add("thumbhash", placeholder) }
            // The small rendition (a video's poster), for the batch report's pictures.
            if let small = attachment.small, let name = small.url.split(separator: "/").last {
                item.add("small_id", String(name.prefix { $0 != "." }))
                item.add("small_type", small.type ?? attachment.type)
            }
            if let time = attachment.thumbnail.time, attachment.kind.category == .video {
                item.add("poster_time", time)
            }
        }
        item.add("fetched_bytes", Int(fetchedBytes))
        if let sourceKind { item.add("source_type", sourceKind) }
        if let sourceWidth { item.add("source_width", sourceWidth) }
        if let sourceHeight { item.add("source_height", sourceHeight) }
        if let keptSource { item.add("kept_source", keptSource) }
        if let quality {
            item.add("quality", quality.quality)
            if let score = quality.score { item.add("score", (score * 100).rounded() / 100) }
            item.add("encodes", quality.encodes)
            if let missed = quality.missed { item.add("target_missed", missed) }
            if quality.fullChroma { item.add("chroma", "4:4:4") }
        }
        if let error { item.add("error", object: JSONLine.error(error)) }
        if let failedStage { item.add("failed_stage", failedStage) }
        item.addRaw("warnings", "[" + warnings.map(JSONLine.quote).joined(separator: ",") + "]")
        if !actions.isEmpty { item.addRaw("actions", "[" + actions.map(JSONLine.quote).joined(separator: ",") + "]") }
        if !targets.isEmpty { item.addRaw("targets", "[" + targets.map(\.json.text).joined(separator: ",") + "]") }
        item.add("ms", object: timings.json)
        return item
    }
}

extension TargetEntry {
    /// A receiver's picture in a report: the target, its URL and id, type, bytes and size, the
    /// crop and how it was placed, the encodes and quality that passed the cap; or the error.
    public var json: JSONLine {
        var item = JSONLine()
        item.add("target", target.rawValue)
        item.add("url", url)
        item.add("id", id)
        item.add("type", type)
        if url != nil {
            item.add("bytes", Int(bytes))
            item.add("width", width)
            item.add("height", height)
            item.add("cached", cached)
        }
        if crop.count == 4 { item.addRaw("crop", "[" + crop.map(String.init).joined(separator: ",") + "]") }
        item.add("placement", placement)
        item.add("encodes", encodes)
        item.add("quality", quality)
        if let score { item.add("score", (score * 100).rounded() / 100) }
        if let missed { item.add("target_missed", missed) }
        if let placeholder { item.add("thumbhash", placeholder) }
        if let error { item.add("error", object: JSONLine.error(error)) }
        return item
    }
}

extension StageTimings {
    /// `{"fetch":…,"validate":…,"transform":…,"store":…}`, milliseconds to 0.1.
    public var json: JSONLine {
        var line = JSONLine()
        line.add("fetch", (fetch * 10).rounded() / 10)
        line.add("validate", (validate * 10).rounded() / 10)
        line.add("transform", (transform * 10).rounded() / 10)
        line.add("store", (store * 10).rounded() / 10)
        return line
    }

    /// Adds another's times stage by stage.
    public mutating func add(_ other: StageTimings) {
        fetch += other.fetch
        validate += other.validate
        transform += other.transform
        store += other.store
    }
}
