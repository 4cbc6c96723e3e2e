import ArgumentParser

@main
struct Attache: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attache",
        abstract: "Turns media links in rich push notifications into safe, small attachments.",
        version: "0.1.0",
        subcommands: [Inspect.self, Resize.self]
    )
}
