internal import AttacheBase
internal import AttacheSeal

/// The attach stage: the attachment block written into a copy of the payload that keeps every
/// other member's bytes (or into its seal), with the category for what was attached, trimmed
/// to the push size limit.
enum AttachmentBlock {
    /// What the attach stage wrote.
    struct Written {
        /// The payload to send, or nil when it stays as it came (nothing attached, no seal,
        /// no fallback category).
        var payload: [UInt8]?
        /// What was left out to fit, in the order dropped.
        var trimmed: [String] = []
        /// Why the seal could not be made, when it could not (the payload is then the
        /// placeholder without the sealed members).
        var sealError: AttacheError?
    }

    /// The payload with the block of every attached outcome.
    ///
    /// When the result would pass `maxBytes`, first the placeholders go, then the small renditions, then the
    /// category's actions, then the optional fields of every entry (sizes, options), then
    /// entries from the last one back; each dropped attachment's outcome becomes
    /// `payload_too_large`. The category follows the first attachment kept.
    ///
    /// Linear in the number of entries: each entry is written once in each form, and the size
    /// of the payload with any prefix of them follows from the frame's size function, so the
    /// payload is assembled (and sealed) once.
    static func write(
        _ outcomes: inout [AttachmentOutcome], into content: NotificationContent, shape: OutputShape,
        moved: [String], maxBytes: Int
    ) -> Written {
        let attached = outcomes.indices.filter { outcomes[$0].attachment != nil }
        var written = Written()
        var actions = true
        guard let first = attached.first else {
            return nothingAttached(content, shape: shape, moved: moved, actions: true, maxBytes: maxBytes, written)
        }
        let kind = outcomes[first].attachment!.kind.category.rawValue
        var frame = PayloadFrame(content: content, shape: shape, kind: kind, actions: actions, moved: moved)
        var full = true
        var small = attached.contains { outcomes[$0].attachment!.small != nil }
        var placeholders = attached.contains { outcomes[$0].attachment!.placeholder != nil }
        // Each entry is written once per form; its text is both measured and assembled.
        var texts: [String] = []
        var extra = 0
        func measure() {
            texts = attached.map {
                outcomes[$0].attachment!.json(full: full, small: small, placeholder: placeholders).text
            }
            extra = texts.reduce(0) { $0 + $1.utf8.count } + max(0, texts.count - 1)
        }
        measure()
        if frame.size(extra) > maxBytes, placeholders {
            placeholders = false
            written.trimmed.append("placeholders")
            measure()
        }
        if frame.size(extra) > maxBytes, small {
            small = false
            written.trimmed.append("small renditions")
            measure()
        }
        if frame.size(extra) > maxBytes, frame.hasActions {
            actions = false
            written.trimmed.append("actions")
            frame = PayloadFrame(content: content, shape: shape, kind: kind, actions: false, moved: moved)
        }
        if frame.size(extra) > maxBytes {
            full = false
            written.trimmed.append("optional fields (bytes, width, height, frames, options)")
            measure()
        }
        var kept = attached.count
        while kept > 0, frame.size(extra) > maxBytes {
            kept -= 1
            extra -= texts[kept].utf8.count + (kept > 0 ? 1 : 0)
            let dropped = attached[kept]
            written.trimmed.append("attachment \(outcomes[dropped].url)")
            outcomes[dropped].attachment = nil
            outcomes[dropped].error = AttacheError(
                .payloadTooLarge, "the payload would pass \(maxBytes) bytes with this attachment",
                limit: .maxPayloadBytes)
        }
        guard kept > 0 else {
            return nothingAttached(content, shape: shape, moved: moved, actions: actions, maxBytes: maxBytes, written)
        }
        let entries = texts.prefix(kept).map(JSONValue.raw)
        do throws(SealError) {
            written.payload = try frame.assemble(entries)
            assert(written.payload!.count == frame.size(extra), "size \(written.payload!.count), computed")
        } catch {
            return sealFailed(content, shape: shape, moved: moved, error, written)
        }
        return written
    }

    /// The payload when no attachment is written: sealed (alert and moved members), or with
    /// the fallback category, or nil when neither applies.
    private static func nothingAttached(
        _ content: NotificationContent, shape: OutputShape, moved: [String], actions: Bool, maxBytes: Int,
        _ written: Written
    ) -> Written {
        var written = written
        guard shape.seal != nil || shape.categories?.none != nil else { return written }
        var frame = PayloadFrame(content: content, shape: shape, kind: nil, actions: actions, moved: moved)
        do throws(SealError) {
            var payload = try frame.assemble(nil)
            if payload.count > maxBytes, frame.hasActions {
                written.trimmed.append("actions")
                frame = PayloadFrame(content: content, shape: shape, kind: nil, actions: false, moved: moved)
                payload = try frame.assemble(nil)
            }
            guard payload.count > maxBytes else {
                written.payload = payload
                return written
            }
            guard let seal = shape.seal else { return written }
            written.trimmed.append(OutputShape.sealMember)
            written.payload = PayloadFrame.withheld(
                content, key: shape.key, placeholder: seal.placeholder, members: moved + seal.members)
            written.sealError = AttacheError(
                .payloadTooLarge, "the sealed content would pass \(maxBytes) bytes; the placeholder is sent alone",
                limit: .maxPayloadBytes)
            return written
        } catch {
            return sealFailed(content, shape: shape, moved: moved, error, written)
        }
    }

    private static func sealFailed(
        _ content: NotificationContent, shape: OutputShape, moved: [String], _ error: SealError, _ written: Written
    ) -> Written {
        var written = written
        let seal = shape.seal!
        written.payload = PayloadFrame.withheld(
            content, key: shape.key, placeholder: seal.placeholder, members: moved + seal.members)
        written.sealError = AttacheError(.sealFailed, "the payload could not be sealed (\(error))")
        return written
    }
}
