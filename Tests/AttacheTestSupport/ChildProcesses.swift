import AttacheBase
import Foundation

/// True in the child that runs the network, pipeline and deadline suites alone.
public let inIsolatedChild = ProcessInfo.processInfo.environment["ATTACHE_ISOLATED_CHILD"] == "1"

/// True in the child that runs inside a loopback-only network namespace.
public let inNetworkNamespaceChild = ProcessInfo.processInfo.environment["ATTACHE_NETNS_CHILD"] == "1"

/// Runs the suites matching `filter` in a child of this test binary (optionally under a
/// wrapper such as `unshare`), with `variable`=1 in its environment; returns its status and
/// output.
public func runTestsInChild(filter: [String], variable: String, wrapper: [String] = []) throws -> (Int32, String) {
    let process = Process()
    let command =
        [CommandLine.arguments[0], "--testing-library", "swift-testing"] + filter.flatMap { ["--filter", $0] }
    process.executableURL = URL(fileURLWithPath: wrapper.first ?? command[0])
    process.arguments = Array((wrapper + command).dropFirst())
    var environment = ProcessInfo.processInfo.environment
    environment[variable] = "1"
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

/// The `attache` executable built beside the test bundle.
public func attacheExecutable() throws -> String {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("attache").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    throw AttacheError(
        .internalError, "no attache executable near \(CommandLine.arguments[0]); run swift build --build-tests")
}
