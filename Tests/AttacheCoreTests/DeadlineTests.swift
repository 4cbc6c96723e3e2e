import AttacheBase
import AttacheFetch
import AttacheMedia
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheCore
@testable import AttacheStore

/// The network, pipeline and deadline suites measure time and wait on real sockets, so they
/// run in a child of this test binary where nothing else competes for Swift's cooperative
/// pool (the corpus suites decode images on it for seconds at a time).
@Suite struct IsolatedSuitesRunner {
    /// Run one after the other: first the network and pipeline suites together, then the
    /// service's, then the deadline suite alone (its 300 ms budgets leave no room for
    /// neighbours).
    static let groups = [
        // The fetch suite counts the process's heap and descriptors over 10,000 transfers: alone,
        // so that what it counts is its own work (the pipeline's decodes beside it held 36 MB).
        ["AttacheFetchTests.FetchTests"],
        [
            "AttacheFetchTests.TLSTests", "AttacheCoreTests.PipelineTests",
            "AttacheCoreTests.CommandLineTests", "AttacheCoreTests.OptionErrorTests", "AttacheCoreTests.ReceiverTests",
            "AttacheCoreTests.PayloadEdgeTests",
        ],
        // The service's tests start servers and schemathesis: apart from the pipeline's.
        [
            "AttacheServerTests.ServiceTests", "AttacheServerTests.SealedServiceTests",
            "AttacheServerTests.FramingTests", "AttacheServerTests.FullDiskTests",
            "AttacheServerTests.RequestTermsTests",
        ],
        // A real Prometheus reads the process's metrics, which every service in the process
        // adds to: alone, so that the failures other suites inject on purpose are not its.
        ["AttacheServerTests.AlertRulesTests"],
        // A tiny payload beside heavy ones, ordered by the process's one scheduler: alone, so
        // that other suites' decodes are not its heavy ones.
        ["AttacheServerTests.FairnessTests"],
        ["AttacheCoreTests.DeadlineTests"],
        ["AttacheSealTests.SealedDeliveryTests"],
        ["AttacheSealTests.KitMemoryTests"],
        [
            "AttacheBatchTests.BatchRunTests", "AttacheBatchTests.BatchCommandTests",
            "AttacheBatchTests.BatchReportTests", "AttacheBatchTests.BatchWarmTests", "AttacheBatchTests.PreviewTests",
        ],
        // Replicas and campaign workers are child processes fetching from a server in this
        // one: apart from the corpus suites too (they need the servers scripts/test.sh starts).
        [
            "AttacheServerTests.SharedReplicaTests", "AttacheBatchTests.SharedCampaignTests",
            "AttacheCoreTests.SharedPipelineTests", "AttacheServerTests.SharedRawDownloadsTests",
            "AttacheServerTests.SharedTenantsTests",
        ],
    ]

    @Test(.enabled(if: !inIsolatedChild && !inNetworkNamespaceChild))
    func networkPipelineAndDeadlineSuitesRunAlone() throws {
        for suites in Self.groups {
            let (status, output) = try runTestsInChild(filter: suites, variable: "ATTACHE_ISOLATED_CHILD")
            #expect(status == 0, "\(suites): \(childIssues(output))\n\(output.suffix(1500))")
            for suite in suites.map({ $0.split(separator: ".").last! })
            where SharedServers.available || !suite.hasPrefix("Shared") {
                #expect(output.contains("Suite \(suite) passed"), "\(suite): \(output.suffix(1500))")
            }
            print(output.split(separator: "\n").filter { $0.contains("deadline:") }.joined(separator: "\n"))
        }
    }
}

