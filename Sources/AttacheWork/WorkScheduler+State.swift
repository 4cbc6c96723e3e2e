internal import CAttacheShim
import Dispatch
import Foundation
import Synchronization

/// The scheduler's bookkeeping: jobs, their phases, the shares of tenants and payloads, and the
/// one state every decision is made from (under the scheduler's lock).
extension WorkScheduler {
    enum Phase {
        /// Submitted, not started: no thread, no memory.
        case queued
        /// Holding a core.
        case running
        /// Started, waiting for a core.
        case ready
        /// Started, its header read, waiting to be admitted: for its memory to fit, and for a
        /// heavy job, for a heavy place.
        case admission
        /// Its deadline passed while it waited: unwinding without a core.
        case leaving
    }

    enum Action {
        case start(Job)
        case resume(Job)
    }

    /// One job; its fields other than the atomics are read and written under the scheduler's lock.
    final class Job: @unchecked Sendable {
        let id: UInt64
        let group: WorkGroup
        let deadline: WorkDeadline
        let scheduler: WorkScheduler
        var estimate: WorkEstimate
        var phase = Phase.queued
        /// CPU time had so far, and the job thread's CPU clock when it was last counted
        /// (nanoseconds; 0 while it is not running).
        var attained: UInt64 = 0
        var counted: UInt64 = 0
        /// Memory admitted for it.
        var reserved = 0
        /// Whether it holds one of the heavy places (``Settings/heavy``).
        var heavy = false
        var yields = 0
        /// When it was submitted (monotonic nanoseconds).
        let submitted: UInt64
        var firstRun: ContinuousClock.Instant?
        var body: (@Sendable () -> Void)?
        let wake = DispatchSemaphore(value: 0)
        /// Before this (monotonic nanoseconds) a checkpoint returns at once.
        let checkAfter = Atomic<UInt64>(0)

        private static let ids = Atomic<UInt64>(0)

        init(
            scheduler: WorkScheduler, group: WorkGroup, estimate: WorkEstimate, deadline: WorkDeadline,
            submitted: UInt64 = att_monotonic_ns()
        ) {
            id = Self.ids.add(1, ordering: .relaxed).newValue
            self.submitted = submitted
            self.scheduler = scheduler
            self.group = group
            self.estimate = estimate
            self.deadline = deadline
        }

        /// The CPU it is expected to need in all, in nanoseconds (at least a millisecond). A job
        /// that runs past its estimate was underestimated: past twice the estimate it is taken
        /// to need twice as much again as it has run over, so work that said too little of
        /// itself (or nothing) soon gives way to lighter work.
        var expected: UInt64 {
            let estimated = UInt64(min(max(estimate.seconds * 1e9, 1e6), 1e15))
            if attained <= estimated { return estimated }
            if attained <= 2 * estimated { return attained }
            return attained + (attained - 2 * estimated)
        }

        /// The CPU it is still expected to need, in nanoseconds.
        var remaining: UInt64 { expected - min(expected, attained) }

        /// Heavy work's place in its tenant's line: when it came, less half of what it still
        /// needs (at most half a second). Photos wait for the work ahead of them and then take
        /// their own time, so in arrival order the longest ones are the tail; counted this way a
        /// long photo starts before shorter ones that came just before it, and every answer
        /// comes nearer the same time after its request. Half, not all: a long job put first
        /// delays every one behind it by all of its time (serve-load's 156 requests, simulated
        /// from their measured times: p99 −8% at a half, −6% at all, mean unchanged). At most
        /// half a second, so a long job (a video) passes only what came shortly before it.
        var line: UInt64 {
            let credit = min(remaining, 1_000_000_000) / 2
            return submitted > credit ? submitted - credit : 0
        }

        /// Whether it is light: expected to need at most ``Settings/light`` of CPU in all, and to
        /// hold at most a sixteenth of the memory budget.
        func isLight(_ settings: Settings) -> Bool {
            expected <= settings.light.nanoseconds && estimate.memory <= settings.memory / 16
        }

        /// Whether it goes before heavy work: light — a job whose header is unread says it is
        /// (``WorkEstimate/unread(bytes:)``): reading it is light work, and tells which it is.
        func passes(_ settings: Settings) -> Bool { isLight(settings) }
    }

