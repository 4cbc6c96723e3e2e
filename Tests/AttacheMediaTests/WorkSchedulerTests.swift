import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheMedia
@testable import AttacheWork

/// The scheduler's order, slices and memory admission, with synthetic jobs that do CPU work and
/// check their deadline as the decoders do. Every test asserts the order events happened in,
/// never how long anything took, so a busy machine cannot make one pass or fail.
@Suite struct WorkSchedulerTests {
    final class Recorder<T: Sendable>: Sendable {
        private let list = Mutex<[T]>([])
        var values: [T] { list.withLock { $0 } }
        func append(_ value: T) { list.withLock { $0.append(value) } }
    }

    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// Burns CPU until this thread has spent `cpu`, checking `deadline` as a decoder does between
    /// bands; stops early (returning false) once `until` says so.
    static func work(
        _ cpu: Duration, _ deadline: WorkDeadline, until: () -> Bool = { false }
    ) throws(AttacheError) -> Bool {
        let start = WorkScheduler.threadCPUTime()
        var sink = 0
        while WorkScheduler.threadCPUTime() - start < cpu {
            for i in 0..<20_000 { sink = sink &* 31 &+ i }
            try deadline.check()
            if until() { return false }
        }
        return sink != 42
    }

    /// Waits (polling) until `condition` holds, for at most a minute; records an issue if it
    /// never did (the test would otherwise go on from a state it did not mean to test).
    static func eventually(
        _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        for _ in 0..<6_000 where !condition() { try? await Task.sleep(for: .milliseconds(10)) }
        #expect(condition(), "the condition waited for never held", sourceLocation: sourceLocation)
    }

