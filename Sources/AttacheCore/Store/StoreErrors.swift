extension AttacheError.Code {
    /// Storing the object would pass the store's byte or object quota, even after collecting
    /// expired objects.
    public static let storeFull = Self(rawValue: "store_full")
    /// No live attachment has that id (never stored, expired or collected).
    public static let notFound = Self(rawValue: "not_found")
    /// The access token does not open this attachment. The outward answer for every refusal;
    /// the precise ``TokenRefusal`` is kept for logs.
    public static let accessDenied = Self(rawValue: "access_denied")
    /// An argument the store cannot record as given (a source URL or spec holding NUL).
    public static let invalidInput = Self(rawValue: "invalid_input")
    /// The store's files or catalog are not in a state Attache can work with.
    public static let storeCorrupt = Self(rawValue: "store_corrupt")
}
