import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 (or ::1) for the fetch tests: real sockets, keep-alive,
/// one thread per connection, and handlers free to misbehave (drip, lie, hang, cut off).
public final class TestHTTPServer: @unchecked Sendable {
    public struct Request {
        public let method: String
        public let path: String
        public let headers: [String: String]
    }

    /// Writes a response (or misbehaves) on `connection`.
    public typealias Handler = @Sendable (Request, Connection) -> Void

    public final class Connection: @unchecked Sendable {
        public let fd: Int32
        init(fd: Int32) { self.fd = fd }

        @discardableResult
        public func write(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes {
                    send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }

        @discardableResult
        public func write(_ text: String) -> Bool { write(Array(text.utf8)) }

        /// Writes bytes where they lie (a slice of a large body, without a copy).
        @discardableResult
        public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                offset += n
            }
            return true
        }

        /// The `Range: bytes=a-b` (or `a-`) of a request as offsets into a body of `count` bytes
        /// (end exclusive), nil when there is none.
        public static func range(_ request: Request, count: Int) -> Range<Int>? {
            guard let value = request.headers["range"], value.hasPrefix("bytes=") else { return nil }
            let parts = value.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let start = Int(parts[0]) else { return nil }
            let end = Int(parts[1]).map { min($0 + 1, count) } ?? count
            return start..<max(start, end)
        }

        /// A complete response with a correct length.
        public func respond(
            status: Int = 200, reason: String = "OK", headers: [String: String] = [:], body: [UInt8] = []
        ) {
            var head = "HTTP/1.1 \(status) \(reason)\r\nContent-Length: \(body.count)\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            write(Array((head + "\r\n").utf8) + body)
        }

        public func redirect(to location: String, status: Int = 302) {
            respond(status: status, reason: "Found", headers: ["Location": location])
        }

        /// Waits until the client closes the connection; how long that took, or nil after
        /// `limit`. Timed on the server's own thread, so a busy test executor cannot skew it.
        public func timeUntilClientCloses(limit: Duration) -> Duration? {
            let start = ContinuousClock.now
            var byte: UInt8 = 0
            while ContinuousClock.now - start < limit {
                // POLLIN | POLLRDHUP (0x2000, not exported to Swift)
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN | 0x2000), revents: 0)
                if poll(&descriptor, 1, 20) > 0 {
                    if recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0 { return ContinuousClock.now - start }
                }
            }
            return nil
        }

        /// Closes the connection (the handler is done with it).
        public var closed = false
        public func close() { closed = true }
    }

    public let port: Int
    public let host: String
    private let listener: Int32
    private let routes: Mutex<[String: Handler]>
    private let counts = Mutex<[String: Int]>([:])
    private let openConnections = Atomic<Int>(0)
    private let acceptedConnections = Atomic<Int>(0)

    /// Connections accepted so far (a refused-before-connect fetch never adds one).
    public var accepted: Int { acceptedConnections.load(ordering: .relaxed) }

    /// Starts listening on `host` (127.0.0.1 or ::1), port chosen by the kernel.
    public init(host: String = "127.0.0.1", port requested: UInt16 = 0, routes: [String: Handler] = [:]) throws {
        self.host = host
        self.routes = Mutex(routes)
        let v6 = host.contains(":")
        let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var bound: Int32
        var port = 0
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = requested.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin6_port))
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = requested.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
        }
        guard bound == 0, listen(fd, 512) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// `http://host:port` (IPv6 hosts bracketed).
    public var base: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }

    public func url(_ path: String) -> String { base + path }

    public func route(_ path: String, _ handler: @escaping Handler) { routes.withLock { $0[path] = handler } }

    /// What answers a path no route names (default: 404).
    public func fallback(_ handler: @escaping Handler) { fallbackHandler.withLock { $0 = handler } }
    private let fallbackHandler = Mutex<Handler?>(nil)

    /// How many requests reached `path`.
    public func count(_ path: String) -> Int { counts.withLock { $0[path] ?? 0 } }

    private func acceptLoop() {
        acceptConnections(on: listener) { client in
            acceptedConnections.add(1, ordering: .relaxed)
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            Thread.detachNewThread { [self] in serve(client) }
        }
    }

    private func serve(_ fd: Int32) {
        openConnections.add(1, ordering: .relaxed)
        defer {
            close(fd)
            openConnections.subtract(1, ordering: .relaxed)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // Read until the end of the request head.
            var headEnd: Int?
            while headEnd == nil {
                if let end = Self.find([13, 10, 13, 10], in: buffer) {
                    headEnd = end
                    break
                }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { return }
                buffer += chunk[0..<n]
            }
            let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
            buffer.removeFirst(headEnd! + 4)
            let lines = head.components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ")
            guard parts.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            let request = Request(method: String(parts[0]), path: String(parts[1]), headers: headers)
            let path = request.path.split(separator: "?").first.map(String.init) ?? request.path
            counts.withLock { $0[path, default: 0] += 1 }
            let connection = Connection(fd: fd)
            if let handler = routes.withLock({ $0[path] }) ?? fallbackHandler.withLock({ $0 }) {
                handler(request, connection)
            } else {
                connection.respond(status: 404, reason: "Not Found", body: Array("not found".utf8))
            }
            if connection.closed || headers["connection"]?.lowercased() == "close" { return }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<i + needle.count]) == needle { return i }
        }
        return nil
    }
}
