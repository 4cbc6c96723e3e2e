public import Crypto
public import Foundation

/// The HPKE suites a payload can be sealed with (RFC 9180, base mode). The raw value is the
/// suite's three RFC 9180 identifiers, KEM-KDF-AEAD in hex, as written in the payload.
public enum SealSuite: String, Sendable, CaseIterable {
    /// DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM: the default (Secure Enclave keys).
    case p256 = "0010-0001-0002"
    /// DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM.
    case x25519 = "0020-0001-0002"

    /// The swift-crypto suite.
    public var ciphersuite: HPKE.Ciphersuite {
        switch self {
        case .p256: .P256_SHA256_AES_GCM_256
        case .x25519: HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)
        }
    }

    /// Size of the encapsulated key (`enc`).
    public var encapsulatedKeySize: Int {
        switch self {
        case .p256: 65
        case .x25519: 32
        }
    }

    /// The short name used by flags and headers (`p256`, `x25519`).
    public var name: String {
        switch self {
        case .p256: "p256"
        case .x25519: "x25519"
        }
    }
}

/// A device's public key a payload is sealed to, with the id the device knows it by.
public struct SealRecipient: Sendable {
    enum Key: Sendable {
        case p256(P256.KeyAgreement.PublicKey)
        case x25519(Curve25519.KeyAgreement.PublicKey)
    }

    let key: Key
    /// The key id written beside the seal (1–64 of `A–Z a–z 0–9 . _ : -`).
    public let keyID: String

    /// The suite the key calls for.
    public var suite: SealSuite {
        switch key {
        case .p256: .p256
        case .x25519: .x25519
        }
    }

    /// A recipient from a P-256 key (the Secure Enclave's kind).
    public init(p256 key: P256.KeyAgreement.PublicKey, keyID: String) throws(SealError) {
        try Self.check(keyID)
        self.key = .p256(key)
        self.keyID = keyID
    }

    /// A recipient from an X25519 key.
    public init(x25519 key: Curve25519.KeyAgreement.PublicKey, keyID: String) throws(SealError) {
        try Self.check(keyID)
        self.key = .x25519(key)
        self.keyID = keyID
    }

    /// A recipient from a key as a device exports it: PEM (`PUBLIC KEY`), or base64 / base64url
    /// / raw bytes of a P-256 key (X9.63 uncompressed 65 bytes, compressed 33, raw 64, DER
    /// SubjectPublicKeyInfo) or an X25519 key (raw 32 bytes, DER SubjectPublicKeyInfo).
    public init(encoded: [UInt8], keyID: String) throws(SealError) {
        try Self.check(keyID)
        self.keyID = keyID
        guard let key = Self.parse(encoded) else {
            throw SealError.badKey("not a P-256 or X25519 public key (PEM, DER, X9.63, raw or their base64)")
        }
        self.key = key
    }

    private static func parse(_ encoded: [UInt8]) -> Key? {
        if let text = String(validating: encoded, as: UTF8.self) {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.hasPrefix("-----BEGIN") {
                let body = trimmed.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
                return Data(base64Encoded: body).flatMap { binary(Array($0)) }
            }
            if let decoded = Base64.decode(trimmed), let key = binary(decoded) { return key }
        }
        return binary(encoded)
    }

    /// DER prefix of an X25519 SubjectPublicKeyInfo (RFC 8410).
    private static let x25519SPKIPrefix: [UInt8] = [
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00,
    ]

    private static func binary(_ bytes: [UInt8]) -> Key? {
        switch bytes.count {
        case 32: return (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes)).map(Key.x25519)
        case 33: return (try? P256.KeyAgreement.PublicKey(compressedRepresentation: bytes)).map(Key.p256)
        case 44 where bytes.starts(with: x25519SPKIPrefix):
            return (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes.suffix(32))).map(Key.x25519)
        case 64: return (try? P256.KeyAgreement.PublicKey(rawRepresentation: bytes)).map(Key.p256)
        case 65: return (try? P256.KeyAgreement.PublicKey(x963Representation: bytes)).map(Key.p256)
        default: return (try? P256.KeyAgreement.PublicKey(derRepresentation: bytes)).map(Key.p256)
        }
    }

    /// Throws unless `keyID` is 1–64 of `A–Z a–z 0–9 . _ : -`.
    public static func check(_ keyID: String) throws(SealError) {
        let allowed = keyID.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "-"):
                true
            default: false
            }
        }
        guard (1...64).contains(keyID.utf8.count), allowed else {
            throw SealError.badKey("a key id is 1–64 of A–Z a–z 0–9 . _ : -")
        }
    }
}

/// The `encrypted-content` member of a sealed payload:
/// `{"v":1,"suite":"0010-0001-0002","kid":"…","enc":"<base64>","ct":"<base64>"}`.
///
/// `ct` is HPKE base mode (RFC 9180) sealed to the device's key with info
/// `attache seal v1|<suite>|<kid>` (so neither can be swapped) and empty additional data, over
/// a JSON object whose members the device merges over the visible payload (see
/// docs/sealed-attachments.md).
public struct SealedEnvelope: Hashable, Sendable {
    public var suite: SealSuite
    public var keyID: String
    /// The encapsulated key.
    public var encapsulatedKey: [UInt8]
    /// The HPKE ciphertext (plaintext + 16-byte tag).
    public var ciphertext: [UInt8]

