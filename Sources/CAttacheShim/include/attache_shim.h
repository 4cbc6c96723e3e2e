// What every C shim shares: one outcome code and one error record (a code and a message buffer)
// for every failure a shim reports, mapped to a typed Swift error by one function
// (AttacheError(shim:format:)); and the deadline cells the shims poll.
#ifndef ATTACHE_SHIM_H
#define ATTACHE_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Outcome of a shim call. Stable values: the Swift side maps them to typed errors.
typedef enum {
    ATT_OK = 0,
    ATT_ERR_CORRUPT = 1,
    ATT_ERR_TRUNCATED = 2,
    ATT_ERR_UNSUPPORTED = 3,
    ATT_ERR_MEMORY_LIMIT = 4,
    ATT_ERR_SCAN_LIMIT = 5,
    ATT_ERR_DIMENSIONS = 6,
    ATT_ERR_TIMEOUT = 7,
    ATT_ERR_INTERNAL = 8,
    ATT_ERR_PIXELS = 9,      // width x height over the pixel limit
    ATT_ERR_STRUCTURE = 10,  // more items, tiles or boxes than the container limits allow
    ATT_ERR_STREAMS = 11,    // more streams or tracks than the limit
    ATT_ERR_DURATION = 12,   // longer than the limit, counted from the packets
} att_status;

typedef struct {
    int32_t status;
    char message[240];
} att_error;

/// Fills `error` (when not NULL) with `status` and a printf-style message.
void att_set_error(att_error *error, int32_t status, const char *format, ...) __attribute__((format(printf, 3, 4)));

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t att_monotonic_ns(void);

/// Names the calling thread as the kernel shows it (`top -H`, /proc/PID/task/TID/comm), cut to
/// the kernel's 15 bytes. Foundation's `Thread.name` does not always get there on Linux: set
/// before `start()` it is never applied, and from inside the new thread only once `start()` has
/// returned in the thread that made it.
void att_thread_name(const char *name);

/// The calling thread's Linux thread id (what /proc/self/task/ names it by).
int32_t att_thread_id(void);

/// Sets the calling thread's own nice value (per thread on Linux): 0, or the error number of a
/// refusal, which leaves it as it was (a value below the thread's needs CAP_SYS_NICE or a
/// nice limit, RLIMIT_NICE, that allows it).
int32_t att_thread_nice(int32_t nice);

/// A deadline cell: CLOCK_MONOTONIC nanoseconds, 0 for none, written by Swift while C polls it.
uint64_t att_deadline_load(const uint64_t *cell);
void att_deadline_store(uint64_t *cell, uint64_t value);
/// Nonzero once the cell's deadline has passed (a NULL cell never passes).
int att_deadline_passed(const uint64_t *cell);

/// Keeps freed large buffers in the heap for reuse (batch work decodes one file after another)
/// instead of unmapping them and faulting fresh pages in for the next file.
void att_tune_allocator_for_batch(void);
/// Blocks of `large` bytes and up always mapped and unmapped, a heap top past `trim` bytes
/// given back, at most `arenas` heap arenas: resident memory follows the live buffers of a long
/// run of concurrent decodes.
void att_bound_allocator(int arenas, long large, long trim);
/// Returns the heap's free pages to the kernel (glibc malloc_trim); a no-op elsewhere.
void att_release_free_memory(void);

#ifdef __cplusplus
}
#endif

#endif
