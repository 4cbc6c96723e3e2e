internal import CAttacheCodecs
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Who a job is done for: the tenant (a service's API key; empty for the command line) and the
/// payload (or batch item) it belongs to.
public struct WorkGroup: Hashable, Sendable {
    /// The tenant: payloads of one tenant share that tenant's part of the cores.
    public var tenant: String
    /// The payload: its jobs share the payload's part of its tenant's.
    public var payload: UInt64

    /// A group of its own for a new payload of `tenant`.
    public static func payload(of tenant: String = "") -> WorkGroup {
        WorkGroup(tenant: tenant, payload: nextPayload.add(1, ordering: .relaxed).newValue)
    }

    private static let nextPayload = Atomic<UInt64>(0)
}

/// Runs the transforms (the codecs: blocking C work) on threads of its own, sharing the cores
/// fairly and admitting work by the memory it will hold.
///
/// **Order** — start-time fair queueing in two levels, with the shortest work first inside:
/// - *Tenants* share the cores equally: each has a virtual time (the core time it has had
///   since it became busy, joined at the tenants' virtual clock), and the tenant furthest behind
///   goes first, so one tenant's campaign of heavy payloads takes that tenant's part and no more.
/// - *Within a tenant* a job's key is its payload's virtual time plus the CPU the job is still
///   expected to need (from its header: ``WorkEstimate``); the smallest key goes first. A payload
///   joins at its tenant's clock (which moves by the tenant's core time over its busy
///   payloads), so a light payload that arrives beside heavy ones is served at once; a running
///   job's key stays put (its payload's time grows as its need shrinks), so equal work finishes
///   in the order it came instead of all of it late together; within a payload the job expected
///   to finish first goes first; and a heavy payload that waits keeps its time while the clock
///   moves on, so lighter work passes it for a bounded while only (ageing).
///
/// **Slices** — a job holds a core for a slice (``Settings/slice``); then, at its next checkpoint
/// (the deadline checks between row bands, tiles and frames), it gives the core up when a
/// waiting job comes first by more than a small margin, and waits on its own thread, keeping
/// what it has allocated, until its turn comes again. Work inside one library call keeps its
/// core until it reaches a checkpoint.
///
/// **Memory** — a job says what it will hold as soon as its header is read
/// (``WorkDeadline/expect(_:)``), before it allocates it; a job is started, or let go on past
/// that point, only while everything admitted fits ``Settings/memory`` — or when nothing else
/// holds memory, so a job larger than the budget still runs alone (its own limits decide it).
/// Large jobs (over an eighth of the budget each) may hold three quarters of it together, so a
/// light job never waits for memory that heavy ones hold while they wait their turn.
public final class WorkScheduler: Sendable {
    /// How the scheduler shares its cores.
    public struct Settings: Sendable {
        /// How the payloads of one tenant share the cores.
        public enum PayloadOrder: Sendable {
            /// Each payload its fair part, whatever its deadline (a service: a light payload
            /// never waits behind heavy ones, whose senders chose their deadlines).
            case fair
            /// Each payload its fair part until a job would miss its deadline at that part but
            /// can still make it on a core of its own (what it still needs is at least half the
            /// time left, and less than all of it): then it goes first, the earliest deadline
            /// first among such jobs. For a batch: many items share the cores, and a heavy item
            /// within the limits is not stretched past its deadline by the many beside it. A job
            /// that cannot make it (or says it needs more than it has) stays at its fair part.
            case fairUntilLate
        }

        /// Jobs running at once (one per core).
        public var cores: Int
        /// Memory all admitted jobs may hold together, in bytes.
        public var memory: Int
        /// How long a job keeps its core before it gives way to a job the order puts first.
        public var slice: Duration
        /// Jobs started and not finished (running or waiting mid-way), each on a thread.
        public var started: Int
        /// Jobs started beyond which another starts only when it is expected to need a quarter
        /// or less of what each started job still needs: a light job passes heavy ones at once,
        /// while jobs of like size wait their turn instead of all starting, each holding its
        /// memory, and all finishing late together.
        public var crowd: Int
        /// How one tenant's payloads share the cores (within a payload the job expected to
        /// finish first goes first either way).
        public var order: PayloadOrder

        /// `cores` cores, `memory` bytes, 20 ms slices, up to 32 jobs started per core, a crowd
        /// of twice the cores.
        public init(
            cores: Int, memory: Int, slice: Duration = .milliseconds(20), started: Int? = nil, crowd: Int? = nil,
            order: PayloadOrder = .fair
        ) {
            self.cores = max(1, cores)
            self.memory = max(1 << 20, memory)
            self.slice = slice
            self.started = max(self.cores, started ?? 32 * self.cores)
            self.crowd = min(self.started, max(self.cores, crowd ?? 2 * self.cores))
            self.order = order
        }

        /// A job that holds more than an eighth of the budget is large: large jobs together
        /// may hold three quarters of it, so light work always finds memory beside them.
        func isLarge(_ bytes: Int) -> Bool { bytes > memory / 8 }
        var largeShare: Int { memory / 4 * 3 }
    }

    /// What one finished job cost.
    public struct JobRecord: Sendable {
        /// When it first got a core and when it finished.
        public var started: ContinuousClock.Instant
        public var finished: ContinuousClock.Instant
        /// CPU time its thread spent on it (does not grow while the thread waits for a core).
        public var cpu: Duration
        /// How often it gave its core up for another job.
        public var yields: Int
    }

    /// The scheduler's figures at one moment, for gauges and tests.
    public struct Load: Sendable, Equatable {
        /// Jobs holding a core.
        public var running: Int
        /// Jobs started and waiting for a core (yielded) or for memory.
        public var waiting: Int
        /// Jobs not started yet.
        public var queued: Int
        /// Memory the started jobs hold, in bytes.
        public var memory: Int
    }

    public let settings: Settings
    private let state = Mutex(State())
    private let threads: ThreadPool
    private let idle = DispatchGroup()
    private let last = Mutex<JobRecord?>(nil)
    private let nice = Atomic<Int32>(0)

    /// The threads' Linux nice value, applied before each job they start.
    public var niceness: Int32 {
        get { nice.load(ordering: .relaxed) }
        set { nice.store(newValue, ordering: .relaxed) }
    }

    /// A scheduler with `settings`, its threads named `name`.
    public init(_ settings: Settings, name: String = "attache-work") {
        self.settings = settings
        threads = ThreadPool(name: name)
    }

    /// The figures now.
    public var load: Load {
        state.withLock { s in
            let waiting = s.jobs.values.filter { $0.phase == .ready || $0.phase == .memory }.count
            return Load(
                running: s.running, waiting: waiting, queued: s.jobs.values.filter { $0.phase == .queued }.count,
                memory: s.jobs.values.reduce(0) { $0 + $1.reserved })
        }
    }

    /// Jobs submitted and not finished.
    public var inFlight: Int { state.withLock { $0.jobs.count } }

    /// The most recently finished job.
    public var lastJob: JobRecord? { last.withLock { $0 } }

    /// Waits until no job is queued or running; false when `timeout` passed first.
    public func waitUntilIdle(timeout: Duration) -> Bool {
        idle.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds))) == .success
    }

    /// Runs `body` on one of the scheduler's threads when its turn comes, and returns its value.
    ///
    /// - Parameters:
    ///   - group: whom the job is for (its tenant and payload).
    ///   - estimate: what it is expected to cost before its header is read; it says more with
    ///     ``WorkDeadline/expect(_:)``.
    ///   - deadline: the job's deadline: its checks are the job's checkpoints, and a job
    ///     waiting for its turn stops waiting when it passes or is cancelled.
    public func run<T: Sendable>(
        group: WorkGroup, estimate: WorkEstimate, deadline: WorkDeadline, _ body: @escaping @Sendable () -> T
    ) async -> T {
        await withCheckedContinuation { continuation in
            let job = Job(scheduler: self, group: group, estimate: estimate, deadline: deadline)
            job.body = { [self] in
                let cpuStart = Self.threadCPUTime()
                deadline.attach(job)
                let value = body()
                deadline.attach(nil)
                let record = JobRecord(
                    started: job.firstRun ?? .now, finished: .now, cpu: Self.threadCPUTime() - cpuStart,
                    yields: job.yields)
                last.withLock { $0 = record }
                finish(job)
                continuation.resume(returning: value)
            }
            idle.enter()
            let actions = state.withLock { s -> [Action] in
                s.add(job)
                return s.dispatch(settings)
            }
            perform(actions)
        }
    }

    // MARK: - Checkpoints (called on the job's own thread)

    /// At a checkpoint: gives the core up when the slice is over and another job comes first.
    func checkpoint(_ job: Job) {
        let now = att_monotonic_ns()
        guard now >= job.checkAfter.load(ordering: .relaxed) else { return }
        let cpu = Self.threadCPU()
        let yield = state.withLock { s -> [Action]? in
            guard job.phase == .running else { return nil }
            s.charge(job, now: cpu)
            guard s.shouldYield(job, settings) else {
                job.checkAfter.store(now + settings.slice.nanoseconds, ordering: .relaxed)
                return nil
            }
            job.phase = .ready
            job.yields += 1
            s.running -= 1
            return s.dispatch(settings)
        }
        guard let yield else { return }
        perform(yield)
        waitForTurn(job)
    }

    /// The job now knows what it costs: a larger memory figure is admitted before the job goes
    /// on (it waits, its core given up, until it fits), and the order is looked at again.
    func expect(_ job: Job, _ estimate: WorkEstimate) {
        let cpu = Self.threadCPU()
        let actions = state.withLock { s -> [Action]? in
            guard job.phase == .running else { return nil }
            s.charge(job, now: cpu)
            job.estimate = estimate
            if job.estimate.memory > job.reserved {
                // Memory it has not allocated yet: when another job comes first, or the memory
                // does not fit, it waits to be admitted holding only what it holds now.
                if !s.fits(job, settings) || s.shouldYield(job, settings) {
                    job.phase = .memory
                    job.yields += 1
                    s.running -= 1
                    return s.dispatch(settings)
                }
                job.reserved = job.estimate.memory
                return nil
            }
            guard s.shouldYield(job, settings) else { return nil }
            job.phase = .ready
            job.yields += 1
            s.running -= 1
            return s.dispatch(settings)
        }
        guard let actions else { return }
        perform(actions)
        waitForTurn(job)
    }

    /// The deadline was cancelled: a job waiting for its turn stops waiting.
    func interrupt(_ job: Job) {
        job.wake.signal()
    }

    /// Blocks the job's thread until it is given a core again, or its deadline passes (then it
    /// goes on without one, only to unwind: its next check throws).
    private func waitForTurn(_ job: Job) {
        while true {
            _ = job.wake.wait(timeout: .now() + .milliseconds(50))
            let done = state.withLock { s -> Bool in
                if job.phase == .running { return true }
                guard job.deadline.hasExpired else { return false }
                // Out of the queue; it holds no core, and unwinds at once.
                job.phase = .leaving
                return true
            }
            if done { break }
        }
        let cpu = Self.threadCPU()
        state.withLock { _ in job.counted = cpu }
        job.checkAfter.store(att_monotonic_ns() + settings.slice.nanoseconds, ordering: .relaxed)
    }

    private func finish(_ job: Job) {
        let cpu = Self.threadCPU()
        let actions = state.withLock { s -> [Action] in
            if job.phase == .running {
                s.charge(job, now: cpu)
                s.running -= 1
            }
            s.remove(job)
            return s.dispatch(settings)
        }
        perform(actions)
        idle.leave()
    }

    private func perform(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .start(let job):
                threads.run(nice: niceness) {
                    let cpu = Self.threadCPU()
                    self.state.withLock { _ in job.counted = cpu }
                    job.checkAfter.store(att_monotonic_ns() + self.settings.slice.nanoseconds, ordering: .relaxed)
                    job.body?()
                    job.body = nil
                }
            case .resume(let job):
                job.wake.signal()
            }
        }
    }

    /// The calling thread's CPU clock, in nanoseconds (never 0).
    static func threadCPU() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return max(1, UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
    }

    static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }
}