    public init(suite: SealSuite, keyID: String, encapsulatedKey: [UInt8], ciphertext: [UInt8]) {
        self.suite = suite
        self.keyID = keyID
        self.encapsulatedKey = encapsulatedKey
        self.ciphertext = ciphertext
    }

    /// The HPKE `info` the seal is bound to: `attache seal v1|<suite>|<kid>`.
    public var info: Data { PayloadSeal.info(suite: suite, keyID: keyID) }

    /// The member's value as JSON text (key ids need no escaping).
    public var jsonText: String {
        #"{"v":1,"suite":"\#(suite.rawValue)","kid":"\#(keyID)","enc":"\#(Base64.encode(encapsulatedKey))","ct":"\#(Base64.encode(ciphertext))"}"#
    }

    /// Size of ``jsonText`` for a plaintext of `plaintextSize` bytes, without sealing anything.
    public static func jsonSize(plaintextSize: Int, suite: SealSuite, keyID: String) -> Int {
        #"{"v":1,"suite":"","kid":"","enc":"","ct":""}"#.utf8.count + suite.rawValue.utf8.count + keyID.utf8.count
            + Base64.encodedSize(suite.encapsulatedKeySize) + Base64.encodedSize(plaintextSize + 16)
    }

    /// Reads the member as a device's `userInfo` holds it (a dictionary).
    public init(member: Any) throws(SealError) {
        guard let object = member as? [String: Any] else {
            throw SealError.malformed("encrypted-content is not an object")
        }
        guard (object["v"] as? NSNumber)?.intValue == 1 || (object["v"] as? Int) == 1 else {
            throw SealError.malformed("encrypted-content has no version 1")
        }
        guard let suiteName = object["suite"] as? String, let suite = SealSuite(rawValue: suiteName) else {
            throw SealError.malformed("encrypted-content names an unknown suite")
        }
        guard let keyID = object["kid"] as? String, (try? SealRecipient.check(keyID)) != nil else {
            throw SealError.malformed("encrypted-content has no valid kid")
        }
        guard let enc = (object["enc"] as? String).flatMap(Base64.decode), enc.count == suite.encapsulatedKeySize,
            let ct = (object["ct"] as? String).flatMap(Base64.decode), ct.count >= 16
        else { throw SealError.malformed("encrypted-content has a bad enc or ct") }
        self.init(suite: suite, keyID: keyID, encapsulatedKey: enc, ciphertext: ct)
    }
}

/// Sealing and opening a payload's confidential members with HPKE.
public enum PayloadSeal {
    /// The HPKE `info` of a seal: `attache seal v1|<suite>|<kid>`.
    public static func info(suite: SealSuite, keyID: String) -> Data {
        Data("attache seal v1|\(suite.rawValue)|\(keyID)".utf8)
    }

    /// Seals `plaintext` (the JSON object of confidential members) to `recipient`.
    public static func seal(_ plaintext: [UInt8], to recipient: SealRecipient) throws(SealError) -> SealedEnvelope {
        let info = Self.info(suite: recipient.suite, keyID: recipient.keyID)
        do {
            var sender: HPKE.Sender
            switch recipient.key {
            case .p256(let key):
                sender = try HPKE.Sender(recipientKey: key, ciphersuite: recipient.suite.ciphersuite, info: info)
            case .x25519(let key):
                sender = try HPKE.Sender(recipientKey: key, ciphersuite: recipient.suite.ciphersuite, info: info)
            }
            let ciphertext = try sender.seal(plaintext)
            return SealedEnvelope(
                suite: recipient.suite, keyID: recipient.keyID, encapsulatedKey: Array(sender.encapsulatedKey),
                ciphertext: Array(ciphertext))
        } catch {
            throw SealError.sealRejected
        }
    }

    /// Opens an envelope with a software P-256 key.
    public static func open(
        _ envelope: SealedEnvelope, p256 key: P256.KeyAgreement.PrivateKey
    ) throws(SealError) -> [UInt8] {
        try open(envelope, key: key, suite: .p256)
    }

    /// Opens an envelope with an X25519 key.
    public static func open(
        _ envelope: SealedEnvelope, x25519 key: Curve25519.KeyAgreement.PrivateKey
    ) throws(SealError) -> [UInt8] {
        try open(envelope, key: key, suite: .x25519)
    }

    private static func open(
        _ envelope: SealedEnvelope, key: some HPKEDiffieHellmanPrivateKey, suite: SealSuite
    ) throws(SealError) -> [UInt8] {
        guard envelope.suite == suite else { throw SealError.sealRejected }
        do {
            var recipient = try HPKE.Recipient(
                privateKey: key, ciphersuite: suite.ciphersuite, info: envelope.info,
                encapsulatedKey: Data(envelope.encapsulatedKey))
            return Array(try recipient.open(envelope.ciphertext))
        } catch {
            throw SealError.sealRejected
        }
    }
}

/// Standard base64 with padding, as the payload writes it; decoding also takes base64url.
public enum Base64 {
    public static func encode(_ bytes: some Collection<UInt8>) -> String { Data(bytes).base64EncodedString() }

    public static func encodedSize(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    public static func decode(_ text: String) -> [UInt8]? {
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        if standard.utf8.count % 4 != 0 { standard += String(repeating: "=", count: 4 - standard.utf8.count % 4) }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
