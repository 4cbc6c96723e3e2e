public import AttacheBase
internal import CAttacheShim
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (codecs, fsync) on threads of its own instead of Swift's cooperative
/// pool, so deadlines, timers and fetch completions never wait behind a decode. The codecs run
/// on a ``WorkScheduler``: one job per core at a time, the cores shared fairly
/// between tenants and payloads and, within a payload, the job expected to finish first going
/// first; each job admitted by the memory it says it will hold. A service can run the workers
/// at a lower scheduling priority (``PipelineWorkers/niceness``): then, when every core is
/// decoding, the threads that answer requests (health checks, refusals, downloads) still get a
/// core at once.
///
/// Work handed over here cannot be interrupted from outside: each job is given a
/// ``WorkDeadline`` that the pipeline cancels when its payload is answered, and
/// the job checks it between bands and frames — where it also gives its core up when its slice
/// is over and another job comes first.
package enum OffPool {
    /// How much lower than the rest of the process the workers are scheduled (Linux nice).
    static let niceness = Atomic<Int32>(0)
    /// Workers asked for before the first job (0: one per core).
    static let requested = Atomic<Int>(0)
    /// Memory the transforms may hold together, asked for before the first job (0: the default).
    static let requestedMemory = Atomic<Int>(0)
    /// Whether the scheduler is set for a batch, asked for before the first job.
    static let requestedBatch = Atomic<Bool>(false)
    static let workers: Int = workersAsked
    /// The workers there are, or will be when the first job starts them.
    static var workersAsked: Int {
        let asked = requested.load(ordering: .relaxed)
        return asked > 0 ? asked : max(1, ProcessInfo.processInfo.activeProcessorCount)
    }
    /// The transforms' scheduler: cores shared by tenant, payload and expected cost, work
    /// admitted by its memory (``WorkScheduler``).
    static let scheduler: WorkScheduler = {
        let asked = requestedMemory.load(ordering: .relaxed)
        guard requestedBatch.load(ordering: .relaxed) else {
            return WorkScheduler(.init(cores: workers, memory: asked > 0 ? asked : defaultMemory(perWorker: 96 << 20)))
        }
        // A batch: a smaller budget, and late jobs first (PipelineWorkers.useBatchScheduling).
        return WorkScheduler(
            .init(
                cores: workers, memory: asked > 0 ? asked : defaultMemory(perWorker: 64 << 20),
                order: .fairUntilLate))
    }()
    /// `perWorker` bytes per worker, at most a quarter of the machine's memory (read without
    /// starting the workers: a count asked for later still applies).
    static func defaultMemory(perWorker: Int) -> Int {
        min(Int(clamping: ProcessInfo.processInfo.physicalMemory / 4), workersAsked * perWorker)
    }
    /// The store's writes (hash, write, fsync, rename, catalog commit) on threads of their
    /// own: a worker waiting for the disk would otherwise leave its core idle while decodes
    /// queue behind it.
    private static let writes = ThreadQueue(workers: 4, name: "attache-store")
    /// A shared store's catalog statements (lookups, token issues, campaign claims) on threads
    /// of their own: a network round trip each, never queued behind an upload.
    private static let catalogs = ThreadQueue(workers: 4, name: "attache-catalog")

    /// Jobs submitted and not yet finished (queued or running).
    package static var inFlight: Int { scheduler.inFlight }

    /// The most recently finished job.
    package static var lastJob: WorkScheduler.JobRecord? { scheduler.lastJob }

    /// Waits until no job is queued or running; false when `timeout` passed first.
    package static func waitUntilIdle(timeout: Duration) -> Bool {
        scheduler.waitUntilIdle(timeout: timeout)
    }

    /// Runs `body` (CPU work: codecs) on the scheduler, for `group`, under `deadline`.
    package static func run<T: Sendable>(
        group: WorkGroup, estimate: WorkEstimate, deadline: WorkDeadline, _ body: @escaping @Sendable () -> T
    ) async -> T {
        scheduler.niceness = niceness.load(ordering: .relaxed)
        let value = await scheduler.run(group: group, estimate: estimate, deadline: deadline, body)
        releaseMemoryIfIdle()
        return value
    }

    /// Runs `body` (a store write, mostly waiting for the disk) on a store thread.
    package static func write<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await run(on: writes, body)
    }

    /// Runs `body` (catalog statements, mostly waiting for the network) on a catalog thread.
    package static func catalog<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await run(on: catalogs, body)
    }

    private static func run<T: Sendable>(on queue: ThreadQueue, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.submit { continuation.resume(returning: body()) }
        }
    }

    /// When the last queued job has finished (and not more often than every two seconds),
    /// the heap's free pages go back to the kernel: decoders free large buffers, and the
    /// allocator would otherwise keep them in whichever thread's arena they came from.
    static func releaseMemoryIfIdle() {
        guard scheduler.inFlight == 0 else { return }
        let now = ContinuousClock.now
        // Now if the last release is old enough, else once when it will be (if still idle).
        let wait = release.withLock { state -> Duration? in
            if let last = state.last, now - last < .seconds(2) {
                guard !state.scheduled else { return nil }
                state.scheduled = true
                return .seconds(2) - (now - last)
            }
            state.last = now
            return .zero
        }
        guard let wait else { return }
        if wait == .zero {
            ProcessMemory.releaseFree()
            return
        }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + wait.milliseconds / 1000) {
            release.withLock {
                $0.scheduled = false
                $0.last = nil
            }
            releaseMemoryIfIdle()
        }
    }
    private static let release = Mutex<(last: ContinuousClock.Instant?, scheduled: Bool)>((nil, false))

    /// A first-in first-out queue served by a fixed set of threads, started on first use.
    final class ThreadQueue: Sendable {
        private let state = Mutex<[@Sendable () -> Void]>([])
        private let available = DispatchSemaphore(value: 0)

        init(workers: Int, name: String) {
            for index in 0..<workers {
                let thread = Thread { [self] in
                    att_thread_name("\(name)-\(index)")
                    while true {
                        available.wait()
                        guard let job = state.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                        job()
                    }
                }
                thread.stackSize = 8 << 20
                thread.start()
            }
        }

        func submit(_ job: @escaping @Sendable () -> Void) {
            state.withLock { $0.append(job) }
            available.signal()
        }
    }

}