    /// A tenant's or a payload's virtual time: the core time its jobs have had since it became
    /// busy, counted from the virtual clock it joined at.
    struct Share {
        var virtual: UInt64
        var jobs: Int
        /// A tenant's clock for its payloads: it moves by the core time the tenant gets over
        /// the number of its busy payloads, so a payload that joins now starts level with
        /// what a payload busy all along is owed.
        var clock: UInt64 = 0
        var payloads = 0
        /// A tenant's weight, from its first job while it is busy.
        var weight: UInt64 = 1
    }

    /// How far ahead in core time a tenant may be of another before its light work no longer
    /// passes the other's heavy work: less is not worth the switch.
    static let tenantGranularity: UInt64 = 50_000_000

    struct State {
        var jobs: [UInt64: Job] = [:]
        var tenants: [String: Share] = [:]
        var payloads: [WorkGroup: Share] = [:]
        /// The tenants' virtual clock: core time over the busy tenants' weights.
        var clock: UInt64 = 0
        /// The busy tenants' weights together.
        var weights: UInt64 = 0
        var running = 0
        var started = 0

        mutating func add(_ job: Job) {
            jobs[job.id] = job
            let tenant = job.group.tenant
            if tenants[tenant] == nil {
                let weight = UInt64(max(1, job.group.weight))
                tenants[tenant] = Share(virtual: clock, jobs: 0, weight: weight)
                weights += weight
            }
            tenants[tenant]!.jobs += 1
            if payloads[job.group] == nil {
                payloads[job.group] = Share(virtual: tenants[tenant]!.clock, jobs: 0)
                tenants[tenant]!.payloads += 1
            }
            payloads[job.group]!.jobs += 1
        }

        mutating func remove(_ job: Job) {
            jobs[job.id] = nil
            if job.phase != .queued { started -= 1 }
            job.reserved = 0
            job.heavy = false
            job.phase = .leaving
            let tenant = job.group.tenant
            payloads[job.group]!.jobs -= 1
            if payloads[job.group]!.jobs == 0 {
                payloads[job.group] = nil
                tenants[tenant]!.payloads -= 1
            }
            tenants[tenant]!.jobs -= 1
            if tenants[tenant]!.jobs == 0 {
                weights -= tenants[tenant]!.weight
                tenants[tenant] = nil
            }
        }

        /// Counts the CPU time a running job has had since it was last counted (`now`: its
        /// thread's CPU clock).
        mutating func charge(_ job: Job, now: UInt64) {
            guard job.counted != 0, now > job.counted else {
                job.counted = now
                return
            }
            let spent = now - job.counted
            job.counted = now
            job.attained += spent
            payloads[job.group]?.virtual += spent
            if var share = tenants[job.group.tenant] {
                // A tenant's time runs slower by its weight: a weight of 3 is owed three times
                // the cores of a weight of 1 while both are busy.
                share.virtual += spent / share.weight
                share.clock += spent / UInt64(max(1, share.payloads))
                tenants[job.group.tenant] = share
            }
            clock += spent / max(1, weights)
        }

        /// A job's key within its tenant: its payload's virtual time, less the core time the job
        /// itself has had, plus the CPU it is expected to need — the payloads' fair shares, and
        /// within a payload the shortest job first. A running job's key stays put (its payload's
        /// time grows with its own), so equal work is done in the order it came, while lighter
        /// work that arrives passes heavier work already running; a payload that waits keeps its
        /// time while the clock moves on, so it is passed for a bounded while only.
        func key(_ job: Job) -> UInt64 {
            (payloads[job.group]?.virtual ?? job.attained) &- job.attained &+ job.expected
        }

        /// Whether `job` may be given a core now: a job not started while there is a thread for
        /// it and its first megabyte fits, a job that gave its core up, and one waiting to be
        /// admitted once it is admissible.
        func eligible(_ job: Job, _ settings: Settings, held: Held) -> Bool {
            switch job.phase {
            case .ready: return true
            case .queued:
                return started < settings.started && fits(job, settings, held: held) && fitsTenant(job)
                    && (job.isLight(settings) || heavyHeld() < settings.heavy)
            case .admission: return admissible(job, settings, held: held)
            case .running, .leaving: return false
            }
        }

        /// Heavy places taken, by jobs other than `job`.
        func heavyHeld(besides job: Job? = nil) -> Int {
            jobs.values.reduce(0) { $0 + ($1.heavy && $1 !== job ? 1 : 0) }
        }

