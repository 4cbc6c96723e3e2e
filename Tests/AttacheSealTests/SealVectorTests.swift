import AttacheSeal
import Crypto
import Foundation
import Testing

/// The published vectors of the payload seal (docs/sealed-attachments.md), checked both ways
/// against Python's `cryptography` (its HPKE): these two were sealed here and opened there,
/// the third sealed there and opened here.
@Suite struct SealVectorTests {
    static let p256 = try! P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))
    static let x25519 = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x22, count: 32))
    static let plaintext = #"{"aps":{"alert":{"title":"Hi","body":"Sealed"}},"attachments":[]}"#

    static func envelope(_ text: String) throws -> SealedEnvelope {
        try SealedEnvelope(member: try JSONSerialization.jsonObject(with: Data(text.utf8)))
    }

    @Test func theP256VectorOpens() throws {
        let envelope = try Self.envelope(
            #"{"v":1,"suite":"0010-0001-0002","kid":"vector-p256","enc":"BFkfuRfZmaXCfSmE0FQF2hUKy6wfiSFzgLsjj/jOP6mWmNRgMpH30rft7Mol+G0jLcYUSGdhItZtiulXudLfpUQ=","ct":"VulUNgufm3IT1QGx7pf5okHPCZl+pbDQFr01FeGPBbXPMrxLGPRq7BrNMsHm6ZWzCJVLAv4X2Z1+bEqR2jTeZRFpqiU+uSTQVJUKmK6SVYJt"}"#
        )
        #expect(String(decoding: try PayloadSeal.open(envelope, p256: Self.p256), as: UTF8.self) == Self.plaintext)
    }

    @Test func theX25519VectorOpens() throws {
        let envelope = try Self.envelope(
            #"{"v":1,"suite":"0020-0001-0002","kid":"vector-x25519","enc":"wu05y9CqFpGBlC7xCgrP7SzTqCCwDFce2jeCKs3B0GI=","ct":"P4kjO86Bd1ThVyfTO/NUHH4IIyU4+Y1hOGy92RBGJScmVTJ+00dV7BV7kIBddLV7nRFleSqFZsJmLUJfWRn41NyfZ3Jbo+IE3IwaYaHY3gYT"}"#
        )
        #expect(String(decoding: try PayloadSeal.open(envelope, x25519: Self.x25519), as: UTF8.self) == Self.plaintext)
    }

    @Test func aSealMadeByPythonOpens() throws {
        let envelope = try Self.envelope(
            #"{"v":1,"suite":"0010-0001-0002","kid":"vector-python","enc":"BP5imDCwGRMX/633PGue//gbXoNx9IlKh4n7kVml65Ottbvwr0K/bpmIoy5EKU6KjhU04Hf1Xq+8gVbG516gPd0=","ct":"EOdJAKFrMb1N/+enFmlUzF0Z2ibtbj7nfeFa0QlcvT/GzpVH4hFydZPmrdb43a8="}"#
        )
        let plain = try PayloadSeal.open(envelope, p256: Self.p256)
        #expect(String(decoding: plain, as: UTF8.self) == #"{"aps":{"alert":"from python"}}"#)
    }

    /// The kid and suite are bound: the same ciphertext under another kid, a flipped byte,
    /// the other key — all refused.
    @Test func anythingChangedIsRefused() throws {
        var envelope = try Self.envelope(
            #"{"v":1,"suite":"0010-0001-0002","kid":"vector-p256","enc":"BFkfuRfZmaXCfSmE0FQF2hUKy6wfiSFzgLsjj/jOP6mWmNRgMpH30rft7Mol+G0jLcYUSGdhItZtiulXudLfpUQ=","ct":"VulUNgufm3IT1QGx7pf5okHPCZl+pbDQFr01FeGPBbXPMrxLGPRq7BrNMsHm6ZWzCJVLAv4X2Z1+bEqR2jTeZRFpqiU+uSTQVJUKmK6SVYJt"}"#
        )
        envelope.keyID = "vector-other"
        #expect(throws: SealError.sealRejected) { try PayloadSeal.open(envelope, p256: Self.p256) }
        var flipped = try Self.envelope(
            #"{"v":1,"suite":"0010-0001-0002","kid":"vector-p256","enc":"BFkfuRfZmaXCfSmE0FQF2hUKy6wfiSFzgLsjj/jOP6mWmNRgMpH30rft7Mol+G0jLcYUSGdhItZtiulXudLfpUQ=","ct":"VulUNgufm3IT1QGx7pf5okHPCZl+pbDQFr01FeGPBbXPMrxLGPRq7BrNMsHm6ZWzCJVLAv4X2Z1+bEqR2jTeZRFpqiU+uSTQVJUKmK6SVYJt"}"#
        )
        flipped.ciphertext[3] ^= 1
        #expect(throws: SealError.sealRejected) { try PayloadSeal.open(flipped, p256: Self.p256) }
        #expect(throws: SealError.sealRejected) {
            try PayloadSeal.open(
                try Self.envelope(
                    #"{"v":1,"suite":"0010-0001-0002","kid":"vector-p256","enc":"BFkfuRfZmaXCfSmE0FQF2hUKy6wfiSFzgLsjj/jOP6mWmNRgMpH30rft7Mol+G0jLcYUSGdhItZtiulXudLfpUQ=","ct":"VulUNgufm3IT1QGx7pf5okHPCZl+pbDQFr01FeGPBbXPMrxLGPRq7BrNMsHm6ZWzCJVLAv4X2Z1+bEqR2jTeZRFpqiU+uSTQVJUKmK6SVYJt"}"#
                ), p256: P256.KeyAgreement.PrivateKey())
        }
        #expect(throws: SealError.sealRejected) {
            try PayloadSeal.open(
                try Self.envelope(
                    #"{"v":1,"suite":"0010-0001-0002","kid":"vector-p256","enc":"BFkfuRfZmaXCfSmE0FQF2hUKy6wfiSFzgLsjj/jOP6mWmNRgMpH30rft7Mol+G0jLcYUSGdhItZtiulXudLfpUQ=","ct":"VulUNgufm3IT1QGx7pf5okHPCZl+pbDQFr01FeGPBbXPMrxLGPRq7BrNMsHm6ZWzCJVLAv4X2Z1+bEqR2jTeZRFpqiU+uSTQVJUKmK6SVYJt"}"#
                ), x25519: Self.x25519)
        }
    }

    /// The size written before sealing is the size sealed, for every plaintext length.
    @Test func theComputedSizeIsTheSealedSize() throws {
        let recipient = try SealRecipient(p256: Self.p256.publicKey, keyID: "k")
        for length in 0..<200 {
            let sealed = try PayloadSeal.seal([UInt8](repeating: 0x41, count: length), to: recipient)
            #expect(
                sealed.jsonText.utf8.count
                    == SealedEnvelope.jsonSize(plaintextSize: length, suite: .p256, keyID: "k"))
        }
    }

    /// Keys as devices export them all read; other bytes do not.
    @Test func keyFormats() throws {
        let key = Self.p256.publicKey
        let pem = key.pemRepresentation
        for encoded in [
            Array(key.x963Representation), Array(key.compressedRepresentation), Array(key.rawRepresentation),
            Array(key.derRepresentation), Array(pem.utf8), Array(key.x963Representation.base64EncodedString().utf8),
        ] {
            #expect(try SealRecipient(encoded: encoded, keyID: "k").suite == .p256)
        }
        #expect(try SealRecipient(encoded: Array(Self.x25519.publicKey.rawRepresentation), keyID: "k").suite == .x25519)
        #expect(throws: SealError.self) { try SealRecipient(encoded: Array("not a key".utf8), keyID: "k") }
        #expect(throws: SealError.self) { try SealRecipient(encoded: Array(key.x963Representation), keyID: "a b") }
    }
}
