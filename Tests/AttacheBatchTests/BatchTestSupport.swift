import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheStore
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheBatch

/// A loopback media host for batches: the sample files, a 404, a lie, and a host that never
/// answers.
func batchMediaServer() throws -> TestHTTPServer {
    let server = try TestHTTPServer()
    for name in [
        "gray.jpg", "palette-transparent.png", "animated-chi.gif", "tone.mp3", "portrait-progressive.jpg", "clip.mp4",
    ] {
        let body = Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!)
        server.route("/" + name) { _, c in c.respond(body: body) }
    }
    server.route("/missing.jpg") { _, c in c.respond(status: 404, reason: "Not Found") }
    server.route("/text.jpg") { _, c in c.respond(body: Array("<html>not an image</html>".utf8)) }
    server.route("/hang.jpg") { _, c in
        _ = c.timeUntilClientCloses(limit: .seconds(60))
        c.close()
    }
    return server
}

/// Reads a manifest's records.
func records(_ path: String) throws -> [ManifestRecord] {
    var out: [ManifestRecord] = []
    try BatchManifest.scan(path) { record, _ in if let record { out.append(record) } }
    return out
}

/// Holds responses back until the test hands out permits for them.
final class Gate: @unchecked Sendable {
    private let condition = NSCondition()
    private var permits = 0
    private var unlimited = false

    /// Lets `count` more responses through; the permits now available.
    func add(_ count: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        permits += count
        condition.broadcast()
        return permits
    }

    /// Lets every response through from now on.
    func open() {
        condition.lock()
        unlimited = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for a permit and takes it: true. False when the client went away first (a killed
    /// run's request takes no permit), or after a minute.
    func take(_ connection: TestHTTPServer.Connection) -> Bool {
        let limit = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < limit {
            condition.lock()
            if unlimited || permits > 0 {
                if !unlimited { permits -= 1 }
                condition.unlock()
                return true
            }
            _ = condition.wait(until: Date() + 0.02)
            condition.unlock()
            if connection.timeUntilClientCloses(limit: .milliseconds(1)) != nil { return false }
        }
        return false
    }
}
