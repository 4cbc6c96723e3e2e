import Dispatch
import Foundation

/// What a child process that ran to its end left: its status and what it wrote.
public struct ChildResult: Sendable {
    public var status: Int32
    /// Its standard output (with its standard error, when they were merged).
    public var output: [UInt8]
    /// Its standard error, when kept apart.
    public var errors: [UInt8]
    public var text: String { String(decoding: output, as: UTF8.self) }
    public var errorText: String { String(decoding: errors, as: UTF8.self) }
}

/// The one way a test runs another program: started at once, its standard input from bytes or
/// a file (else /dev/null), its standard output and error written to files of its own (so no
/// pipe fills and stalls it, and a grandchild that keeps a descriptor open cannot hold up the
/// read), read when it ends or as far as it got.
public final class ChildProcess: @unchecked Sendable {
    /// Where the child's standard output and error go.
    public enum Outputs: Sendable {
        /// Kept apart: ``ChildResult/output`` and ``ChildResult/errors``.
        case separate
        /// Both in ``ChildResult/output``, in the order written.
        case merged
        /// Neither kept (a server whose answers are what the test reads).
        case discarded
        /// Standard output discarded, standard error to this descriptor (a pseudo-terminal's
        /// side, which the test reads itself).
        case errorsTo(FileHandle)
    }

    public let process: Process
    private let scratch: TemporaryDirectory
    /// The writing end of its standard input, for a child started `interactive`.
    private let writer: FileHandle?
    /// Signalled once when it exits.
    public let exited = DispatchSemaphore(value: 0)

    /// Starts `executable` (a path, or a name looked up on PATH) with `arguments`; the
    /// environment is this process's when nil. `interactive`: its standard input stays open
    /// for ``write(_:)`` until ``closeInput()`` (a session the test talks to).
    public init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        directory: String? = nil, input: [UInt8]? = nil, inputFile: String? = nil, interactive: Bool = false,
        outputs: Outputs = .separate
    ) throws {
        var writer: FileHandle? = nil
        scratch = try TemporaryDirectory()
        process = Process()
        if executable.contains("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable] + arguments
        }
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        if let input {
            let path = scratch.path + "/input"
            try Data(input).write(to: URL(fileURLWithPath: path))
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } else if let inputFile {
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputFile))
        } else if interactive {
            let pipe = Pipe()
            process.standardInput = pipe
            writer = pipe.fileHandleForWriting
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        switch outputs {
        case .discarded:
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        case .merged:
            let both = try Self.file(scratch.path + "/output")
            process.standardOutput = both
            process.standardError = both
        case .separate:
            process.standardOutput = try Self.file(scratch.path + "/output")
            process.standardError = try Self.file(scratch.path + "/errors")
        case .errorsTo(let handle):
            process.standardOutput = FileHandle.nullDevice
            process.standardError = handle
        }
        self.writer = writer
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // The child holds its own copies: the parent's would keep a terminal or pipe open.
        process.standardError = nil
    }

    private static func file(_ path: String) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// What it has written to standard output so far (with its errors, when merged).
    public var outputSoFar: [UInt8] { read("output") }
    /// What it has written to standard error so far, when kept apart.
    public var errorsSoFar: [UInt8] { read("errors") }

    private func read(_ name: String) -> [UInt8] {
        (FileManager.default.contents(atPath: scratch.path + "/" + name)).map(Array.init) ?? []
    }

    /// Waits (looking every 5 ms, for at most `limit`) until its output holds `text`; what it
    /// had written then, or nil when it ended or the time passed first.
    public func output(containing text: String, within limit: Duration = .seconds(60)) -> String? {
        let end = ContinuousClock.now + limit
        while ContinuousClock.now < end {
            let running = isRunning
            let sofar = String(decoding: outputSoFar, as: UTF8.self)
            if sofar.contains(text) { return sofar }
            if !running { return nil }
            usleep(5000)
        }
        return nil
    }

    /// Writes to its standard input (started `interactive`).
    public func write(_ text: String) { writer?.write(Data(text.utf8)) }

    /// Closes its standard input: it reads the end of its input.
    public func closeInput() { try? writer?.close() }

    /// Sends `signal` (SIGKILL for a child that ignores SIGTERM).
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Asks it to stop (SIGTERM) when it still runs, and waits for it to end.
    public func stop() {
        if isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// Waits for it to end without holding a thread of the concurrency pool (a service in this
    /// process may need every one).
    public func ended() async -> ChildResult {
        await withCheckedContinuation { done in
            Thread.detachNewThread { [self] in done.resume(returning: wait()) }
        }
    }

    /// Waits for it to end (blocking: from an async test, ``ended()``).
    @discardableResult
    public func wait() -> ChildResult {
        process.waitUntilExit()
        return ChildResult(status: process.terminationStatus, output: read("output"), errors: read("errors"))
    }
}

/// Runs a program to its end (``ChildProcess``) and returns what it left.
public func runChild(
    _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil, directory: String? = nil,
    input: [UInt8]? = nil, inputFile: String? = nil, outputs: ChildProcess.Outputs = .separate
) throws -> ChildResult {
    try ChildProcess(
        executable, arguments, environment: environment, directory: directory, input: input, inputFile: inputFile,
        outputs: outputs
    ).wait()
}

extension ChildProcess {
    /// Whether `python3` here imports `module` (a public tool the tests check against, such
    /// as PyPI ssimulacra2, which scripts/media-tools.sh installs).
    public static func pythonHas(_ module: String) -> Bool {
        (try? runChild("/usr/bin/env", ["python3", "-c", "import " + module]))?.status == 0
    }
}
