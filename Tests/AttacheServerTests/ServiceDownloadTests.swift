import AttacheBase
import AttacheCore
import AttacheMedia
import AttacheStore
import AttacheTestSupport
import Foundation
import Synchronization
import Testing

@testable import AttacheServer

/// The service's downloads on a real socket: ranges, conditional requests and HEAD, the
/// sendfile path and pipelining, the remembered token checks, a download cut short, and one in
/// flight at shutdown. Part of ``ServiceTests`` (run with it, in the isolated child).
extension ServiceTests {
    @Test func rangesConditionalRequestsAndHead() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let whole = try await curl("GET", Self.local(url, service))
        let size = whole.body.count
        #expect(size > 1000)

        let first = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=0-99"])
        #expect(first.status == 206 && first.body == Array(whole.body[0..<100]))
        #expect(first.headers["content-range"] == "bytes 0-99/\(size)")
        let middle = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=500-"])
        #expect(middle.status == 206 && middle.body == Array(whole.body[500...]))
        let tail = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(whole.body.suffix(10)))
        let beyond = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=\(size)-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(size)")
        let several = try await curl("GET", Self.local(url, service), headers: ["Range": "bytes=0-1,5-6"])
        #expect(several.status == 200 && several.body == whole.body, "several ranges are served whole")
        let stale = try await curl(
            "GET", Self.local(url, service), headers: ["Range": "bytes=0-9", "If-Range": "\"other\""])
        #expect(stale.status == 200 && stale.body.count == size)

        let etag = try #require(whole.headers["etag"])
        let notModified = try await curl("GET", Self.local(url, service), headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)
        let changed = try await curl("GET", Self.local(url, service), headers: ["If-None-Match": "\"other\""])
        #expect(changed.status == 200)

        let head = try await curl("HEAD", Self.local(url, service))
        #expect(head.status == 200 && head.headers["content-length"] == String(size) && head.body.isEmpty)
    }

    /// Downloads go out with sendfile from the event loop; requests sent back to back on one
    /// connection (pipelined) are answered in order whichever path answers each.
    @Test func downloadsGoOutWithSendfileAndPipelinedAnswersStayInOrder() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        let paths = service.service.metrics.downloadPaths
        let before = paths.answered.load(ordering: .relaxed)
        let whole = try await curl("GET", local)
        #expect(whole.status == 200 && sha256Hex(whole.body) == url.split(separator: "/").last!.prefix(64).description)
        #expect(paths.answered.load(ordering: .relaxed) > before, "answered on the event loop")

        // One connection, five requests written at once: the router and the event loop's responder in turn.
        let path = String(local.dropFirst(service.base.count))
        let answers = try await pipelined(
            port: service.port,
            [
                ("GET", "/healthz", ""), ("GET", path, "Range: bytes=0-9\r\n"), ("HEAD", path, ""),
                ("GET", path, ""), ("GET", "/readyz", ""),
            ])
        #expect(
            answers.map(\.status) == [
                "HTTP/1.1 200 OK", "HTTP/1.1 206 Partial Content", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK",
                "HTTP/1.1 200 OK",
            ])
        #expect(answers.count == 5 && answers[0].body == Array("ok\n".utf8) && answers[4].body == Array("ready\n".utf8))
        #expect(answers.count == 5 && answers[1].body == Array(whole.body.prefix(10)) && answers[3].body == whole.body)
    }

    /// A download answered behind the decoder goes through the HTTP/1 encoder, which pairs each answer with its
    /// request's method: after a download it answered, a `HEAD` the router answers still has no
    /// body and the next answer keeps its own.
    @Test func answersAfterADownloadSentHereKeepTheirBodies() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let answers = try await pipelined(
            port: service.port,
            [
                ("GET", path, ""), ("HEAD", path, ""), ("GET", "/healthz", ""), ("GET", path, ""),
                ("GET", "/readyz", ""),
            ],
            oneByOne: true)
        #expect(answers.map(\.status).allSatisfy { $0 == "HTTP/1.1 200 OK" } && answers.count == 5, "\(answers)")
        #expect(answers.count == 5 && answers[2].body == Array("ok\n".utf8) && answers[4].body == Array("ready\n".utf8))
        #expect(answers.count == 5 && answers[1].body.isEmpty && answers[3].body == answers[0].body)
    }

    /// A download's check is remembered by its event loop for a second: the next download of
    /// the URL is sent from it; a revocation made through this process ends it at once, and one
    /// made by another process (`attache store revoke`) within the second.
    @Test func rememberedChecksEndWithARevocation() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let id = try #require(AttachmentID(hex: String(path.suffix(68).prefix(64))))
        // One connection, one event loop: the second download comes from the first's check
        // (unless a second passed between them on a busy machine: then the next pair's does).
        let paths = service.service.metrics.downloadPaths
        let before = paths.remembered.load(ordering: .relaxed)
        for _ in 0..<20 where paths.remembered.load(ordering: .relaxed) == before {
            let twice = try await pipelined(port: service.port, [("GET", path, ""), ("GET", path, "")], oneByOne: true)
            #expect(twice.map(\.status) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"] && twice[0].body == twice[1].body)
        }
        #expect(paths.remembered.load(ordering: .relaxed) > before, "sent from the remembered check")
        // Revoked through the service's own store: refused on the same connection at once.
        let store = service.service.store
        let refused = try await pipelined(
            port: service.port, [("GET", path, ""), ("GET", path, "")], oneByOne: true,
            afterFirst: { try store.revokeTokens(for: id) })
        #expect(refused.map(\.status) == ["HTTP/1.1 200 OK", "HTTP/1.1 403 Forbidden"], "\(refused.map(\.status))")
    }

    /// Clients that go away mid-download (a phone losing signal) cost nothing lasting: the file
    /// and the lease are released, and the next download is served.
    @Test func aDownloadCutShortReleasesItsFileAndLease() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        defer { Task { await service.stop() } }
        let (_, url) = try await Self.mutate(service, media: media)
        let local = Self.local(url, service)
        let path = String(local.dropFirst(service.base.count))
        let descriptorsBefore = openDescriptors()
        for _ in 0..<20 {
            // Ask for the object and hang up after the first bytes of the answer.
            _ = try await pipelined(port: service.port, [("GET", path, "")], readAtMost: 100)
        }
        let again = try await curl("GET", local)
        #expect(again.status == 200 && sha256Hex(again.body) == String(path.suffix(68).prefix(64)))
        #expect(await eventually { openDescriptors() <= descriptorsBefore + 4 }, "files closed")
        // A lease (a shared lock on the object's file) still held would keep collection from
        // removing the object once it expires: an exclusive lock must be free.
        let id = String(path.suffix(68).prefix(64))
        let attachmentID = try #require(AttachmentID(hex: id))
        let stored = try #require(try service.service.store.attachment(attachmentID))
        let object = service.service.store.path(of: stored)
        let fd = open(object, O_RDONLY)
        #expect(fd >= 0)
        #expect(await eventually { flock(fd, LOCK_EX | LOCK_NB) == 0 }, "no lease left on the object")
        close(fd)
    }

    /// A client still reading a download when a graceful shutdown begins gets all of it.
    @Test func shutdownLetsADownloadInFlightFinish() async throws {
        let media = try Self.mediaServer()
        let service = try await Self.start()
        let (_, url) = try await Self.mutate(service, media: media)
        let path = String(Self.local(url, service).dropFirst(service.base.count))
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        let download = Task {
            await slowDownload(port: service.port, path: path, firstBytes: 1000, paused: paused, resume: resume)
        }
        #expect(await signalled(paused), "the download started")
        let stopping = Task { await service.stop() }
        // Shutdown has begun when new connections are refused; the download is still open.
        #expect(await eventually { try await curl("GET", service.base + "/healthz").status == 0 })
        resume.signal()
        let bytes = await download.value
        await stopping.value
        let answers = parseAnswers(bytes, heads: [false])
        #expect(answers.first?.status == "HTTP/1.1 200 OK")
        #expect(answers.first.map { sha256Hex($0.body) } == String(path.suffix(68).prefix(64)), "all of it")
    }
}
