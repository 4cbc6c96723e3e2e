import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore

struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Issue scoped access tokens.",
        subcommands: [Issue.self]
    )

    struct Issue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a token that opens one attachment until it expires.")

        @OptionGroup var options: StoreOptions

        @Option(help: "How long the token works (e.g. 10m, 2h, 7d).")
        var ttl: Seconds = Seconds(600)

        @Option(help: "Scope: read.")
        var scope = "read"

        @Argument(help: "Attachment id.")
        var id: String

        func validate() throws {
            try Ranges.check(ttl: ttl, "--ttl")
        }

        func run() throws {
            guard let scope = TokenScope(name: scope) else {
                throw ValidationError("--scope '\(self.scope)' is not a scope; the one scope is read")
            }
            let store = try options.open()
            let token = try store.issueToken(for: try attachmentID(id), ttl: ttl.value, scope: scope)
            var line = JSONLine()
            line.add("id", id)
            line.add("token", token)
            line.add("expires", Int(StoreConfiguration.unixNow() + ttl.value))
            print(options.json ? line.text : token)
        }
    }
}

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "List, rotate and retire token signing keys.",
        subcommands: [List.self, Rotate.self, Retire.self]
    )

    static func print(_ ring: KeyRing, json: Bool) {
        for entry in ring.entries {
            let state = entry.retired ? "retired" : entry.id == ring.currentKeyID ? "current" : "verify-only"
            Swift.print(json ? "{\"id\":\(entry.id),\"state\":\"\(state)\"}" : "\(entry.id)\t\(state)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List keys and their states.")
        @OptionGroup var options: StoreOptions
        func run() throws { KeyCommand.print(try options.open().keyRing, json: options.json) }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new current key; older keys keep verifying until retired.")
        @OptionGroup var options: StoreOptions
        func run() throws { KeyCommand.print(try options.open().rotateKeys(), json: options.json) }
    }

    struct Retire: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Retire a key: its tokens stop working.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "Key id.") var keyID: UInt32
        func run() throws { KeyCommand.print(try options.open().retireKey(keyID), json: options.json) }
    }
}

struct GC: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc",
        abstract: "Remove expired, unleased objects and leftovers of interrupted writes.")

    @OptionGroup var options: StoreOptions

    @Flag(help: "Report what would be removed without removing it.")
    var dryRun = false

    @Option(help: "Deletions a second at most (expired objects and orphans together). Default: no limit.")
    var maxDeletesPerSecond: Double?

    @Option(
        help:
            "A shared store's object without a catalog row younger than this is left (its upload may be about to commit), e.g. 15m."
    )
    var minOrphanAge: Age = Age(900)

    func validate() throws {
        if let maxDeletesPerSecond {
            try Ranges.check(maxDeletesPerSecond, 0.001...1_000_000, "--max-deletes-per-second")
        }
        try Ranges.check(minOrphanAge.value, 0...Ranges.maxTTL, "--min-orphan-age (seconds)")
    }

    func run() throws {
        let report = try options.open().collect(
            CollectionOptions(
                dryRun: dryRun, minOrphanAge: .seconds(minOrphanAge.value), maxDeletesPerSecond: maxDeletesPerSecond))
        var line = JSONLine()
        line.add("dry_run", report.dryRun)
        line.add("removed", report.removed.count)
        line.add("removed_bytes", Int(report.removedBytes))
        line.add("leased", report.leased.count)
        line.add("orphans", report.orphans)
        line.add("temps", report.temps)
        print(
            options.json
                ? line.text
                : "\(dryRun ? "would remove" : "removed") \(report.removed.count) objects "
                    + "(\(report.removedBytes) bytes), kept \(report.leased.count) leased, "
                    + "orphans \(report.orphans), temps \(report.temps)")
    }
}
