import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

/// What the service refuses, and how: tokens checked first and every refusal alike, each client
/// error a problem with its code, a wrong key where anonymous callers are allowed, a burst past
/// the queue. Part of ``ServiceTests`` (run with it, in the isolated child).
extension ServiceTests {
    @Test func tokensAreCheckedFirstAndRefusalsLookAlike() async throws {
        let clock = TestClock()
        let media = try Self.mediaServer()
        let service = try await Self.start(clock: clock) { $0.pipeline.tokenTTL = 60 }
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        #expect(try await curl("GET", local).status == 200)
        let parts = local.split(separator: "/", omittingEmptySubsequences: false)
        let token = String(parts[parts.count - 2])
        let file = String(parts[parts.count - 1])
        let base = service.base + "/attachments"

        // Tampered token, token of another attachment, no token, wrong extension.
        var tampered = Array(token.utf8)
        tampered[tampered.count - 3] =
            tampered[tampered.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let refusedTampered = try await curl("GET", "\(base)/\(String(decoding: tampered, as: UTF8.self))/\(file)")
        let otherID = String(repeating: "ab", count: 32)
        let refusedOther = try await curl("GET", "\(base)/\(token)/\(otherID).jpg")
        let refusedName = try await curl("GET", "\(base)/\(token)/not-an-id.jpg")
        #expect(refusedTampered.status == 403 && refusedOther.status == 403 && refusedName.status == 403)
        #expect(
            refusedTampered.body == refusedOther.body && refusedOther.body == refusedName.body,
            "never says which check failed")
        #expect(refusedTampered.headers["content-type"] == "application/problem+json")
        #expect(try refusedTampered.json()["code"] as? String == "access_denied")
        let missing = try await curl("GET", "\(base)/\(file)")
        let missingCode = try missing.json()["code"] as? String
        #expect(missing.status == 401 && missingCode == "unauthorized")
        let wrongExtension = try await curl("GET", "\(base)/\(token)/\(file.split(separator: ".")[0]).png")
        #expect(wrongExtension.status == 404)

        // A valid token for an id the store does not hold: 404.
        let unknown = try #require(AttachmentID(hex: otherID))
        let valid = service.service.store.keyRing.issue(for: unknown, scope: .read, ttl: 60, now: clock.now).token
        let notFound = try await curl("GET", "\(base)/\(valid)/\(otherID).jpg")
        let notFoundCode = try notFound.json()["code"] as? String
        #expect(notFound.status == 404 && notFoundCode == "not_found")

        // A rotated-out key: its tokens stop opening anything.
        let keyID = service.service.store.keyRing.currentKeyID
        _ = try service.service.store.rotateKeys()
        #expect(try await curl("GET", local).status == 200, "a rotated (not retired) key still verifies")
        _ = try service.service.store.retireKey(keyID)
        #expect(try await curl("GET", local).status == 403)

        // Expiry, on the store's clock: never before the 60 s asked, at most a token window
        // (3 s) after them.
        let (_, fresh) = try await Self.mutate(service, media: media)
        #expect(try await curl("GET", Self.local(fresh, service)).status == 200)
        clock.advance(59)
        #expect(try await curl("GET", Self.local(fresh, service)).status == 200)
        clock.advance(2 + AccessToken.window(forTTL: 60))
        #expect(try await curl("GET", Self.local(fresh, service)).status == 403)
    }

    @Test func everyClientErrorIsAProblemWithItsCode() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start { $0.maxRequestBytes = 1000 }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = payload(image: media.url("/photo.jpg"))
        func code(_ answer: HTTPAnswer) -> String? { try? answer.json()["code"] as? String }

        let anonymous = try await curl("POST", post, body: body)
        #expect(anonymous.status == 401 && code(anonymous) == "unauthorized")
        #expect(anonymous.headers["www-authenticate"] == "Bearer")
        let wrong = try await curl("POST", post, headers: ["Authorization": "Bearer not-the-key-000000000"], body: body)
        #expect(wrong.status == 401 && code(wrong) == "unauthorized")
        let rotated = try await curl(
            "POST", post, headers: ["Authorization": "Bearer second-key-for-rotation-000"], body: body)
        #expect(rotated.status == 200, "every configured key is accepted")

        let big = Array(repeating: UInt8(ascii: " "), count: 1001)
        let tooLarge = try await curl("POST", post, headers: Self.auth, body: big)
        #expect(tooLarge.status == 413 && code(tooLarge) == "request_too_large")
        #expect((try tooLarge.json()["limit"] as? String) == "max_request_bytes")
        let chunked = try await curl(
            "POST", post, headers: Self.auth.merging(["Transfer-Encoding": "chunked"]) { a, _ in a }, body: big)
        #expect(chunked.status == 413 && code(chunked) == "request_too_large")

