import AttacheBase
import AttacheSeal
import AttacheTestSupport
import Crypto
import Foundation
import Testing

@testable import AttacheCore
@testable import AttacheMedia

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

/// Categories by kind, and the trimming order with small renditions, actions and a seal.
@Suite struct CategoryAndSealBlockTests {
    static let rules = CategorySet(
        image: "attache.image", video: "attache.video", audio: "attache.audio", none: "attache.text",
        actions: ["attache.image": [.init(id: "open", title: "Open", options: ["foreground"])]])

    static func outcome(_ kind: MediaKind?, small: Bool = false, placeholder: Bool = false) -> AttachmentOutcome {
        var outcome = AttachmentOutcome(url: "https://m.test/\(kind?.rawValue ?? "x")", convention: "image")
        guard let kind else {
            outcome.error = AttacheError(.httpStatus, "404")
            return outcome
        }
        outcome.attachment = AttachmentDescriptor(
            id: String(repeating: "cd", count: 32), url: "https://cdn.test/t/x.\(kind.fileExtension)", type: kind.uti,
            bytes: 1000, width: 10, height: 10, frames: 1, thumbnail: ThumbnailOptions(), kind: kind,
            small: small ? .init(url: "https://cdn.test/t/s.jpg", bytes: 100, width: 5, height: 5) : nil)
        if placeholder { outcome.attachment?.placeholder = "3OcRJYB4d3h/iIeHeEh3eIhw+j3A" }
        return outcome
    }

    static func write(
        _ outcomes: [AttachmentOutcome], payload: String, rules: CategorySet? = rules, seal: OutputShape.Seal? = nil,
        maxBytes: Int = 4096
    ) throws -> (JSONValue?, AttachmentBlock.Written, [AttachmentOutcome]) {
        var outcomes = outcomes
        let content = try NotificationContent(bytes: Array(payload.utf8))
        let written = AttachmentBlock.write(
            &outcomes, into: content, shape: OutputShape(key: "attachments", seal: seal, categories: rules),
            moved: ["image"], maxBytes: maxBytes)
        return (try written.payload.map { try JSONParser.parse($0) }, written, outcomes)
    }

    @Test func theCategoryFollowsTheFirstAttachmentsKind() throws {
        let plain = #"{"aps":{"mutable-content":1},"image":"u"}"#
        for (kind, expected) in [(MediaKind.jpeg, "attache.image"), (.mp4, "attache.video"), (.wav, "attache.audio")] {
            let (payload, _, _) = try Self.write([Self.outcome(kind), Self.outcome(.gif)], payload: plain)
            #expect(payload?["aps"]?["category"] == .string(expected))
            #expect((payload?["attache-actions"] != nil) == (expected == "attache.image"))
        }
        // Nothing attached: the fallback category, no block.
        let (failed, _, _) = try Self.write([Self.outcome(nil)], payload: plain)
        #expect(failed?["aps"]?["category"] == .string("attache.text") && failed?["attachments"] == nil)
        // No rules: nothing attached leaves the payload as it came.
        let (untouched, _, _) = try Self.write([Self.outcome(nil)], payload: plain, rules: nil)
        #expect(untouched == nil)
        // The sender's category stays unless told to override.
        let sender = #"{"aps":{"mutable-content":1,"category":"mine"},"image":"u"}"#
        #expect(try Self.write([Self.outcome(.jpeg)], payload: sender).0?["aps"]?["category"] == .string("mine"))
        var override = Self.rules
        override.override = true
        let replaced = try Self.write([Self.outcome(.jpeg)], payload: sender, rules: override).0
        #expect(replaced?["aps"]?["category"] == .string("attache.image"))
    }

