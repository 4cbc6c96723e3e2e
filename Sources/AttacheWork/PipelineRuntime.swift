/// How this process runs the pipelines' work: the workers, the memory their transforms may hold
/// together, the order their jobs are taken in, their nice value and the allocator. One value,
/// made by the executable for `serve` or `batch` and applied once before the first job; the
/// libraries read what it set and set none of it.
public struct PipelineRuntime: Sendable, Equatable {
    /// Whose jobs go first when the workers are all busy.
    public enum Order: Sendable, Equatable {
        /// A service's: each payload its fair part of the cores, light jobs before heavy ones.
        case service
        /// A batch's, whose items are all one sender's: a job that would miss its deadline at
        /// its fair part, and can still make it on a core of its own, first; 64 MiB a worker.
        case batch
    }

    /// The allocator's bounds (``ProcessMemory/bound(arenas:large:trim:)``).
    public struct Allocator: Sendable, Equatable {
        public var arenas: Int
        public var large: Int
        public var trim: Int
    }

    /// Workers (nil: one per core).
    public var workers: Int?
    /// Bytes the transforms may hold together (nil: the order's default).
    public var memory: Int?
    public var order: Order
    /// The workers' Linux nice value, 0 to 19.
    public var workerNice: Int32
    public var allocator: Allocator

    /// A service's: workers at `workerNice` so that request handling is never queued behind
    /// decoding; two heaps, buffers of 2 MiB and up mapped apart, so the peak follows the decodes
    /// admitted (docs/benchmarks.md: 223-256 MB through the 16- and 64-client runs, where glibc's
    /// defaults kept 700-850 MB).
    public static func service(memory: Int, workerNice: Int32) -> PipelineRuntime {
        PipelineRuntime(
            workers: nil, memory: memory, order: .service, workerNice: workerNice,
            allocator: Allocator(arenas: 2, large: 2 << 20, trim: 8 << 20))
    }

    /// A batch's: `workers` and `memory` when given, the batch order, four heaps.
    public static func batch(workers: Int?, memory: Int?) -> PipelineRuntime {
        PipelineRuntime(
            workers: workers, memory: memory, order: .batch, workerNice: 0,
            allocator: Allocator(arenas: 4, large: 1 << 20, trim: 4 << 20))
    }

    /// Sets the process up as this value says. Once, before the first job: the workers start
    /// with it and stay.
    public func apply() {
        if let workers { PipelineWorkers.use(workers) }
        if let memory { PipelineWorkers.useMemory(memory) }
        if order == .batch { PipelineWorkers.useBatchScheduling() }
        PipelineWorkers.niceness = workerNice
        ProcessMemory.bound(arenas: allocator.arenas, large: allocator.large, trim: allocator.trim)
    }
}
