public import AttacheBase
public import AttacheCore
import Glibc

/// The batch's record of what is done: one JSON line per item, appended as items finish.
///
/// It is the commit point. An item is done when its line is in the manifest, and only then; a
/// rerun skips those items and redoes every other one. Opening it reads every line: a last
/// line torn by a kill in the middle of its write (no newline, and it begins as records do) is
/// cut off and its item redone; a file with any other line is not a manifest and is refused,
/// untouched.
/// ``sync()`` makes what was appended durable (`fdatasync`); the runner calls it after the
/// output it names is durable, so the manifest never names output that a crash could lose.
public final class BatchManifest {
    public let path: String
    private let fd: Int32
    /// References of the items recorded.
    public private(set) var done: Set<String> = []
    /// Where the JSONL output ended after the last item recorded before this run (nil: none
    /// wrote one), to cut the output back to.
    public private(set) var outputEnd: Int64?
    /// Lines cut off when it was opened (0 or 1).
    public private(set) var cut = 0
    /// Items that earlier runs started and never recorded (they were killed with them in
    /// flight), with how many times. A run takes them after every item not tried yet, those
    /// interrupted once before those interrupted more often: items that hold a slot for long (a
    /// host that never answers) are the ones in flight at every kill, so they cannot come first
    /// after each restart and keep a batch that is killed often from moving on.
    public private(set) var interrupted: [String: Int] = [:]
    /// `<manifest>.started`: one reference per start (not synced: it only orders work).
    private let startedPath: String
    private var startedFD: Int32 = -1

    public init(path: String) throws(AttacheError) {
        self.path = path
        startedPath = path + ".started"
        fd = Glibc.open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AtomicFile.failure("open", path) }
        // Once the descriptor is set every stored property is, so a throw below still runs
        // deinit, which closes it.
        guard try AtomicFile.lock(fd, exclusive: true, nonBlocking: true) else {
            throw AttacheError(.ioError, "\(path) is in use by another batch")
        }
        // Every complete line must be a record: a file with a foreign line is not a manifest
        // (it may be anything a mistyped --manifest names) and is never written to. Only a last
        // line without its newline that begins as records begin is a write a kill cut short.
        var keep: Int64 = 0
        var line = 0
        try Self.scan(path) { (record, end) throws(AttacheError) in
            line += 1
            guard let record else {
                throw AttacheError(
                    .invalidPayload,
                    "\(path) is not a batch manifest (line \(line) is not a manifest record); it was left as it is")
            }
            done.insert(record.reference)
            if let end = record.outputEnd { outputEnd = end }
            keep = end
        }
        var info = stat()
        fstat(fd, &info)
        if Int64(info.st_size) > keep {
            guard try Self.tornRecord(fd, at: keep, path: path) else {
                throw AttacheError(
                    .invalidPayload,
                    "\(path) is not a batch manifest (its last line is not a manifest record); it was left as it is")
            }
            cut = 1
            guard ftruncate(fd, off_t(keep)) == 0 else { throw AtomicFile.failure("truncate", path) }
            try AtomicFile.sync(fd, path)
        }
        try loadStarted()
    }

    deinit {
        Glibc.close(fd)
        if startedFD >= 0 { Glibc.close(startedFD) }
    }

    /// Reads which items earlier runs started and did not record, and keeps only those in the
    /// started file. Called once the manifest is read.
    private func loadStarted() throws(AttacheError) {
        if AtomicFile.exists(startedPath) {
            let reader = try LineReader(path: startedPath, limit: 64 << 10, wholeLinesOnly: true)
            while let line = reader.next() {
                if line.tooLong { continue }
                let reference = String(decoding: line.bytes, as: UTF8.self)
                if !done.contains(reference) { interrupted[reference, default: 0] += 1 }
            }
        }
        let kept = interrupted.sorted { $0.key < $1.key }.map {
            String(repeating: $0.key + "\n", count: $0.value)
        }.joined()
        try AtomicFile.write(Array(kept.utf8), to: startedPath)
        startedFD = Glibc.open(startedPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard startedFD >= 0 else { throw AtomicFile.failure("open", startedPath) }
    }

    /// Notes that an item is being started.
    public func started(_ reference: String) throws(AttacheError) {
        try AtomicFile.writeAll(startedFD, Array((reference + "\n").utf8), path: startedPath)
    }

    /// Appends one item's line (a newline is added), in one write.
    public func append(_ line: String, reference: String) throws(AttacheError) {
        try AtomicFile.writeAll(fd, Array((line + "\n").utf8), path: path)
        done.insert(reference)
    }

    /// Makes the appended lines durable.
    public func sync() throws(AttacheError) {
        guard fdatasync(fd) == 0 else { throw AtomicFile.failure("fdatasync", path) }
    }

    /// Whether the bytes from `offset` to the end (a last line without its newline) begin as
    /// every record line begins, so they are a record whose write was cut short.
    static func tornRecord(_ fd: Int32, at offset: Int64, path: String) throws(AttacheError) -> Bool {
        let start = Array(recordStart.utf8)
        var bytes = [UInt8](repeating: 0, count: start.count)
        let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(offset)) }
        guard n >= 0 else { throw AtomicFile.failure("read", path) }
        return n > 0 && bytes[0..<n].elementsEqual(start[0..<n])
    }

    /// How every record line begins (``BatchRecord`` writes `ref` first).
    static let recordStart = #"{"ref":""#

    /// Reads every complete line: `body(record, endOffset)` with nil for a line that is not a
    /// record. A last line without its newline is not complete and is not read.
    public static func scan(
        _ path: String, _ body: (ManifestRecord?, Int64) throws(AttacheError) -> Void
    )
        throws(AttacheError)
    {
        guard AtomicFile.exists(path) else { return }
        let reader = try LineReader(path: path, limit: 16 << 20, wholeLinesOnly: true)
        var offset: Int64 = 0
        while let line = reader.next() {
            offset += Int64(line.length) + 1
            try body(line.tooLong ? nil : ManifestRecord(line: line.bytes), offset)
        }
    }
}

