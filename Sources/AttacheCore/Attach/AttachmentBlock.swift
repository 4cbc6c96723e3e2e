internal import AttacheBase

/// The attach stage: the attachment block written into a copy of the payload that keeps every
/// other byte, trimmed to the push size limit.
enum AttachmentBlock {
    /// The payload with the block of every attached outcome, or nil when none is attached.
    /// When the result would pass `maxBytes`, first the optional fields of every entry (sizes,
    /// options) go, then entries from the last one back; each dropped attachment's outcome
    /// becomes `payload_too_large`. Returns what was left out, in the order dropped.
    static func write(
        _ outcomes: inout [AttachmentOutcome], into content: NotificationContent, key: String, maxBytes: Int
    ) -> (payload: [UInt8]?, trimmed: [String]) {
        let attached = outcomes.indices.filter { outcomes[$0].attachment != nil }
        guard !attached.isEmpty else { return (nil, []) }
        var trimmed: [String] = []
        var kept = attached
        var full = true
        while !kept.isEmpty {
            let entries = kept.map { outcomes[$0].attachment!.json(full: full) }
            let bytes = content.setting(key, to: .array(entries))
            if bytes.count <= maxBytes { return (bytes, trimmed) }
            if full {
                full = false
                trimmed.append("optional fields (bytes, width, height, frames, options)")
            } else {
                let dropped = kept.removeLast()
                trimmed.append("attachment \(outcomes[dropped].url)")
                outcomes[dropped].attachment = nil
                outcomes[dropped].error = AttacheError(
                    .payloadTooLarge, "the payload would pass \(maxBytes) bytes with this attachment",
                    limit: .maxPayloadBytes)
            }
        }
        return (nil, trimmed)
    }
}
