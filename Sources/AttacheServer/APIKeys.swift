import Crypto

/// The API keys a caller may present, as SHA-256 digests, each with the tenant it is for. A
/// presented key is hashed and compared with every digest in full, so the time taken says
/// nothing about how much of a key matched or which key did.
struct APIKeys: Sendable {
    private let digests: [[UInt8]]
    private let owners: [Int]

    /// Each digest and the index of its tenant.
    init(digests: [([UInt8], Int)]) {
        self.digests = digests.map(\.0)
        self.owners = digests.map(\.1)
    }

    /// Plain keys, each its own tenant (its place in the list).
    init(_ keys: [String]) {
        self.init(digests: keys.enumerated().map { (Array(SHA256.hash(data: Array($1.utf8))), $0) })
    }

    var isEmpty: Bool { digests.isEmpty }

    /// How many keys there are.
    var count: Int { digests.count }

    /// Whether `presented` is one of the keys.
    func accepts(_ presented: Substring) -> Bool { owner(of: presented) != nil }

    /// The tenant `presented` is a key of (never the key itself); nil when it is none of them.
    func owner(of presented: Substring) -> Int? {
        let digest = Array(SHA256.hash(data: Array(presented.utf8)))
        var matched = 0
        var found = 0
        for (index, key) in digests.enumerated() {
            var difference: UInt8 = 0
            for i in 0..<32 { difference |= key[i] ^ digest[i] }
            // All ones when equal, without a branch on secret data.
            let equal = (Int(difference) - 1) >> 8
            matched |= equal & 1
            found |= equal & owners[index]
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
