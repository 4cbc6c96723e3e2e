public import AttacheBase
import Crypto
import ExtrasBase64
import Foundation

/// The HMAC-SHA256 keys that sign and verify access tokens, with rotation.
///
/// New tokens are signed with the current key. Older keys keep verifying until they are
/// retired; a retired key keeps only its id, so its tokens are refused as
/// ``TokenRefusal/retiredKey`` rather than as unknown. The ring is a value: rotation returns a
/// new ring, which ``save(to:)`` writes atomically.
public struct KeyRing: Sendable {
    /// One key as written in the key file.
    public struct Entry: Codable, Hashable, Sendable {
        /// The key id carried in every token it signs.
        public var id: UInt32
        /// The secret, URL-safe base64 (absent once retired).
        public var secret: String?
        /// Whether the key has been retired.
        public var retired: Bool
    }

    private struct File: Codable {
        var current: UInt32
        var keys: [Entry]
    }

    /// The id of the key that signs new tokens.
    public let currentKeyID: UInt32
    /// Every key the ring knows, retired ones included.
    public let entries: [Entry]
    /// Keyed HMAC states, one per live key, so verifying does not rehash the key.
    private let macs: [UInt32: HMAC<SHA256>]

    /// A ring with one fresh random key.
    public static func generate() -> KeyRing {
        // The entries are valid by construction.
        try! KeyRing(current: 1, entries: [Entry(id: 1, secret: newSecret(), retired: false)])
    }

    /// Builds a ring; the current key must exist and be live, secrets must be ≥ 32 bytes.
    public init(current: UInt32, entries: [Entry]) throws(AttacheError) {
        var macs: [UInt32: HMAC<SHA256>] = [:]
        for entry in entries where !entry.retired {
            guard let text = entry.secret,
                let secret = try? Base64.decode(string: text, options: [.base64UrlAlphabet, .omitPaddingCharacter]),
                secret.count >= 32
            else {
                throw AttacheError(.storeCorrupt, "key \(entry.id) has no usable secret (32 bytes or more)")
            }
            macs[entry.id] = HMAC<SHA256>(key: SymmetricKey(data: secret))
        }
        guard macs[current] != nil else {
            throw AttacheError(.storeCorrupt, "the current key \(current) is missing or retired")
        }
        guard Set(entries.map(\.id)).count == entries.count else {
            throw AttacheError(.storeCorrupt, "key ids repeat")
        }
        self.currentKeyID = current
        self.entries = entries.sorted { $0.id < $1.id }
        self.macs = macs
    }

    /// A ring with a new current key; every older live key still verifies.
    public func rotated() -> KeyRing {
        let id = (entries.map(\.id).max() ?? 0) + 1
        return try! KeyRing(current: id, entries: entries + [Entry(id: id, secret: Self.newSecret(), retired: false)])
    }

    /// A ring where `id` no longer verifies anything. The current key cannot be retired.
    public func retiring(_ id: UInt32) throws(AttacheError) -> KeyRing {
        guard id != currentKeyID else {
            throw AttacheError(.internalError, "key \(id) is current; rotate before retiring it")
        }
        guard entries.contains(where: { $0.id == id }) else {
            throw AttacheError(.notFound, "no key \(id)")
        }
        let updated = entries.map { $0.id == id ? Entry(id: id, secret: nil, retired: true) : $0 }
        return try KeyRing(current: currentKeyID, entries: updated)
    }

    /// Signs claims with their key (normally the current one) and returns the token string.
    public func sign(_ claims: AccessToken) -> String {
        let body = claims.claimBytes
        var mac = macs[claims.keyID] ?? macs[currentKeyID]!
        mac.update(data: body)
        var token = body
        token.append(contentsOf: mac.finalize())
        return Base64.encodeToString(bytes: token, options: [.base64UrlAlphabet, .omitPaddingCharacter])
    }

    /// Issues a token for one attachment, signed with the current key.
    ///
    /// With a `window` of more than a second the claims hold nothing of the moment within the
    /// window: the token is issued at the window's start (or at `notBefore`, the object's
    /// revocation, when that is later) and expires `seconds` after the window's end. So every
    /// token for one attachment issued within one window is the same token (one URL a shared
    /// cache keeps once), at the cost of an expiry up to one window later than asked.
    public func issue(
        for attachment: AttachmentID,
        scope: TokenScope = .read,
        ttl seconds: Int64,
        now: Int64,
        window: Int64 = 1,
        notBefore: Int64 = .min
    ) -> (token: String, claims: AccessToken) {
        let window = max(1, window)
        var issued = now
        var from = now
        if window > 1 {
            issued = now - ((now % window) + window) % window
            // Saturating: the last window of time ends at the largest second.
            let (end, overflow) = issued.addingReportingOverflow(window)
            from = overflow ? .max : end
        }
        // Saturating: a huge lifetime means "never expires", not a trap.
        let (expires, overflow) = from.addingReportingOverflow(max(0, seconds))
        let claims = AccessToken(
            keyID: currentKeyID, attachment: attachment, scope: scope, issuedAt: max(issued, notBefore),
            expires: overflow ? .max : expires)
        return (sign(claims), claims)
    }

