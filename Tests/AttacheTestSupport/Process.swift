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

/// The name and nice value of thread `id` of process `pid` (this one unless said), from its
/// `/proc` stat line (the 19th field; the name in parentheses before it may hold spaces).
public func threadStat(_ id: Int32, of pid: String = "self") throws -> (name: String, nice: Int32) {
    let stat = try String(contentsOfFile: "/proc/\(pid)/task/\(id)/stat", encoding: .utf8)
    guard id > 0, let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else {
        throw POSIXError(.ESRCH)
    }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the name: state (3), ppid (4), ... priority (18), nice (19).
    guard fields.count > 16, let nice = Int32(fields[16]) else { throw POSIXError(.EINVAL) }
    return (String(stat[stat.index(after: open)..<close]), nice)
}

/// The nice value of thread `id` of this process.
public func threadNice(_ id: Int32) throws -> Int32 { try threadStat(id).nice }

/// Every thread of process `pid` that is still there: its name and nice value.
public func threadStats(of pid: Int32) throws -> [(name: String, nice: Int32)] {
    try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { tid in
        try? threadStat(Int32(tid) ?? 0, of: String(pid))
    }
}
