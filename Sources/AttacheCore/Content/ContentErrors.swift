extension AttacheError.Code {
    /// The payload is not a JSON object Attache can read (it is passed through unchanged).
    public static let invalidPayload = Self(rawValue: "invalid_payload")
    /// The mutated payload would not fit the push size limit with this attachment.
    public static let payloadTooLarge = Self(rawValue: "payload_too_large")
}
