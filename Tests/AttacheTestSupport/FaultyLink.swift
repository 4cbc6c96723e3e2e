import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP link on 127.0.0.1 to a dependency (PostgreSQL, the bucket) that a test can cut and
/// restore, as an outage would: ``cut()`` resets every open connection and refuses new ones
/// (each accepted and reset at once), ``silence()`` stops every byte as a host gone from the
/// network does (open connections stay open and carry nothing, new ones are accepted and
/// never reach the dependency), ``restore()`` forwards again. Bytes are copied as they come,
/// one thread per direction per connection.
public final class FaultyLink: Sendable {
    /// The port this link listens on.
    public let port: Int
    private let listener: Int32
    private let target: (host: String, port: Int)
    private let state = Mutex<(up: Bool, connections: Set<Int32>)>((true, []))
    /// Set while the link is silent: the copies hold what they read, new connections are held.
    private let quiet = NSCondition()
    private nonisolated(unsafe) var silent = false
    private nonisolated(unsafe) var held: [Int32] = []

    /// Forwards 127.0.0.1:`port` (chosen by the kernel) to `host`:`targetPort` (IPv4).
    public init(to host: String, port targetPort: Int) throws {
        target = (host, targetPort)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, listen(fd, 256) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in state.withLock({ $0.connections }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Whether the link forwards now.
    public var isUp: Bool { state.withLock { $0.up } }

    /// The dependency goes away: open connections are reset, new ones reset as they come.
    public func cut() {
        let open = state.withLock { s -> Set<Int32> in
            s.up = false
            return s.connections
        }
        for fd in open { Self.reset(fd) }
    }

    /// The dependency stops answering without closing anything: bytes sent either way are
    /// held, connections made meanwhile are accepted and go nowhere.
    public func silence() {
        quiet.lock()
        silent = true
        quiet.unlock()
    }

    /// The dependency is back: new connections are forwarded, held bytes go on, connections
    /// made while it was silent are reset (their peers gave up on them long ago).
    public func restore() {
        state.withLock { $0.up = true }
        quiet.lock()
        silent = false
        let stranded = held
        held = []
        quiet.broadcast()
        quiet.unlock()
        for fd in stranded {
            Self.reset(fd)
            close(fd)
        }
    }

    /// Waits while the link is silent.
    private func passWhenHeard() {
        quiet.lock()
        while silent { quiet.wait() }
        quiet.unlock()
    }

    /// Holds `client` when the link is silent (true), else leaves it to be forwarded.
    private func holdIfSilent(_ client: Int32) -> Bool {
        quiet.lock()
        defer { quiet.unlock() }
        guard silent else { return false }
        held.append(client)
        return true
    }

    private func acceptLoop() {
        acceptConnections(on: listener) { client in
            if holdIfSilent(client) { return }
            guard isUp, let upstream = connectTarget() else {
                Self.reset(client)
                close(client)
                return
            }
            let registered = state.withLock { s -> Bool in
                guard s.up else { return false }
                s.connections.insert(client)
                s.connections.insert(upstream)
                return true
            }
            guard registered else {
                Self.reset(client)
                close(client)
                close(upstream)
                return
            }
            let ends = Mutex(0)
            let finish: @Sendable () -> Void = { [self] in
                // The second direction to end closes both sockets.
                guard
                    ends.withLock({ ended in
                        ended += 1
                        return ended == 2
                    })
                else { return }
                state.withLock {
                    $0.connections.remove(client)
                    $0.connections.remove(upstream)
                }
                close(client)
                close(upstream)
            }
            Thread.detachNewThread { [self] in
                Self.copy(from: client, to: upstream, pass: passWhenHeard)
                finish()
            }
            Thread.detachNewThread { [self] in
                Self.copy(from: upstream, to: client, pass: passWhenHeard)
                finish()
            }
        }
    }

    private func connectTarget() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(target.port).bigEndian
        inet_pton(AF_INET, target.host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Copies until either side ends; then the other side of the pair is shut down too.
    /// `pass` returns when what was read may be sent on.
    private static func copy(from source: Int32, to sink: Int32, pass: () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        outer: while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pass()
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes {
                    send(sink, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { break outer }
                sent += written
            }
        }
        shutdown(sink, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }

    /// Ends `fd` with a reset, as a peer that went away does.
    private static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Accepts connections on `listener` until it is shut down, handing each to `handle` (an
/// interrupted accept is tried again).
func acceptConnections(on listener: Int32, _ handle: (Int32) -> Void) {
    while true {
        let client = accept(listener, nil, nil)
        if client < 0 {
            if errno == EINTR { continue }
            return
        }
        handle(client)
    }
}