    /// Checks a token's form, key, signature and expiry and returns its claims.
    public func verify(_ token: String, now: Int64) -> Result<AccessToken, TokenRefusal> {
        let encodedLength = AccessToken.encodedLength
        // 86 bytes leave 2 unused bits in the last character; they must be zero so that every
        // token has exactly one spelling.
        guard token.utf8.count == encodedLength, let last = token.utf8.last,
            Self.base64URLValue(last).map({ $0 & 0b11 == 0 }) == true,
            let raw = try? Base64.decode(
                bytes: token.utf8, options: [.base64UrlAlphabet, .omitPaddingCharacter]),
            raw.count == AccessToken.length
        else { return .failure(.malformed) }
        return raw.withUnsafeBufferPointer { raw in
            guard let claims = AccessToken(claims: raw) else { return .failure(.malformed) }
            guard var mac = macs[claims.keyID] else {
                let known = entries.contains { $0.id == claims.keyID }
                return .failure(known ? .retiredKey : .unknownKey)
            }
            mac.update(data: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: raw[0..<AccessToken.claimsLength])))
            let expected = mac.finalize()
            let presented = UnsafeBufferPointer(rebasing: raw[AccessToken.claimsLength...])
            let same = expected.withUnsafeBytes { Self.constantTimeEqual($0, presented) }
            guard same else { return .failure(.badSignature) }
            guard now < claims.expires else { return .failure(.expired) }
            return .success(claims)
        }
    }

    /// ``verify(_:now:)`` plus the attachment and scope the caller is about to use.
    public func check(
        _ token: String,
        opens attachment: AttachmentID,
        scope: TokenScope = .read,
        now: Int64
    ) -> Result<AccessToken, TokenRefusal> {
        verify(token, now: now).flatMap { claims in
            guard claims.attachment == attachment else { return .failure(.wrongAttachment) }
            guard claims.scope.isSuperset(of: scope) else { return .failure(.wrongScope) }
            return .success(claims)
        }
    }

    /// Compares every byte whatever the first difference, so timing reveals no prefix.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    static func base64URLValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    static func newSecret() -> String {
        let key = SymmetricKey(size: .bits256)
        return key.withUnsafeBytes {
            Base64.encodeToString(bytes: $0, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        }
    }
}

extension KeyRing {
    /// Reads a key file, or creates one with a fresh key (mode 0600) when none exists.
    ///
    /// Creation never replaces a file: the new ring is linked into place only if the name is
    /// still free, and the file then on disk is what is returned, so processes creating the
    /// same ring at once all end up with the one that won.
    public static func loadOrCreate(at path: String) throws(AttacheError) -> KeyRing {
        if let ring = try load(at: path) { return ring }
        let ring = generate()
        try AtomicFile.create(try ring.encoded(), at: path, mode: 0o600)
        guard let winner = try load(at: path) else {
            throw AttacheError(.storeCorrupt, "key file \(path) vanished after it was created")
        }
        return winner
    }

    /// Reads a key file; nil when there is none.
    public static func load(at path: String) throws(AttacheError) -> KeyRing? {
        // A key file is a few hundred bytes a key; one over 1 MiB is not ours.
        if let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, size > 1 << 20 {
            throw AttacheError(.storeCorrupt, "key file \(path) is \(size) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            if AtomicFile.exists(path) { throw AttacheError(.storeCorrupt, "cannot read key file \(path)") }
            return nil
        }
        return try decode(Array(data), from: "key file \(path)")
    }

    /// A ring from its JSON form (`what` names where it came from, for errors).
    package static func decode(_ bytes: [UInt8], from what: String) throws(AttacheError) -> KeyRing {
        do {
            let file = try JSONDecoder().decode(File.self, from: Data(bytes))
            return try KeyRing(current: file.current, entries: file.keys)
        } catch let error as AttacheError {
            throw error
        } catch {
            throw AttacheError(.storeCorrupt, "cannot read \(what): \(error)")
        }
    }

    /// Writes the ring atomically with mode 0600.
    public func save(to path: String) throws(AttacheError) {
        try AtomicFile.write(try encoded(), to: path, mode: 0o600)
    }

    /// The ring's JSON form (what the key file holds).
    package func encoded() throws(AttacheError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(File(current: currentKeyID, keys: entries)) else {
            throw AttacheError(.internalError, "cannot encode the key ring")
        }
        return Array(data)
    }
}
