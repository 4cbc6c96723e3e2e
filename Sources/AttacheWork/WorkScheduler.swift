internal import CAttacheShim
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
    /// The tenant's weight: busy tenants share the cores in proportion to theirs (1 to 64).
    public var weight = 1
    /// The memory the tenant's jobs may hold at once, in bytes (nil: the budget's alone). A job
    /// that would pass it waits until the tenant's others give theirs back; alone, it runs.
    public var memory: Int? = nil

    /// A group of its own for a new payload of `tenant`, whose share of the cores is `weight`
    /// and whose jobs hold at most `memory` together.
    public static func payload(of tenant: String = "", weight: Int = 1, memory: Int? = nil) -> WorkGroup {
        WorkGroup(
            tenant: tenant, payload: nextPayload.add(1, ordering: .relaxed).newValue, weight: min(64, max(1, weight)),
            memory: memory)
    }

    private static let nextPayload = Atomic<UInt64>(0)
}

/// Runs the transforms (the codecs: blocking C work) on threads of its own, about one decode per
/// core, choosing what runs next by who is owed the cores and by what each job costs, and
/// admitting work by the memory it will hold.
///
/// **Classes** — every job starts *unread*: its first act is to read its header and say what it
/// costs (``WorkTurn/expect(_:)``), before it allocates anything. A job expected to need at
/// most ``Settings/light`` of CPU, holding at most a sixteenth of the memory budget, is *light*;
/// the others are *heavy*. At most ``Settings/heavy``
/// heavy jobs (one per core) are admitted at once — each holding its memory — and a heavy job
/// that is not admitted waits at that point holding only its header, so memory follows the
/// cores, not the number of clients. Light jobs need no such place: they run in the cores'
/// time, between a heavy job's checkpoints.
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
///   in the order it came; within a payload the job expected to finish first goes first; and a
///   heavy payload that waits keeps its time while the clock moves on, so lighter work passes
///   it for a bounded while only (ageing).
/// - *Heavy work of a tenant* goes in a line: when it came, less half of what it still needs
///   (at most half a second), work under way first. Each photo waits for those ahead of it, so
///   the long ones would be the tail in arrival order; counted this way they start a little
///   sooner and every answer comes nearer the same time after its request.
///
/// **Passing** — a light or unread job is *chosen next*: when every core is held, each running
/// heavy job is asked to look at its next checkpoint (the deadline checks between row bands,
/// tiles and frames), and the first to reach one gives its core up to the light job if the
/// order puts it first, and waits on its own thread, keeping what it has allocated, until the
/// light work is done. Heavy jobs do not take turns with each other: an admitted heavy job runs
/// until it ends (or gives way to light work), so each photo takes its own time, not a share of
/// everyone's. A job that turns out heavier than it said (past twice its estimate) becomes heavy
/// at its next checkpoint, and waits for a place if there is none.
///
/// **Memory** — a job is started, or let go on past its header, only while everything admitted
/// fits ``Settings/memory`` — or when nothing else holds memory, so a job larger than the budget
/// still runs alone (its own limits decide it). Large jobs (over an eighth of the budget each)
/// may hold three quarters of it together, so a light job never waits for memory that heavy
/// ones hold.
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
        /// How long a job keeps its core before it looks again whether light work waits.
        public var slice: Duration
        /// Jobs started and not finished (running, or waiting mid-way), each on a thread.
        public var started: Int
        /// Heavy jobs admitted at once, each holding its memory (one per core).
        public var heavy: Int
        /// The CPU time at or below which a job is light (runs beside the heavy ones' places), when
        /// it also holds at most a sixteenth of ``memory``.
        public var light: Duration
        /// How one tenant's payloads share the cores (within a payload the job expected to
        /// finish first goes first either way).
        public var order: PayloadOrder

        /// `cores` cores, `memory` bytes, 20 ms slices, up to 32 jobs started per core, one
        /// heavy job admitted per core, light up to 25 ms.
        public init(
            cores: Int, memory: Int, slice: Duration = .milliseconds(20), started: Int? = nil, heavy: Int? = nil,
            light: Duration = .milliseconds(25), order: PayloadOrder = .fair
        ) {
            self.cores = max(1, cores)
            self.memory = max(1 << 20, memory)
            self.slice = slice
            self.started = max(self.cores, started ?? 32 * self.cores)
            self.heavy = min(self.started, max(1, heavy ?? self.cores))
            self.light = light
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
        /// Jobs started and waiting for a core (yielded) or to be admitted (memory, a heavy place).
        public var waiting: Int
        /// Jobs not started yet (their header unread).
        public var queued: Int
        /// Memory the started jobs hold, in bytes.
        public var memory: Int
        /// Heavy jobs admitted (holding a place), and of the waiting ones the light and the heavy.
        public var heavy = 0
        public var waitingLight = 0
        public var waitingHeavy = 0

        public init(running: Int, waiting: Int, queued: Int, memory: Int) {
            (self.running, self.waiting, self.queued, self.memory) = (running, waiting, queued, memory)
        }
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
            let waiting = s.jobs.values.filter { $0.phase == .ready || $0.phase == .admission }
            var load = Load(
                running: s.running, waiting: waiting.count, queued: s.jobs.values.filter { $0.phase == .queued }.count,
                memory: s.jobs.values.reduce(0) { $0 + $1.reserved })
            load.heavy = s.jobs.values.filter(\.heavy).count
            load.waitingLight = waiting.filter { $0.isLight(settings) }.count
            load.waitingHeavy = waiting.count - load.waitingLight
            return load
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
    ///     ``WorkTurn/expect(_:)``.
    ///   - deadline: the job's deadline: its checks are the job's checkpoints, and a job
    ///     waiting for its turn stops waiting when it passes or is cancelled.
    public func run<T: Sendable>(
        group: WorkGroup, estimate: WorkEstimate, deadline: WorkDeadline, _ body: @escaping @Sendable () -> T
    ) async -> T {
        await withCheckedContinuation { continuation in
            let job = Job(scheduler: self, group: group, estimate: estimate, deadline: deadline)
            job.body = { [self] in
                let cpuStart = Self.threadCPUTime()
                deadline.turn.attach(job)
                let value = body()
                deadline.turn.attach(nil)
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
                let actions = s.dispatch(settings)
                // Every core held: the running heavy jobs look at their next checkpoint, not at
                // the end of their slice, whether this one comes first.
                if s.running >= settings.cores { s.nudgeHeavy() }
                return actions
            }
            perform(actions)
        }
    }

    // MARK: - Checkpoints (called on the job's own thread)

    /// At a checkpoint: a job grown heavier than it said takes a heavy place (or waits for one);
    /// a heavy job gives its core up when its slice is over (or it was asked to look) and light
    /// work the order puts first waits.
    func checkpoint(_ job: Job) {
        let now = att_monotonic_ns()
        guard now >= job.checkAfter.load(ordering: .relaxed) else { return }
        let cpu = Self.threadCPU()
        let yield = state.withLock { s -> [Action]? in
            guard job.phase == .running else { return nil }
            s.charge(job, now: cpu)
            job.checkAfter.store(now + settings.slice.nanoseconds, ordering: .relaxed)
            if !job.heavy, !job.isLight(settings) {
                guard s.admissible(job, settings) else { return s.pause(job, .admission, settings) }
                job.heavy = true
            }
            return s.shouldYield(job, settings) ? s.pause(job, .ready, settings) : nil
        }
        guard let yield else { return }
        perform(yield)
        waitForTurn(job)
    }

    /// The job now knows what it costs (its header is read, nothing allocated yet): it goes on
    /// only once admitted — its memory fits, and a heavy job holds one of the heavy places —
    /// waiting, its core given up, until it is; and light work the order puts first goes first.
    func expect(_ job: Job, _ estimate: WorkEstimate) {
        let cpu = Self.threadCPU()
        let actions = state.withLock { s -> [Action]? in
            guard job.phase == .running else { return nil }
            s.charge(job, now: cpu)
            job.estimate = estimate
            guard s.admissible(job, settings) else { return s.pause(job, .admission, settings) }
            s.admit(job, settings)
            return s.shouldYield(job, settings) ? s.pause(job, .ready, settings) : nil
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
