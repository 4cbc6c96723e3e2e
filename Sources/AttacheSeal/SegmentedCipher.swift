public import Crypto
import Foundation

/// The sealed-attachment format: a 16-byte header, then the plaintext in fixed-size segments,
/// each sealed with AES-256-GCM under one random key, STREAM-style (Hoang, Reyhanitabar,
/// Rogaway, Vizár 2015):
///
/// ```
/// header   "ATS1" | segment size (u32 BE) | nonce prefix (7 random bytes) | 0x00
/// segment  AES-256-GCM(key, nonce = prefix | index (u32 BE) | last (0x00 or 0x01),
///                      aad = header, plaintext[index * size ..< (index + 1) * size])
///          = ciphertext (same length) | tag (16)
/// ```
///
/// Every segment is `size` bytes of plaintext except the last, which has 1…`size` bytes (0
/// only when the whole plaintext is empty) and is the only one sealed with `last = 1`: a
/// truncated stream, a reordered or dropped segment, a segment from another stream, or a
/// changed header fails to open. A reader holds one segment at a time, and plaintext byte `n`
/// is in segment `n / size`, at ciphertext offset `16 + (n / size) * (size + 16)`, so a byte
/// range maps to whole segments.
public enum SegmentedCipher {
    public static let magic: [UInt8] = Array("ATS1".utf8)
    public static let headerSize = 16
    public static let tagSize = 16
    /// The default segment: 64 KiB of plaintext.
    public static let defaultSegmentSize = 64 * 1024

    /// The ciphertext length for `plaintext` bytes.
    public static func sealedSize(plaintext: Int64, segmentSize: Int = defaultSegmentSize) -> Int64 {
        let size = Int64(segmentSize)
        let segments = max(1, (plaintext + size - 1) / size)
        return Int64(headerSize) + plaintext + segments * Int64(tagSize)
    }

    /// The segments holding plaintext bytes `range`, and where they are in the ciphertext.
    public static func segments(
        covering range: Range<Int64>, segmentSize: Int = defaultSegmentSize
    ) -> (first: Int64, last: Int64, ciphertext: Range<Int64>) {
        let size = Int64(segmentSize)
        let first = range.lowerBound / size
        let last = max(first, (range.upperBound - 1) / size)
        let start = Int64(headerSize) + first * (size + Int64(tagSize))
        let end = Int64(headerSize) + (last + 1) * (size + Int64(tagSize))
        return (first, last, start..<end)
    }

    /// The nonce of segment `index`.
    static func nonce(prefix: ArraySlice<UInt8>, index: UInt32, last: Bool) -> [UInt8] {
        var bytes = Array(prefix)
        bytes += [UInt8(index >> 24), UInt8(index >> 16 & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)]
        bytes.append(last ? 1 : 0)
        return bytes
    }

    static func header(segmentSize: Int, prefix: [UInt8]) -> [UInt8] {
        let size = UInt32(segmentSize)
        return magic + [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            + prefix + [0]
    }
}

/// Why a sealed stream did not open.
public enum SealError: Error, Equatable, Sendable {
    /// Not this format, or a segment size out of range.
    case badHeader
    /// A segment failed authentication: tampered, reordered, from another stream, or the
    /// wrong key.
    case segmentRejected(index: Int64)
    /// The stream ended before its last segment.
    case truncated
    /// Bytes after the last segment.
    case trailingData
    /// The seal (HPKE) could not be opened.
    case sealRejected
    /// A sealed payload that is not the documented shape.
    case malformed(String)
    /// A recipient key or key id that cannot be used.
    case badKey(String)
}

extension SealError: CustomStringConvertible {
    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .badHeader: "not a sealed attachment (its header is not ATS1 with a segment size in range)"
        case .segmentRejected(let index):
            "segment \(index) failed authentication (tampered, reordered or the wrong key)"
        case .truncated: "the sealed stream ended before its last segment"
        case .trailingData: "bytes follow the last segment"
        case .sealRejected: "the seal could not be opened with this key"
        case .malformed(let why): "the sealed payload is not in the documented shape: \(why)"
        case .badKey(let why): why
        }
    }
}

