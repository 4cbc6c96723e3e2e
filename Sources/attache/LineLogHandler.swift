import AttacheServer
import Foundation
import Logging

/// swift-log's text format (`<time> <level> <label>: <metadata> [<source>] <message>`), each
/// record on one line (line breaks and other control characters in a value or message written
/// as escapes, as ``shown(_:)`` writes file names).
///
/// `StreamLogHandler` writes through the C stream's lock, which the service's event-loop
/// threads then queue on for every request line, and formats local time, which makes libc
/// look at `/etc/localtime` on every line. Here each line is built as bytes on the calling
/// thread (the time in UTC, formatted once a second) and handed to ``LogWriter``, whose own
/// thread writes the lines gathered since its last write in one syscall.
struct LineLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var writer: LogWriter = .shared

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let explicit = event.metadata { fields.merge(explicit) { $1 } }
        if let error = event.error { fields["error.message"] = "\(error)" }
        var line: [UInt8] = []
        line.reserveCapacity(192)
        LogWriter.appendTimestamp(to: &line)
        line.append(0x20)
        line += event.level.rawValue.utf8
        line.append(0x20)
        line += label.utf8
        line.append(UInt8(ascii: ":"))
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line.append(0x20)
            line += key.utf8
            line.append(UInt8(ascii: "="))
            line += shown(value.description).utf8
        }
        line += " [".utf8
        line += event.source.utf8
        line += "] ".utf8
        line += shown(event.message.description).utf8
        line.append(0x0A)
        line.withUnsafeBytes { writer.append($0) }
    }

    static func timestamp() -> String {
        var line: [UInt8] = []
        LogWriter.appendTimestamp(to: &line)
        return String(decoding: line, as: UTF8.self)
    }
}
