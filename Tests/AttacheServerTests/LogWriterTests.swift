import AttacheTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import AttacheServer

/// The service's log lines: handed to a writer thread, written whole and in order, a batch a
/// syscall; past the buffer's bound dropped and counted, never cut.
@Suite struct LogWriterTests {
    /// Reads a pipe to its end on a thread of its own.
    final class Reader: Sendable {
        let pipe = Pipe()
        private let read = Mutex<[UInt8]>([])
        private let finished = DispatchSemaphore(value: 0)

        func start() {
            let handle = pipe.fileHandleForReading
            Thread { [self] in
                let data = handle.readDataToEndOfFile()
                read.withLock { $0 = Array(data) }
                finished.signal()
            }.start()
        }

        func text() -> String {
            try? pipe.fileHandleForWriting.close()
            finished.wait()
            return String(decoding: read.withLock { $0 }, as: UTF8.self)
        }
    }

    /// A download's line built straight into bytes is the line swift-log's path writes for the
    /// same fields, in both formats, with and without an outcome (the time aside).
    @Test(arguments: [false, true])
    func theDirectRequestLineIsTheLoggedLine(json: Bool) throws {
        let reader = Reader()
        reader.start()
        var handler = LineLogHandler(label: "attache")
        handler.writer = LogWriter(descriptor: reader.pipe.fileHandleForWriting.fileDescriptor)
        handler.json = json
        let logger = Logger(label: "attache") { _ in handler }
        for outcome in [nil, "client_gone"] as [String?] {
            #expect(
                handler.request(
                    id: ("5eed", 0x2a), method: "GET", route: "attachment", status: 206, milliseconds: 0.3,
                    outcome: outcome))
            var metadata: Logger.Metadata = [
                "hb.request.id": "5eed-2a", "method": "GET", "route": "attachment", "status": "206", "ms": "0.3",
            ]
            if let outcome { metadata["outcome"] = "\(outcome)" }
            logger.info("request", metadata: metadata, source: "AttacheServer")
        }
        handler.writer.flush()
        let lines = reader.text().split(separator: "\n").map { line in
            // The time is the first field of either format.
            json ? String(line.drop { $0 != "," }) : String(line.drop { $0 != " " })
        }
        #expect(lines.count == 4)
        #expect(lines[0] == lines[1] && lines[2] == lines[3], "\(lines)")
        #expect(lines[0] != lines[2] && lines[2].contains("client_gone"))
        // A handler with fields of its own writes nothing here: the caller logs through swift-log.
        handler.metadata["extra"] = "1"
        #expect(!handler.request(id: ("a", 1), method: "GET", route: "r", status: 200, milliseconds: 1, outcome: nil))
    }

    /// The direct line's numbers are written as their descriptions would be.
    @Test func numbersAreWrittenAsTheirDescriptions() {
        var values: [UInt64] = [0, 1, 9, 10, 15, 16, 255, 1_000, .max, .max - 1, 1 << 63]
        for _ in 0..<2_000 { values.append(UInt64.random(in: 0...(.max)) >> UInt64.random(in: 0...63)) }
        for value in values {
            for radix in [10, 16] as [UInt64] {
                var line: [UInt8] = []
                LineLogHandler.append(value, radix: radix, to: &line)
                #expect(String(decoding: line, as: UTF8.self) == String(value, radix: Int(radix)))
            }
        }
        // The time: tenths of a millisecond, as String(Double) writes them.
        var handler = LineLogHandler(label: "attache")
        let reader = Reader()
        reader.start()
        handler.writer = LogWriter(descriptor: reader.pipe.fileHandleForWriting.fileDescriptor)
        let times: [Double] = [0, 0.04, 0.05, 0.3, 1, 9.95, 12.34, 999.9, 123_456.7]
        for ms in times {
            _ = handler.request(id: ("a", 1), method: "GET", route: "r", status: 200, milliseconds: ms, outcome: nil)
        }
        handler.writer.flush()
        let written = reader.text().split(separator: "\n").map { line in
            line.split(separator: " ").first { $0.hasPrefix("ms=") }.map { String($0.dropFirst(3)) } ?? ""
        }
        #expect(written == times.map { String(($0 * 10).rounded() / 10) })
    }

    @Test func linesFromManyThreadsArriveWholeAndInOrder() async throws {
        let reader = Reader()
        reader.start()
        let writer = LogWriter(descriptor: reader.pipe.fileHandleForWriting.fileDescriptor)
        let (threads, each) = (8, 2_000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    try await onOwnThread {
                        for index in 0..<each {
                            let line = Array(
                                "thread \(thread) line \(index) \(String(repeating: "x", count: index % 50))\n".utf8)
                            line.withUnsafeBytes { writer.append($0) }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        writer.flush(within: .seconds(60))
        let lines = reader.text().split(separator: "\n")
        #expect(lines.count == threads * each)
        var next = [Int](repeating: 0, count: threads)
        for line in lines {
            let words = line.split(separator: " ")
            guard words.count >= 4, let thread = Int(words[1]), let index = Int(words[3]), thread < threads else {
                Issue.record("a line cut or mixed: \(line)")
                return
            }
            #expect(index == next[thread], "thread \(thread): \(index) after \(next[thread] - 1)")
            #expect(words.count == 4 || words[4].count == index % 50)
            next[thread] = index + 1
        }
    }

    /// A reader that does not keep up: past the bound lines are dropped, and the log says how
    /// many, so that every line handed in is either written whole or counted.
    @Test func linesPastTheBoundAreCountedNotCut() throws {
        let reader = Reader()
        let writer = LogWriter(descriptor: reader.pipe.fileHandleForWriting.fileDescriptor, limit: 4_096)
        let total = 20_000
        for index in 0..<total {
            let line = Array("line \(index) of a log that runs faster than its reader\n".utf8)
            line.withUnsafeBytes { writer.append($0) }
        }
        reader.start()
        writer.flush(within: .seconds(60))
        let text = reader.text()
        let lines = text.split(separator: "\n")
        let written = lines.filter { $0.hasPrefix("line ") }
        let dropped = lines.compactMap { line -> Int? in
            guard let range = line.range(of: "[attache] ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(!dropped.isEmpty, "the reader kept up: the test proves nothing")
        #expect(written.count + dropped.reduce(0, +) == total, "\(written.count) written, \(dropped) dropped")
        #expect(written.allSatisfy { $0.hasSuffix("than its reader") }, "a line cut")
    }
}