/// One test at a time: each measures how late its payloads come back, and the GIF test renders
/// on the pool for seconds; beside each other, one test's work would be the other's lateness.
@Suite(.enabled(if: inIsolatedChild), .serialized)
struct DeadlineTests {
    @Test func slowBesideFastYieldsTheFastOneAtTheDeadline() async throws {
        let server = try sampleMediaServer()
        // The store in memory: these tests are about the deadline, not about how long a commit's
        // fsync takes on a disk other work on the machine keeps busy.
        let directory = try TemporaryDirectory.inMemory()
        let pipeline = try makePipeline(directory)
        let input = payload([
            "image": JSONValue.quote(server.url("/gray.jpg")), "media-url": JSONValue.quote(server.url("/hang.jpg")),
        ])
        let meter = StallMeter()
        defer { meter.stop() }
        let start = ContinuousClock.now
        let result = await pipeline.process(input, deadline: start + .milliseconds(500))
        let end = ContinuousClock.now
        let elapsed = end - start
        let stalled = meter.stalled(from: start, to: end)
        #expect(
            elapsed - stalled < .milliseconds(600),
            "returned \(elapsed) after the call with a 500 ms deadline (\(stalled) of it the process went unrun)")
        #expect(!result.passedThrough)
        let fast = try #require(result.outcomes.first { $0.url.hasSuffix("/gray.jpg") })
        let slow = try #require(result.outcomes.first { $0.url.hasSuffix("/hang.jpg") })
        #expect(fast.attachment != nil && slow.error?.code == .timedOut)
        print("deadline: slow beside fast returned after \(elapsed) (deadline 500 ms)")
    }

    /// 200 payloads, each with a fast image and a host that never answers, 20 at a time, each
    /// with a 300 ms deadline: every one must come back within 100 ms of its deadline with the
    /// image attached. Time the whole process went unrun (the machine busy with other work, seen
    /// by a ``StallMeter``) is not counted against it; a cooperative thread blocked inside the
    /// process is. Before each batch, the same 20 payloads without the hanging host are timed:
    /// on a machine so busy that the fast image alone takes more than a third of 300 ms, the
    /// deadline is three times what it took (the bound is about the deadline, not the machine).
    @Test func bestAttemptWithinDeadlinePlus100msIn200Runs() async throws {
        let server = try sampleMediaServer()
        // The store in memory: these tests are about the deadline, not about how long a commit's
        // fsync takes on a disk other work on the machine keeps busy.
        let directory = try TemporaryDirectory.inMemory()
        let pipeline = try makePipeline(directory)
        let meter = StallMeter()
        defer { meter.stop() }
        var late: [String] = []
        var worst = Duration.zero
        var excused = Duration.zero
        var deadlines: [Duration] = []
        for batch in 0..<10 {
            let alone = await withTaskGroup(of: Duration.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let start = ContinuousClock.now
                        _ = await pipeline.process(payload(["image": JSONValue.quote(server.url("/gray.jpg"))]))
                        return .now - start
                    }
                }
                return await group.reduce(Duration.zero) { max($0, $1) }
            }
            let budget = max(.milliseconds(300), alone * 3)
            deadlines.append(budget)
            let times = await withTaskGroup(of: (ContinuousClock.Instant, ContinuousClock.Instant, String?).self) {
                group in
                for i in 0..<20 {
                    let input = payload([
                        "image": JSONValue.quote(server.url("/gray.jpg")),
                        "media-url": JSONValue.quote(server.url("/hang.jpg?run=\(batch * 20 + i)")),
                    ])
                    group.addTask {
                        let start = ContinuousClock.now
                        let result = await pipeline.process(input, deadline: start + budget)
                        // The fetch's own timeout may end the hung transfer a moment before the
                        // payload deadline; either way it is reported timed_out.
                        let ok =
                            result.outcomes.contains { $0.attachment != nil }
                            && result.outcomes.contains { $0.error?.code == .timedOut }
                        let what = result.outcomes.map { "\($0.reason) \($0.timings.json.text)" }
                        return (start, ContinuousClock.now, ok ? nil : what.joined(separator: "; "))
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            for (start, end, missing) in times {
                let elapsed = start.duration(to: end)
                let stalled = meter.stalled(from: start, to: end)
                worst = max(worst, elapsed)
                excused = max(excused, stalled)
                if elapsed - stalled > budget + .milliseconds(100) || missing != nil {
                    late.append("\(elapsed) (\(stalled) unrun)\(missing.map { " incomplete: " + $0 } ?? "")")
                }
            }
        }
        #expect(late.isEmpty, "\(late.count) of 200 runs late or incomplete: \(late.prefix(10))")
        print(
            "deadline: 200 runs with a hanging host, deadlines \(deadlines.map(\.milliseconds)) ms, slowest returned "
                + "after \(worst); longest time the process went unrun during one run: \(excused)")
    }

    /// A 240-frame GIF whose payload has an eighth of the render's time: the answer says `timed_out`, and the work on
    /// the blocking pool stops with it. "Stops" is measured in CPU time the job spent after the
    /// deadline (at most its CPU time minus the wall time it had before the deadline), which a
    /// loaded machine cannot inflate; the wall time is printed.
    @Test func aGIFPastItsDeadlineStopsOnThePool() async throws {
        let animation = try gradientAnimation(width: 256, height: 192, frames: 240)
        let server = try TestHTTPServer()
        server.route("/anim.gif") { _, c in c.respond(headers: ["Content-Type": "image/gif"], body: animation) }
        // The store in memory: these tests are about the deadline, not about how long a commit's
        // fsync takes on a disk other work on the machine keeps busy.
        let directory = try TemporaryDirectory.inMemory()
        let pipeline = try makePipeline(directory) { $0.rendition.maxSide = 64 }
        // The GIF must reach the pool before its deadline for the test to say anything: on a
        // machine busy enough that fetching and checking it takes longer than the first
        // deadline, the next ones give it more room.
        var attempt:
            (start: ContinuousClock.Instant, deadline: ContinuousClock.Instant, answered: ContinuousClock.Instant)?
        var job: WorkScheduler.JobRecord?
        // The whole render's time on this machine now, measured first: every deadline tried is
        // a small part of it, so the deadline, not the end of the work, is what stops the job.
        var spec = RenditionSpec()
        spec.maxSide = 64
        let renderStart = ContinuousClock.now
        _ = try ImageProcessor.render(MediaBytes(animation), spec: spec)
        let whole = Int((ContinuousClock.now - renderStart).milliseconds)
        for (index, budget) in [max(20, whole / 8), max(20, whole / 5), max(20, whole / 3)].enumerated() {
            #expect(OffPool.waitUntilIdle(timeout: .seconds(30)), "nothing else is on the pool")
            let start = ContinuousClock.now
            let deadline = start + .milliseconds(budget)
            let result = await pipeline.process(
                payload(["image": JSONValue.quote(server.url("/anim.gif?try=\(index)"))]), deadline: deadline)
            let answered = ContinuousClock.now
            let outcome = try #require(result.outcomes.first)
            #expect(outcome.error?.code == .timedOut, "\(String(describing: outcome.error))")
            #expect(result.bestAttempt && result.passedThrough)
            #expect(OffPool.waitUntilIdle(timeout: .seconds(30)), "the transform ended")
            #expect(OffPool.inFlight == 0)
            if let last = OffPool.lastJob, last.started > start, last.started < deadline {
                (attempt, job) = ((start, deadline, answered), last)
                break
            }
        }
        let (start, deadline, answered) = try #require(attempt, "the GIF never reached the pool before its deadline")
        let finished = try #require(job)
        let wallBeforeDeadline = max(.zero, deadline - finished.started)
        let cpuAfterDeadline = finished.cpu - wallBeforeDeadline
        #expect(cpuAfterDeadline <= .milliseconds(20), "the job ran \(cpuAfterDeadline) of CPU past its deadline")
        print(
            "deadline: 240-frame GIF, \(deadline - start) deadline: answered after \(answered - start), pool job ended "
                + "\(finished.finished - deadline) after the deadline, \(cpuAfterDeadline) CPU past it")
    }
}

/// What a finished payload leaves behind: nothing that lives until its deadline.
@Suite struct CollectorLifetimeTests {
    @Test func aFinishedWaitReleasesItsCollectorBeforeTheDeadline() async {
        weak var released: Collector?
        do {
            let collector = Collector(count: 1)
            released = collector
            collector.finish(0, AttachmentOutcome(url: "u", convention: "image"))
            let outcomes = await collector.wait(until: .now + .seconds(3600))
            #expect(outcomes.count == 1 && outcomes[0]?.url == "u")
        }
        #expect(released == nil, "no timer holds the collector until its deadline")

        do {
            let collector = Collector(count: 2)
            released = collector
            let waiting = Task { await collector.wait(until: .now + .seconds(3600)) }
            collector.finish(1, AttachmentOutcome(url: "b", convention: "image"))
            collector.finish(0, AttachmentOutcome(url: "a", convention: "image"))
            #expect(await waiting.value.compactMap { $0?.url } == ["a", "b"])
        }
        #expect(released == nil, "a wait released by the last outcome cancels its timer")
    }
}
