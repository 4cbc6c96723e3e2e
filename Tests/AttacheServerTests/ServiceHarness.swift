import AttacheBase
import AttacheCore
import AttacheServer
import AttacheStore
import AttacheTestSupport
import Crypto
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// One Prometheus registry for the whole test process (swift-metrics is bootstrapped once).
enum TestMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}

/// The real service on 127.0.0.1, an ephemeral port, in this process.
final class RunningService: @unchecked Sendable {
    let service: AttacheService
    let port: Int
    let directory: TemporaryDirectory
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    static let apiKey = "test-key-0123456789abcdef"

    /// Starts it with a fresh store and `change` applied to the configuration.
    init(clock: TestClock? = nil, _ change: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        let directory = try TemporaryDirectory()
        var store = StoreConfiguration(root: directory.path + "/store")
        if let clock { store.clock = { clock.now } }
        var configuration = ServerConfiguration(store: store)
        configuration.port = 0
        configuration.apiKeys = [Self.apiKey, "second-key-for-rotation-000"]
        configuration.fetch = loopbackPolicy()
        configuration.collectionInterval = .zero
        change(&configuration)
        let registry = TestMetrics.registry
        let service = try AttacheService(configuration: configuration) { registry.emitToString() }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let app = service.application(logger: logger) { port in continuation.yield(port) }
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
        self.group = group
        task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        self.port = port
        self.service = service
        self.directory = directory
    }

    /// Shuts down gracefully, as on SIGTERM.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// The base path of attachment URLs (as the pipeline writes them, with this port).
    static func baseURL(port: Int) -> String { "http://127.0.0.1:\(port)/attachments" }
}

/// An answer read by `curl`.
struct HTTPAnswer: Sendable {
    var status: Int
    /// Lower-cased names.
    var headers: [String: String]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
    func json() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) as? [String: Any] ?? [:]
    }
}

