import AttacheBase

/// Runs `body` and returns its typed error, or nil when it succeeded.
public func failure<T>(_ body: () throws -> T) -> AttacheError? {
    do {
        _ = try body()
        return nil
    } catch let error as AttacheError {
        return error
    } catch {
        return AttacheError(.internalError, "untyped error: \(error)")
    }
}
