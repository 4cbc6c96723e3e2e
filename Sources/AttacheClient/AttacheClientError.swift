import AttacheSeal

/// Why the kit could not deliver something. Every failure is one of these; nothing
/// half-written is left in the download directory.
public enum AttacheClientError: Error, Hashable, Sendable {
    /// The payload's `encrypted-content` is not the documented shape.
    case malformedSeal(String)
    /// The seal did not open: a wrong key, or a seal that was changed.
    case sealRejected
    /// The payload is sealed and the kit was given no key for it.
    case noKey
    /// The attachment host answered with this status.
    case httpStatus(Int)
    /// The body is larger than its entry says (or than the type's cap).
    case tooLarge
    /// The body ended before its last byte or segment.
    case truncated
    /// A segment failed authentication (tampered, reordered, from another object).
    case segmentRejected(Int64)
    /// The plaintext is not the size its entry says.
    case sizeMismatch(expected: Int64, got: Int64)
    /// The plaintext's SHA-256 is not the one its entry says.
    case hashMismatch
    /// The first bytes are not of the entry's type.
    case wrongType(String)
    /// Time ran out first.
    case timedOut
    /// Memory would not allow this rendition (and there was no smaller one).
    case notEnoughMemory
    /// The transfer failed (connection refused, DNS, TLS…).
    case network(String)
    /// A file could not be written.
    case io(String)

    init(_ error: SealError) {
        switch error {
        case .segmentRejected(let index): self = .segmentRejected(index)
        case .truncated: self = .truncated
        case .badHeader, .trailingData: self = .segmentRejected(-1)
        case .sealRejected: self = .sealRejected
        case .malformed(let why), .badKey(let why): self = .malformedSeal(why)
        }
    }

    /// A short stable code, as receipts and logs carry it.
    public var code: String {
        switch self {
        case .malformedSeal: "malformed_seal"
        case .sealRejected: "seal_rejected"
        case .noKey: "no_key"
        case .httpStatus: "http_status"
        case .tooLarge: "too_large"
        case .truncated: "truncated"
        case .segmentRejected: "segment_rejected"
        case .sizeMismatch: "size_mismatch"
        case .hashMismatch: "hash_mismatch"
        case .wrongType: "wrong_type"
        case .timedOut: "timed_out"
        case .notEnoughMemory: "not_enough_memory"
        case .network: "network"
        case .io: "io_error"
        }
    }
}

/// The attachment types a notification takes: file extensions, byte caps, and the magic of
/// the image types (checked on the first bytes of what was downloaded).
enum AttachmentTypes {
    static let extensions: [String: String] = [
        "public.jpeg": "jpg", "public.png": "png", "com.compuserve.gif": "gif", "public.aiff-audio": "aiff",
        "public.aifc-audio": "aifc", "com.microsoft.waveform-audio": "wav", "public.mp3": "mp3",
        "public.mpeg-4-audio": "m4a", "public.mpeg": "mpg", "public.mpeg-2-video": "m2v", "public.mpeg-4": "mp4",
        "com.apple.m4v-video": "m4v", "public.avi": "avi",
    ]

    /// Apple's caps: images 10 MB, audio 5 MB, video 50 MB.
    static func cap(type: String) -> Int64 {
        switch type {
        case "public.jpeg", "public.png", "com.compuserve.gif": 10_000_000
        case "public.aiff-audio", "public.aifc-audio", "com.microsoft.waveform-audio", "public.mp3",
            "public.mpeg-4-audio":
            5_000_000
        default: 50_000_000
        }
    }

    static func isImage(_ type: String) -> Bool { ["public.jpeg", "public.png", "com.compuserve.gif"].contains(type) }

    static func matches(type: String, firstBytes: [UInt8]) -> Bool {
        switch type {
        case "public.jpeg": firstBytes.starts(with: [0xFF, 0xD8, 0xFF])
        case "public.png": firstBytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        case "com.compuserve.gif": firstBytes.starts(with: Array("GIF8".utf8))
        default: !firstBytes.isEmpty
        }
    }
}
