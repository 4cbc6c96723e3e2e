import Crypto

/// The API keys a caller may present. Each is kept as its SHA-256; a presented key is hashed
/// and compared with every one of them in full, so the time taken says nothing about how
/// much of a key matched or which key did.
struct APIKeys: Sendable {
    private let digests: [[UInt8]]

    init(_ keys: [String]) {
        digests = keys.map { Array(SHA256.hash(data: Array($0.utf8))) }
    }

    var isEmpty: Bool { digests.isEmpty }

    /// How many keys there are.
    var count: Int { digests.count }

    /// The tenant a request's `Authorization` value is counted for: its key's place, or
    /// ``count`` (no key, or one that is not accepted).
    func tenant(authorization: String?) -> Int {
        Self.bearer(authorization).flatMap { index(of: $0) } ?? count
    }

    /// Whether `presented` is one of the keys.
    func accepts(_ presented: Substring) -> Bool { index(of: presented) != nil }

    /// Which of the keys `presented` is (its place in the list: the tenant the work is counted
    /// for, never the key itself); nil when it is none of them.
    func index(of presented: Substring) -> Int? {
        let digest = Array(SHA256.hash(data: Array(presented.utf8)))
        var matched = 0
        var found = 0
        for (index, key) in digests.enumerated() {
            var difference: UInt8 = 0
            for i in 0..<32 { difference |= key[i] ^ digest[i] }
            // All ones when equal, without a branch on secret data.
            let equal = (Int(difference) - 1) >> 8
            matched |= equal & 1
            found |= equal & index
        }
        return matched == 1 ? found : nil
    }

    /// The key from an `Authorization: Bearer <key>` header value; nil when there is none.
    static func bearer(_ header: String?) -> Substring? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let key = parts[1].drop { $0 == " " }
        return key.isEmpty ? nil : key
    }
}