        let badDeadline = try await curl("POST", post + "?deadline=soon", headers: Self.auth, body: body)
        #expect(badDeadline.status == 400 && code(badDeadline) == "invalid_request")
        let badHeader = try await curl(
            "POST", post, headers: Self.auth.merging(["Attache-Deadline": "-5"]) { a, _ in a }, body: body)
        #expect(badHeader.status == 400 && code(badHeader) == "invalid_request")
        let badEnvelope = try await curl("POST", post + "?envelope=maybe", headers: Self.auth, body: body)
        #expect(badEnvelope.status == 400 && code(badEnvelope) == "invalid_request")
        // One decimal grammar for every number a request carries.
        for term in [
            "quality_target=0x50", "quality_target=8e1", "quality_target=%2B80", "quality_target=%2075",
            "quality_target=80%00", "android_aspect=0x1p1", "focus=0x0.8,0.5", "focus=0.5,5e-1", "quality=%2B80",
        ] {
            let loose = try await curl("POST", post + "?" + term, headers: Self.auth, body: body)
            #expect(loose.status == 400 && code(loose) == "invalid_request", "\(term): \(loose.status)")
        }
        let nowhere = try await curl("GET", service.base + "/nowhere")
        #expect(nowhere.status == 404 && code(nowhere) == "not_found")
        #expect(nowhere.headers["content-type"] == "application/problem+json")

        // What cannot be mutated is answered 200 with the payload unchanged.
        let garbage: [UInt8] = Array("{\"aps\":".utf8) + [0xFF, 0xFE]
        let unreadable = try await curl("POST", post, headers: Self.auth, body: garbage)
        #expect(unreadable.status == 200 && unreadable.body == garbage)
        #expect(unreadable.headers["attache-outcome"] == "unreadable")
        #expect(unreadable.headers["content-type"] == "application/octet-stream")
        #expect(unreadable.headers["attache-payload-error"] == "invalid_payload")
        let plain = Array(#"{"aps":{"alert":"hi"},"image":"http://x/y.jpg"}"#.utf8)
        let notMutable = try await curl("POST", post, headers: Self.auth, body: plain)
        #expect(notMutable.status == 200 && notMutable.body == plain)
        #expect(notMutable.headers["attache-outcome"] == "passed_through")
        let empty = try await curl("POST", post, headers: Self.auth, body: [])
        #expect(empty.status == 200 && empty.body.isEmpty)
        let envelopeOfGarbage = try await curl("POST", post + "?envelope=true", headers: Self.auth, body: garbage)
        #expect(envelopeOfGarbage.status == 200)
        #expect(Data(base64Encoded: (try envelopeOfGarbage.json()["payload_base64"] as? String) ?? "") == Data(garbage))
    }

    @Test("with --allow-anonymous, no credentials pass and a wrong key is still 401")
    func aPresentedKeyThatIsWrongIsRefusedEvenWhereAnonymousIsAllowed() async throws {
        let service = try await Self.start { $0.allowAnonymous = true }
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        #expect(try await curl("POST", post, body: body).status == 200)
        #expect(try await curl("POST", post, headers: Self.auth, body: body).status == 200)
        for presented in ["Bearer not-the-key-000000000", "Basic dXNlcjpwYXNz", "Bearer"] {
            let answer = try await curl("POST", post, headers: ["Authorization": presented], body: body)
            #expect(answer.status == 401, "\(presented)")
            #expect(answer.headers["www-authenticate"] == "Bearer")
        }
    }

    @Test func aBurstBeyondTheQueueIsTurnedAwayAtOnce() async throws {
        // One in the pipeline (its fetch is held at the media server), one waiting.
        let (service, held, waiting, payloadText) = try await LoadSheddingTests.full()
        defer { Task { await service.stop() } }
        let post = service.base + "/v1/notifications"
        let body = Array(payloadText.utf8)

        // Everything beyond is answered 503 at once, while the others are still held.
        for _ in 0..<5 {
            let refused = try await curl("POST", post, headers: Self.auth, body: body)
            #expect(refused.status == 503 && refused.headers["retry-after"] == "3")
            #expect((try refused.json()["code"] as? String) == "overloaded")
        }
        let metrics = try await curl("GET", service.base + "/metrics")
        #expect(metricValue(metrics.text, "attache_pipeline_in_flight") == 1)
        #expect(metricValue(metrics.text, "attache_pipeline_queued") == 1)

        held.release()
        let answers = [try await waiting[0].value, try await waiting[1].value]
        for answer in answers {
            #expect(answer.status == 200 && answer.headers["attache-attached"] == "1")
        }
        #expect(service.service.admission.counts == (0, 0))
    }
}
