internal import CAttacheShim

/// The process's heap, as the runtime sets it up (``PipelineRuntime/apply()``) and the workers
/// give it back when they go idle. Process-wide: only the executable and the workers call these.
public enum ProcessMemory {
    /// For processes that decode one file after another: keeps freed decoder buffers in the
    /// heap for the next file instead of returning them to the kernel and faulting them in
    /// again. Call once at start.
    public static func tuneForBatch() {
        att_tune_allocator_for_batch()
    }

    /// For processes that run many jobs at once for a long time (a batch, a service): buffers
    /// of `large` bytes and up (decoded rows, coefficient planes, fetched bodies) are always
    /// mapped and unmapped instead of cached in per-thread heaps, free memory past `trim` bytes
    /// at a heap's top goes back to the kernel, and the heaps are `arenas` (glibc otherwise
    /// makes up to 8 per core, each keeping what its threads freed), so the resident size
    /// follows the buffers alive, not every size once used. Call once at start.
    public static func bound(arenas: Int, large: Int, trim: Int) {
        att_bound_allocator(Int32(arenas), large, trim)
    }

    /// Gives the heap's free pages back to the kernel. Decoding leaves large freed buffers in
    /// the allocator's per-thread arenas; a long-running process calls this when it goes idle
    /// so that its resident size follows its work, not its history.
    public static func releaseFree() {
        att_release_free_memory()
    }
}