        /// Whether `job` may go on with what it says it costs: its memory fits beside the
        /// others', and a heavy job has (or finds) a heavy place.
        func admissible(_ job: Job, _ settings: Settings, held: Held? = nil) -> Bool {
            guard fits(job, settings, held: held), fitsTenant(job) else { return false }
            return job.heavy || job.isLight(settings) || heavyHeld(besides: job) < settings.heavy
        }

        /// Admits `job` as it now says it costs (``admissible(_:_:held:)`` holds).
        mutating func admit(_ job: Job, _ settings: Settings) {
            job.reserved = max(job.reserved, job.estimate.memory)
            if !job.isLight(settings) { job.heavy = true }
        }

        /// The running `job` gives its core up and waits in `phase`; the free core goes on.
        mutating func pause(_ job: Job, _ phase: Phase, _ settings: Settings) -> [Action] {
            job.phase = phase
            job.yields += 1
            running -= 1
            return dispatch(settings)
        }

        /// Asks each running heavy job to look at its next checkpoint whether light work waits.
        func nudgeHeavy() {
            for job in jobs.values where job.phase == .running && job.heavy {
                job.checkAfter.store(0, ordering: .relaxed)
            }
        }

        /// Memory the started jobs hold, small and large (``Settings/isLarge(_:)``).
        struct Held {
            var small = 0
            var large = 0

            /// What the jobs other than `job` hold.
            func without(_ job: Job, _ settings: Settings) -> Held {
                var others = self
                if settings.isLarge(job.reserved) {
                    others.large -= job.reserved
                } else {
                    others.small -= job.reserved
                }
                return others
            }
        }

        func held(_ settings: Settings) -> Held {
            jobs.values.reduce(into: Held()) { held, job in
                if settings.isLarge(job.reserved) {
                    held.large += job.reserved
                } else {
                    held.small += job.reserved
                }
            }
        }

        /// Whether the memory `job` says it needs fits beside what the others hold. A small job
        /// (an eighth of the budget or less) fits within the budget, or within the quarter of it
        /// kept for small jobs whatever the large ones hold; a large job fits within the budget
        /// and the large jobs' three quarters of it — or when no other large job holds memory,
        /// so a job larger than that share still runs (its own limits decide it) beside small
        /// work only.
        func fits(_ job: Job, _ settings: Settings, held all: Held? = nil) -> Bool {
            let held = (all ?? self.held(settings)).without(job, settings)
            let need = job.estimate.memory
            let others = held.small + held.large
            guard others > 0 else { return true }
            guard settings.isLarge(need) else {
                return others + need <= settings.memory || fitsSmallShare(job, settings, held: held)
            }
            if held.large == 0 { return true }
            return others + need <= settings.memory && held.large + need <= settings.largeShare
        }

        /// Whether the memory `job` says it needs fits within its tenant's own limit
        /// (``WorkGroup/memory``) beside what the tenant's other jobs hold — or none of them
        /// holds any, so a job larger than the limit still runs, alone.
        func fitsTenant(_ job: Job) -> Bool {
            guard let limit = job.group.memory else { return true }
            var others = 0
            for other in jobs.values where other !== job && other.group.tenant == job.group.tenant {
                others += other.reserved
            }
            return others == 0 || others + job.estimate.memory <= limit
        }

        /// Whether `job` is small and fits within the small jobs' quarter beside what the others
        /// hold (`held`, without the job's own).
        func fitsSmallShare(_ job: Job, _ settings: Settings, held: Held) -> Bool {
            let need = job.estimate.memory
            return !settings.isLarge(need) && held.small + need <= settings.memory - settings.largeShare
        }

