import AttacheBase
import Foundation
public import Logging

/// swift-log's text format (`<time> <level> <label>: <metadata> [<source>] <message>`), or one
/// JSON object a line (`--log-format json`), each record on one line (line breaks and other control characters in a value or message written
/// as escapes, as ``shown(_:)`` writes file names).
///
/// `StreamLogHandler` writes through the C stream's lock, which the service's event-loop
/// threads then queue on for every request line, and formats local time, which makes libc
/// look at `/etc/localtime` on every line. Here each line is built as bytes on the calling
/// thread (the time in UTC, formatted once a second) and handed to ``LogWriter``, whose own
/// thread writes the lines gathered since its last write in one syscall.
public struct LineLogHandler: LogHandler {
    let label: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    /// Fields of the moment (the span a line is written in), read on each line.
    public var metadataProvider: Logger.MetadataProvider?
    var writer: LogWriter = .shared
    /// One JSON object a line (`--log-format json`) instead of the text format.
    public var json = false

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty { fields.merge(provided) { $1 } }
        if let explicit = event.metadata { fields.merge(explicit) { $1 } }
        if let error = event.error { fields["error.message"] = "\(error)" }
        var line: [UInt8] = []
        line.reserveCapacity(192)
        if json { Self.json(event, fields, label: label, into: &line) } else { text(event, fields, into: &line) }
        line.withUnsafeBytes { writer.append($0) }
    }

    /// `<time> <level> <label>: <key>=<value>… [<source>] <message>`.
    private func text(_ event: LogEvent, _ fields: Logger.Metadata, into line: inout [UInt8]) {
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
    }

    /// One JSON object: `time`, `level`, `label`, `source`, `message`, then every metadata
    /// field as a string (a field named like one of those five is written with a `meta.` prefix).
    static func json(_ event: LogEvent, _ fields: Logger.Metadata, label: String, into line: inout [UInt8]) {
        func string(_ text: String) {
            line.append(UInt8(ascii: "\""))
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": line += #"\""#.utf8
                case "\\": line += #"\\"#.utf8
                case "\n": line += #"\n"#.utf8
                case "\r": line += #"\r"#.utf8
                case "\t": line += #"\t"#.utf8
                case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                    let hex = String(scalar.value, radix: 16)
                    line += ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8
                default: line += String(scalar).utf8
                }
            }
            line.append(UInt8(ascii: "\""))
        }
        var time: [UInt8] = []
        LogWriter.appendTimestamp(to: &time)
        line += #"{"time":""#.utf8
        line += time
        line += #"","level":"#.utf8
        string(event.level.rawValue)
        line += #","label":"#.utf8
        string(label)
        line += #","source":"#.utf8
        string(event.source)
        line += #","message":"#.utf8
        string(event.message.description)
        let reserved: Set<String> = ["time", "level", "label", "source", "message"]
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            line.append(UInt8(ascii: ","))
            string(reserved.contains(key) ? "meta." + key : key)
            line.append(UInt8(ascii: ":"))
            string(value.description)
        }
        line += "}\n".utf8
    }

    /// A request's line, as ``log(event:)`` writes an `info` line `request` from source
    /// `AttacheServer` with these fields, built straight into bytes: no metadata dictionary, no
    /// sort, no string per field (the download responder writes one per download). The fields
    /// are ASCII without control characters, as a route, a method, a number and a request id
    /// are. False, and nothing written, when this handler has fields or a provider of its own:
    /// the caller then logs through swift-log.
    public func request(
        id: (prefix: String, number: UInt64), method: String, route: String, status: Int, milliseconds: Double,
        outcome: String?
    ) -> Bool {
        guard metadata.isEmpty, metadataProvider == nil else { return false }
        var line: [UInt8] = []
        line.reserveCapacity(200)
        func key(_ key: StaticString) {
            if json {
                line += #"",""#.utf8
                line += UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
                line += #"":""#.utf8
            } else {
                line.append(0x20)
                line += UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
                line.append(UInt8(ascii: "="))
            }
        }
        func field(_ name: StaticString, _ value: String) {
            key(name)
            line += value.utf8
        }
        if json {
            line += #"{"time":""#.utf8
            LogWriter.appendTimestamp(to: &line)
            line += #"","level":"info","label":""#.utf8
            line += label.utf8
            line += #"","source":"AttacheServer","message":"request"#.utf8
        } else {
            LogWriter.appendTimestamp(to: &line)
            line += " info ".utf8
            line += label.utf8
            line.append(UInt8(ascii: ":"))
        }
        // In key order, as both formats sort them.
        // The numbers written as digits, as their descriptions would be (the time in tenths of a
        // millisecond, as `String(Double)` writes a number of tenths: "0.3", "12.0").
        key("hb.request.id")
        line += id.prefix.utf8
        line.append(UInt8(ascii: "-"))
        Self.append(id.number, radix: 16, to: &line)
        field("method", method)
        key("ms")
        let tenths = UInt64(min(max(0, (milliseconds * 10).rounded()), 1e15))
        Self.append(tenths / 10, radix: 10, to: &line)
        line.append(UInt8(ascii: "."))
        line.append(UInt8(ascii: "0") + UInt8(tenths % 10))
        if let outcome { field("outcome", outcome) }
        field("route", route)
        key("status")
        Self.append(UInt64(max(0, status)), radix: 10, to: &line)
        line += json ? "\"}\n".utf8 : " [AttacheServer] request\n".utf8
        line.withUnsafeBytes { writer.append($0) }
        return true
    }

    /// `value`'s digits in `radix` (10 or 16, lower case), as `String(value, radix:)` writes them.
    static func append(_ value: UInt64, radix: UInt64, to line: inout [UInt8]) {
        // Lowest digit first, then turned around in place.
        let start = line.count
        var rest = value
        repeat {
            let digit = UInt8(rest % radix)
            line.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            rest /= radix
        } while rest > 0
        line[start...].reverse()
    }

    static func timestamp() -> String {
        var line: [UInt8] = []
        LogWriter.appendTimestamp(to: &line)
        return String(decoding: line, as: UTF8.self)
    }
}
