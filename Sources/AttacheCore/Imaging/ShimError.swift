internal import CAttache

extension AttacheError {
    /// Maps a C shim failure to a typed error; `format` names the codec in the message.
    init(shim error: att_error, format: String) {
        let message = withUnsafeBytes(of: error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let text = "\(format): \(message.isEmpty ? "decoder failed" : message)"
        switch error.status {
        case Int32(ATT_ERR_TRUNCATED.rawValue):
            self.init(.truncated, text)
        case Int32(ATT_ERR_UNSUPPORTED.rawValue):
            self.init(.unsupportedVariant, text)
        case Int32(ATT_ERR_MEMORY_LIMIT.rawValue):
            self.init(.decoderMemoryExceeded, text, limit: "max_decoder_memory")
        case Int32(ATT_ERR_SCAN_LIMIT.rawValue):
            self.init(.tooManyScans, text, limit: "max_scans")
        case Int32(ATT_ERR_DIMENSIONS.rawValue):
            self.init(.dimensionsTooLarge, text, limit: "max_dimension")
        case Int32(ATT_ERR_TIMEOUT.rawValue):
            self.init(.timedOut, text)
        case Int32(ATT_ERR_CORRUPT.rawValue):
            self.init(.corruptData, text)
        default:
            self.init(.internalError, text)
        }
    }
}

/// A point on the shim's monotonic clock after which decoding stops with `timed_out`.
struct DecodeDeadline {
    /// Nanoseconds on `att_monotonic_ns`; 0 means none.
    let nanoseconds: UInt64

    static let none = DecodeDeadline(nanoseconds: 0)

    /// A deadline `budget` from now, or none.
    init(budget: Duration?) {
        if let budget {
            let (seconds, attoseconds) = budget.components
            let ns = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
            nanoseconds = att_monotonic_ns() &+ UInt64(max(ns, 1))
        } else {
            nanoseconds = 0
        }
    }

    private init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Throws `timed_out` once the deadline has passed.
    func check() throws(AttacheError) {
        if nanoseconds != 0 && att_monotonic_ns() > nanoseconds {
            throw AttacheError(.timedOut, "decode deadline passed")
        }
    }
}