/// The threads that run the codecs and the store's writes for every pipeline in the process,
/// set up by ``PipelineRuntime/apply()``.
public enum PipelineWorkers {
    /// How many there are: one per core unless ``use(_:)`` said otherwise first.
    public static var count: Int { OffPool.workers }

    /// Runs `count` workers instead of one per core. Only before the first job: the threads
    /// start with it and stay.
    static func use(_ count: Int) {
        OffPool.requested.store(max(1, count), ordering: .relaxed)
    }

    /// Memory the transforms may hold together (bytes): a job goes past its header only while
    /// what it says it will hold fits beside the others'. Only before the first job. Default:
    /// 96 MiB per worker, at most a quarter of the machine's memory.
    static func useMemory(_ bytes: Int) {
        OffPool.requestedMemory.store(max(1 << 20, bytes), ordering: .relaxed)
    }

    /// Sets the workers up for a batch, whose items are all one sender's and whose peak memory
    /// matters more than a light item's wait: a budget of 64 MiB per worker unless
    /// ``useMemory(_:)`` says otherwise, and a job that would miss its deadline at its fair part
    /// of the cores, and can still make it on a core of its own, first
    /// (``WorkScheduler/Settings/PayloadOrder/fairUntilLate``). Only before the
    /// first job.
    static func useBatchScheduling() {
        OffPool.requestedBatch.store(true, ordering: .relaxed)
    }

    /// The memory budget in use.
    public static var memory: Int { OffPool.scheduler.settings.memory }

    /// The budget a service uses unless told otherwise: 96 MiB per worker, at most a quarter of
    /// the machine's memory.
    public static var defaultMemory: Int { OffPool.defaultMemory(perWorker: 96 << 20) }
    /// The decode memory a setting may give (the service's and a tenant's): 16 MiB to 2^40 bytes.
    public static let memoryRange = (16 << 20)...(1 << 40)

    /// What the workers are doing now.
    public static var load: WorkScheduler.Load { OffPool.scheduler.load }

    /// Their Linux nice value (0, the default: as the rest of the process; up to 19). A
    /// service raises it so that request handling is never queued behind decoding; a batch
    /// job leaves it. Applied by each worker before its next job; lowering it once raised
    /// needs privilege.
    public internal(set) static var niceness: Int32 {
        get { OffPool.niceness.load(ordering: .relaxed) }
        set { OffPool.niceness.store(min(19, max(0, newValue)), ordering: .relaxed) }
    }
}

/// Runs blocking catalog statements (a shared store's PostgreSQL round trips) on the catalog's
/// own threads, off Swift's cooperative pool and never queued behind uploads.
public func onCatalogThread<T: Sendable>(
    _ body: @escaping @Sendable () throws(AttacheError) -> T
) async throws(AttacheError) -> T {
    try await OffPool.catalog { Result { () throws(AttacheError) in try body() } }.get()
}