/// One manifest line, as read back.
public struct ManifestRecord: Sendable {
    public var reference: String
    public var index: Int
    /// `attached`, `partial`, `failed`, `unchanged` or `unreadable`.
    public var outcome: String
    public var code: String?
    public var attachments: [String]
    public var bytesIn: Int64
    public var bytesOut: Int64
    public var milliseconds: Double
    public var stages: StageTimings
    public var outputEnd: Int64?
    /// The line as parsed, for the report.
    public var value: JSONValue

    init?(line: [UInt8]) {
        guard let value = try? JSONParser.parse(line), let reference = value["ref"]?.stringValue,
            let outcome = value["outcome"]?.stringValue
        else { return nil }
        self.value = value
        self.reference = reference
        self.outcome = outcome
        index = Int(value["index"]?.doubleValue ?? -1)
        code = value["code"]?.stringValue
        if case .array(let ids)? = value["attachments"] {
            attachments = ids.compactMap(\.stringValue)
        } else {
            attachments = []
        }
        bytesIn = Int64(value["bytes_in"]?.doubleValue ?? 0)
        bytesOut = Int64(value["bytes_out"]?.doubleValue ?? 0)
        milliseconds = value["ms"]?.doubleValue ?? 0
        let stages = value["stage_ms"]
        self.stages = StageTimings(
            fetch: stages?["fetch"]?.doubleValue ?? 0, validate: stages?["validate"]?.doubleValue ?? 0,
            transform: stages?["transform"]?.doubleValue ?? 0, store: stages?["store"]?.doubleValue ?? 0)
        outputEnd = value["out_end"]?.doubleValue.map { Int64($0) }
    }
}
