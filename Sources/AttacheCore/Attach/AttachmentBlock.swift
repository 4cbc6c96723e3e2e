internal import AttacheBase

/// The attach stage: the attachment block written into a copy of the payload that keeps every
/// other byte, trimmed to the push size limit.
enum AttachmentBlock {
    /// The payload with the block of every attached outcome, or nil when none is attached.
    ///
    /// When the result would pass `maxBytes`, first the optional fields of every entry (sizes,
    /// options) go, then entries from the last one back; each dropped attachment's outcome
    /// becomes `payload_too_large`. Returns what was left out, in the order dropped.
    ///
    /// Linear in the number of entries: each entry is written once in each form, and the size
    /// of the payload with any prefix of them follows from the size with an empty block, so
    /// the payload is assembled once (or not at all, when even an empty block does not fit).
    static func write(
        _ outcomes: inout [AttachmentOutcome], into content: NotificationContent, key: String, maxBytes: Int
    ) -> (payload: [UInt8]?, trimmed: [String]) {
        let attached = outcomes.indices.filter { outcomes[$0].attachment != nil }
        guard !attached.isEmpty else { return (nil, []) }
        // `"key":[e1,e2,…]` is `"key":[]` plus the entries and a comma between each two.
        let emptySize = content.setting(key, to: .array([])).count
        func size(_ entries: ArraySlice<Int>) -> Int { emptySize + entries.reduce(0, +) + max(0, entries.count - 1) }
        var trimmed: [String] = []
        var full = true
        var texts = attached.map { outcomes[$0].attachment!.json(full: true).text }
        var sizes = texts.map(\.utf8.count)
        if size(sizes[...]) > maxBytes {
            full = false
            trimmed.append("optional fields (bytes, width, height, frames, options)")
            texts = attached.map { outcomes[$0].attachment!.json(full: false).text }
            sizes = texts.map(\.utf8.count)
        }
        var kept = attached.count
        var total = size(sizes[...])
        while kept > 0, total > maxBytes {
            kept -= 1
            total -= sizes[kept] + (kept > 0 ? 1 : 0)
            let dropped = attached[kept]
            trimmed.append("attachment \(outcomes[dropped].url)")
            outcomes[dropped].attachment = nil
            outcomes[dropped].error = AttacheError(
                .payloadTooLarge, "the payload would pass \(maxBytes) bytes with this attachment",
                limit: .maxPayloadBytes)
        }
        guard kept > 0 else { return (nil, trimmed) }
        let entries = attached.prefix(kept).map { outcomes[$0].attachment!.json(full: full) }
        let payload = content.setting(key, to: .array(entries))
        assert(payload.count == total, "block size \(payload.count), computed \(total)")
        return (payload, trimmed)
    }
}
