import AttacheBase
import AttacheFetch
import AttacheTestSupport
import Dispatch
import Foundation
import Testing

@testable import AttacheCore
@testable import AttacheStore
@testable import AttacheStoreShared

/// The pipeline over a shared store (PostgreSQL catalog, S3 bytes): a catalog that does not
/// answer must not stop the process answering.
@Suite(.enabled(if: inIsolatedChild && SharedServers.available, Comment(rawValue: SharedServers.missing)))
struct SharedPipelineTests {
    /// Another session holds the catalog's source table locked, so every lookup waits. Those
    /// waits happen on the store's threads, not on Swift's cooperative pool: every payload of
    /// many more than there are cores is answered at its deadline with the attachment timed
    /// out, and once the lock goes the same payload is attached.
    @Test func aCatalogThatDoesNotAnswerCostsTheAttachmentNotTheDeadline() async throws {
        let fresh = try SharedServers.fresh()
        let store = try AttachmentStore.open(try fresh.configuration())
        let media = try sampleMediaServer()
        var configuration = PipelineConfiguration()
        configuration.baseURL = "https://cdn.test/a/"
        let pipeline = Pipeline(configuration: configuration, fetcher: Fetcher(policy: loopbackPolicy()), store: store)
        let input = payload(["image": JSONValue.quote(media.url("/gray.jpg"))])

        let lock = try fresh.lock("attache_source")
        // A pipeline that blocked the pool would never answer while the lock is held: release it
        // from a thread of its own after a while so that such a pipeline fails this test instead
        // of hanging it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 120) { lock.release() }
        let count = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        let results = await withTaskGroup(of: PipelineResult.self) { group in
            for _ in 0..<count {
                group.addTask { await pipeline.process(input, deadline: .now + .milliseconds(500)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(lock.release(), "the payloads were answered only once the catalog answered")
        #expect(results.count == count)
        for result in results {
            #expect(result.payload == input, "the payload goes out as it came")
            #expect(
                result.outcomes.first?.error?.code == .timedOut, "\(String(describing: result.outcomes.first?.error))")
        }

        let after = await pipeline.process(input, deadline: .now + .seconds(60))
        #expect(after.outcomes.first?.attachment != nil, "\(String(describing: after.outcomes.first?.error))")
    }
}
