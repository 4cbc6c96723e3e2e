import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheCore

/// The attach stage's trimming: linear, and the same answer as trying every size in turn.
@Suite struct AttachmentBlockTests {
    /// The straightforward algorithm (serialise, check, drop one, serialise again…), kept as
    /// the reference the linear one must agree with.
    static func reference(
        _ outcomes: inout [AttachmentOutcome], content: NotificationContent, maxBytes: Int
    ) -> ([UInt8]?, [String]) {
        let attached = outcomes.indices.filter { outcomes[$0].attachment != nil }
        guard !attached.isEmpty else { return (nil, []) }
        var trimmed: [String] = []
        var kept = attached
        var full = true
        while !kept.isEmpty {
            let bytes = content.setting(
                "attachments", to: .array(kept.map { outcomes[$0].attachment!.json(full: full) }))
            if bytes.count <= maxBytes { return (bytes, trimmed) }
            if full {
                full = false
                trimmed.append("optional fields (bytes, width, height, frames, options)")
            } else {
                let dropped = kept.removeLast()
                trimmed.append("attachment \(outcomes[dropped].url)")
                outcomes[dropped].attachment = nil
                outcomes[dropped].error = AttacheError(.payloadTooLarge, "", limit: .maxPayloadBytes)
            }
        }
        return (nil, trimmed)
    }

    static func outcomes(_ random: inout SplitMix, count: Int) -> [AttachmentOutcome] {
        (0..<count).map { i in
            var outcome = AttachmentOutcome(
                url: "https://m.test/\(i)/" + String(repeating: "x", count: random.below(80)), convention: "att")
            if random.below(4) != 0 {
                outcome.attachment = AttachmentDescriptor(
                    id: String(repeating: "ab", count: 32),
                    url: "https://cdn.test/" + String(repeating: "t", count: 60 + random.below(120)),
                    type: "public.jpeg", bytes: Int64(random.below(1_000_000)),
                    width: random.below(2) == 0 ? nil : 1024,
                    height: 683, frames: 1,
                    thumbnail: ThumbnailOptions(time: random.below(3) == 0 ? 1.5 : nil), kind: .jpeg)
            } else {
                outcome.error = AttacheError(.httpStatus, "404")
            }
            return outcome
        }
    }

    @Test func agreesWithTryingEverySizeInTurn() throws {
        var random = SplitMix(seed: 12)
        for round in 0..<300 {
            let padding = String(repeating: "p", count: random.below(3000))
            let existing = random.below(3) == 0 ? #","attachments":["old"]"# : ""
            let content = try NotificationContent(
                bytes: Array(#"{"aps":{"mutable-content":1},"pad":"\#(padding)"\#(existing)}"#.utf8))
            let maxBytes = [4096, 1024, 400, 10_000, 100][random.below(5)]
            let original = Self.outcomes(&random, count: 1 + random.below(40))
            var expected = original
            let (want, wantTrimmed) = Self.reference(&expected, content: content, maxBytes: maxBytes)
            var got = original
            let written = AttachmentBlock.write(
                &got, into: content, shape: OutputShape(key: "attachments"), moved: [], maxBytes: maxBytes)
            let (have, haveTrimmed) = (written.payload, written.trimmed)
            #expect(have == want, "round \(round)")
            #expect(haveTrimmed == wantTrimmed, "round \(round)")
            #expect(got.map(\.attachment) == expected.map(\.attachment), "round \(round)")
            #expect(got.map { $0.error?.code } == expected.map { $0.error?.code }, "round \(round)")
            if let have { #expect(have.count <= maxBytes) }
        }
    }

    /// 5,000 attached entries in a payload already over the limit: nothing can fit, and the
    /// answer says so for each without trying 5,000 sizes.
    @Test func aPayloadAlreadyOverTheLimitDropsEverything() throws {
        var random = SplitMix(seed: 5)
        let content = try NotificationContent(
            bytes: Array(#"{"aps":{"mutable-content":1},"pad":"\#(String(repeating: "p", count: 5000))"}"#.utf8))
        var outcomes = Self.outcomes(&random, count: 5000)
        let attached = outcomes.filter { $0.attachment != nil }.count
        let written = AttachmentBlock.write(
            &outcomes, into: content, shape: OutputShape(key: "attachments"), moved: [], maxBytes: 4096)
        let (payload, trimmed) = (written.payload, written.trimmed)
        #expect(payload == nil)
        #expect(trimmed.count == attached + 1)
        #expect(outcomes.filter { $0.error?.code == .payloadTooLarge }.count == attached)
    }
}
