import AttacheBase
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheMedia
@testable import AttacheWork

/// Tenants in the scheduler: their weights in the cores' share and their own memory.
extension WorkSchedulerTests {
    @Test("busy tenants share the cores by their weights: a weight of 3 gets three jobs done to one's one")
    func tenantsShareByWeight() async throws {
        for (heavyWeight, atLeast) in [(3, 5), (1, 3)] {
            let scheduler = WorkScheduler(.init(cores: 1, memory: 1 << 30))
            let order = Recorder<String>()
            // The core is held while both tenants' jobs are queued, so the order is the scheduler's.
            let release = Flag()
            let blocker = Task {
                let deadline = WorkDeadline.none
                await scheduler.run(
                    group: .payload(of: "blocker"), estimate: .init(seconds: 0.3, memory: 0), deadline: deadline
                ) {
                    while !release.isSet { _ = try? Self.work(.milliseconds(5), deadline) }
                }
            }
            await Self.eventually { scheduler.load.running == 1 }
            var jobs: [Task<Void, Never>] = []
            for index in 0..<12 {
                let (tenant, weight) = index % 2 == 0 ? ("big", heavyWeight) : ("small", 1)
                jobs.append(
                    Task {
                        let deadline = WorkDeadline.none
                        await scheduler.run(
                            group: .payload(of: tenant, weight: weight), estimate: .init(seconds: 0.3, memory: 0),
                            deadline: deadline
                        ) {
                            _ = try? Self.work(.milliseconds(60), deadline)
                            order.append(tenant)
                        }
                    })
            }
            await Self.eventually { scheduler.inFlight == 13 }
            release.set()
            await blocker.value
            for job in jobs { await job.value }
            let first = order.values.prefix(8)
            let big = first.filter { $0 == "big" }.count
            #expect(big >= atLeast && (heavyWeight > 1 || big <= 5), "weight \(heavyWeight): \(order.values)")
        }
    }

    @Test("a tenant's jobs hold at most its own memory at once; another tenant's job passes the one waiting for it")
    func tenantMemory() async throws {
        let scheduler = WorkScheduler(.init(cores: 2, memory: 1 << 30))
        let limited = { WorkGroup.payload(of: "a", memory: 100 << 20) }
        let firstHolds = Flag()
        let release = Flag()
        let (secondPassed, otherPassed) = (Flag(), Flag())
        func job(_ group: WorkGroup, _ done: Flag?, until: Flag? = nil) -> Task<Void, Never> {
            Task {
                let deadline = WorkDeadline.none
                await scheduler.run(group: group, estimate: .unread(bytes: 0), deadline: deadline) {
                    try? deadline.expect(.init(seconds: 1, memory: 80 << 20))
                    done?.set()
                    while let until, !until.isSet { usleep(1000) }
                }
            }
        }
        let first = job(limited(), firstHolds, until: release)
        await Self.eventually { firstHolds.isSet }
        let second = job(limited(), secondPassed)
        await Self.eventually { scheduler.load.waiting == 1 }
        #expect(!secondPassed.isSet, "a's second job waits: 160 MB would pass a's 100 MB")
        // Another tenant's job, as large, is not held up by it: the budget has room.
        let other = job(.payload(of: "b"), otherPassed)
        await other.value
        #expect(otherPassed.isSet && !secondPassed.isSet)
        release.set()
        await first.value
        await second.value
        #expect(secondPassed.isSet)
        // Alone, a job larger than its tenant's memory still runs.
        let deadline = WorkDeadline.none
        let ran = await scheduler.run(
            group: .payload(of: "a", memory: 16 << 20), estimate: .unread(bytes: 0), deadline: deadline
        ) { (try? deadline.expect(.init(seconds: 1, memory: 64 << 20))) != nil }
        #expect(ran)
        #expect(scheduler.load == .init(running: 0, waiting: 0, queued: 0, memory: 0))
    }
}