/// `curl`, the client users have: one request, headers and body captured to files. The
/// process is awaited without holding a thread of the concurrency pool, which the service
/// in this process needs.
func curl(
    _ method: String = "GET", _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil,
    extra: [String] = []
) async throws -> HTTPAnswer {
    let directory = try TemporaryDirectory()
    let headerFile = directory.path + "/headers"
    let bodyFile = directory.path + "/body"
    // --noproxy: a test elsewhere in the process sets http_proxy for a moment.
    var arguments = ["-sS", "--noproxy", "*", "-D", headerFile, "-o", bodyFile, "--max-time", "120"]
    arguments += method == "HEAD" ? ["--head"] : ["-X", method]
    for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
    if let body {
        let input = directory.path + "/request"
        _ = FileManager.default.createFile(atPath: input, contents: Data(body))
        arguments += ["--data-binary", "@" + input]
    }
    arguments += extra + [url]
    _ = await runProcess("/usr/bin/curl", arguments)
    let head = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    var status = 0
    var fields: [String: String] = [:]
    for line in head.split(separator: "\r\n") {
        if line.hasPrefix("HTTP/") {
            status = Int(line.split(separator: " ")[1]) ?? 0
            fields = [:]
        } else if let colon = line.firstIndex(of: ":") {
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    // With --head, curl writes the head to the output too: the body of a HEAD answer is empty.
    let bytes = method == "HEAD" ? [] : FileManager.default.contents(atPath: bodyFile).map(Array.init) ?? []
    return HTTPAnswer(status: status, headers: fields, body: bytes)
}

/// Runs a program to its end without holding a thread of the concurrency pool; its exit
/// status and what it printed (standard output and error together, through a file).
func runProcess(
    _ path: String, _ arguments: [String], environment: [String: String]? = nil,
    directory workingDirectory: String? = nil
) async -> (
    status: Int32, output: String
) {
    do {
        let child = try ChildProcess(
            path, arguments, environment: environment, directory: workingDirectory, outputs: .merged)
        let result = await child.ended()
        return (result.status, result.text)
    } catch {
        return (-1, "cannot run \(path): \(error)")
    }
}

/// Waits for `semaphore` on a thread of its own, so the concurrency pool stays free.
func signalled(_ semaphore: DispatchSemaphore, within limit: Duration = .seconds(60)) async -> Bool {
    await withCheckedContinuation { done in
        Thread.detachNewThread {
            done.resume(returning: semaphore.wait(timeout: .now() + Double(limit.components.seconds)) == .success)
        }
    }
}

/// A payload naming `url` under the `image` convention.
func payload(image url: String, extra: String = "") -> [UInt8] {
    Array(#"{"aps":{"alert":{"title":"t","body":"b"},"mutable-content":1},"image":"\#(url)"\#(extra)}"#.utf8)
}

/// A media route that holds every request until released: `arrived` counts requests that
/// reached it, `release()` lets them all answer.
final class HeldRoute: Sendable {
    private let waiting = DispatchSemaphore(value: 0)
    private let arrivals = DispatchSemaphore(value: 0)
    private let released = Atomic<Bool>(false)

    init(on server: TestHTTPServer, path: String, body: [UInt8]) {
        server.route(path) { [self] _, connection in
            arrivals.signal()
            if !released.load(ordering: .acquiring) { waiting.wait() }
            connection.respond(headers: ["Content-Type": "image/jpeg"], body: body)
        }
    }

    /// Waits (for an event, up to a generous limit) until `count` requests have arrived.
    func waitForArrivals(_ count: Int, limit: Duration = .seconds(60)) async -> Bool {
        for _ in 0..<count where await !signalled(arrivals, within: limit) { return false }
        return true
    }

    func release() {
        released.store(true, ordering: .releasing)
        for _ in 0..<64 { waiting.signal() }
    }
}

/// Polls `condition` until it holds or `limit` passes (for state only visible by looking).
func eventually(limit: Duration = .seconds(60), _ condition: () async throws -> Bool) async -> Bool {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if (try? await condition()) == true { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return (try? await condition()) == true
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// The value of one sample line (`name` with its labels, exactly as printed) in Prometheus text.
func metricValue(_ text: String, _ sample: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }
        .flatMap { Double($0.split(separator: " ").last!) }
}

/// Answers read off one raw connection, in order: status line and body of each.
struct RawAnswer: Equatable {
    var status: String
    var body: [UInt8]
}

/// Splits `bytes` into complete answers; `heads[i]` says whether answer i is to a HEAD
/// (no body whatever its Content-Length).
func parseAnswers(_ bytes: [UInt8], heads: [Bool]) -> [RawAnswer] {
    var answers: [RawAnswer] = []
    var index = 0
    let separator: [UInt8] = Array("\r\n\r\n".utf8)
    while answers.count < heads.count {
        guard let end = (index..<max(index, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator })
        else { break }
        let head = String(decoding: bytes[index..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let length =
            head.first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let bodyLength = heads[answers.count] ? 0 : length
        guard bytes.count >= end + 4 + bodyLength else { break }
        answers.append(RawAnswer(status: head[0], body: Array(bytes[(end + 4)..<(end + 4 + bodyLength)])))
        index = end + 4 + bodyLength
    }
    return answers
}

/// Connects `fd` to 127.0.0.1:`port` with a receive timeout (and a receive window): 0, or -1.
func connectLoopback(_ fd: Int32, port: Int, timeoutSeconds: Int, receiveWindow: Int32? = nil) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    if var window = receiveWindow {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
}

/// Writes `requests` at once on one TCP connection to 127.0.0.1:`port` (pipelined; or, with
/// `oneByOne`, each once the answer before it is complete, `afterFirst` run between the first
/// answer and the second request) and reads until every answer is
/// complete or the peer goes quiet, on a thread of its own.
func pipelined(
    port: Int, _ requests: [(method: String, path: String, headers: String)], readAtMost: Int = .max,
    oneByOne: Bool = false, afterFirst: (@Sendable () throws -> Void)? = nil
) async throws -> [RawAnswer] {
    let texts = requests.map { "\($0.method) \($0.path) HTTP/1.1\r\nHost: x\r\n\($0.headers)\r\n" }
    let batches = oneByOne ? texts.map { [$0] } : [texts]
    let heads = requests.map { $0.method == "HEAD" }
    return try await withCheckedThrowingContinuation { done in
        Thread.detachNewThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            // A small window, so that hanging up leaves the server mid-write.
            let connected = connectLoopback(
                fd, port: port, timeoutSeconds: 60, receiveWindow: readAtMost != .max ? 4096 : nil)
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            var sent = 0
            for batch in batches {
                let bytes = Array(batch.joined().utf8)
                guard connected == 0, write(fd, bytes, bytes.count) == bytes.count else {
                    close(fd)
                    return done.resume(throwing: AttacheError(.ioError, "cannot talk to 127.0.0.1:\(port)"))
                }
                sent += batch.count
                let expected = Array(heads.prefix(sent))
                while parseAnswers(received, heads: expected).count < sent, received.count < readAtMost {
                    let n = read(fd, &buffer, buffer.count)
                    if n <= 0 { break }
                    received += buffer[0..<n]
                }
                if sent == 1, let afterFirst {
                    do { try afterFirst() } catch {
                        close(fd)
                        return done.resume(throwing: error)
                    }
                }
            }
            close(fd)
            done.resume(returning: parseAnswers(received, heads: heads))
        }
    }
}

/// A slow download on one connection: `GET path`, a 4 KiB receive window, `firstBytes` read,
/// then `paused` is signalled and nothing more is read until `resume` is; then the rest is
/// read to the end of the answer or of the connection. Runs on a thread of its own.
func slowDownload(
    port: Int, path: String, firstBytes: Int, paused: DispatchSemaphore, resume: DispatchSemaphore
) async -> [UInt8] {
    await withCheckedContinuation { done in
        Thread.detachNewThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var window: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let request = Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            _ = write(fd, request, request.count)
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            var resumed = false
            while true {
                if !resumed, received.count >= firstBytes {
                    paused.signal()
                    resume.wait()
                    resumed = true
                }
                if parseAnswers(received, heads: [false]).count == 1 { break }
                let n = read(fd, &buffer, resumed ? buffer.count : min(buffer.count, firstBytes - received.count))
                if n <= 0 { break }
                received += buffer[0..<n]
            }
            close(fd)
            done.resume(returning: received)
        }
    }
}

/// Writes `bytes` on one TCP connection to 127.0.0.1:`port`, closes the writing side (the
/// server reads an end of input there), and reads until the server closes the connection or
/// goes quiet for `quiet`; on a thread of its own. Returns every byte read.
func rawExchange(port: Int, _ bytes: [UInt8], quiet: Int = 30) async throws -> [UInt8] {
    try await withCheckedThrowingContinuation { done in
        Thread.detachNewThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = connectLoopback(fd, port: port, timeoutSeconds: quiet)
            guard connected == 0, bytes.isEmpty || write(fd, bytes, bytes.count) == bytes.count else {
                close(fd)
                return done.resume(throwing: AttacheError(.ioError, "cannot talk to 127.0.0.1:\(port)"))
            }
            shutdown(fd, Int32(SHUT_WR))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                received += buffer[0..<n]
            }
            close(fd)
            done.resume(returning: received)
        }
    }
}

/// `attache serve` as operators run it, in a process of its own: a store in a temporary
/// directory, the test's API key, loopback fetches allowed, standard error in a log file, and
/// the port it says it listens on read from that log (text or JSON lines).
final class ServeProcess: @unchecked Sendable {
    let child: ChildProcess
    let directory: TemporaryDirectory
    /// Signalled when the process exits.
    var exited: DispatchSemaphore { child.exited }
    var process: Process { child.process }

    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        directory = try TemporaryDirectory()
        child = try ChildProcess(
            try attacheExecutable(),
            [
                "serve", "--port", "0", "--store", directory.path + "/store", "--api-keys", RunningService.apiKey,
                "--allow-loopback",
            ] + arguments, environment: environment)
    }

    func stop() {
        if child.isRunning { child.send(SIGTERM) }
    }

    /// What it has written to standard error (its log) so far.
    var logged: String { String(decoding: child.errorsSoFar, as: UTF8.self) }

    /// The port of the `listening` line's address, once it is written.
    var port: Int? {
        guard let range = logged.range(of: #"address.{1,3}http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression)
        else { return nil }
        return Int(logged[range].split(separator: ":").last!.dropLast())
    }

    /// `http://127.0.0.1:<port>`, once the process says where it listens.
    func base() async throws -> String {
        #expect(await eventually { port != nil || !process.isRunning }, "it says where it listens")
        return "http://127.0.0.1:\(try #require(port, "\(logged)"))"
    }
}
