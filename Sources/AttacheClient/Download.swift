import AttacheSeal
import Crypto
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One file to fetch: where, how big, how to check it, and (sealed) how to open it.
struct DownloadRequest: Sendable {
    var url: URL
    /// The plaintext size, when the entry gives it.
    var bytes: Int64?
    /// SHA-256 of the plaintext (hex): the sealed entry's `sha256`, or an unsealed entry's id.
    var sha256: String?
    /// The key of a sealed object.
    var key: [UInt8]?
    /// The kind's type (UTI), checked against the first bytes for images.
    var type: String
    /// Largest plaintext accepted when the entry gives no size.
    var cap: Int64
    /// Bytes asked for per request.
    var window: Int64 = 4 << 20
    /// The file to write (renamed into place only once every check passed).
    var destination: URL
}

/// Streams one attachment to a file: the body is decrypted segment by segment as it arrives
/// (sealed), hashed and counted, and written to a hidden temporary file that becomes the file
/// only when every check passed. A dropped connection is resumed with `Range` from the first
/// segment (or byte) not yet written, while time is left. Anything else ends the download with
/// a typed error and removes the temporary file.
///
/// The body is asked for in windows (`Range`, ``DownloadRequest/window`` bytes each, whole
/// segments), one after the other on the same connection: URLSession hands data to its
/// delegate without waiting for it (on Linux there is no way to pause a transfer), so a
/// window is the most that can pile up when decrypting falls behind the network. A server
/// that ignores `Range` sends the whole body in one answer, which is taken as it comes.
final class Download: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: DownloadRequest
    private let deadline: ContinuousClock.Instant
    private let lock = NSLock()
    private var session: URLSession!
    private var continuation: CheckedContinuation<Void, any Error>?
    private var failure: AttacheClientError?
    private var task: URLSessionDataTask?

    // Progress, touched only on the session's serial delegate queue.
    private var file: FileHandle?
    private let temporary: URL
    private var decryptor: SegmentDecryptor?
    private var header: [UInt8] = []
    private var hasher = SHA256()
    private var written: Int64 = 0
    /// Position in the body of the next byte to arrive.
    private var received: Int64 = 0
    /// Where the current request's range ends (exclusive); nil when it asked for the rest.
    private var windowEnd: Int64?
    /// The body's length, once a `Content-Range` or the entry told it.
    private var total: Int64?
    private var firstBytes: [UInt8] = []
    private var resumes = 0

    init(_ request: DownloadRequest, deadline: ContinuousClock.Instant) {
        self.request = request
        self.deadline = deadline
        temporary = request.destination.deletingLastPathComponent()
            .appendingPathComponent(".partial-\(UUID().uuidString)")
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 2
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// Runs the download to its end; throws ``AttacheClientError`` (the temporary file gone).
    func run() async throws(AttacheClientError) {
        defer { session.finishTasksAndInvalidate() }
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: temporary)
        else {
            throw .io("cannot create \(temporary.path)")
        }
        file = handle
        if let key = request.key { decryptor = SegmentDecryptor(key: SymmetricKey(data: key)) }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    lock.lock()
                    self.continuation = continuation
                    lock.unlock()
                    start(from: 0)
                }
            } onCancel: {
                self.fail(.timedOut)
            }
        } catch {
            try? file?.close()
            try? FileManager.default.removeItem(at: temporary)
            throw (error as? AttacheClientError) ?? .network(String(describing: error))
        }
        try? file?.close()
        do {
            if FileManager.default.fileExists(atPath: request.destination.path) {
                try FileManager.default.removeItem(at: request.destination)
            }
            try FileManager.default.moveItem(at: temporary, to: request.destination)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .io("cannot move the download into place: \(error)")
        }
    }

    /// Asks for the body from `offset`: one window of whole segments.
    private func start(from offset: Int64) {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.timeoutInterval = max(
            0.05, Double(ContinuousClock.now.duration(to: deadline).components.seconds) + 1)
        let window = request.key == nil ? request.window : Self.sealedWindow(request.window)
        var end = offset + window
        if let total { end = min(end, total) }
        urlRequest.setValue("bytes=\(offset)-\(end - 1)", forHTTPHeaderField: "Range")
        received = offset
        windowEnd = end
        let task = session.dataTask(with: urlRequest)
        lock.lock()
        self.task = task
        let failed = failure != nil
        lock.unlock()
        if !failed { task.resume() }
    }

    /// `window` rounded down to whole sealed segments (one at least), the header counted in the first.
    private static func sealedWindow(_ window: Int64) -> Int64 {
        let segment = Int64(SegmentedCipher.defaultSegmentSize + SegmentedCipher.tagSize)
        return max(1, window / segment) * segment
    }

    /// `bytes a-b/total` → total.
    private static func contentRangeTotal(_ response: HTTPURLResponse) -> Int64? {
        guard let value = response.value(forHTTPHeaderField: "Content-Range"),
            let slash = value.lastIndex(of: "/")
        else { return nil }
        return Int64(value[value.index(after: slash)...])
    }

    /// Ends the download with `error` (the first one wins).
    func fail(_ error: AttacheClientError) {
        lock.lock()
        if failure == nil { failure = error }
        let continuation = self.continuation
        self.continuation = nil
        let task = self.task
        lock.unlock()
        task?.cancel()
        continuation?.resume(throwing: failure ?? error)
    }

    private func succeed() {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume()
    }

    private var sealedSize: Int64? {
        request.bytes.map { request.key != nil ? SegmentedCipher.sealedSize(plaintext: $0) : $0 }
    }

    // MARK: URLSessionDataDelegate (one serial queue)

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        switch status {
        case 206:
            if let length = http.flatMap(Self.contentRangeTotal) {
                if let known = sealedSize, known != length {
                    completionHandler(.cancel)
                    return fail(known < length ? .tooLarge : .truncated)
                }
                total = length
            }
        case 200 where received == 0:
            // The server ignores ranges: the whole body comes in this answer.
            windowEnd = nil
        case 416 where received > 0 && (sealedSize ?? total) == nil:
            // Past the end of a body whose length nobody said: it ended with the last window.
            total = received
            completionHandler(.cancel)
            return
        default:
            completionHandler(.cancel)
            return fail(.httpStatus(status))
        }
        // A body announced larger than the entry says is refused before it is read.
        let announced = response.expectedContentLength
        if announced >= 0, let total = sealedSize ?? total, announced + received > total {
            completionHandler(.cancel)
            fail(.tooLarge)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard failure == nil else { return }
        received += Int64(data.count)
        let limit =
            sealedSize ?? (request.key != nil ? SegmentedCipher.sealedSize(plaintext: request.cap) : request.cap)
        guard received <= limit else { return fail(.tooLarge) }
        do throws(AttacheClientError) {
            if request.key != nil {
                if header.count < SegmentedCipher.headerSize {
                    header += data.prefix(SegmentedCipher.headerSize - header.count)
                }
                let plain: [UInt8]
                do throws(SealError) {
                    plain = try decryptor!.append(data)
                } catch {
                    throw AttacheClientError(error)
                }
                try write(plain)
            } else {
                try write(Array(data))
            }
        } catch {
            fail(error)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard failure == nil else { return }
        // Ended by a 416 at the end of a body of unknown length: complete.
        let endedAtRange = total == received && windowEnd != nil && (error as? URLError)?.code == .cancelled
        if let error, !endedAtRange {
            // A dropped connection resumes from the first byte not yet written, while time is left.
            let code = (error as? URLError)?.code
            if code != .cancelled, received > 0, resumes < 5, ContinuousClock.now < deadline {
                resumes += 1
                return resume()
            }
            return fail(code == .cancelled ? .timedOut : .network(error.localizedDescription))
        }
        // The window is done: the next one follows, until the body's end.
        let length = sealedSize ?? total
        if let windowEnd, received == windowEnd, length.map({ received < $0 }) ?? true {
            return start(from: received)
        }
        if let length, received < length {
            if resumes < 5, ContinuousClock.now < deadline {
                resumes += 1
                return resume()
            }
            return fail(.truncated)
        }
        do throws(AttacheClientError) {
            if decryptor != nil {
                let tail: [UInt8]
                do throws(SealError) {
                    tail = try decryptor!.finish()
                } catch {
                    throw AttacheClientError(error)
                }
                try write(tail)
            }
            try check()
            succeed()
        } catch {
            fail(error)
        }
    }

    /// Starts again from the first whole segment (sealed) or byte (plain) not yet written.
    private func resume() {
        if let key = request.key {
            guard let segmentSize = decryptor?.segmentSize, segmentSize > 0 else {
                // Not even the header arrived: start over.
                header = []
                decryptor = SegmentDecryptor(key: SymmetricKey(data: key))
                return start(from: 0)
            }
            let segment = written / Int64(segmentSize)
            var fresh = SegmentDecryptor(key: SymmetricKey(data: key), firstSegment: segment)
            _ = try? fresh.append(header)
            decryptor = fresh
            start(from: Int64(SegmentedCipher.headerSize) + segment * Int64(segmentSize + SegmentedCipher.tagSize))
        } else {
            start(from: written)
        }
    }

    private func write(_ plain: [UInt8]) throws(AttacheClientError) {
        guard !plain.isEmpty else { return }
        written += Int64(plain.count)
        if let bytes = request.bytes, written > bytes { throw .tooLarge }
        if written > request.cap { throw .tooLarge }
        if firstBytes.count < 16 { firstBytes += plain.prefix(16 - firstBytes.count) }
        hasher.update(data: plain)
        do {
            try file!.write(contentsOf: plain)
        } catch {
            throw .io("cannot write the download: \(error)")
        }
    }

    /// Size, hash and type, once the body ended.
    private func check() throws(AttacheClientError) {
        if let bytes = request.bytes, written != bytes { throw .sizeMismatch(expected: bytes, got: written) }
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        if let expected = request.sha256?.lowercased(), digest != expected { throw .hashMismatch }
        if !AttachmentTypes.matches(type: request.type, firstBytes: firstBytes) { throw .wrongType(request.type) }
    }
}
