import Foundation

/// A directory under /tmp removed when the value goes away.
public final class TemporaryDirectory {
    /// Its path.
    public let path: String

    /// Creates a fresh, empty directory.
    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("attache-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The permission bits of a file in the directory.
    public func mode(of name: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + name)
        return (attributes[.posixPermissions] as? Int ?? 0) & 0o777
    }
}
