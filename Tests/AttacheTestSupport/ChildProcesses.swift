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
    let command =
        wrapper + [CommandLine.arguments[0], "--testing-library", "swift-testing"]
        + filter.flatMap { ["--filter", $0] }
    var environment = ProcessInfo.processInfo.environment
    environment[variable] = "1"
    let result = try runChild(command[0], Array(command.dropFirst()), environment: environment, outputs: .merged)
    return (result.status, result.text)
}

/// The issues a child test run recorded, each with the detail lines printed under it (the first
/// starts with `↳`, the further ones with two spaces): what its parent's failure says, so that a
/// log shows why and not only that the child failed.
public func childIssues(_ output: String, limit: Int = 120) -> String {
    var kept: [Substring] = []
    var inIssue = false
    for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.contains("recorded an issue") {
            inIssue = true
        } else if !line.trimmingCharacters(in: .whitespaces).hasPrefix("↳") && !line.hasPrefix("  ") {
            inIssue = false
        }
        if inIssue { kept.append(line) }
    }
    return kept.prefix(limit).joined(separator: "\n")
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
    let child = try ChildProcess(try attacheExecutable(), ["store", "storm"] + arguments, environment: environment)
    let wanted = Int.random(in: 1...3, using: &generator)
    // Its report lines, looked at every 200 µs: the kill lands within a sliver of the write.
    var lines = 0
    while lines < wanted, child.isRunning {
        usleep(200)
        lines = child.outputSoFar.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    }
    lines = child.outputSoFar.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    guard lines >= wanted else {
        let said = child.wait().errorText
        throw StormWriterStopped(message: "the writer stopped before reporting: " + said)
    }
    usleep(UInt32.random(in: pause, using: &generator))
    guard child.isRunning else {
        throw StormWriterStopped(message: "the writer was no longer writing when it was to be killed")
    }
    child.send(SIGKILL)
    child.wait()
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
