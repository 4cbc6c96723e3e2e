import Foundation

/// A directory under /tmp (or another parent) removed when the value goes away.
public final class TemporaryDirectory {
    /// Its path.
    public let path: String

    /// Creates a fresh, empty directory (under `base` when given, else the temporary directory).
    public init(under base: String? = nil) throws {
        let parent = base.map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
        path = parent.appendingPathComponent("attache-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A fresh directory in memory (/dev/shm where there is one): a store there commits without
    /// waiting on a disk that other work on the machine keeps busy.
    public static func inMemory() throws -> TemporaryDirectory {
        var isDirectory: ObjCBool = false
        let shm = FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isDirectory) && isDirectory.boolValue
        return try TemporaryDirectory(under: shm ? "/dev/shm" : nil)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The permission bits of a file in the directory.
    public func mode(of name: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/" + name)
        return (attributes[.posixPermissions] as? Int ?? 0) & 0o777
    }
}