        /// The order: the tenant with the least virtual time (by more than `tenantMargin`), then
        /// (by ``Settings/PayloadOrder/fairUntilLate``) a late job, the earliest deadline first,
        /// then light work before heavy; then heavy work of one tenant in its line (``Job/line``),
        /// and other work by the smallest key; then the earliest job.
        /// `now`: the monotonic clock, read once by the caller for all its comparisons.
        func precedes(
            _ a: Job, _ b: Job, _ settings: Settings, now: UInt64, tenantMargin: UInt64 = 0
        ) -> Bool {
            if a.group.tenant != b.group.tenant {
                let (x, y) = (tenants[a.group.tenant]!.virtual, tenants[b.group.tenant]!.virtual)
                if x &+ tenantMargin < y { return true }
                if y &+ tenantMargin < x { return false }
            } else if settings.order == .fairUntilLate {
                let late = (isLate(a, now: now), isLate(b, now: now))
                if late.0 != late.1 { return late.0 }
                if late.0, a.deadline.nanoseconds != b.deadline.nanoseconds {
                    return a.deadline.nanoseconds < b.deadline.nanoseconds
                }
            }
            // Light work (and work whose header is unread) before heavy work: it is bounded,
            // and it is what a light payload waits for.
            let (lightA, lightB) = (a.passes(settings), b.passes(settings))
            if lightA != lightB { return lightA }
            // Heavy work of one tenant in its line (inside a payload, the job expected to finish
            // first): each photo waits for those before it, not for a share of every one's
            // time, so the tail is what is ahead of it, not the crowd. Work under way (holding
            // a heavy place and its memory) goes on before work that has not started.
            if !lightA, a.group.tenant == b.group.tenant {
                if a.group.payload != b.group.payload {
                    if a.heavy != b.heavy { return a.heavy }
                    let (x, y) = (a.line, b.line)
                    return x != y ? x < y : a.group.payload < b.group.payload
                }
                return a.remaining != b.remaining ? a.remaining < b.remaining : a.id < b.id
            }
            let (x, y) = (key(a), key(b))
            return x != y ? x < y : a.id < b.id
        }

        /// The job the order puts first among those that may go now. When the first of those
        /// waiting to be admitted does not fit, the ones after it are admitted only within the
        /// small jobs' quarter (else a stream of them could keep it waiting for ever); jobs
        /// already under way go on.
        func best(_ settings: Settings, now: UInt64) -> Job? {
            let all = held(settings)
            var head: Job?
            // A job waiting for its own tenant's memory holds no one else up.
            for job in jobs.values where job.phase == .admission && fitsTenant(job) {
                if head == nil || precedes(job, head!, settings, now: now) { head = job }
            }
            let blocked = head.map { !fits($0, settings, held: all) } ?? false
            var best: Job?
            for job in jobs.values where eligible(job, settings, held: all) {
                if blocked, job !== head, job.phase == .admission,
                    !fitsSmallShare(job, settings, held: all.without(job, settings))
                {
                    continue
                }
                if best == nil || precedes(job, best!, settings, now: now) { best = job }
            }
            return best
        }

        /// Whether `job` would miss its deadline at its fair part but can still make it with a
        /// core of its own: what it still needs is at least half the time left, and less than
        /// all of it (``Settings/PayloadOrder/fairUntilLate``).
        func isLate(_ job: Job, now: UInt64) -> Bool {
            let deadline = job.deadline.nanoseconds
            guard deadline != .max, deadline > now else { return false }
            let left = deadline - now
            return job.remaining < left && job.remaining >= left / 2
        }

        /// Whether a running job should give its core to a waiting one: a heavy job gives way to
        /// light work (or work whose header is unread) that the order puts first, by more than
        /// the tenants' granularity; heavy jobs do not take turns with each other, and light
        /// work runs to its end.
        func shouldYield(_ job: Job, _ settings: Settings) -> Bool {
            guard job.heavy else { return false }
            let now = att_monotonic_ns()
            guard let other = best(settings, now: now), other.passes(settings) else { return false }
            return precedes(other, job, settings, now: now, tenantMargin: WorkScheduler.tenantGranularity)
        }

        /// Gives free cores to the jobs the order puts first.
        mutating func dispatch(_ settings: Settings) -> [Action] {
            var actions: [Action] = []
            while running < settings.cores {
                var next = best(settings, now: att_monotonic_ns())
                if next == nil, running == 0 {
                    // Nothing runs and nothing fits: the job waiting for the least memory goes
                    // (else the jobs holding memory would wait for each other forever).
                    next = jobs.values.filter { $0.phase == .admission }.min {
                        $0.estimate.memory < $1.estimate.memory
                    }
                }
                guard let job = next else { break }
                running += 1
                switch job.phase {
                case .queued:
                    started += 1
                    admit(job, settings)
                    job.firstRun = .now
                    job.phase = .running
                    actions.append(.start(job))
                case .admission:
                    admit(job, settings)
                    job.phase = .running
                    actions.append(.resume(job))
                default:
                    job.phase = .running
                    actions.append(.resume(job))
                }
            }
            return actions
        }
    }
}
