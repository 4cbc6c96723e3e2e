import Foundation
import Testing

@testable import AttacheCore

/// TLS against `openssl s_server` on 127.0.0.1 with a certificate made for the test:
/// verification is always on, so the self-signed certificate is refused until the caller
/// trusts it explicitly.
@Suite struct TLSTests {
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

        let port = Int.random(in: 20_000...60_000)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", directory.path + "/cert.pem", "-key",
            directory.path + "/key.pem", "-WWW", "-quiet",
        ]
        server.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // s_server ignores SIGTERM, and Foundation's waitUntilExit spins when called from a task.
        defer { kill(server.processIdentifier, SIGKILL) }
        let url = "https://127.0.0.1:\(port)/image.jpg"

        // Wait until it listens (a refused connection is connect_failed, not a TLS answer).
        var untrusted = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        var error: AttacheError?
        for _ in 0..<50 {
            error = await fetchFailure(untrusted, url)
            if error?.code != .connectFailed { break }
            try await Task.sleep(for: .milliseconds(100))
            untrusted = Fetcher(policy: loopbackPolicy { $0.maxRetries = 0 })
        }
        #expect(error?.code == .tlsFailed, "\(String(describing: error))")

        let trusted = Fetcher(
            policy: loopbackPolicy {
                $0.caFile = directory.path + "/cert.pem"
                $0.httpsOnly = true
            })
        let media = try await trusted.fetch(url)
        #expect(Array(media.bytes.buffer) == sampleJPEG && media.kind == .jpeg)
    }

    private func run(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "\(executable) \(arguments.joined(separator: " ")) failed")
    }
}
