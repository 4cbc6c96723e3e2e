public import AttacheSeal
import Crypto
public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
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
    /// The file to write (renamed into place only once every check passed).
    var destination: URL
}

/// Streams one attachment to a file: the body is decrypted segment by segment as it arrives
/// (sealed), hashed and counted, and written to a hidden temporary file that becomes the file
/// only when every check passed. A dropped connection is resumed with `Range` from the first
/// segment (or byte) not yet written, while time is left. Anything else ends the download with
/// a typed error and removes the temporary file.
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
    /// Bytes of this response's body seen (to skip what a resumed range repeats).
    private var received: Int64 = 0
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
                    start(range: nil)
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

    private func start(range: Int64?) {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.timeoutInterval = max(
            0.05, Double(ContinuousClock.now.duration(to: deadline).components.seconds) + 1)
        if let range { urlRequest.setValue("bytes=\(range)-", forHTTPHeaderField: "Range") }
        received = range ?? 0
        let task = session.dataTask(with: urlRequest)
        lock.lock()
        self.task = task
        let failed = failure != nil
        lock.unlock()
        if !failed { task.resume() }
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
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let resumed = received > 0
        guard status == (resumed ? 206 : 200) else {
            completionHandler(.cancel)
            fail(.httpStatus(status))
            return
        }
        // A body announced larger than the entry says is refused before it is read.
        let announced = response.expectedContentLength
        if announced >= 0, let total = sealedSize, announced + received > total {
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
        if let error {
            // A dropped connection resumes from the first byte not yet written, while time is left.
            let code = (error as? URLError)?.code
            if code != .cancelled, received > 0, resumes < 5, ContinuousClock.now < deadline {
                resumes += 1
                return resume()
            }
            return fail(code == .cancelled ? .timedOut : .network(error.localizedDescription))
        }
        if let total = sealedSize, received < total {
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
                return start(range: nil)
            }
            let segment = written / Int64(segmentSize)
            var fresh = SegmentDecryptor(key: SymmetricKey(data: key), firstSegment: segment)
            _ = try? fresh.append(header)
            decryptor = fresh
            start(range: Int64(SegmentedCipher.headerSize) + segment * Int64(segmentSize + SegmentedCipher.tagSize))
        } else {
            start(range: written)
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
