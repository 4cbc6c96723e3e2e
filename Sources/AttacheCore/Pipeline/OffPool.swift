public import AttacheBase
import AttacheMedia
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (codecs, fsync) on threads of its own instead of Swift's cooperative
/// pool, so deadlines, timers and fetch completions never wait behind a decode: one worker
/// per core, taking jobs in order. A service can run the workers at a lower scheduling
/// priority (``PipelineWorkers/niceness``): then, when every core is decoding, the threads
/// that answer requests (health checks, refusals, downloads) still get a core at once.
///
/// Work handed over here cannot be interrupted from outside: each job is given a
/// ``AttacheMedia/WorkDeadline`` that the pipeline cancels when its payload is answered, and
/// the job checks it between bands and frames.
enum OffPool {
    /// How much lower than the rest of the process the workers are scheduled (Linux nice).
    static let niceness = Atomic<Int32>(0)
    /// Workers asked for before the first job (0: one per core).
    static let requested = Atomic<Int>(0)
    static let workers: Int = {
        let asked = requested.load(ordering: .relaxed)
        return asked > 0 ? asked : max(1, ProcessInfo.processInfo.activeProcessorCount)
    }()
    private static let jobs = JobQueue(workers: workers, name: "attache-work")
    /// The store's writes (hash, write, fsync, rename, catalog commit) on threads of their
    /// own: a worker waiting for the disk would otherwise leave its core idle while decodes
    /// queue behind it.
    private static let writes = JobQueue(workers: 4, name: "attache-store")
    /// A shared store's catalog statements (lookups, token issues, campaign claims) on threads
    /// of their own: a network round trip each, never queued behind an upload.
    private static let catalogs = JobQueue(workers: 4, name: "attache-catalog")
    /// Every job submitted and not yet finished (queued or running).
    private static let work = DispatchGroup()
    private static let pending = Atomic<Int>(0)
    private static let last = Mutex<JobRecord?>(nil)

    /// What one finished job cost.
    struct JobRecord: Sendable {
        /// When it got its worker and when it finished.
        var started: ContinuousClock.Instant
        var finished: ContinuousClock.Instant
        /// CPU time its thread spent on it (does not grow while the thread waits for a core).
        var cpu: Duration
    }

    /// Jobs submitted and not yet finished.
    static var inFlight: Int { pending.load(ordering: .relaxed) }

    /// The most recently finished job.
    static var lastJob: JobRecord? { last.withLock { $0 } }

    /// Waits until no job is queued or running; false when `timeout` passed first.
    static func waitUntilIdle(timeout: Duration) -> Bool {
        let nanoseconds =
            Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        return work.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    /// Runs `body` (CPU work: codecs) on a worker.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await run(on: jobs, body)
    }

    /// Runs `body` (a store write, mostly waiting for the disk) on a store thread.
    static func write<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await run(on: writes, body)
    }

    /// Runs `body` (catalog statements, mostly waiting for the network) on a catalog thread.
    static func catalog<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await run(on: catalogs, body)
    }

    private static func run<T: Sendable>(on queue: JobQueue, _ body: @escaping @Sendable () -> T) async -> T {
        pending.add(1, ordering: .relaxed)
        work.enter()
        return await withCheckedContinuation { continuation in
            queue.submit {
                let started = ContinuousClock.now
                let cpuStart = threadCPUTime()
                let value = body()
                let record = JobRecord(started: started, finished: .now, cpu: threadCPUTime() - cpuStart)
                last.withLock { $0 = record }
                pending.subtract(1, ordering: .relaxed)
                work.leave()
                continuation.resume(returning: value)
            }
        }
    }

    /// When the last queued job has finished (and not more often than every two seconds),
    /// the heap's free pages go back to the kernel: decoders free large buffers, and the
    /// allocator would otherwise keep them in whichever thread's arena they came from.
    static func releaseMemoryIfIdle() {
        guard pending.load(ordering: .relaxed) == 0 else { return }
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
            ImageProcessor.releaseFreeMemory()
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
    final class JobQueue: Sendable {
        private let state = Mutex<[@Sendable () -> Void]>([])
        private let available = DispatchSemaphore(value: 0)

        init(workers: Int, name: String) {
            for index in 0..<workers {
                let thread = Thread { [self] in
                    Thread.current.name = "\(name)-\(index)"
                    var applied: Int32 = 0
                    while true {
                        available.wait()
                        guard let job = state.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                        let wanted = OffPool.niceness.load(ordering: .relaxed)
                        if wanted != applied {
                            #if os(Linux)
                            // On Linux the nice value is per thread, and `who` 0 is the calling
                            // thread. Lowering it again needs privilege; a refusal leaves it.
                            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, wanted)
                            #endif
                            applied = wanted
                        }
                        job()
                        OffPool.releaseMemoryIfIdle()
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

    private static func threadCPUTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }
}

/// The threads that run the codecs and the store's writes for every pipeline in the process.
public enum PipelineWorkers {
    /// How many there are: one per core unless ``use(_:)`` said otherwise first.
    public static var count: Int { OffPool.workers }

    /// Runs `count` workers instead of one per core. Only before the first job: the threads
    /// start with it and stay.
    public static func use(_ count: Int) {
        OffPool.requested.store(max(1, count), ordering: .relaxed)
    }

    /// Their Linux nice value (0, the default: as the rest of the process; up to 19). A
    /// service raises it so that request handling is never queued behind decoding; a batch
    /// job leaves it. Applied by each worker before its next job; lowering it once raised
    /// needs privilege.
    public static var niceness: Int32 {
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
