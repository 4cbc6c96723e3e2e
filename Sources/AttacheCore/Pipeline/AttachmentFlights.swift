internal import AttacheBase
internal import AttacheFetch
internal import AttacheMedia
import Synchronization

/// Attachments under way, shared by the payloads that name the same URL for the same pieces: a
/// campaign's payloads posted at once fetch, decode and store one picture once, not once each
/// (the fetcher shares a transfer only where no payload budget is in play, and every payload
/// has one). What a payload waits on is the flight's outcome; a flight stops when the last
/// payload waiting for it has gone.
///
/// A flight runs under the deadline of the payload that started it. One that joined with more
/// time left, and saw the flight end for lack of time, runs the attachment on its own.
final class AttachmentFlights: Sendable {
    /// What makes two attachments the same work: the URL, every piece's key (the rendition's
    /// spec, its small rendition's, each target's with its focus) and the sender's thumbnail
    /// options (they are in the entry).
    struct Key: Hashable {
        var url: String
        var rendition: String
        var small: String?
        var targets: [String]
        var options: ThumbnailOptions
        /// The sender's media hosts (a run under other rules is not this one's to join).
        var mediaHosts: SourceRules?
    }

    private final class Flight: Sendable {
        let task: Task<AttachmentOutcome, Never>
        let waiters = Atomic<Int>(1)
        init(task: Task<AttachmentOutcome, Never>) { self.task = task }
    }

    private let flights = Mutex<[Key: Flight]>([:])

    /// The outcome of `work` for `key`, shared with any payload already waiting for the same;
    /// `joined` says whether it was another's.
    func run(
        _ key: Key, _ work: @escaping @Sendable () async -> AttachmentOutcome
    ) async -> (outcome: AttachmentOutcome, joined: Bool) {
        let (flight, joined) = flights.withLock { flights -> (Flight, Bool) in
            if let existing = flights[key] {
                existing.waiters.add(1, ordering: .relaxed)
                return (existing, true)
            }
            let flight = Flight(task: Task { await work() })
            flights[key] = flight
            return (flight, false)
        }
        let outcome = await withTaskCancellationHandler {
            await flight.task.value
        } onCancel: {
            if flight.waiters.subtract(1, ordering: .relaxed).newValue == 0 { flight.task.cancel() }
        }
        flights.withLock { flights in
            if flights[key] === flight { flights[key] = nil }
        }
        return (outcome, joined)
    }
}
