import AttacheTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import AttacheServer

/// The event loops above the work beside them: each loop's own thread gets the nice value, and
/// `attache serve` gives it to its loops and to no other thread.
struct EventLoopPriorityTests {
    @Test func everyLoopOfAGroupRunsAtTheNiceValueAskedFor() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let outcomes = await EventLoopPriority.apply(-3, to: group)
        #expect(outcomes.count == 2 && Set(outcomes.map(\.thread)).count == 2, "\(outcomes)")
        for outcome in outcomes {
            if outcome.error == 0 {
                #expect(try threadNice(outcome.thread) == -3)
            } else {
                // Without CAP_SYS_NICE or a nice limit: refused, and the loop stays as it was.
                #expect([EACCES, EPERM].contains(outcome.error))
                #expect(try threadNice(outcome.thread) == 0)
            }
        }
        // Root (as CI runs the tests) may.
        #expect(geteuid() != 0 || outcomes.allSatisfy { $0.error == 0 }, "\(outcomes)")
        try await group.shutdownGracefully()
    }

    @Test(.enabled(if: geteuid() == 0, "a nice value below 0 needs root here"))
    func attacheServeRaisesItsEventLoopsAndNoOtherThread() async throws {
        let serve = try ServeProcess(["--gc-interval", "0s", "--event-loop-nice", "-7", "--worker-nice", "6"])
        defer { serve.stop() }
        let base = try await serve.base()
        // A payload, so that the fetch thread and a worker exist.
        let media = try TestHTTPServer()
        let photo = Array(try #require(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")))
        media.route("/photo.jpg") { _, c in c.respond(body: photo) }
        let answer = try await curl(
            "POST", base + "/v1/notifications", headers: ServiceTests.auth,
            body: payload(image: media.url("/photo.jpg")))
        #expect(answer.status == 200)
        let threads = try threadStats(of: serve.process.processIdentifier)
        let loops = threads.filter { $0.name.hasPrefix("NIO-SGLTN-") }
        #expect(!loops.isEmpty && loops.allSatisfy { $0.nice == -7 }, "\(threads)")
        let workers = threads.filter { $0.name.hasPrefix("attache-work") || $0.name == "attache-fetch" }
        #expect(!workers.isEmpty && workers.allSatisfy { $0.nice == 6 }, "\(threads)")
        // Everything else (the main thread, the concurrency pool's, the catalog's) as it started,
        // whatever the pool itself chose for its own threads: none of them at the loops' value.
        let rest = threads.filter { !$0.name.hasPrefix("NIO-SGLTN-") && !workers.map(\.name).contains($0.name) }
        #expect(rest.contains { $0.name == "attache" && $0.nice == 0 }, "\(threads)")
        #expect(!rest.contains { $0.nice == -7 }, "\(threads)")
    }
}
