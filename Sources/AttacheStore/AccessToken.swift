internal import AttacheBase

/// What a token lets its holder do with its one attachment.
public struct TokenScope: OptionSet, Hashable, Sendable {
    /// The raw bits carried in the token.
    public let rawValue: UInt8
    /// Creates a scope from its bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Read the attachment's bytes (the only scope the HTTP route and `store open` need).
    public static let read = TokenScope(rawValue: 1)

    /// Parses `read`; `nil` for an unknown name.
    public init?(name: String) {
        switch name {
        case "read": self = .read
        default: return nil
        }
    }
}

/// The signed claims of a scoped access token: one attachment, a scope and an expiry.
///
/// Wire form (version 1), URL-safe base64 without padding of 86 bytes:
/// `version(1) | key id(4, BE) | attachment id(32) | scope(1) | issued at(8, BE) |
/// expires(8, BE) | HMAC-SHA256 over the first 54 bytes(32)`. Times are Unix seconds.
public struct AccessToken: Hashable, Sendable {
    /// The key that signed (or will sign) the token.
    public var keyID: UInt32
    /// The one attachment the token opens.
    public var attachment: AttachmentID
    /// What the token allows.
    public var scope: TokenScope
    /// When the token was issued (Unix seconds); revocation refuses tokens issued before it.
    public var issuedAt: Int64
    /// When the token stops working (Unix seconds, exclusive).
    public var expires: Int64

    /// Creates claims.
    public init(keyID: UInt32, attachment: AttachmentID, scope: TokenScope, issuedAt: Int64, expires: Int64) {
        self.keyID = keyID
        self.attachment = attachment
        self.scope = scope
        self.issuedAt = issuedAt
        self.expires = expires
    }

    /// The window in which one attachment's tokens are all the same for a lifetime of `ttl`
    /// seconds: a sixteenth of it, at most an hour (a 7-day token: one URL per hour, expiring
    /// up to an hour late; a 10-minute token: one per 37 s).
    public static func window(forTTL ttl: Int64) -> Int64 {
        min(3600, max(1, ttl / 16))
    }

    static let version: UInt8 = 1
    static let claimsLength = 54
    static let tagLength = 32
    static let length = claimsLength + tagLength
    /// Characters in a token's one spelling (unpadded URL-safe base64 of its 86 bytes).
    public static let encodedLength = (length * 8 + 5) / 6

    /// The 54 signed bytes.
    var claimBytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.length)
        out.append(Self.version)
        Self.append(UInt64(keyID), bytes: 4, to: &out)
        out.append(contentsOf: attachment.bytes)
        out.append(scope.rawValue)
        Self.append(UInt64(bitPattern: issuedAt), bytes: 8, to: &out)
        Self.append(UInt64(bitPattern: expires), bytes: 8, to: &out)
        return out
    }

    /// Reads claims from the first 54 bytes of a decoded token; `nil` for a wrong version.
    init?(claims raw: UnsafeBufferPointer<UInt8>) {
        guard raw.count >= Self.claimsLength, raw[0] == Self.version else { return nil }
        func read(_ offset: Int, _ count: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in offset..<offset + count { value = value << 8 | UInt64(raw[i]) }
            return value
        }
        guard let id = AttachmentID(bytes: raw[5..<37]) else { return nil }
        keyID = UInt32(read(1, 4))
        attachment = id
        scope = TokenScope(rawValue: raw[37])
        issuedAt = Int64(bitPattern: read(38, 8))
        expires = Int64(bitPattern: read(46, 8))
    }

    private static func append(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

/// Why a token was refused. Kept for logs and metrics; callers outside the store answer every
/// refusal the same way (``AttacheError/Code/accessDenied``) so a prober learns nothing.
public enum TokenRefusal: String, Error, Hashable, Sendable, CaseIterable {
    /// Not URL-safe base64, the wrong length or an unknown version.
    case malformed
    /// Signed with a key id this server never had.
    case unknownKey = "unknown_key"
    /// Signed with a key that has been retired.
    case retiredKey = "retired_key"
    /// The signature does not match the claims (tampered or forged).
    case badSignature = "bad_signature"
    /// Past its expiry.
    case expired
    /// Valid, but for another attachment.
    case wrongAttachment = "wrong_attachment"
    /// Valid, but without the scope asked for.
    case wrongScope = "wrong_scope"
    /// Issued before the attachment's tokens were revoked.
    case revoked
}
