import ArgumentParser
import AttacheMedia
import AttacheWork

@main
struct Attache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Turns media links in rich push notifications into safe, small attachments.",
        version: "0.1.0",
        subcommands: [
            ProcessCommand.self, PreviewCommand.self, BatchCommand.self, Inspect.self, Resize.self, Fetch.self,
            StoreCommand.self,
            TokenCommand.self,
            KeyCommand.self, GC.self, Serve.self, ServeFiles.self, VideoCommand.self,
        ]
    )

    /// While a command runs, lines the C libraries write (libjxl's traces of a file it refuses)
    /// are debug log lines, shown by `attache serve` at `logLevel: debug`; the argument
    /// parser's own messages (usage, errors) pass unchanged. As ArgumentParser's `main`.
    static func main() async {
        ImageProcessor.routeLibraryOutput(.unchanged)
        do {
            var command = try await asyncParseAsRoot(nil)
            ImageProcessor.routeLibraryOutput(.hidden)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            ImageProcessor.routeLibraryOutput(.unchanged)
        } catch {
            ImageProcessor.routeLibraryOutput(.unchanged)
            exit(withError: error)
        }
    }

    /// Batch commands decode one file after another: keep freed decoder buffers in the heap
    /// for the next file instead of returning them to the kernel and faulting them in again.
    static func tuneAllocatorForBatch() {
        ProcessMemory.tuneForBatch()
    }
}
