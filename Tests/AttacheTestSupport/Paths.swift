import Foundation

/// Where the tests find the checkout's files.
public enum Paths {
    /// The package root.
    public static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    /// `Samples/media`: real files of every accepted kind and a few refused ones.
    public static let samples = package + "/Samples/media"
    /// `Tests/Fixtures`.
    public static let fixtures = package + "/Tests/Fixtures"
    /// The README the tests check documented strings against.
    public static let readme = package + "/README.md"
}

/// Files under `Tests/Fixtures`.
public enum Fixtures {
    /// The fixtures folder.
    public static let root = Paths.fixtures

    /// The bytes of a fixture.
    public static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + name)))
    }
}

/// `Samples/media/gray.jpg`, a small baseline JPEG the network tests serve.
public let sampleJPEG: [UInt8] = Array(FileManager.default.contents(atPath: Paths.samples + "/gray.jpg")!)
