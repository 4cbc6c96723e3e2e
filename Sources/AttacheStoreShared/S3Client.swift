import AttacheBase
import AttacheStore
import CAttacheObjects
import CAttacheShim
import Crypto
import Foundation
import Glibc
import Synchronization

/// S3 requests through libcurl: PUT, ranged GET, HEAD, DELETE and listing, signed by libcurl
/// (SigV4). Handles are reused, so connections are kept alive between requests.
final class S3Client: Sendable {
    let location: S3Location
    private let handles = Mutex<[S3Handle]>([])

    init(_ location: S3Location) {
        self.location = location
    }

    /// The URL of `key` (object keys are percent-encoded, `/` kept) with a query whose
    /// parameters are sorted and encoded, as SigV4's canonical request needs.
    func url(key: String, query: [(String, String)] = []) -> String {
        var url = location.endpoint + "/" + location.bucket
        if !key.isEmpty { url += "/" + Self.encode(key, keepSlash: true) }
        if !query.isEmpty {
            var pairs: [(name: String, value: String)] = query.map { pair in
                (Self.encode(pair.0, keepSlash: false), Self.encode(pair.1, keepSlash: false))
            }
            pairs.sort { a, b in a.name != b.name ? a.name < b.name : a.value < b.value }
            url += "?" + pairs.map { $0.name + "=" + $0.value }.joined(separator: "&")
        }
        return url
    }

