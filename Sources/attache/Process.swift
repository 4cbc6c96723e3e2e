import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import Foundation

struct ProcessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process",
        abstract: "Attach a notification payload's media: print the mutated payload.",
        discussion: """
            Reads a payload (a file, or - for standard input), fetches, validates, downscales and \
            stores each attachment it names under one deadline, and prints the payload with an \
            attachment block added. A payload without aps.mutable-content = 1, or one that cannot \
            be read, is printed unchanged. With several files, one payload per line.
            """
    )

    @Option(help: "Time allowed per payload (e.g. 25s, 800ms).")
    var deadline: Milliseconds = Milliseconds(25_000)

    @OptionGroup var storeOptions: StoreOptions

    @Option(help: "Public base URL the stored attachments are served from.")
    var baseURL = PipelineConfiguration().baseURL

    @OptionGroup var address: AddressOptions

    @Option(help: "Longest side of image renditions.")
    var maxSide = RenditionSpec().maxSide

    @Option(help: "Device budget for a decoded image, in bytes (width x height x 4).")
    var decodedMemoryBudget: Int?

    @Option(help: "Largest mutated payload in bytes.")
    var maxPayloadBytes = PipelineConfiguration().maxPayloadBytes

    @Option(name: .customLong("source"), help: "Extra source rule name=key/key/... (repeatable; * = every member).")
    var extraSources: [String] = []

    @Flag(help: "Write each payload's outcomes as one JSON line on standard error.")
    var report = false

    @Flag(help: "Write a short human summary per payload on standard error.")
    var summary = false

    @Option(help: "Write each mutated payload to DIR/<payload file name> instead of standard output.")
    var out: String?

    @Argument(help: "Payload files (- for standard input).")
    var payloads: [String] = ["-"]

    func run() async throws {
        if let out { try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true) }
        var configuration = PipelineConfiguration()
        configuration.deadline = .milliseconds(deadline.value)
        configuration.baseURL = baseURL
        configuration.rendition.maxSide = maxSide
        configuration.rendition.decodedMemoryBudget = decodedMemoryBudget
        configuration.maxPayloadBytes = maxPayloadBytes
        for text in extraSources {
            guard let rule = SourceRule(argument: text) else { throw ValidationError("bad --source '\(text)'") }
            configuration.sources.append(rule)
        }
        var policy = FetchPolicy()
        address.apply(to: &policy)
        let pipeline = Pipeline(
            configuration: configuration, fetcher: Fetcher(policy: policy), store: try storeOptions.open())

        for name in payloads {
            let bytes: [UInt8]
            if name == "-" {
                bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let data = FileManager.default.contents(atPath: name) else {
                    throw ValidationError("cannot read \(name)")
                }
                bytes = Array(data)
            }
            let result = await pipeline.process(bytes)
            if let out, name != "-" {
                let path = out + "/" + (name as NSString).lastPathComponent
                try Data(result.payload).write(to: URL(fileURLWithPath: path))
            } else {
                FileHandle.standardOutput.write(Data(result.payload + [10]))
            }
            if report {
                FileHandle.standardError.write(Data((Self.report(name: name, result) + "\n").utf8))
            }
            if summary {
                FileHandle.standardError.write(Data(Self.summary(name: name, result).utf8))
            }
        }
    }

    static func summary(name: String, _ result: PipelineResult) -> String {
        let ms = String(format: "%.0f ms", result.elapsed.milliseconds)
        let state =
            result.payloadError.map { "unreadable (\($0.code)), passed through" }
            ?? (result.outcomes.isEmpty
                ? "passed through unchanged" : result.bestAttempt ? "best attempt at the deadline" : "done")
        var text = "\((name as NSString).lastPathComponent): \(state), \(result.payload.count) bytes, \(ms)\n"
        for outcome in result.outcomes {
            let what: String
            if let a = outcome.attachment {
                let size = a.width.map { w in a.height.map { "\(w)x\($0) " } ?? "" } ?? ""
                what =
                    "attached \(a.type) \(size)\(a.bytes) bytes" + (outcome.cached ? " (stored rendition reused)" : "")
            } else {
                what = "\(outcome.reason): \(outcome.error?.message ?? "")"
            }
            text += "  [\(outcome.convention)] \(outcome.url) -> \(what)\n"
            for warning in outcome.warnings { text += "    warning: \(warning)\n" }
        }
        for cut in result.trimmed { text += "  trimmed to fit: \(cut)\n" }
        return text
    }

    static func report(name: String, _ result: PipelineResult) -> String {
        var line = JSONLine()
        line.add("payload", name)
        line.add("passed_through", result.passedThrough)
        line.add("best_attempt", result.bestAttempt)
        line.add("ms", (result.elapsed.milliseconds * 10).rounded() / 10)
        line.add("bytes", result.payload.count)
        if let error = result.payloadError { line.add("payload_error", object: Inspect.errorObject(error)) }
        line.addRaw("trimmed", "[" + result.trimmed.map(JSONLine.quote).joined(separator: ",") + "]")
        let outcomes = result.outcomes.map { outcome -> String in
            var item = JSONLine()
            item.add("url", outcome.url)
            item.add("convention", outcome.convention)
            item.add("reason", outcome.reason)
            item.add("cached", outcome.cached)
            if let attachment = outcome.attachment {
                item.add("id", attachment.id)
                item.add("type", attachment.type)
                item.add("bytes", Int(attachment.bytes))
                item.add("width", attachment.width)
                item.add("height", attachment.height)
            }
            if let error = outcome.error { item.add("error", object: Inspect.errorObject(error)) }
            item.addRaw("warnings", "[" + outcome.warnings.map(JSONLine.quote).joined(separator: ",") + "]")
            var timings = JSONLine()
            timings.add("fetch", (outcome.timings.fetch * 10).rounded() / 10)
            timings.add("validate", (outcome.timings.validate * 10).rounded() / 10)
            timings.add("transform", (outcome.timings.transform * 10).rounded() / 10)
            timings.add("store", (outcome.timings.store * 10).rounded() / 10)
            item.add("ms", object: timings)
            return item.text
        }
        line.addRaw("attachments", "[" + outcomes.joined(separator: ",") + "]")
        return line.text
    }
}

/// A duration written `800ms`, `25s`, `2m` or a bare number of seconds, in milliseconds.
struct Milliseconds: ExpressibleByArgument, Sendable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    var defaultValueDescription: String { value % 1000 == 0 ? "\(value / 1000)s" : "\(value)ms" }

    init?(argument: String) {
        if argument.hasSuffix("ms"), let number = Int64(argument.dropLast(2)), number > 0 {
            value = number
        } else if let seconds = Seconds(argument: argument) {
            value = seconds.value * 1000
        } else {
            return nil
        }
    }
}
