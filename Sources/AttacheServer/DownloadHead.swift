/// The request heads ``RawDownloads`` answers: a plain download `GET`, recognised from the
/// bytes (checked against SwiftNIO's HTTP/1 decoder by the `head` fuzz target).
package enum DownloadHead {
    /// The longest head read here; a longer one is the decoder's.
    package static let maxHead = 8 << 10

    package enum Parsed: Equatable {
        /// The head has not all arrived.
        case incomplete
        /// Not a plain download `GET`: the decoder's.
        case other
        /// A plain `GET` of `<prefix><path>`, its head `length` bytes.
        case get(path: Substring, length: Int)
    }

    /// Reads one request head from `bytes`: a plain download `GET` only when every part of it is
    /// written the one plain way (request line `GET <prefix><path> HTTP/1.1`, the target of
    /// visible ASCII without `%`, header lines `name: value` with token names and values of
    /// visible ASCII, space and tab, CRLF line ends, one `Host` that RequestFraming accepts) and
    /// it names nothing that asks for more
    /// than the whole object (no body, `Connection` other than `keep-alive`, `Range`,
    /// conditions, `Expect`, `Upgrade`).
    package static func parse(_ bytes: UnsafeRawBufferPointer, prefix: [UInt8]) -> Parsed {
        let count = bytes.count
        // A head that cannot be a download is known from its first bytes.
        let method = 4  // "GET "
        for i in 0..<min(count, method) where bytes[i] != getSpace[i] { return .other }
        for i in method..<max(method, min(count, method + prefix.count)) where bytes[i] != prefix[i - method] {
            return .other
        }
        // The head's end.
        var end = -1
        var i = 3
        let scanned = min(count, maxHead)
        while i < scanned {
            if bytes[i] == 0x0A {
                // A line ended by a bare LF is not written the plain way.
                guard bytes[i - 1] == 0x0D else { return .other }
                if bytes[i - 2] == 0x0A, bytes[i - 3] == 0x0D {
                    end = i + 1
                    break
                }
            }
            i += 1
        }
        guard end > 0 else { return count >= maxHead ? .other : .incomplete }
        // Request line.
        var position = method
        let targetStart = position
        var query = -1
        while position < end, bytes[position] != 0x20 {
            let byte = bytes[position]
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%") else { return .other }
            if byte == UInt8(ascii: "?"), query < 0 { query = position }
            position += 1
        }
        let targetEnd = query >= 0 ? query : position
        guard position + version.count <= end else { return .other }
        for j in 0..<version.count where bytes[position + j] != version[j] { return .other }
        position += version.count
        // Header lines, up to the empty line.
        var fields = 0
        var hosts = 0
        while position < end - 2 {
            fields += 1
            guard fields <= 100 else { return .other }
            let nameStart = position
            while position < end, isToken(bytes[position]) { position += 1 }
            guard position > nameStart, position < end, bytes[position] == UInt8(ascii: ":") else { return .other }
            let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<position])
            position += 1
            let valueStart = position
            while position < end, bytes[position] != 0x0D {
                let byte = bytes[position]
                guard byte == 0x09 || (byte >= 0x20 && byte < 0x7F) else { return .other }
                position += 1
            }
            guard position + 1 < end, bytes[position + 1] == 0x0A else { return .other }
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<position])
            position += 2
            if refused(name) { return .other }
            if equal(name, "connection"), !equal(trimmed(value), "keep-alive") { return .other }
            if equal(name, "host") {
                hosts += 1
                // RequestFraming's rule, so that this path and the decoder's never differ.
                guard FramingRules.isHost(trimmed(value)) else { return .other }
            }
        }
        // Exactly one Host; anything else is the decoder's, and RequestFraming refuses it.
        guard position == end - 2, hosts == 1 else { return .other }
        let path = String(
            decoding: UnsafeRawBufferPointer(rebasing: bytes[(targetStart + prefix.count)..<targetEnd]), as: UTF8.self)
        return .get(path: Substring(path), length: end)
    }

    private static let getSpace: [UInt8] = Array("GET ".utf8)
    private static let version: [UInt8] = Array(" HTTP/1.1\r\n".utf8)

    /// Fields that ask for more than a whole object's plain answer (or for a body).
    private static let refusedNames: [StaticString] = [
        "content-length", "transfer-encoding", "range", "if-range", "if-none-match", "if-match",
        "if-modified-since", "if-unmodified-since", "expect", "upgrade", "te", "trailer",
    ]

    private static func refused(_ name: UnsafeRawBufferPointer) -> Bool {
        // Every refused name starts with one of these letters: most fields (Host, User-Agent,
        // Accept) are told apart by their first byte.
        switch name[0] | 0x20 {
        case UInt8(ascii: "c"), UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "i"), UInt8(ascii: "e"),
            UInt8(ascii: "u"):
            return refusedNames.contains { equal(name, $0) }
        default:
            return false
        }
    }

    /// Case-insensitive comparison of ASCII bytes with a lower-case name.
    private static func equal(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        for i in 0..<bytes.count {
            let byte = bytes[i]
            let lower = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            if lower != expected[i] { return false }
        }
        return true
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var from = 0
        var to = bytes.count
        while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
        while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[from..<to])
    }

    /// RFC 9110 tchar.
    private static func isToken(_ byte: UInt8) -> Bool {
        guard byte < 0x80 else { return false }
        let bits = byte < 64 ? tokenBits.0 : tokenBits.1
        return (bits >> UInt64(byte & 63)) & 1 == 1
    }

    /// The tchar bytes as two 64-bit masks (bytes 0–63 and 64–127).
    private static let tokenBits: (UInt64, UInt64) = {
        var bits: (UInt64, UInt64) = (0, 0)
        for byte in "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8 {
            if byte < 64 { bits.0 |= 1 << UInt64(byte) } else { bits.1 |= 1 << UInt64(byte - 64) }
        }
        return bits
    }()
}
