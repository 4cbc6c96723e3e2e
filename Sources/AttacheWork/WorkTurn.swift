internal import Synchronization

/// A piece of work's handle on the ``WorkScheduler`` that runs it: the two points where the
/// work meets the scheduler — **admission** (``expect(_:)``: what it now knows it costs; it waits
/// there until its memory is admitted) and **yield** (``checkpoint()``: it may give its core to
/// work the order puts first). While the work is not on a scheduler (a batch's item run alone, a
/// test), both return at once.
///
/// A ``WorkDeadline`` carries one for its work, so that the places that check the time (between
/// row bands, frames, progressive scans) are the work's checkpoints too; the turn itself knows
/// nothing of time.
public final class WorkTurn: Sendable {
    /// The scheduler's job the work runs as, while it runs on one.
    private let job = Mutex<WorkScheduler.Job?>(nil)

    init(_ job: WorkScheduler.Job? = nil) {
        self.job.withLock { $0 = job }
    }

    /// Runs the work under `job` from now on (nil: no longer).
    func attach(_ job: WorkScheduler.Job?) {
        self.job.withLock { $0 = job }
    }

    /// A turn for work split off from this one (a child deadline's), on the same job.
    func split() -> WorkTurn { WorkTurn(job.withLock { $0 }) }

    /// Admission: the work now knows what it costs (read from its header, before the memory is
    /// allocated). On a scheduler it waits here until its memory is admitted, and gives its
    /// core up if the order now puts another job first.
    public func expect(_ estimate: WorkEstimate) {
        if let job = job.withLock({ $0 }) { job.scheduler.expect(job, estimate) }
    }

    /// Yield: a point where the work may give its core to another job.
    public func checkpoint() {
        if let job = job.withLock({ $0 }) { job.scheduler.checkpoint(job) }
    }

    /// The work was cancelled: if it is waiting for its turn, it stops waiting.
    func interrupt() {
        if let job = job.withLock({ $0 }) { job.scheduler.interrupt(job) }
    }
}
