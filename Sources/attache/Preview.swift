import ArgumentParser
import AttacheBase
import AttacheCore
import AttachePreview
import Foundation

struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Show a payload as each platform would: one HTML page.",
        usage: "attache preview [<options>] [<settings>] <payload> [--out <page.html>]",
        discussion: """
            Processes the payload as `attache process` does (the same settings), then writes one \
            self-contained page showing it as iOS (collapsed, with the thumbnail as clipped, and \
            expanded), Android (collapsed with its large icon, expanded with the 2:1 big picture) \
            and web push (Chrome on Windows and on macOS) would, with the title, body and action \
            buttons each platform reads and the placeholder beside the iOS picture. The pictures \
            are inlined (data: URIs); the page runs no script. Without --out, the page goes to \
            standard output.

            """ + PipelineOptions<PipelineRows>.settingsHelp
    )

    @OptionGroup var options: PipelineOptions<PipelineRows>

    @Option(help: "Write the page to FILE instead of standard output.")
    var out: String?

    func run() async throws {
        guard options.inputs.count <= 1 else {
            throw ValidationError("preview takes one payload (a file, or - for standard input)")
        }
        let name = options.inputs.first ?? "-"
        let pipeline = try options.pipeline()
        let bytes: [UInt8]
        do {
            bytes = try BoundedInput.read(name, limit: JSONParser.maxBytes)
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error.code): \(error.message)\n".utf8))
            throw ExitCode(1)
        }
        let result = await pipeline.process(bytes)
        let page = NotificationPreview(title: (name as NSString).lastPathComponent)
            .render(result, objects: NotificationPreview.objects(in: pipeline.store))
        if let out {
            try AtomicFile.write(Array(page.utf8), to: out)
        } else {
            FileHandle.standardOutput.write(Data(page.utf8))
        }
    }
}