    /// RFC 3986 unreserved characters stay; everything else is %XX.
    static func encode(_ text: String, keepSlash: Bool) -> String {
        var out = ""
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    // MARK: Requests

    /// Stores `bytes` under `key` (the server checks them against their SHA-256).
    func put(key: String, bytes: UnsafeRawBufferPointer) throws(AttacheError) {
        let hash = SHA256.hash(data: bytes).map { String(format2: $0) }.joined()
        let answer = try perform("PUT", url(key: location.prefix + key), payloadHash: hash, body: bytes)
        try answer.expect(200...299, "put \(key)")
    }

    /// Streams the bytes of `key` (or of `range`) to `sink`, which returns false to stop.
    /// Returns the bytes delivered; a missing object is ``AttacheError/Code/notFound``.
    @discardableResult
    func get(
        key: String, range: ClosedRange<Int64>? = nil, into sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(AttacheError) -> Int64 {
        var delivered: Int64 = 0
        let target = url(key: location.prefix + key)
        let window = range.map { "\($0.lowerBound)-\($0.upperBound)" }
        let answer = try withoutActuallyEscaping(sink) { (sink) throws(AttacheError) -> Answer in
            try perform("GET", target, range: window) { chunk in
                delivered += Int64(chunk.count)
                return sink(chunk)
            }
        }
        try answer.expect(200...299, "get \(key)")
        return delivered
    }

    /// Reads `buffer.count` bytes of `key` at `offset` (fewer only at the end of the object).
    func read(key: String, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AttacheError) -> Int {
        guard !buffer.isEmpty else { return 0 }
        var filled = 0
        try get(key: key, range: offset...(offset + Int64(buffer.count) - 1)) { chunk in
            let take = min(chunk.count, buffer.count - filled)
            if take > 0 {
                buffer.baseAddress!.advanced(by: filled).copyMemory(from: chunk.baseAddress!, byteCount: take)
            }
            filled += take
            return take == chunk.count
        }
        return filled
    }

    /// Whether `key` exists.
    func exists(key: String) throws(AttacheError) -> Bool {
        let answer = try perform("HEAD", url(key: location.prefix + key))
        if answer.status == 404 { return false }
        try answer.expect(200...299, "head \(key)")
        return true
    }

    /// Deletes `key` (deleting a missing key succeeds, as in S3).
    func delete(key: String) throws(AttacheError) {
        let answer = try perform("DELETE", url(key: location.prefix + key))
        if answer.status == 404 { return }
        try answer.expect(200...299, "delete \(key)")
    }

    /// The objects under `prefix` (relative to the location's prefix), in key order, handed to
    /// `page` one page at a time (at most `maxKeys` objects, each page parsed as it streams;
    /// keys relative to the location's prefix). `page` returns false to stop. `startAfter`
    /// (relative) starts after that key: a listing can resume where it stopped.
    func list(
        prefix: String, startAfter: String? = nil, maxKeys: Int = 1000,
        _ page: ([ListedObject]) throws(AttacheError) -> Bool
    ) throws(AttacheError) {
        var continuation: String? = nil
        repeat {
            var query = [("list-type", "2"), ("prefix", location.prefix + prefix), ("max-keys", String(maxKeys))]
            if let continuation {
                query.append(("continuation-token", continuation))
            } else if let startAfter {
                query.append(("start-after", location.prefix + startAfter))
            }
            var parser = ListingParser(maxKeys: maxKeys)
            let answer = try perform("GET", url(key: "", query: query)) { chunk in parser.feed(chunk) }
            if let failure = parser.failure { throw failure }
            try answer.expect(200...299, "list \(prefix)")
            try parser.finish()
            var objects = parser.objects
            // Ages by the server's own clock (its Date header), so a skew between this machine and
            // the object store never makes a fresh upload look old.
            let serverNow = answer.date ?? Int64(time(nil))
            for index in objects.indices {
                if let modified = objects[index].modified { objects[index].age = max(0, serverNow - modified) }
                guard objects[index].key.hasPrefix(location.prefix) else {
                    throw AttacheError(.storeUnavailable, "object store: the listing named a key outside its prefix")
                }
                objects[index].key = String(objects[index].key.dropFirst(location.prefix.count))
            }
            guard try page(objects) else { return }
            continuation = parser.truncated ? parser.next : nil
            if parser.truncated, parser.next == nil {
                throw AttacheError(
                    .storeUnavailable, "object store: a truncated listing page without a continuation token")
            }
        } while continuation != nil
    }

    /// Creates the bucket unless it is there already.
    func createBucket() throws(AttacheError) {
        let answer = try perform("PUT", url(key: ""), body: UnsafeRawBufferPointer(start: nil, count: 0))
        if answer.status == 409,
            answer.body.contains("BucketAlreadyOwnedByYou") || answer.body.contains("BucketAlreadyExists")
        {
            return
        }
        try answer.expect(200...299, "create bucket \(location.bucket)")
    }

    /// Checks that the bucket answers (HEAD bucket).
    func checkBucket() throws(AttacheError) {
        let answer = try perform("HEAD", url(key: ""))
        if answer.status == 404 {
            throw AttacheError(.storeUnavailable, "object store: no bucket \(location.bucket) at \(location.endpoint)")
        }
        try answer.expect(200...299, "head bucket \(location.bucket)")
    }

    // MARK: Plumbing

    struct Answer {
        var status: Int
        var body: String
        /// The server's clock when it answered (its Date header), in Unix seconds.
        var date: Int64? = nil

        /// An HTTP date (`Tue, 24 Nov 2026 07:39:28 GMT`) in Unix seconds.
        static func httpDate(_ text: String) -> Int64? {
            let parts = text.split(separator: " ")
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            guard parts.count == 6, let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
                let year = Int(parts[3])
            else { return nil }
            let clock = parts[4].split(separator: ":").compactMap { Int($0) }
            guard clock.count == 3 else { return nil }
            let iso =
                S3Client.fourDigits(year) + "-" + String(format2: UInt8(month + 1)) + "-" + String(format2: UInt8(day))
            return ListingParser.time(
                iso + "T" + String(format2: UInt8(clock[0])) + ":" + String(format2: UInt8(clock[1])) + ":"
                    + String(format2: UInt8(clock[2])))
        }

        func expect(_ ok: ClosedRange<Int>, _ what: String) throws(AttacheError) {
            guard !ok.contains(status) else { return }
            if status == 404 { throw AttacheError(.notFound, "object store: \(what): not found") }
            let code = Self.element("Code", in: body) ?? "HTTP \(status)"
            throw AttacheError(.storeUnavailable, "object store: \(what): \(code)", detail: String(status))
        }

        static func element(_ name: String, in xml: String) -> String? {
            guard let open = xml.range(of: "<\(name)>"),
                let close = xml.range(of: "</\(name)>", range: open.upperBound..<xml.endIndex)
            else { return nil }
            return String(xml[open.upperBound..<close.lowerBound])
        }
    }

    /// The largest answer read without a consumer (error documents, bucket answers): 64 KiB.
    static var smallAnswerMax: Int { Int(att_s3_small_body_max()) }

    static func fourDigits(_ number: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: Swift.max(0, 4 - text.count)) + text
    }

    private static let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    private final class SinkBox {
        let sink: (UnsafeRawBufferPointer) -> Bool
        init(_ sink: @escaping (UnsafeRawBufferPointer) -> Bool) { self.sink = sink }
    }

    /// One request, tried a second time on a fresh connection when the first failed in transport
    /// (refused, reset, stalled) before any byte reached `sink`: every request here is idempotent
    /// (a PUT of content-addressed bytes, GET, HEAD, DELETE, a listing), as the AWS SDKs assume
    /// when they retry. An HTTP answer, whatever its status, is never retried.
    private func perform(
        _ method: String, _ url: String, payloadHash: String? = nil, body: UnsafeRawBufferPointer? = nil,
        range: String? = nil, sink: ((UnsafeRawBufferPointer) -> Bool)? = nil
    ) throws(AttacheError) -> Answer {
        var delivered = false
        let counting: ((UnsafeRawBufferPointer) -> Bool)? = sink.map { sink in
            { chunk in
                delivered = true
                return sink(chunk)
            }
        }
        do {
            return try attempt(method, url, payloadHash: payloadHash, body: body, range: range, sink: counting)
        } catch let failure where failure.detail == Self.transportFailure && !delivered {
            usleep(100_000)
            return try attempt(method, url, payloadHash: payloadHash, body: body, range: range, sink: counting)
        }
    }

    /// The detail of an error that came from the transport, not from an answer.
    private static let transportFailure = "transport"

    private func attempt(
        _ method: String, _ url: String, payloadHash: String?, body: UnsafeRawBufferPointer?,
        range: String?, sink: ((UnsafeRawBufferPointer) -> Bool)?
    ) throws(AttacheError) -> Answer {
        let handle = try checkOut()
        var keep = true
        defer { if keep { checkIn(handle) } }
        let headers = ["x-amz-content-sha256: " + (payloadHash ?? Self.emptyHash)]
        var status: Int64 = 0
        var error = att_error()
        let outcome: att_s3_outcome = withoutActuallyEscaping(sink ?? { _ in true }) { escapable in
            let box = SinkBox(escapable)
            let context = sink == nil ? nil : Unmanaged.passUnretained(box).toOpaque()
            let callback: att_s3_sink? =
                sink == nil
                ? nil
                : { context, data, count in
                    let box = Unmanaged<SinkBox>.fromOpaque(context!).takeUnretainedValue()
                    return box.sink(UnsafeRawBufferPointer(start: data, count: count)) ? 0 : 1
                }
            return withExtendedLifetime(box) {
                withCStrings(headers) { lines in
                    att_s3_perform(
                        handle.pointer, method, url, lines, lines.count,
                        body?.baseAddress?.assumingMemoryBound(to: UInt8.self), Int64(body?.count ?? 0),
                        range, callback, context, &status, &error)
                }
            }
        }
        switch outcome {
        case ATT_S3_OVERFLOWED:
            // An answer over the buffer meant for it was stopped, never cut and taken as whole.
            keep = false
            att_s3_free(handle.pointer)
            throw AttacheError(
                .storeUnavailable,
                "object store: \(method) \(location.endpoint): the answer (HTTP \(status)) is over "
                    + "\(att_s3_small_body_max()) bytes; it was refused, not read in part", detail: String(status))
        case ATT_S3_STOPPED:
            // The sink asked to stop: what it took is what it wanted.
            return Answer(status: Int(status), body: "")
        case ATT_S3_ANSWERED:
            break
        default:
            keep = false
            att_s3_free(handle.pointer)
            var message = AttacheError.line(error.message)
            if message.isEmpty { message = "the request failed" }
            throw AttacheError(
                .storeUnavailable, "object store: \(method) \(location.endpoint): \(message)",
                detail: Self.transportFailure)
        }
        if sink != nil {
            let date = att_s3_date(handle.pointer).flatMap { Answer.httpDate(String(cString: $0)) }
            return Answer(status: Int(status), body: "", date: date)
        }
        var count = 0
        let text = att_s3_small_body(handle.pointer, &count)
        let body = text.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: count), as: UTF8.self) } ?? ""
        let date = att_s3_date(handle.pointer).flatMap { Answer.httpDate(String(cString: $0)) }
        return Answer(status: Int(status), body: body, date: date)
    }

    private func checkOut() throws(AttacheError) -> S3Handle {
        if let handle = handles.withLock({ $0.popLast() }) { return handle }
        guard
            let pointer = att_s3_new(
                "aws:amz:\(location.region):s3", "\(location.accessKey):\(location.secretKey)", 5_000, 120_000)
        else { throw AttacheError(.storeUnavailable, "object store: libcurl could not make a handle") }
        return S3Handle(pointer: pointer)
    }

    private func checkIn(_ handle: S3Handle) {
        let extra: S3Handle? = handles.withLock { handles in
            if handles.count >= 64 { return handle }
            handles.append(handle)
            return nil
        }
        if let extra { att_s3_free(extra.pointer) }
    }

    deinit {
        for handle in handles.withLock({ $0 }) { att_s3_free(handle.pointer) }
    }
}

/// An idle libcurl handle (owned by the pool, or by the one request using it).
private struct S3Handle: @unchecked Sendable {
    let pointer: OpaquePointer
}

extension String {

    fileprivate init(format2 byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }

}
