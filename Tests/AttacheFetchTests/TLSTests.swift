import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheFetch

/// TLS against `openssl s_server` on 127.0.0.1 with a certificate made for the test:
/// verification is always on, so the self-signed certificate is refused until the caller
/// trusts it explicitly.
@Suite(.enabled(if: inIsolatedChild)) struct TLSTests {
    @Test func selfSignedCertificateIsRefusedUnlessTrusted() async throws {
        let directory = try TemporaryDirectory()
        try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", directory.path + "/key.pem",
                "-out", directory.path + "/cert.pem",
            ])
        try Data(sampleJPEG).write(to: URL(fileURLWithPath: directory.path + "/image.jpg"))

        // Below the kernel's ephemeral range (32768+), where other tests' servers live, and below
        // the ports scripts/test.sh gives PostgreSQL and radosgw (20000 to 32000); one something
        // already listens on is passed over (a TLS handshake with it would fail for its sake).
        var port = Int.random(in: 10_000...19_999)
        while Self.accepts(port: port) { port = Int.random(in: 10_000...19_999) }
        let server = try ChildProcess(
            "/usr/bin/openssl",
            [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", directory.path + "/cert.pem", "-key",
                directory.path + "/key.pem", "-WWW", "-quiet",
            ], directory: directory.path, outputs: .discarded)
        // s_server ignores SIGTERM, and Foundation's waitUntilExit spins when called from a task.
        defer { server.send(SIGKILL) }
        let url = "https://127.0.0.1:\(port)/image.jpg"

        // Wait until it listens (a refused connection is connect_failed, not a TLS answer).
        for _ in 0..<100 where !Self.accepts(port: port) && server.isRunning {
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(server.isRunning, "openssl s_server exited (port \(port) taken?)")
        let untrusted = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        let error = await fetchFailure(untrusted, url)
        #expect(error?.code == .tlsFailed, "\(String(describing: error))")

        let trusted = Fetcher(
            policy: loopbackPolicy {
                $0.caFile = directory.path + "/cert.pem"
                $0.httpsOnly = true
            })
        let media = try await trusted.fetch(url)
        #expect(Array(media.bytes.buffer) == sampleJPEG && media.kind == .jpeg)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private func run(_ executable: String, _ arguments: [String]) throws {
        let result = try runChild(executable, arguments, outputs: .merged)
        try #require(result.status == 0, "\(executable) \(arguments.joined(separator: " ")) failed: \(result.text)")
    }
}
