/// A typed failure from any stage, with a stable machine code and a human message.
///
/// Codes are stable strings for logs, metrics and JSON output; new codes can be added without
/// breaking callers, who compare against the static members of ``AttacheError/Code``.
public struct AttacheError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable machine-readable error code such as `corrupt_data` or `too_many_pixels`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as written in logs and JSON.
        public let rawValue: String

        /// Creates a code from its string form.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code as written in logs and JSON.
        public var description: String { rawValue }

        /// The bytes are not a valid file of their kind (bad header, bad entropy data, bad CRC).
        public static let corruptData = Code(rawValue: "corrupt_data")
        /// The file ends before its image data does.
        public static let truncated = Code(rawValue: "truncated")
        /// The input holds no bytes at all.
        public static let emptyInput = Code(rawValue: "empty_input")
        /// The bytes are of a type Attache does not accept (named in the message).
        public static let unsupportedType = Code(rawValue: "unsupported_type")
        /// A known type in a variant the codecs do not handle (12-bit or lossless JPEG).
        public static let unsupportedVariant = Code(rawValue: "unsupported_variant")
        /// Width × height exceeds the pixel limit.
        public static let tooManyPixels = Code(rawValue: "too_many_pixels")
        /// Width or height exceeds the dimension limit, or is zero.
        public static let dimensionsTooLarge = Code(rawValue: "dimensions_too_large")
        /// An animated image has more frames than allowed.
        public static let tooManyFrames = Code(rawValue: "too_many_frames")
        /// A progressive JPEG has more scans than allowed.
        public static let tooManyScans = Code(rawValue: "too_many_scans")
        /// Decoding would need more memory than the decoder-memory cap.
        public static let decoderMemoryExceeded = Code(rawValue: "decoder_memory_exceeded")
        /// The work did not finish before its deadline.
        public static let timedOut = Code(rawValue: "timed_out")
        /// The encoder failed to produce output.
        public static let encodeFailed = Code(rawValue: "encode_failed")
        /// A file could not be read or written.
        public static let ioError = Code(rawValue: "io_error")
        /// An invariant inside Attache did not hold.
        public static let internalError = Code(rawValue: "internal_error")
    }

    /// The stable code.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The name of the configured limit that was exceeded, when a limit caused the error.
    public let limit: String?
    /// A machine-readable detail: the address rule for `blocked_address`, the status code for
    /// `http_status`, the refused type for `unsupported_type` from a fetch.
    public let detail: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, limit: String? = nil, detail: String? = nil) {
        self.code = code
        self.message = message
        self.limit = limit
        self.detail = detail
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