extension WorkScheduler {
    enum Phase {
        /// Submitted, not started: no thread, no memory.
        case queued
        /// Holding a core.
        case running
        /// Started, waiting for a core.
        case ready
        /// Started, waiting for memory to be admitted.
        case memory
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
        var yields = 0
        var firstRun: ContinuousClock.Instant?
        var body: (@Sendable () -> Void)?
        let wake = DispatchSemaphore(value: 0)
        /// Before this (monotonic nanoseconds) a checkpoint returns at once.
        let checkAfter = Atomic<UInt64>(0)

        private static let ids = Atomic<UInt64>(0)

        init(scheduler: WorkScheduler, group: WorkGroup, estimate: WorkEstimate, deadline: WorkDeadline) {
            id = Self.ids.add(1, ordering: .relaxed).newValue
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
    }

    /// How far ahead of a waiting job a running one may be before it gives its core up: less
    /// than this is not worth the switch.
    static let granularity: UInt64 = 10_000_000
    /// The same between tenants.
    static let tenantGranularity: UInt64 = 50_000_000

    struct State {
        var jobs: [UInt64: Job] = [:]
        var tenants: [String: Share] = [:]
        var payloads: [WorkGroup: Share] = [:]
        /// The tenants' virtual clock: core time over the number of busy tenants.
        var clock: UInt64 = 0
        var running = 0
        var started = 0