    @Test("a light job passes a heavy one that holds the only core")
    func lightPassesHeavy() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let lightDone = Flag()
        let heavyStarted = Flag()
        let heavy = Task {
            let deadline = WorkDeadline.none
            return await scheduler.run(
                group: .payload(), estimate: WorkEstimate(seconds: 30, memory: 1 << 20), deadline: deadline
            ) { () -> Bool in
                heavyStarted.set()
                // Without slices this job would hold the core for all of its minute of CPU and
                // the light job below would wait until it ended.
                let finished = (try? Self.work(.seconds(60), deadline) { lightDone.isSet }) ?? true
                return !finished
            }
        }
        await Self.eventually { heavyStarted.isSet }
        let light = await scheduler.run(
            group: .payload(), estimate: WorkEstimate(seconds: 0.001, memory: 1 << 20), deadline: .none
        ) { () -> Bool in
            lightDone.set()
            return true
        }
        #expect(light)
        #expect(await heavy.value, "the heavy job was still running when the light one finished")
        #expect(scheduler.lastJob?.yields ?? 0 >= 1)
    }

    @Test("a light job passes a heavy progressive JPEG while libjpeg reads its scans, before its first row")
    func lightPassesInsideAProgressiveDecode() async throws {
        // Noise at quality 90, rewritten by jpegtran with libjpeg's progressive scan script: its
        // ten scans are all read inside `start`, before a row comes out.
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        let noise = (0..<(1024 * 1024 * 3)).map { _ -> UInt8 in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
        let directory = try TemporaryDirectory()
        let baseline = directory.path + "/baseline.jpg"
        let encoded = try Encoders.jpeg(PixelImage(width: 1024, height: 1024, channels: 3, pixels: noise), quality: 90)
        try Data(encoded).write(to: URL(fileURLWithPath: baseline))
        let progressive = MediaBytes(try VideoTests.run("jpegtran", ["-progressive", baseline]))
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let opened = Flag()
        let scansRead = Flag()
        let heavy = Task {
            let deadline = WorkDeadline.none
            return await scheduler.run(
                group: .payload(), estimate: WorkEstimate(seconds: 30, memory: 1 << 20), deadline: deadline
            ) { () -> Int in
                do throws(AttacheError) {
                    let decoder = try JPEGDecoder(bytes: progressive, limits: .default, deadline: deadline)
                    #expect(decoder.isProgressive)
                    opened.set()
                    // The only core held, no checkpoint passed, until the light job is queued.
                    while scheduler.load.queued == 0 { usleep(1000) }
                    try decoder.start(scaleNumerator: 8)
                    scansRead.set()
                    var rows = RowCollector(
                        width: decoder.outputWidth, height: decoder.outputHeight, channels: decoder.channels)
                    try decoder.decodeRows(into: &rows)
                    return rows.pixels.count
                } catch {
                    Issue.record("the progressive JPEG did not decode: \(error)")
                    return 0
                }
            }
        }
        await Self.eventually { opened.isSet }
        let passedInside = await scheduler.run(
            group: .payload(), estimate: WorkEstimate(seconds: 0.001, memory: 1 << 20), deadline: .none
        ) { !scansRead.isSet }
        #expect(passedInside, "the light job waited until libjpeg had read every scan")
        #expect(await heavy.value == 1024 * 1024 * 3)
    }

    @Test("within a payload the job expected to finish first goes first")
    func shortestFirstWithinAPayload() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let order = Recorder<String>()
        let release = Flag()
        let group = WorkGroup.payload()
        // A blocker holds the core until both jobs are queued behind it.
        let blocker = Task {
            await scheduler.run(group: group, estimate: .init(seconds: 0.001, memory: 0), deadline: .none) {
                while !release.isSet { usleep(1000) }
            }
        }
        await Self.eventually { scheduler.load.running == 1 }
        let heavy = Task {
            await scheduler.run(group: group, estimate: .init(seconds: 20, memory: 0), deadline: .none) {
                _ = try? Self.work(.milliseconds(30), .none)
                order.append("heavy")
            }
        }
        await Self.eventually { scheduler.load.queued == 1 }
        let light = Task {
            await scheduler.run(group: group, estimate: .init(seconds: 0.01, memory: 0), deadline: .none) {
                _ = try? Self.work(.milliseconds(5), .none)
                order.append("light")
            }
        }
        await Self.eventually { scheduler.load.queued == 2 }
        release.set()
        _ = await (blocker.value, heavy.value, light.value)
        #expect(order.values == ["light", "heavy"])
    }

    @Test("equal work in separate payloads is done in the order it came, not all of it late together")
    func equalWorkInOrder() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let order = Recorder<Int>()
        let release = Flag()
        // A blocker holds the core until all four are queued behind it, so that none of them
        // can finish before the next is queued, however the machine runs this test.
        let blocker = Task {
            await scheduler.run(group: .payload(), estimate: .init(seconds: 0.001, memory: 0), deadline: .none) {
                while !release.isSet { usleep(1000) }
            }
        }
        await Self.eventually { scheduler.load.running == 1 }
        var tasks: [Task<Void, Never>] = []
        for index in 0..<4 {
            tasks.append(
                Task {
                    let deadline = WorkDeadline.none
                    await scheduler.run(
                        group: .payload(), estimate: .init(seconds: 0.08, memory: 0), deadline: deadline
                    ) {
                        _ = try? Self.work(.milliseconds(80), deadline)
                        order.append(index)
                    }
                })
            await Self.eventually { scheduler.load.queued == index + 1 }
        }
        release.set()
        await blocker.value
        for task in tasks { await task.value }
        #expect(order.values == [0, 1, 2, 3])
    }

    @Test("heavy work goes in a line: when it came, less half of what it still needs (at most half a second)")
    func heavyLine() {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let settings = scheduler.settings
        // The monotonic clock now (a job's default), ten seconds on: every job below came before.
        let now =
            WorkScheduler.Job(scheduler: scheduler, group: .payload(), estimate: .unread(bytes: 0), deadline: .none)
            .submitted + 10_000_000_000
        func job(_ seconds: Double, cameAgo ms: UInt64) -> WorkScheduler.Job {
            WorkScheduler.Job(
                scheduler: scheduler, group: .payload(), estimate: .init(seconds: seconds, memory: 1 << 20),
                deadline: .none, submitted: now - ms * 1_000_000)
        }
        var state = WorkScheduler.State()
        let short = job(0.1, cameAgo: 300)
        let long = job(0.9, cameAgo: 0)
        let video = job(30, cameAgo: 0)
        let older = job(0.1, cameAgo: 600)
        let equal = job(0.1, cameAgo: 200)
        for each in [short, long, video, older, equal] { state.add(each) }
        func first(_ a: WorkScheduler.Job, _ b: WorkScheduler.Job) -> Bool {
            state.precedes(a, b, settings, now: now)
        }
        // 0.9 s needed, 300 ms later than 0.1 s: 450 − 50 = 400 ms of credit against 300 ms.
        #expect(first(long, short) && !first(short, long))
        // A 30 s job is credited half a second at most: it passes work that came 300 ms before
        // it, not 600 ms.
        #expect(first(video, short) && first(older, video))
        // Equal work in the order it came.
        #expect(first(short, equal) && !first(equal, short))
        // Work under way (holding a heavy place) goes on first, whatever the line says.
        short.heavy = true
        #expect(first(short, long) && !first(long, short))
        short.heavy = false
        // Light work before all of it.
        let light = job(0.001, cameAgo: 0)
        state.add(light)
        #expect(first(light, older) && first(light, video))
    }

    @Test("a tenant's payloads take its part of the cores, not another tenant's")
    func tenantsShare() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        let order = Recorder<String>()
        var campaign: [Task<Void, Never>] = []
        for index in 0..<4 {
            campaign.append(
                Task {
                    let deadline = WorkDeadline.none
                    await scheduler.run(
                        group: .payload(of: "campaign"), estimate: .init(seconds: 0.3, memory: 0), deadline: deadline
                    ) {
                        _ = try? Self.work(.milliseconds(300), deadline)
                        order.append("campaign-\(index)")
                    }
                })
        }
        await Self.eventually { scheduler.load.running == 1 && scheduler.inFlight == 4 }
        let deadline = WorkDeadline.none
        await scheduler.run(group: .payload(of: "other"), estimate: .init(seconds: 0.3, memory: 0), deadline: deadline)
        {
            _ = try? Self.work(.milliseconds(300), deadline)
            order.append("other")
        }
        for task in campaign { await task.value }
        let finished = order.values
        // The other tenant's payload, as heavy as each of the campaign's, is not last: it got
        // half of the core from the moment it came.
        #expect(finished.firstIndex(of: "other")! < 3, "\(finished)")
    }

    @Test("a job whose memory does not fit waits, before allocating it, until the memory is free")
    func memoryAdmission() async throws {
        let scheduler = WorkScheduler(.init(cores: 2, memory: 100 << 20))
        let firstHolds = Flag()
        let release = Flag()
        let secondPassed = Flag()
        let first = Task {
            let deadline = WorkDeadline.none
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                try? deadline.expect(.init(seconds: 1, memory: 80 << 20))
                firstHolds.set()
                while !release.isSet { usleep(1000) }
            }
        }
        await Self.eventually { firstHolds.isSet }
        let second = Task {
            let deadline = WorkDeadline.none
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                try? deadline.expect(.init(seconds: 1, memory: 80 << 20))
                secondPassed.set()
            }
        }
        await Self.eventually { scheduler.load.waiting == 1 }
        #expect(scheduler.load.waiting == 1, "the second job waits for memory")
        #expect(!secondPassed.isSet)
        #expect(scheduler.load.memory <= 100 << 20)
        release.set()
        await first.value
        await second.value
        #expect(secondPassed.isSet)
        #expect(scheduler.load == .init(running: 0, waiting: 0, queued: 0, memory: 0))
    }

    @Test("a job larger than the whole budget still runs when it is alone")
    func aloneOverBudget() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 8 << 20))
        let deadline = WorkDeadline.none
        let ran = await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
            (try? deadline.expect(.init(seconds: 1, memory: 64 << 20))) != nil
        }
        #expect(ran)
    }

    @Test("a job waiting for memory stops waiting when its deadline is cancelled")
    func cancelledWhileWaiting() async throws {
        let scheduler = WorkScheduler(.init(cores: 2, memory: 100 << 20))
        let release = Flag()
        let holds = Flag()
        let first = Task {
            let deadline = WorkDeadline.none
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                try? deadline.expect(.init(seconds: 1, memory: 90 << 20))
                holds.set()
                while !release.isSet { usleep(1000) }
            }
        }
        await Self.eventually { holds.isSet }
        let deadline = WorkDeadline.none
        let waiting = Task {
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                Result { () throws(AttacheError) in try deadline.expect(.init(seconds: 1, memory: 90 << 20)) }
            }
        }
        await Self.eventually { scheduler.load.waiting == 1 }
        deadline.cancel()
        let result = await waiting.value
        #expect(throws: AttacheError.self) { try result.get() }
        #expect(holds.isSet && !release.isSet, "the first job still holds")
        release.set()
        await first.value
        #expect(scheduler.load.memory == 0)
    }

    /// Holds the only core while three light jobs (no deadline) and then `heavy` (100 s of CPU
    /// expected, deadline `heavyDeadline` from now) queue in payloads of their own; returns the
    /// order they ran in once the core is let go.
    static func order(_ order: WorkScheduler.Settings.PayloadOrder, heavyDeadline: Duration) async -> [String] {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30, order: order))
        let ran = Recorder<String>()
        let release = Flag()
        let blocker = Task {
            await scheduler.run(group: .payload(), estimate: .init(seconds: 0.001, memory: 0), deadline: .none) {
                while !release.isSet { usleep(1000) }
            }
        }
        await Self.eventually { scheduler.load.running == 1 }
        var tasks: [Task<Void, Never>] = []
        for index in 0..<3 {
            tasks.append(
                Task {
                    await scheduler.run(group: .payload(), estimate: .init(seconds: 0.01, memory: 0), deadline: .none) {
                        ran.append("light-\(index)")
                    }
                })
            await Self.eventually { scheduler.load.queued == index + 1 }
        }
        let deadline = WorkDeadline(budget: heavyDeadline)
        tasks.append(
            Task {
                await scheduler.run(group: .payload(), estimate: .init(seconds: 100, memory: 0), deadline: deadline) {
                    ran.append("heavy")
                }
            })
        await Self.eventually { scheduler.load.queued == 4 }
        release.set()
        await blocker.value
        for task in tasks { await task.value }
        return ran.values
    }

    @Test("a job that would miss its deadline at its fair part goes first when it can still make it")
    func lateJobsFirst() async throws {
        // 100 s needed, 150 s left (late for the next 50 s, so a busy machine cannot change it).
        #expect(await Self.order(.fairUntilLate, heavyDeadline: .seconds(150)).first == "heavy")
        // Fair order: the light jobs first, whatever the deadline.
        #expect(await Self.order(.fair, heavyDeadline: .seconds(150)).last == "heavy")
        // Time enough at its fair part, or no way to make it: it takes its turn as before.
        #expect(await Self.order(.fairUntilLate, heavyDeadline: .seconds(1_000)).last == "heavy")
        #expect(await Self.order(.fairUntilLate, heavyDeadline: .seconds(60)).last == "heavy")
    }

    @Test("one heavy job per core holds its memory; the others wait past their header holding nothing, light passes")
    func oneHeavyJobPerCore() async throws {
        let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
        #expect(scheduler.settings.heavy == 1 && scheduler.settings.light == .milliseconds(25))
        let release = Flag()
        let firstHolds = Flag()
        let secondPassed = Flag()
        let heavy = WorkEstimate(seconds: 10, memory: 100 << 20)
        let first = Task {
            let deadline = WorkDeadline.none
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                try? deadline.expect(heavy)
                firstHolds.set()
                while !release.isSet {
                    usleep(500)
                    try? deadline.check()
                }
            }
        }
        await Self.eventually { firstHolds.isSet }
        let second = Task {
            let deadline = WorkDeadline.none
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                try? deadline.expect(heavy)
                secondPassed.set()
            }
        }
        // The second reads its header (a light job's turn on the only core), says it is heavy,
        // and waits there: one heavy place, taken.
        await Self.eventually { scheduler.load.waitingHeavy == 1 }
        var load = scheduler.load
        #expect(load.heavy == 1 && load.waitingHeavy == 1 && !secondPassed.isSet, "\(load)")
        #expect(load.memory < 2 * heavy.memory, "the waiting one holds only its header's megabyte: \(load)")
        // A light job is chosen next: the running heavy one gives the core up at a checkpoint.
        let light = await scheduler.run(
            group: .payload(), estimate: .init(seconds: 0.001, memory: 1 << 20), deadline: .none
        ) { !release.isSet }
        #expect(light, "the light job ran while the heavy one still held its place")
        #expect(!secondPassed.isSet)
        release.set()
        await first.value
        await second.value
        #expect(secondPassed.isSet)
        load = scheduler.load
        #expect(load == .init(running: 0, waiting: 0, queued: 0, memory: 0), "\(load)")
    }

    @Test("a job that runs past twice its light estimate becomes heavy, and waits for a place when none is free")
    func anUnderestimatedJobBecomesHeavy() async throws {
        let scheduler = WorkScheduler(.init(cores: 2, memory: 1 << 30))
        let release = Flag()
        let holding = Recorder<Int>()
        var tasks: [Task<Void, Never>] = []
        for index in 0..<2 {
            tasks.append(
                Task {
                    let deadline = WorkDeadline.none
                    await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                        try? deadline.expect(.init(seconds: 10, memory: 1 << 20))
                        holding.append(index)
                        while !release.isSet {
                            usleep(500)
                            try? deadline.check()
                        }
                    }
                })
        }
        await Self.eventually { holding.values.count == 2 }
        #expect(scheduler.load.heavy == 2)
        // It says nothing of itself and runs on: past 2 ms × 2 it is no longer light, and with
        // both places taken it waits, its work unfinished, until one is free.
        let deadline = WorkDeadline.none
        let sneaky = Task {
            await scheduler.run(group: .payload(), estimate: .unread(bytes: 0), deadline: deadline) {
                (try? Self.work(.milliseconds(200), deadline)) ?? false
            }
        }
        await Self.eventually { scheduler.load.waitingHeavy == 1 }
        #expect(scheduler.load.waitingHeavy == 1 && scheduler.load.heavy == 2, "\(scheduler.load)")
        release.set()
        for task in tasks { await task.value }
        #expect(await sneaky.value)
    }
}
