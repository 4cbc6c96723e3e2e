internal import AttacheBase

/// The Android and web pictures' placeholders in a send body: each receiver's ThumbHash as
/// `attache_thumbhash` in the map of strings its app reads (``SendShape/placeholderMaps``),
/// when the body, its iOS part aside, stays within the platforms' 4 KB.
enum BodyPlaceholders {
    /// The member an app reads.
    static let member = "attache_thumbhash"

    /// One member to add: `key` at the end of the object at `object`, made (with the members
    /// of `seed` first, when it names an object) inside the nearest existing ancestor when the
    /// body has no such object.
    struct Insertion {
        var object: [String]
        var key: String
        var value: JSONValue
        var seed: [String]? = nil
    }

    /// The members for `hashes` (receiver → ThumbHash) in a body of `shape`.
    static func insertions(
        _ hashes: [Receiver: String], shape: SendShape, in content: NotificationContent
    ) -> [Insertion] {
        var out: [Insertion] = []
        for receiver in Receiver.allCases {
            guard let hash = hashes[receiver], let maps = shape.placeholderMaps[receiver], let first = maps.first
            else { continue }
            let present = maps.filter { content.value(at: Array($0.path.dropLast())) != nil }
            for map in present.isEmpty ? [first] : present {
                let seed = map.overrides.flatMap { content.value(at: map.path) == nil ? $0 : nil }
                out.append(Insertion(object: map.path, key: member, value: .string(hash), seed: seed))
            }
        }
        return out
    }

    /// `content` with `insertions` made, or nil when the body would pass `maxBytes` not counting
    /// `shape`'s iOS part, or a path crosses a value that is not an object.
    static func write(
        _ insertions: [Insertion], into content: NotificationContent, shape: SendShape, maxBytes: Int
    ) -> [UInt8]? {
        guard let out = content.inserting(insertions) else { return nil }
        let ios = shape.iosPart.flatMap { content.member(at: $0)?.sourceRange?.count } ?? 0
        return out.count - ios <= maxBytes ? out : nil
    }
}

extension NotificationContent {
    /// The payload with `insertions` made; every other byte kept. Nil when an object on a path
    /// is not one.
    func inserting(_ insertions: [BodyPlaceholders.Insertion]) -> [UInt8]? {
        // Texts to add before each object's closing brace, in the order given.
        var splices: [Int: (text: String, empty: Bool)] = [:]
        for insertion in insertions {
            var existing = insertion.object
            var missing: [String] = []
            while !existing.isEmpty, value(at: existing) == nil { missing.insert(existing.removeLast(), at: 0) }
            guard case .object(let members) = value(at: existing) ?? .null,
                let close = closingBrace(of: existing)
            else { return nil }
            var text = JSONValue.string(insertion.key).text + ":" + insertion.value.text
            if !missing.isEmpty {
                text = "{" + seedMembers(insertion.seed).map { $0 + "," }.joined() + text + "}"
                for key in missing.dropFirst().reversed() { text = "{" + JSONValue.string(key).text + ":" + text + "}" }
                text = JSONValue.string(missing[0]).text + ":" + text
            }
            if let earlier = splices[close] {
                splices[close] = (earlier.text + "," + text, earlier.empty)
            } else {
                splices[close] = (text, members.isEmpty)
            }
        }
        var out = bytes
        for (at, splice) in splices.sorted(by: { $0.key > $1.key }) {
            out.insert(contentsOf: Array(((splice.empty ? "" : ",") + splice.text).utf8), at: at)
        }
        return out
    }

    /// The index of the closing brace of the object at `path` (the root's for an empty path).
    private func closingBrace(of path: [String]) -> Int? {
        let range = path.isEmpty ? bytes.indices : member(at: path)?.valueRange
        guard let range else { return nil }
        return range.last { bytes[$0] == UInt8(ascii: "}") }
    }

    /// The members of the object at `path` as written, each `"key":value` (none when absent).
    private func seedMembers(_ path: [String]?) -> [String] {
        guard let path, case .object(let members) = value(at: path) ?? .null else { return [] }
        return members.map { member in
            let text = member.sourceRange.map { String(decoding: bytes[$0], as: UTF8.self) }
            return text ?? (JSONValue.string(member.key).text + ":" + member.value.text)
        }
    }
}