/// Seals a plaintext stream as it is written: `append` returns the ciphertext ready so far
/// (whole segments), `finish` the rest. Holds at most one segment.
public struct SegmentEncryptor {
    public let key: SymmetricKey
    public let segmentSize: Int
    private let header: [UInt8]
    private let prefix: [UInt8]
    private var pending: [UInt8] = []
    private var index: UInt32 = 0
    private var started = false

    /// `prefix` (7 bytes) defaults to random; a fixed one is for test vectors only.
    public init(key: SymmetricKey, segmentSize: Int = SegmentedCipher.defaultSegmentSize, noncePrefix: [UInt8]? = nil) {
        precondition(key.bitCount == 256 && segmentSize > 0 && segmentSize <= 1 << 24)
        self.key = key
        self.segmentSize = segmentSize
        let prefix = noncePrefix ?? (0..<7).map { _ in UInt8.random(in: 0...255) }
        precondition(prefix.count == 7)
        self.prefix = prefix
        header = SegmentedCipher.header(segmentSize: segmentSize, prefix: prefix)
        pending.reserveCapacity(segmentSize)
    }

    /// Takes more plaintext; returns the ciphertext of every segment now known not to be last.
    public mutating func append(_ bytes: some Collection<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = started ? [] : header
        started = true
        var rest = bytes[...]
        while !rest.isEmpty {
            // A full segment is sealed only once a byte beyond it shows it is not the last.
            if pending.count == segmentSize {
                out += try seal(last: false)
            }
            let take = min(segmentSize - pending.count, rest.count)
            pending += rest.prefix(take)
            rest = rest.dropFirst(take)
        }
        return out
    }

    /// Seals the last segment.
    public mutating func finish() throws -> [UInt8] {
        var out: [UInt8] = started ? [] : header
        started = true
        out += try seal(last: true)
        return out
    }

    private mutating func seal(last: Bool) throws -> [UInt8] {
        let nonce = try AES.GCM.Nonce(
            data: SegmentedCipher.nonce(prefix: prefix[...], index: index, last: last))
        let box = try AES.GCM.seal(pending, using: key, nonce: nonce, authenticating: header)
        pending.removeAll(keepingCapacity: true)
        index += 1
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// Seals `plaintext` whole.
    public static func seal(
        _ plaintext: some Collection<UInt8>, key: SymmetricKey, segmentSize: Int = SegmentedCipher.defaultSegmentSize,
        noncePrefix: [UInt8]? = nil
    ) throws -> [UInt8] {
        var encryptor = SegmentEncryptor(key: key, segmentSize: segmentSize, noncePrefix: noncePrefix)
        return try encryptor.append(plaintext) + encryptor.finish()
    }
}

/// Opens a sealed stream as it arrives: `append` returns the plaintext of every segment that
/// is now known not to be the last and authenticates, `finish` the last one. Holds at most one
/// segment and the header. Nothing is returned from a segment that fails.
public struct SegmentDecryptor {
    public let key: SymmetricKey
    /// The segment size from the header, once read.
    public private(set) var segmentSize = 0
    private var header: [UInt8] = []
    private var prefix: [UInt8] = []
    private var pending: [UInt8] = []
    private var index: Int64 = 0
    private var finished = false

    /// Opens a stream from segment `firstSegment` on (a `Range` download that starts there):
    /// the header is still read first.
    public init(key: SymmetricKey, firstSegment: Int64 = 0) {
        self.key = key
        self.index = firstSegment
    }

