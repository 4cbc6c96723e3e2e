import CAttacheTestSupport
import Foundation

/// Open file descriptors of this process.
public func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Bytes the C heap has handed out and not taken back (glibc's view; 0 under a sanitizer).
public func heapInUse() -> Int {
    Int(att_test_heap_in_use())
}

/// Resident memory of this process.
public func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// CPU time the calling thread has used (it does not grow while the thread waits for a core).
public func threadCPUTime() -> Duration {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
}
