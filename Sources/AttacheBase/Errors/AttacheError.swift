/// A typed failure from any stage, with a stable machine code and a human message.
///
/// Codes and limit names are stable strings for logs, metrics and JSON output, all defined in
/// one place (`ErrorCatalogue.swift`); new ones can be added without breaking callers, who
/// compare against the static members of ``AttacheError/Code`` and ``AttacheError/Limit``.
public struct AttacheError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable machine-readable error code such as `corrupt_data` or `too_many_pixels`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as written in logs and JSON.
        public let rawValue: String

        /// Creates a code from its string form.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code as written in logs and JSON.
        public var description: String { rawValue }
    }

    /// The name of a configured limit, such as `max_pixels`, carried by the error it caused.
    public struct Limit: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The limit's name as written in logs and JSON.
        public let rawValue: String

        /// Creates a limit name from its string form.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The name as written in logs and JSON.
        public var description: String { rawValue }
    }

    /// The stable code.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The configured limit that was exceeded, when a limit caused the error.
    public let limit: Limit?
    /// A machine-readable detail: the address rule for `blocked_address`, the status code for
    /// `http_status`, the refused type for `unsupported_type` from a fetch.
    public let detail: String?
    /// Body bytes a fetch read before it failed (an endless body, a length that lies): what the
    /// outcome reports as fetched. 0 when nothing was read, and for every other stage.
    public var fetchedBytes: Int64 = 0

    /// Creates an error.
    public init(_ code: Code, _ message: String, limit: Limit? = nil, detail: String? = nil) {
        self.code = code
        self.message = message
        self.limit = limit
        self.detail = detail
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
