import NIOCore
import Synchronization

/// Cancels the work of a request whose client hangs up, with one close callback per
/// connection: a keep-alive connection carries many requests, and a callback per request would
/// keep every one of them (and what it captured) until the connection closes.
final class HangUps: Sendable {
    /// The work in progress on one connection.
    final class Slot: Sendable {
        private let cancel = Mutex<(@Sendable () -> Void)?>(nil)

        func set(_ action: (@Sendable () -> Void)?) { cancel.withLock { $0 = action } }

        func fire() {
            cancel.withLock { action in
                defer { action = nil }
                return action
            }?()
        }
    }

    private let watched = Mutex<[ObjectIdentifier: Slot]>([:])

    /// Connections being watched (for tests).
    var count: Int { watched.withLock { $0.count } }

    /// Runs `cancel` if `channel` closes before `clear()` is called on the returned slot.
    func watch(_ channel: any Channel, cancel: @escaping @Sendable () -> Void) -> Slot {
        let id = ObjectIdentifier(channel)
        let (slot, isNew) = watched.withLock { watched -> (Slot, Bool) in
            if let slot = watched[id] { return (slot, false) }
            let slot = Slot()
            watched[id] = slot
            return (slot, true)
        }
        slot.set(cancel)
        if isNew {
            channel.closeFuture.whenComplete { [self] _ in
                watched.withLock { _ = $0.removeValue(forKey: id) }
                slot.fire()
            }
        }
        return slot
    }
}
