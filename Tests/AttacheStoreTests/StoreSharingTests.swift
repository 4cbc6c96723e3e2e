import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheStore

/// One store used by several processes and several open instances at once.
@Suite struct StoreSharingTests {
    /// Many processes doing their first `store put` on one fresh store at the same moment:
    /// every put succeeds and every token printed opens its attachment (one schema, one key).
    @Test func processesStartingOnAFreshStoreAgreeOnOneKey() throws {
        let executable = try attacheExecutable()
        let file = Paths.samples + "/gray.jpg"
        for trial in 0..<3 {
            let directory = try TemporaryDirectory()
            let root = directory.path + "/store"
            let processes = try (0..<16).map { _ in
                try ChildProcess(executable, ["store", "put", "--json", "--store", root, file], outputs: .merged)
            }
            var tokens: [(String, String)] = []
            for process in processes {
                let result = process.wait()
                let text = result.text
                #expect(result.status == 0, "trial \(trial): \(text)")
                guard let line = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    let id = line["id"] as? String, let token = line["token"] as? String
                else {
                    Issue.record("trial \(trial): no id and token in \(text)")
                    continue
                }
                tokens.append((id, token))
            }
            let store = try AttachmentStore(StoreConfiguration(root: root))
            #expect(store.keyRing.entries.count == 1, "one key was created")
            for (id, token) in tokens {
                let attachment = try #require(AttachmentID(hex: id))
                var refusal: TokenRefusal?
                let opened = try? store.open(attachment, token: token) { refusal = $0 }
                #expect(opened != nil, "trial \(trial): a printed token is refused (\(String(describing: refusal)))")
            }
        }
    }

    /// A rotation or retirement by one process is seen by another that keeps its store open.
    @Test func anotherInstanceSeesRotationAndRetirement() throws {
        let directory = try TemporaryDirectory()
        let configuration = StoreConfiguration(root: directory.path + "/store")
        let first = try AttachmentStore(configuration)
        let second = try AttachmentStore(configuration)
        let stored = try first.put(randomBytes(1000, seed: 7), metadata: ObjectMetadata(kind: .jpeg))
        let old = try second.issueToken(for: stored.id, ttl: 600)

        _ = try first.rotateKeys()
        let fresh = try first.issueToken(for: stored.id, ttl: 600)
        #expect(
            try eventually { (try? second.authorize(fresh, for: stored.id).get()) != nil },
            "the other instance verifies a token signed with the new key")
        #expect(try eventually { second.keyRing.currentKeyID == 2 }, "and signs with it")

        _ = try first.retireKey(1)
        #expect(
            try eventually {
                if case .failure(.retiredKey) = try second.authorize(old, for: stored.id) { return true }
                return false
            }, "a retired key stops opening in the other instance too")
    }

    /// Polls `condition` until it holds, for at most 10 s (the key file is looked at again at
    /// most once a second); the wait ends on the event, not after a guessed time.
    func eventually(_ condition: () throws -> Bool) throws -> Bool {
        let end = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < end {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }
}