    /// Takes more ciphertext; returns the plaintext of the segments it completed.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(SealError) -> [UInt8] {
        var out: [UInt8] = []
        let done: Result<Void, SealError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(SealError) in try append(UnsafeRawBufferPointer(buffer), into: &out) }
        }
        if let done {
            try done.get()
        } else {
            let copy = Array(bytes)
            let result = copy.withUnsafeBytes { buffer in
                Result { () throws(SealError) in try append(buffer, into: &out) }
            }
            try result.get()
        }
        return out
    }

    /// ``append(_:)`` from contiguous bytes: a whole segment that arrives in one piece (and is
    /// known not to be the last) is opened where it lies, without a copy into `pending`.
    private mutating func append(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) throws(SealError) {
        guard !finished else { throw .trailingData }
        var rest = bytes[...]
        if header.count < SegmentedCipher.headerSize {
            let take = min(SegmentedCipher.headerSize - header.count, rest.count)
            header += rest.prefix(take)
            rest = rest.dropFirst(take)
            if header.count == SegmentedCipher.headerSize { try readHeader() }
        }
        let sealed = segmentSize + SegmentedCipher.tagSize
        while !rest.isEmpty {
            // A full segment opens as not-last only once a byte beyond it arrives.
            if pending.count == sealed { try openPending(last: false, into: &out) }
            if pending.isEmpty, rest.count > sealed {
                try open(UnsafeRawBufferPointer(rebasing: rest.prefix(sealed)), last: false, into: &out)
                rest = rest.dropFirst(sealed)
                continue
            }
            let take = min(sealed - pending.count, rest.count)
            pending += rest.prefix(take)
            rest = rest.dropFirst(take)
        }
    }

    /// The end of the stream: opens the last segment.
    public mutating func finish() throws(SealError) -> [UInt8] {
        guard header.count == SegmentedCipher.headerSize, pending.count >= SegmentedCipher.tagSize else {
            throw .truncated
        }
        var out: [UInt8] = []
        try openPending(last: true, into: &out)
        finished = true
        return out
    }

    private mutating func readHeader() throws(SealError) {
        guard Array(header[0..<4]) == SegmentedCipher.magic, header[15] == 0 else { throw .badHeader }
        let size = header[4..<8].reduce(0) { $0 << 8 | Int($1) }
        guard size > 0, size <= 1 << 24 else { throw .badHeader }
        segmentSize = size
        prefix = Array(header[8..<15])
        pending.reserveCapacity(size + SegmentedCipher.tagSize)
    }

    /// Opens the segment held in `pending` and empties it (keeping its capacity).
    private mutating func openPending(last: Bool, into out: inout [UInt8]) throws(SealError) {
        var held: [UInt8] = []
        swap(&held, &pending)
        defer {
            held.removeAll(keepingCapacity: true)
            swap(&held, &pending)
        }
        let result = held.withUnsafeBytes { segment in
            Result { () throws(SealError) in try open(segment, last: last, into: &out) }
        }
        try result.get()
    }

    /// Opens one sealed segment (ciphertext and tag) and appends its plaintext to `out`.
    private mutating func open(_ segment: UnsafeRawBufferPointer, last: Bool, into out: inout [UInt8]) throws(SealError)
    {
        guard index <= Int64(UInt32.max) else { throw .segmentRejected(index: index) }
        do {
            let nonce = try AES.GCM.Nonce(
                data: SegmentedCipher.nonce(prefix: prefix[...], index: UInt32(index), last: last))
            let split = segment.count - SegmentedCipher.tagSize
            let box = try AES.GCM.SealedBox(
                nonce: nonce, ciphertext: UnsafeRawBufferPointer(rebasing: segment[..<split]),
                tag: UnsafeRawBufferPointer(rebasing: segment[split...]))
            let plain = try AES.GCM.open(box, using: key, authenticating: header)
            out.append(contentsOf: plain)
            index += 1
        } catch {
            throw .segmentRejected(index: index)
        }
    }

    /// Opens `ciphertext` whole.
    public static func open(_ ciphertext: some Collection<UInt8>, key: SymmetricKey) throws(SealError) -> [UInt8] {
        var decryptor = SegmentDecryptor(key: key)
        // The plaintext is shorter than the ciphertext: one allocation holds it.
        var out: [UInt8] = []
        out.reserveCapacity(ciphertext.count)
        let copy = ciphertext.withContiguousStorageIfAvailable { _ in false } ?? true
        let bytes = copy ? Array(ciphertext) : nil
        let result: Result<Void, SealError>? =
            if let bytes {
                bytes.withUnsafeBytes { buffer in
                    Result { () throws(SealError) in try decryptor.append(buffer, into: &out) }
                }
            } else {
                ciphertext.withContiguousStorageIfAvailable { buffer in
                    Result { () throws(SealError) in try decryptor.append(UnsafeRawBufferPointer(buffer), into: &out) }
                }
            }
        try result?.get()
        out += try decryptor.finish()
        return out
    }
}
