import AttacheBase
import AttacheCore
import Foundation

extension ServerSettings {
    /// What is wrong with a settings file before any of it is read: it must be one JSON object
    /// (parsed as strictly as a payload: a key written twice is refused, not the last taken),
    /// and every key must be a setting's (a misspelt one is refused with the nearest key named,
    /// not ignored). Each problem is one line; none for a good file.
    public static func fileProblems(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return ["cannot read \(path)"] }
        let value: JSONValue
        do throws(AttacheError) {
            value = try JSONParser.parse(Array(data))
        } catch {
            let message = error.message.replacingOccurrences(of: "member name", with: "key")
            return ["\(path): \(message)"]
        }
        guard case .object(let members) = value else { return ["\(path): the settings are one JSON object"] }
        let keys = all.map(\.key)
        return members.compactMap { member in
            guard !keys.contains(member.key) else { return nil }
            let near = nearestKey(member.key).map { "; did you mean \"\($0)\"?" } ?? ""
            return "\(path): \"\(member.key)\" is not a setting\(near)"
        }
    }

    /// The setting key closest to `key`: the same letters in another case or with `-` or `_`,
    /// else within a few edits; nil when none is close.
    static func nearestKey(_ key: String) -> String? { nearest(key, among: all.map(\.key)) }

    /// The one of `keys` closest to `key`, in the same way; nil when none is close.
    static func nearest(_ key: String, among keys: [String]) -> String? {
        func folded(_ text: String) -> [Character] { Array(text.lowercased().filter { $0 != "_" && $0 != "-" }) }
        let wanted = folded(key)
        let scored = keys.map { ($0, editDistance(wanted, folded($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, min(3, wanted.count / 4)) ? best.0 : nil
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + [Int](repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
