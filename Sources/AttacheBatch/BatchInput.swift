public import AttacheBase
public import AttacheCore
import Glibc

/// What a batch reads: a directory of payload `.json` files, a `.jsonl` (or `.ndjson`) file of
/// payloads one per line, or any other file as a list of media URLs one per line (`#` starts a
/// comment). Items are read one at a time as the batch asks for them, never the whole input.
public struct BatchInput: Sendable {
    public enum Kind: String, Sendable {
        case directory, payloads, urls
    }

    /// The input's path.
    public let path: String
    /// How it is read, from what it is.
    public let kind: Kind
    /// Largest payload (file or line) read; larger ones are items that fail `invalid_payload`.
    public let maxItemBytes: Int

    public init(path: String, maxItemBytes: Int = JSONParser.maxBytes) throws(AttacheError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw AttacheError(.ioError, "cannot read \(path)") }
        self.path = path
        self.maxItemBytes = maxItemBytes
        if (info.st_mode & S_IFMT) == S_IFDIR {
            kind = .directory
        } else if path.hasSuffix(".jsonl") || path.hasSuffix(".ndjson") {
            kind = .payloads
        } else {
            kind = .urls
        }
    }

    /// The items in input order.
    public func items() throws(AttacheError) -> BatchItems {
        switch kind {
        case .directory: return BatchItems(names: Self.payloadFiles(in: path), directory: path, limit: maxItemBytes)
        case .payloads, .urls: return BatchItems(lines: try LineReader(path: path, limit: maxItemBytes), input: self)
        }
    }

    /// How many items there are (a pass that reads lines without keeping them).
    public func count() throws(AttacheError) -> Int {
        var iterator = try items()
        var count = 0
        while iterator.skip() { count += 1 }
        return count
    }

    static func payloadFiles(in directory: String) -> [String] {
        AtomicFile.list(directory).filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
    }
}

/// One unit of work: a payload to process, or one that could not be read.
public struct BatchItem: Sendable {
    /// Position in the input, from 0.
    public var index: Int
    /// How the manifest names it: the file name, or `<input name>:<line>`.
    public var reference: String
    /// The payload (for a URL list, a small payload naming the URL under `media-url`).
    public var payload: [UInt8]
    /// For URL lists, the URL.
    public var url: String?
    /// Why the item could not be read, when it could not (its payload is then empty).
    public var readError: AttacheError?
    /// The file name its mutated payload gets in an output directory.
    public var outputName: String
}

/// The items of a ``BatchInput``, read as they are asked for.
public struct BatchItems: IteratorProtocol {
    private enum Source {
        /// Payload files in a directory, in name order.
        case files(directory: String, names: [String])
        /// Lines of a file: payloads or URLs; `name` is the file's, for references.
        case lines(LineReader, urls: Bool, name: String)
    }

    private let source: Source
    private let limit: Int
    private var index = 0
    private var lineNumber = 0

    init(names: [String], directory: String, limit: Int) {
        source = .files(directory: directory, names: names)
        self.limit = limit
    }

    init(lines: LineReader, input: BatchInput) {
        let name = Substring(input.path).split(separator: "/").last.map(String.init) ?? input.path
        source = .lines(lines, urls: input.kind == .urls, name: name)
        limit = input.maxItemBytes
    }

    public mutating func next() -> BatchItem? {
        switch source {
        case .files(let directory, let names):
            guard index < names.count else { return nil }
            defer { index += 1 }
            let name = names[index]
            var item = BatchItem(index: index, reference: name, payload: [], url: nil, readError: nil, outputName: name)
            do throws(AttacheError) {
                item.payload = try BoundedInput.read(directory + "/" + name, limit: limit)
            } catch {
                item.readError = error
            }
            return item
        case .lines(let lines, let urls, let name):
            while let line = lines.next() {
                lineNumber += 1
                var item = BatchItem(
                    index: index, reference: "\(name):\(lineNumber)", payload: [], url: nil, readError: nil,
                    outputName: "\(lineNumber).json")
                if line.tooLong {
                    item.readError = AttacheError(
                        .invalidPayload, "the line is longer than \(limit) bytes; it was not read",
                        limit: .maxInputBytes)
                } else if urls {
                    // A line that is not UTF-8 names no URL: it is never repaired into one.
                    guard let text = String(validating: line.bytes, as: UTF8.self) else {
                        item.readError = AttacheError(
                            .invalidURL, "the line is not UTF-8 text; no URL was read from it")
                        index += 1
                        return item
                    }
                    let url = text.trimmingWhitespace
                    if url.isEmpty || url.hasPrefix("#") { continue }
                    item.url = url
                    item.payload = Self.payload(for: url)
                } else {
                    if line.bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                    item.payload = line.bytes
                }
                index += 1
                return item
            }
            return nil
        }
    }

    /// Moves past one item without reading a payload file; false at the end.
    mutating func skip() -> Bool {
        guard case .files(_, let names) = source else { return next() != nil }
        guard index < names.count else { return false }
        index += 1
        return true
    }

    /// The payload a URL list item is processed as.
    static func payload(for url: String) -> [UInt8] {
        Array("{\"aps\":{\"mutable-content\":1},\"media-url\":\(JSONLine.quote(url))}".utf8)
    }
}

/// Lines of a file through a fixed buffer; a line longer than the limit is skipped to its end
/// and reported, never held.
final class LineReader {
    struct Line {
        /// The line without its newline (empty when it was too long).
        var bytes: [UInt8]
        var tooLong: Bool
        /// Bytes the line took in the file, without its newline.
        var length: Int
    }

    private let fd: Int32
    private let limit: Int
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0
    private var finished = false

    /// When set, a last line without its newline is not returned (it may be torn).
    private let wholeLinesOnly: Bool

    init(path: String, limit: Int, wholeLinesOnly: Bool = false) throws(AttacheError) {
        fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw AttacheError(.ioError, "cannot read \(path)") }
        self.limit = limit
        self.wholeLinesOnly = wholeLinesOnly
    }

    deinit { Glibc.close(fd) }

    func next() -> Line? {
        var line: [UInt8] = []
        var tooLong = false
        var length = 0
        while true {
            if start == end {
                if finished { break }
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 {
                    finished = true
                    break
                }
                (start, end) = (0, n)
            }
            let newline = buffer[start..<end].firstIndex(of: 0x0A)
            let stop = newline ?? end
            length += stop - start
            if !tooLong {
                if line.count + (stop - start) > limit {
                    tooLong = true
                    line = []
                } else {
                    line += buffer[start..<stop]
                }
            }
            start = newline.map { $0 + 1 } ?? end
            if newline != nil { return Line(bytes: line, tooLong: tooLong, length: length) }
        }
        // The last line, without a newline.
        if wholeLinesOnly || (line.isEmpty && !tooLong) { return nil }
        return Line(bytes: line, tooLong: tooLong, length: length)
    }
}

extension String {
    var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
