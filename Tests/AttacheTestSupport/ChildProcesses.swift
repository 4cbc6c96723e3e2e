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

/// Starts `attache store storm` with `arguments` (the store and the sizes), waits until it has
/// reported 1–3 stored objects (an event, not a guessed time), lets it go on for a random
/// sliver of `pause` microseconds into its next write, and kills it with SIGKILL. Returns how
/// many objects it reported; throws when it stopped by itself.
public func killStormWriter(
    _ arguments: [String], environment: [String: String]? = nil, pause: ClosedRange<UInt32>,
    using generator: inout some RandomNumberGenerator
) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try attacheExecutable())
    process.arguments = ["store", "storm"] + arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let wanted = Int.random(in: 1...3, using: &generator)
    var lines = 0
    while lines < wanted {
        let chunk = output.fileHandleForReading.availableData
        guard !chunk.isEmpty else { break }
        lines += chunk.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    }
    guard lines >= wanted else {
        process.waitUntilExit()
        throw StormWriterStopped(
            message: "the writer stopped before reporting: "
                + String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self))
    }
    usleep(UInt32.random(in: pause, using: &generator))
    guard process.isRunning else {
        throw StormWriterStopped(message: "the writer was no longer writing when it was to be killed")
    }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return lines
}

/// A `store storm` writer ended before it was killed.
public struct StormWriterStopped: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Runs `body` (waiting for a child process, reading a pipe to its end) on a thread of its own:
/// a test that blocks one of Swift's cooperative threads (as many as the cores) holds up every
/// task beside it — fetch completions, servers' answers, deadlines — for as long as it waits.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
