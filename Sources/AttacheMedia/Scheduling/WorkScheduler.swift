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
