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
        usage: "attache process [<options>] [<settings>] [<payload> ...]",
        discussion: """
            Reads a payload (a file, or - for standard input), fetches, validates, downscales and \
            stores each attachment it names under one deadline, and prints the payload with an \
            attachment block added. A payload without aps.mutable-content = 1, or one that is not \
            a JSON object Attache can read, is printed unchanged. With several files, one payload \
            per line. Input over 1 MiB is not read at all: it is reported on standard error, \
            nothing is printed for it, and the exit status is 1.

            """ + PipelineOptions<PipelineRows>.settingsHelp
    )

    @OptionGroup var options: PipelineOptions<PipelineRows>

    @Flag(help: "Write each payload's outcomes as one JSON line on standard error.")
    var report = false

    @Flag(help: "Write a short human summary per payload on standard error.")
    var summary = false

    @Option(help: "Write each mutated payload to DIR/<payload file name> instead of standard output.")
    var out: String?

    /// The payload files after the flags (- for standard input, the default).
    var payloads: [String] { options.inputs.isEmpty ? ["-"] : options.inputs }

    func run() async throws {
        try await TraceExport.around("process") { try await processAll() }
    }

    private func processAll() async throws {
        if let out { try OptionChecks.directory(out, "--out") }
        let pipeline = try options.pipeline()

        var unreadable = 0
        for name in payloads {
            let bytes: [UInt8]
            do {
                bytes = try BoundedInput.read(name, limit: JSONParser.maxBytes)
            } catch {
                // Nothing was read whole, so nothing can be passed through: say so and go on.
                unreadable += 1
                FileHandle.standardError.write(Data("\(name): \(error.code): \(error.message)\n".utf8))
                continue
            }
            let result = await TraceExport.payload((name as NSString).lastPathComponent) {
                await pipeline.process(bytes)
            }
            if let out, name != "-" {
                try AtomicFile.write(result.payload, to: out + "/" + (name as NSString).lastPathComponent)
            } else {
                FileHandle.standardOutput.write(Data(result.payload + [10]))
            }
            if report {
                FileHandle.standardError.write(Data((result.report(name: name) + "\n").utf8))
            }
            if summary {
                FileHandle.standardError.write(Data(Self.summary(name: name, result).utf8))
            }
        }
        if unreadable > 0 { throw ExitCode(1) }
    }

    static func summary(name: String, _ result: PipelineResult) -> String {
        let ms = String(format: "%.0f ms", result.elapsed.milliseconds)
        let state =
            result.payloadError.map {
                $0.code == .sealFailed
                    ? "seal failed (\($0.message)), the placeholder sent alone"
                    : "unreadable (\($0.code)), passed through"
            }
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
            text += "  [\(outcome.convention)] \(outcome.shownURL) -> \(what)\n"
            for target in outcome.targets {
                if let error = target.error {
                    text += "    \(target.target.rawValue): \(error.code): \(error.message)\n"
                } else {
                    let size = target.width.map { w in target.height.map { "\(w)x\($0) " } ?? "" } ?? ""
                    let how = target.placement.map { ", crop by \($0)" } ?? ""
                    text += "    \(target.target.rawValue): \(target.type ?? "") \(size)\(target.bytes) bytes\(how)\n"
                }
            }
            for warning in outcome.warnings { text += "    warning: \(warning)\n" }
        }
        for cut in result.trimmed { text += "  trimmed to fit: \(cut)\n" }
        for note in result.notes { text += "  note: \(note)\n" }
        return text
    }

}
