import Foundation
import Logging

/// swift-log's text format (`<time> <level> <label>: <metadata> [<source>] <message>`), one
/// `write(2)` per line on standard error, each record on one line (line breaks and other control characters in a value or message
/// written as escapes, as ``shown(_:)`` writes file names).
///
/// `StreamLogHandler` writes through the C stream's lock, which the service's event-loop
/// threads then queue on for every request line, and formats local time, which makes libc
/// look at `/etc/localtime` on every line. Here each line is built on the calling thread and
/// handed to the kernel whole (lines do not interleave), with the time in UTC.
struct LineLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let explicit = event.metadata { fields.merge(explicit) { $1 } }
        if let error = event.error { fields["error.message"] = "\(error)" }
        var line = Self.timestamp()
        line += " \(event.level) \(label):"
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { line += " \(key)=" + shown("\(value)") }
        line += " [\(event.source)] " + shown("\(event.message)") + "\n"
        Self.write(line)
    }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))+0000"
    }

    private static func write(_ line: String) {
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
