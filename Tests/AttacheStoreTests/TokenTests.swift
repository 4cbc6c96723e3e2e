import AttacheBase
import AttacheTestSupport
import ExtrasBase64
import Testing

@testable import AttacheStore

@Suite struct TokenTests {
    let a = AttachmentID(bytes: (0..<32).map { UInt8($0) })!
    let b = AttachmentID(bytes: (0..<32).map { UInt8(31 - $0) })!
    let now: Int64 = 1_800_000_000

    @Test func roundTrip() throws {
        let ring = KeyRing.generate()
        let (token, claims) = ring.issue(for: a, ttl: 600, now: now)
        #expect(token.count == 115)
        #expect(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let verified = try ring.check(token, opens: a, now: now).get()
        #expect(verified == claims)
        #expect(verified.attachment == a && verified.expires == now + 600 && verified.scope == .read)
    }

    /// Within one window every token for an attachment is the same string, never expiring
    /// before the lifetime asked nor more than a window after it; the next window's differs.
    @Test func oneTokenPerWindow() throws {
        let ring = KeyRing.generate()
        let ttl: Int64 = 7 * 86_400
        let window = AccessToken.window(forTTL: ttl)
        #expect(window == 3600 && AccessToken.window(forTTL: 600) == 37 && AccessToken.window(forTTL: 10) == 1)
        let start = now - now % window
        var seen: Set<String> = []
        for second in stride(from: start, to: start + window, by: 97) + [start + window - 1] {
            let (token, claims) = ring.issue(for: a, ttl: ttl, now: second, window: window)
            seen.insert(token)
            #expect(claims.expires >= second + ttl && claims.expires <= second + ttl + window)
            #expect(claims.issuedAt <= second)
            #expect((try? ring.check(token, opens: a, now: second).get()) != nil)
        }
        #expect(seen.count == 1, "one URL per object and window")
        let next = ring.issue(for: a, ttl: ttl, now: start + window, window: window).token
        #expect(!seen.contains(next))
        // Another attachment in the same window: its own token.
        #expect(!seen.contains(ring.issue(for: b, ttl: ttl, now: start, window: window).token))
        // A revocation within the window: the tokens issued after it say so.
        let revoked = start + 100
        let after = ring.issue(for: a, ttl: ttl, now: start + 200, window: window, notBefore: revoked).claims
        #expect(after.issuedAt == revoked)
        // Without a window (a lifetime under 32 s), the moment itself.
        #expect(ring.issue(for: a, ttl: 600, now: now + 1).claims.expires == now + 601)
    }

    @Test func everyChangedCharacterIsRefused() {
        let ring = KeyRing.generate()
        let token = Array(ring.issue(for: a, ttl: 600, now: now).token)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var accepted: [String] = []
        for position in token.indices {
            for replacement in alphabet where replacement != token[position] {
                var changed = token
                changed[position] = replacement
                if case .success = ring.check(String(changed), opens: a, now: now) {
                    accepted.append("\(position):\(replacement)")
                }
            }
        }
        #expect(accepted.isEmpty)
        // The untouched token still opens, so the loop above can fail.
        #expect((try? ring.check(String(token), opens: a, now: now).get()) != nil)
    }

    @Test func everyFlippedByteIsRefused() throws {
        let ring = KeyRing.generate()
        let token = ring.issue(for: a, ttl: 600, now: now).token
        let raw = try Base64.decode(string: token, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        #expect(raw.count == 86)
        for index in raw.indices {
            for bit in [UInt8(0x01), 0x80] {
                var changed = raw
                changed[index] ^= bit
                let text = Base64.encodeToString(bytes: changed, options: [.base64UrlAlphabet, .omitPaddingCharacter])
                let result = ring.verify(text, now: now)
                #expect(throws: TokenRefusal.self) { try result.get() }
                if case .failure(let refusal) = result {
                    // Flipping the version or key id is caught before the signature check.
                    let expected: Set<TokenRefusal> =
                        index == 0 ? [.malformed] : index < 5 ? [.unknownKey] : [.badSignature]
                    #expect(expected.contains(refusal), "byte \(index) bit \(bit): \(refusal)")
                }
            }
        }
    }

    @Test func expiry() {
        let ring = KeyRing.generate()
        let token = ring.issue(for: a, ttl: 60, now: now).token
        #expect((try? ring.verify(token, now: now + 59).get()) != nil)
        #expect(ring.verify(token, now: now + 60).refusal == .expired)
        #expect(ring.verify(token, now: now + 86_400 * 365).refusal == .expired)
    }

    @Test func oneAttachmentOnly() {
        let ring = KeyRing.generate()
        let token = ring.issue(for: a, ttl: 60, now: now).token
        #expect(ring.check(token, opens: b, now: now).refusal == .wrongAttachment)
        #expect((try? ring.check(token, opens: a, now: now).get()) != nil)
    }

    @Test func scope() {
        let ring = KeyRing.generate()
        let token = ring.issue(for: a, scope: [], ttl: 60, now: now).token
        #expect(ring.check(token, opens: a, scope: .read, now: now).refusal == .wrongScope)
    }

    @Test func rotationAndRetirement() throws {
        let first = KeyRing.generate()
        let old = first.issue(for: a, ttl: 600, now: now).token
        let second = first.rotated()
        #expect(second.currentKeyID == 2)
        let new = second.issue(for: a, ttl: 600, now: now)
        #expect(new.claims.keyID == 2)
        #expect((try? second.check(old, opens: a, now: now).get()) != nil, "older keys verify after rotation")
        #expect(first.verify(new.token, now: now).refusal == .unknownKey)

        let third = try second.retiring(1)
        #expect(third.verify(old, now: now).refusal == .retiredKey)
        #expect((try? third.check(new.token, opens: a, now: now).get()) != nil)
        #expect(throws: AttacheError.self) { try third.retiring(2) }
    }

    @Test func anotherServersKeyIsRefused() {
        let ours = KeyRing.generate()
        let theirs = KeyRing.generate()
        let forged = theirs.issue(for: a, ttl: 600, now: now).token
        #expect(ours.verify(forged, now: now).refusal == .badSignature)
    }

    @Test func malformedTokens() {
        let ring = KeyRing.generate()
        let good = ring.issue(for: a, ttl: 600, now: now).token
        for bad in [
            "", "x", String(good.dropLast()), good + "A", String(repeating: "A", count: 115),
            String(good.dropLast()) + "=", String(repeating: "é", count: 115), String(repeating: "A", count: 100_000),
        ] {
            #expect(ring.verify(bad, now: now).refusal != nil, "\(bad.prefix(20))")
        }
        #expect(ring.verify(String(repeating: "A", count: 115), now: now).refusal == .malformed)
    }

    @Test func keyFileRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/keys.json"
        let created = try KeyRing.loadOrCreate(at: path)
        let token = created.issue(for: a, ttl: 600, now: now).token
        let loaded = try KeyRing.loadOrCreate(at: path)
        #expect((try? loaded.check(token, opens: a, now: now).get()) != nil)
        #expect(try directory.mode(of: "keys.json") == 0o600)
    }
}

extension Result where Failure == TokenRefusal {
    var refusal: TokenRefusal? {
        if case .failure(let refusal) = self { return refusal }
        return nil
    }
}
