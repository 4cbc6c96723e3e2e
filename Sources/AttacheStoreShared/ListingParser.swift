import AttacheBase
import AttacheStore
import Glibc

/// One object of a bucket listing.
struct ListedObject: Sendable, Equatable {
    /// The key, relative to the bucket (XML entities decoded).
    var key: String
    var size: Int64
    /// `LastModified` in Unix seconds, when the server gave one that parses.
    var modified: Int64?
    /// Seconds since `LastModified` by the server's clock when it answered (nil: unknown).
    var age: Int64? = nil
}

/// A ListObjectsV2 answer parsed as it arrives: no page is ever held whole. Elements are read
/// one at a time from a buffer that only ever holds the element being read (at most
/// ``maxElement`` bytes); `Contents` become ``ListedObject``s, at most `maxKeys` of them per
/// page (a server that sends more is refused: a page bigger than it was asked to be).
struct ListingParser {
    /// The longest element accepted (a key is at most 1,024 bytes, escaped at most 6 times that).
    static let maxElement = 64 << 10

    private(set) var objects: [ListedObject] = []
    private(set) var truncated = false
    private(set) var next: String?
    private(set) var failure: AttacheError?
    private var buffer: [UInt8] = []
    private let maxKeys: Int

    init(maxKeys: Int) {
        self.maxKeys = maxKeys
        objects.reserveCapacity(min(maxKeys, 1000))
    }

    /// Takes the next bytes of the answer; false once the answer is refused (see ``failure``).
    mutating func feed(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil else { return false }
        buffer.append(contentsOf: chunk)
        consume()
        return failure == nil
    }

    /// The answer ended: nothing may be left half read.
    mutating func finish() throws(AttacheError) {
        consume()
        if let failure { throw failure }
        let rest = buffer.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard rest.isEmpty else {
            throw AttacheError(.storeUnavailable, "object store: the listing ended inside an element")
        }
    }

    private mutating func fail(_ why: String) {
        failure = AttacheError(.storeUnavailable, "object store: listing refused: \(why)")
    }

    /// Reads every complete element at the front of the buffer.
    private mutating func consume() {
        var position = 0
        defer { if position > 0 { buffer.removeFirst(position) } }
        while failure == nil {
            guard let open = buffer[position...].firstIndex(of: UInt8(ascii: "<")) else {
                position = buffer.count
                return
            }
            position = open
            guard let close = buffer[open...].firstIndex(of: UInt8(ascii: ">")) else {
                if buffer.count - open > Self.maxElement { fail("a tag over \(Self.maxElement) bytes") }
                return
            }
            let tag = buffer[(open + 1)..<close]
            // Declarations, closing tags of the document, and empty elements carry nothing here.
            if tag.first == UInt8(ascii: "?") || tag.first == UInt8(ascii: "/") || tag.first == UInt8(ascii: "!")
                || tag.last == UInt8(ascii: "/")
            {
                position = close + 1
                continue
            }
            let name = String(decoding: tag.prefix { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A }, as: UTF8.self)
            if name == "ListBucketResult" {
                position = close + 1
                continue
            }
            let end = Array("</\(name)>".utf8)
            guard let endAt = Self.find(end, in: buffer, from: close + 1) else {
                if buffer.count - open > Self.maxElement { fail("an element over \(Self.maxElement) bytes") }
                return
            }
            // The same bound whether an element came in one piece or in many.
            if endAt + end.count - open > Self.maxElement { return fail("an element over \(Self.maxElement) bytes") }
            element(name, buffer[(close + 1)..<endAt])
            position = endAt + end.count
        }
    }

    private mutating func element(_ name: String, _ body: ArraySlice<UInt8>) {
        switch name {
        case "Contents":
            guard let key = Self.child("Key", in: body) else { return fail("an entry without a key") }
            guard let size = Self.child("Size", in: body).flatMap({ Int64($0) }), size >= 0 else {
                return fail("an entry without a size")
            }
            guard objects.count < maxKeys else { return fail("a page of more than the \(maxKeys) keys asked for") }
            objects.append(
                ListedObject(
                    key: Self.unescape(key), size: size,
                    modified: Self.child("LastModified", in: body).flatMap(Self.time)))
        case "IsTruncated":
            truncated = String(decoding: body, as: UTF8.self) == "true"
        case "NextContinuationToken":
            next = Self.unescape(String(decoding: body, as: UTF8.self))
        default:
            break
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// The text of the first `<name>…</name>` inside `body`.
    static func child(_ name: String, in body: ArraySlice<UInt8>) -> String? {
        let open = Array("<\(name)>".utf8)
        let close = Array("</\(name)>".utf8)
        let bytes = Array(body)
        guard let start = find(open, in: bytes, from: 0), let end = find(close, in: bytes, from: start + open.count)
        else { return nil }
        return String(decoding: bytes[(start + open.count)..<end], as: UTF8.self)
    }

    /// XML's five entities and numeric character references.
    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "lt": out += "<"
            case "gt": out += ">"
            case "amp": out += "&"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number =
                    entity.hasPrefix("#x")
                    ? UInt32(entity.dropFirst(2), radix: 16)
                    : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += rest[amp...semi]
                }
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }

    /// `2026-11-24T07:00:00.000Z` in Unix seconds.
    static func time(_ text: String) -> Int64? {
        let digits = text.unicodeScalars.map { $0 }
        guard digits.count >= 19 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int32? {
            Int32(String(String.UnicodeScalarView(digits[from..<(from + count)])))
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        return seconds < 0 ? nil : Int64(seconds)
    }
}
