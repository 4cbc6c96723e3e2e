import ArgumentParser
import AttacheMedia

@main
struct Attache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Turns media links in rich push notifications into safe, small attachments.",
        version: "0.1.0",
        subcommands: [
            ProcessCommand.self, BatchCommand.self, Inspect.self, Resize.self, Fetch.self, StoreCommand.self,
            TokenCommand.self,
            KeyCommand.self, GC.self, Serve.self, ServeFiles.self, VideoCommand.self,
        ]
    )

    /// Batch commands decode one file after another: keep freed decoder buffers in the heap
    /// for the next file instead of returning them to the kernel and faulting them in again.
    static func tuneAllocatorForBatch() {
        ImageProcessor.tuneAllocatorForBatch()
    }
}