        mutating func add(_ job: Job) {
            jobs[job.id] = job
            let tenant = job.group.tenant
            if tenants[tenant] == nil { tenants[tenant] = Share(virtual: clock, jobs: 0) }
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
            job.phase = .leaving
            let tenant = job.group.tenant
            payloads[job.group]!.jobs -= 1
            if payloads[job.group]!.jobs == 0 {
                payloads[job.group] = nil
                tenants[tenant]!.payloads -= 1
            }
            tenants[tenant]!.jobs -= 1
            if tenants[tenant]!.jobs == 0 { tenants[tenant] = nil }
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
                share.virtual += spent
                share.clock += spent / UInt64(max(1, share.payloads))
                tenants[job.group.tenant] = share
            }
            clock += spent / UInt64(max(1, tenants.count))
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

        /// Whether `job` may be given a core now (as for memory and threads; `startLimit`: see
        /// ``startLimit(_:)``).
        func eligible(_ job: Job, _ settings: Settings, held: Held, startLimit: UInt64?) -> Bool {
            switch job.phase {
            case .ready: return true
            case .queued:
                guard let startLimit, job.expected <= startLimit else { return false }
                return fits(job, settings, held: held)
            case .memory: return fits(job, settings, held: held)
            case .running, .leaving: return false
            }
        }

