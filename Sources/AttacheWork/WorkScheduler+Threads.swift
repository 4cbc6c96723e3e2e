internal import CAttacheShim
import Dispatch
import Foundation
import Synchronization

extension WorkScheduler {
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
                att_thread_name(name)
                var applied: Int32 = 0
                while true {
                    ready.wait()
                    guard let (body, nice) = job.withLock({ s in s.body.map { ($0, s.nice) } }) else { continue }
                    job.withLock { $0.body = nil }
                    if nice != applied {
                        att_thread_nice(nice)
                        applied = nice
                    }
                    body()
                    pool.park(self)
                }
            }
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