    /// Placeholders go first, then small renditions, then the actions, then the optional
    /// fields, then entries.
    @Test func trimmingOrderAndTheEdge() throws {
        let pad = String(repeating: "p", count: 3000)
        let payload = #"{"aps":{"mutable-content":1},"image":"u","pad":"\#(pad)"}"#
        let outcomes = (0..<4).map { _ in Self.outcome(.jpeg, small: true, placeholder: true) }
        var sizes: [Int] = []
        var orders: Set<[String]> = []
        for maxBytes in stride(from: 3200, through: 4800, by: 7) {
            let (parsed, written, after) = try Self.write(outcomes, payload: payload, maxBytes: maxBytes)
            let bytes = try #require(parsed).text.utf8.count
            #expect(bytes <= maxBytes, "\(maxBytes)")
            sizes.append(bytes)
            let steps = written.trimmed.filter { !$0.hasPrefix("attachment ") }
            orders.insert(steps)
            let expectedOrder = [
                "placeholders", "small renditions", "actions",
                "optional fields (bytes, width, height, frames, options)",
            ]
            #expect(Array(expectedOrder.prefix(steps.count)) == steps, "\(maxBytes): \(steps)")
            let kept = after.filter { $0.attachment != nil }.count
            if kept == 0 { #expect(parsed?["aps"]?["category"] == .string("attache.text")) }
        }
        #expect(orders.count >= 5, "the sweep crosses every step: \(orders)")
    }

    /// A sealed payload at the edge: the size computed before sealing is the size sealed, it
    /// never passes the limit, and the seal holds exactly the entries kept.
    @Test func sealedPayloadsFitAtTheEdge() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let seal = OutputShape.Seal(
            recipient: try SealRecipient(p256: key.publicKey, keyID: "k1"), placeholder: "New message", members: [])
        let pad = String(repeating: "q", count: 1500)
        let payload = #"{"aps":{"alert":{"title":"secret","body":"\#(pad)"},"mutable-content":1},"image":"u"}"#
        let outcomes = (0..<5).map { _ in Self.outcome(.jpeg, small: true) }
        var keptCounts: Set<Int> = []
        for maxBytes in stride(from: 2400, through: 5200, by: 11) {
            let (parsed, written, after) = try Self.write(outcomes, payload: payload, seal: seal, maxBytes: maxBytes)
            let visible = try #require(parsed)
            #expect(visible.text.utf8.count <= maxBytes)
            guard written.sealError == nil, case .object(let members) = visible["encrypted-content"] ?? .null else {
                #expect(
                    visible["encrypted-content"] == nil && visible["aps"]?["alert"]?["body"] == .string("New message"))
                continue
            }
            #expect(members.count == 5 && visible["image"] == nil && !visible.text.contains("secret"))
            let envelope = try SealedEnvelope(
                member: try JSONSerialization.jsonObject(with: Data(visible["encrypted-content"]!.text.utf8)))
            let plain = try JSONParser.parse(try PayloadSeal.open(envelope, p256: key))
            let kept = after.filter { $0.attachment != nil }.count
            keptCounts.insert(kept)
            if case .array(let entries) = plain["attachments"] ?? .array([]) {
                #expect(entries.count == kept)
            }
            #expect(plain["aps"]?["alert"]?["title"] == .string("secret") && plain["image"] == .string("u"))
        }
        #expect(keptCounts.count >= 4, "the sweep keeps 0…5 entries: \(keptCounts)")
    }

    /// What a picture's placeholder adds to its entry, measured on the entry as written: every
    /// corpus still's ThumbHash (alpha ones too) put into an entry, the entry with it against
    /// the entry without.
    @Test("a placeholder costs at most 40 bytes of payload per opaque picture, 42 with alpha")
    func aPlaceholderCostsAtMost40Bytes() throws {
        let rows = Corpus.jpegAndPNG.filter {
            $0.expectOK && ($0.frames ?? 1) == 1 && ($0.width ?? 0) >= 8 && ($0.height ?? 0) >= 8
        }
        var opaque: [Int] = []
        var alpha: [Int] = []
        for row in rows {
            guard let image = try? ImageProcessor.decode(MediaBytes(Corpus.bytes(row.file))).image else { continue }
            let hash = ThumbHash.make(image)
            var entry = try #require(Self.outcome(.png).attachment)
            let without = entry.json(full: false).text.utf8.count
            entry.placeholder = ThumbHash.text(hash)
            let cost = entry.json(full: false).text.utf8.count - without
            // ThumbHash's alpha flag: the top bit of its first 24-bit header.
            if hash[2] & 0x80 != 0 { alpha.append(cost) } else { opaque.append(cost) }
        }
        #expect(opaque.count >= 100 && alpha.count >= 5, "\(opaque.count) opaque, \(alpha.count) alpha")
        #expect(opaque.allSatisfy { $0 <= 40 }, "opaque up to \(opaque.max() ?? 0) bytes")
        #expect(alpha.allSatisfy { $0 <= 42 }, "alpha up to \(alpha.max() ?? 0) bytes")
        let all = opaque + alpha
        print(
            "placeholder cost: opaque \(opaque.min() ?? 0)-\(opaque.max() ?? 0) bytes (\(opaque.count)), "
                + "alpha \(alpha.min() ?? 0)-\(alpha.max() ?? 0) (\(alpha.count)), mean "
                + String(format: "%.1f", Double(all.reduce(0, +)) / Double(max(1, all.count))))
    }
}