        /// Whether a queued job may be started as for the count of started jobs: below the
        /// crowd, or below the cap when it is expected to need a quarter or less of what each
        /// started job still needs (``Settings/crowd``).
        func mayStart(_ job: Job, _ settings: Settings) -> Bool {
            guard let limit = startLimit(settings) else { return false }
            return job.expected <= limit
        }

        /// The most CPU a queued job may be expected to need to be started now (nil: none may
        /// start): any below the crowd, a quarter of the least any started job still needs up
        /// to the cap.
        func startLimit(_ settings: Settings) -> UInt64? {
            if started < settings.crowd { return .max }
            guard started < settings.started else { return nil }
            let least = jobs.values.lazy.filter { $0.phase != .queued && $0.phase != .leaving }.map(\.remaining).min()
            return (least ?? .max) / 4
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

        /// Whether `job` is small and fits within the small jobs' quarter beside what the others
        /// hold (`held`, without the job's own).
        func fitsSmallShare(_ job: Job, _ settings: Settings, held: Held) -> Bool {
            let need = job.estimate.memory
            return !settings.isLarge(need) && held.small + need <= settings.memory - settings.largeShare
        }

        /// The order: the tenant with the least virtual time (by more than `tenantMargin`),
        /// then (by ``Settings/PayloadOrder/fairUntilLate``) a late job, the earliest deadline
        /// first, then the smallest key (by more than `margin`), then the earliest job.
        /// `now`: the monotonic clock, read once by the caller for all its comparisons.
        func precedes(
            _ a: Job, _ b: Job, _ settings: Settings, now: UInt64, tenantMargin: UInt64 = 0, margin: UInt64 = 0
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
            let (x, y) = (key(a), key(b))
            if margin > 0 { return x &+ margin < y }
            return x != y ? x < y : a.id < b.id
        }

        /// The job the order puts first among those that may go now. When the first of those
        /// waiting to be admitted does not fit, the jobs after it are admitted only within the
        /// small jobs' quarter (else a stream of them could keep it waiting for ever); jobs
        /// already under way go on.
        func best(_ settings: Settings, now: UInt64) -> Job? {
            let limit = startLimit(settings)
            var head: Job?
            for job in jobs.values where job.phase == .queued || job.phase == .memory {
                if job.phase == .queued, limit.map({ job.expected > $0 }) ?? true { continue }
                if head == nil || precedes(job, head!, settings, now: now) { head = job }
            }
            let all = held(settings)
            let blocked = head.map { !fits($0, settings, held: all) } ?? false
            var best: Job?
            for job in jobs.values where eligible(job, settings, held: all, startLimit: limit) {
                if blocked, job !== head, job.phase != .ready,
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

        /// Whether a running job should give its core to a waiting one: only when that one
        /// comes first by more than the granularity.
        func shouldYield(_ job: Job, _ settings: Settings) -> Bool {
            let now = att_monotonic_ns()
            guard let other = best(settings, now: now) else { return false }
            return precedes(
                other, job, settings, now: now, tenantMargin: WorkScheduler.tenantGranularity,
                margin: WorkScheduler.granularity)
        }

        /// Gives free cores to the jobs the order puts first.
        mutating func dispatch(_ settings: Settings) -> [Action] {
            var actions: [Action] = []
            while running < settings.cores {
                var next = best(settings, now: att_monotonic_ns())
                if next == nil, running == 0 {
                    // Nothing runs and nothing fits: the job waiting for the least memory goes
                    // (else the jobs holding memory would wait for each other forever).
                    next = jobs.values.filter { $0.phase == .memory }.min { $0.estimate.memory < $1.estimate.memory }
                }
                guard let job = next else { break }
                running += 1
                switch job.phase {
                case .queued:
                    started += 1
                    job.reserved = job.estimate.memory
                    job.firstRun = .now
                    job.phase = .running
                    actions.append(.start(job))
                case .memory:
                    job.reserved = job.estimate.memory
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

    /// Threads kept for the jobs: one per started job, kept idle when its job is done.
    final class ThreadPool: Sendable {
        private let idle = Mutex<[Worker]>([])
        private let name: String
        private let count = Atomic<Int>(0)

        init(name: String) { self.name = name }

        func run(nice: Int32, _ body: @escaping @Sendable () -> Void) {
            let worker =
                idle.withLock { $0.popLast() }
                ?? Worker(name: "\(name)-\(count.add(1, ordering: .relaxed).newValue)", pool: self)
            worker.give(nice: nice, body)
        }

        fileprivate func park(_ worker: Worker) {
            idle.withLock { $0.append(worker) }
        }
    }

    fileprivate final class Worker: Sendable {
        private let job = Mutex<(body: (@Sendable () -> Void)?, nice: Int32)>((nil, 0))
        private let ready = DispatchSemaphore(value: 0)

        init(name: String, pool: ThreadPool) {
            let thread = Thread { [self] in
                var applied: Int32 = 0
                while true {
                    ready.wait()
                    guard let (body, nice) = job.withLock({ s in s.body.map { ($0, s.nice) } }) else { continue }
                    job.withLock { $0.body = nil }
                    if nice != applied {
                        #if os(Linux)
                        // On Linux the nice value is per thread, and `who` 0 is the calling
                        // thread. Lowering it again needs privilege; a refusal leaves it.
                        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
                        #endif
                        applied = nice
                    }
                    body()
                    pool.park(self)
                }
            }
            thread.name = name
            thread.stackSize = 8 << 20
            thread.start()
        }

        func give(nice: Int32, _ body: @escaping @Sendable () -> Void) {
            job.withLock { $0 = (body, nice) }
            ready.signal()
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (0 for negative ones).
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
