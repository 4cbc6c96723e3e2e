internal import CAttacheFetch
internal import CAttacheShim
import Foundation
import Synchronization

/// One libcurl transfer, owned by Swift; freed when the last reference goes.
final class TransferHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { att_transfer_free(pointer) }

    /// Makes the next progress callback abort the transfer (any thread).
    func cancel() { att_transfer_cancel(pointer) }
}

/// The event loop: one thread drives every transfer through one libcurl multi handle
/// (connection reuse, HTTP/2 multiplexing, per-host connection cap). Async callers hand it a
/// transfer and are resumed with libcurl's result code; no blocking call ever runs on Swift's
/// cooperative pool.
/// `@unchecked`: the multi handle is touched only by the loop thread, except
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread.
final class FetchLoop: @unchecked Sendable {
    private struct Submission {
        let transfer: TransferHandle
        let continuation: CheckedContinuation<Int32, Never>
    }

    private let multi: OpaquePointer
    private let queue = Mutex<[Submission]>([])
    private let stopping = Atomic<Bool>(false)
    /// The loop thread's Linux thread id, 0 until it runs.
    let threadID = Atomic<Int32>(0)

    /// Starts the loop thread at Linux nice value `nice` (0: as the thread that made it).
    init(maxHostConnections: Int, maxTotalConnections: Int, nice: Int32 = 0) {
        multi = att_multi_new(Int32(maxHostConnections), Int32(maxTotalConnections))!
        // The thread holds the loop until `stop()`; then it finishes what is in flight and exits.
        let thread = Thread { [self] in
            att_thread_name("attache-fetch")
            if nice > 0 { att_thread_nice(nice) }
            threadID.store(att_thread_id(), ordering: .releasing)
            run()
        }
        thread.start()
    }

    /// Runs `transfer` to completion and returns its CURLcode.
    func perform(_ transfer: TransferHandle) async -> Int32 {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.withLock { $0.append(Submission(transfer: transfer, continuation: continuation)) }
                att_multi_wakeup(multi)
            }
        } onCancel: {
            transfer.cancel()
            att_multi_wakeup(multi)
        }
    }

    /// Ends the thread once the transfers in flight are done (the owner is going away).
    func stop() {
        stopping.store(true, ordering: .releasing)
        att_multi_wakeup(multi)
    }

    private func run() {
        var inFlight: [UInt64: Submission] = [:]
        var nextTag: UInt64 = 1
        defer { att_multi_free(multi) }
        while true {
            if stopping.load(ordering: .acquiring) && inFlight.isEmpty && queue.withLock({ $0.isEmpty }) { return }
            let submitted = queue.withLock { pending in
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            for submission in submitted {
                att_transfer_set_tag(submission.transfer.pointer, nextTag)
                if att_multi_add(multi, submission.transfer.pointer) == 0 {
                    inFlight[nextTag] = submission
                } else {
                    submission.continuation.resume(returning: -1)
                }
                nextTag += 1
            }
            // With transfers in flight, wake at least every 100 ms so progress callbacks (and
            // with them cancellation) run even on a silent connection.
            _ = att_multi_run(multi, inFlight.isEmpty ? 1000 : 100)
            var code: Int32 = 0
            while let done = att_multi_next_done(multi, &code) {
                if let submission = inFlight.removeValue(forKey: att_transfer_tag(done)) {
                    submission.continuation.resume(returning: code)
                }
            }
        }
    }
}
