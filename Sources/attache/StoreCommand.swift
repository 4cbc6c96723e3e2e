import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import Foundation

struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Put, open and check attachments in the managed store.",
        subcommands: [Put.self, Open.self, Stats.self, Purge.self, Tenants.self, Verify.self, Revoke.self, Storm.self]
    )

    /// A tenant id as the tenants file writes it (key-N and anonymous included).
    static func check(tenant: String) throws {
        guard StoreOwner.isValidID(tenant) else {
            throw ValidationError(
                "--tenant '\(tenant)' is not a tenant id (1-64 of a-z 0-9 . _ -, from a letter or digit)")
        }
    }

    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate files and store each once; print its id and a read token.",
            discussion: "Exits 1 when any file is refused; each refusal is reported on its line."
        )

        @OptionGroup var options: StoreOptions

        @Option(help: "How long the object lives (e.g. 7d).")
        var ttl: Seconds = Seconds(StoreConfiguration(root: "").defaultTTL)

        @Option(help: "How long the printed token opens it (e.g. 1h).")
        var tokenTTL: Seconds = Seconds(86_400)

        @Option(help: "Source URL to record (with --spec) for later lookups.")
        var sourceURL: String?

        @Option(help: "Rendition spec recorded with --source-url.")
        var spec = "original"

        @Argument(help: "Media files.")
        var files: [String]

        func validate() throws {
            try Ranges.check(ttl: ttl, "--ttl")
            try Ranges.check(ttl: tokenTTL, "--token-ttl")
            if let sourceURL {
                guard let url = URL(string: sourceURL), url.scheme != nil, url.host?.isEmpty == false else {
                    throw ValidationError("--source-url '\(sourceURL)' is not a URL with a scheme and a host")
                }
            }
            guard !spec.isEmpty, !spec.utf8.contains(0) else {
                throw ValidationError("--spec is the name of the rendition recorded, not empty (default original)")
            }
        }

        func run() throws {
            let store = try options.open()
            var failed = false
            for file in files {
                var line = JSONLine()
                line.add("file", file)
                do {
                    let bytes = try MediaBytes(contentsOfFile: file)
                    // The kind's byte cap first (nothing over it is decoded or hashed), then a full decode.
                    _ = try MediaValidator.validate(bytes)
                    let info = try ImageProcessor.inspect(bytes, limits: .default)
                    let source = sourceURL.map { SourceReference(url: $0, spec: spec) }
                    let stored = try store.put(
                        UnsafeRawBufferPointer(bytes.buffer),
                        metadata: ObjectMetadata(
                            kind: info.kind, width: info.width, height: info.height, frames: info.frames),
                        source: source, ttl: ttl.value)
                    let token = try store.issueToken(for: stored.id, ttl: tokenTTL.value)
                    line.add("ok", true)
                    line.add("id", stored.id.hex)
                    line.add("kind", stored.kind.rawValue)
                    line.add("bytes", Int(stored.bytes))
                    line.add("path", stored.relativePath)
                    line.add("expires", Int(stored.expires))
                    line.add("token", token)
                    print(options.json ? line.text : "\(shown(file))\t\(stored.id)\t\(stored.relativePath)\t\(token)")
                } catch let error as AttacheError {
                    failed = true
                    line.add("ok", false)
                    line.add("error", object: JSONLine.error(error))
                    print(options.json ? line.text : "\(shown(file))\terror\t\(error.code)\t\(error.message)")
                }
            }
            if failed { throw ExitCode(1) }
        }
    }

    struct Open: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open an attachment with its token and copy it out.",
            discussion: "Exits 1 when the token is refused (the reason is printed with --verbose)."
        )

        @OptionGroup var options: StoreOptions

        @Option(help: "The access token.")
        var token: String

        @Option(help: "Where to write the attachment.")
        var out: String

        @Flag(help: "Print why a token was refused (for operators; clients only see access_denied).")
        var verbose = false

        @Argument(help: "Attachment id.")
        var id: String

        func validate() throws {
            try OptionChecks.writableFile(out, "--out")
        }

        func run() throws {
            let store = try options.open()
            let id = try attachmentID(id)
            var line = JSONLine()
            line.add("id", id.hex)
            do {
                let lease = try store.open(id, token: token) { refusal in
                    if verbose { FileHandle.standardError.write(Data("refused: \(refusal.rawValue)\n".utf8)) }
                }
                defer { lease.close() }
                try lease.copy(to: out)
                line.add("ok", true)
                line.add("kind", lease.attachment.kind.rawValue)
                line.add("bytes", Int(lease.attachment.bytes))
                line.add("out", out)
                print(options.json ? line.text : "\(id)\tok\t\(lease.attachment.bytes)\t\(out)")
            } catch {
                line.add("ok", false)
                line.add("error", object: JSONLine.error(error))
                let message =
                    error.code == .accessDenied
                    ? "--token does not open this attachment (--verbose says why)" : error.message
                print(options.json ? line.text : "\(id)\terror\t\(error.code)\t\(message)")
                throw ExitCode(1)
            }
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print object count, bytes and quotas.")

        @OptionGroup var options: StoreOptions

        @Option(help: "One tenant's objects and bytes (those it stored first: what its store quota counts).")
        var tenant: String?

        func validate() throws {
            if let tenant { try StoreCommand.check(tenant: tenant) }
        }

        func run() throws {
            let store = try options.open()
            if let tenant {
                let held = try store.stats(tenant: tenant)
                var line = JSONLine()
                line.add("tenant", tenant)
                line.add("objects", held.objects)
                line.add("bytes", Int(held.bytes))
                print(options.json ? line.text : "tenant=\(tenant) objects=\(held.objects) bytes=\(held.bytes)")
                return
            }
            let stats = try store.stats()
            var line = JSONLine()
            line.add("root", store.configuration.shared == nil ? options.root : store.backendDescription)
            line.add("objects", stats.objects)
            line.add("bytes", Int(stats.bytes))
            line.add("expired", stats.expired)
            line.add("sources", stats.sources)
            line.add("max_bytes", Int(stats.maxBytes))
            line.add("max_objects", stats.maxObjects)
            line.add("current_key", Int(stats.currentKeyID))
            line.add("live_keys", stats.liveKeys)
            print(
                options.json
                    ? line.text
                    : "objects=\(stats.objects) bytes=\(stats.bytes) expired=\(stats.expired) "
                        + "sources=\(stats.sources) quota=\(stats.maxBytes)B/\(stats.maxObjects) "
                        + "key=\(stats.currentKeyID) live_keys=\(stats.liveKeys)")
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Take a tenant that leaves off the store: remove what it alone holds.",
            discussion: """
                Every object only the tenant holds (stored for it and sent to no other tenant) expires now \
                and is removed, in a directory store as in a shared one (catalog rows and bucket objects: \
                every replica reads the same ones, and answers from them within a second); an object \
                another tenant was sent too is kept and counted as that tenant's from now. One an open \
                download holds is refused from now and removed by the next gc. Take the tenant out of the \
                tenants file first, so nothing new is stored for it meanwhile.
                """
        )

        @OptionGroup var options: StoreOptions

        @Option(help: "The tenant's id, as the tenants file writes it (key-N and anonymous included).")
        var tenant: String

        @Option(help: "Deletions a second at most. Default: no limit.")
        var maxDeletesPerSecond: Double?

        func validate() throws {
            try StoreCommand.check(tenant: tenant)
            if let maxDeletesPerSecond {
                try Ranges.check(maxDeletesPerSecond, 0.001...1_000_000, "--max-deletes-per-second")
            }
        }

        func run() throws {
            let report = try options.open().purge(
                tenant: tenant, CollectionOptions(maxDeletesPerSecond: maxDeletesPerSecond, sweepOrphans: false))
            var line = JSONLine()
            line.add("tenant", tenant)
            line.add("expired", report.counts.expired)
            line.add("expired_bytes", Int(report.counts.expiredBytes))
            line.add("handed_over", report.counts.handedOver)
            line.add("removed", report.collection.removed.count)
            line.add("removed_bytes", Int(report.collection.removedBytes))
            line.add("leased", report.collection.leased.count)
            print(
                options.json
                    ? line.text
                    : "tenant=\(tenant) expired=\(report.counts.expired) (\(report.counts.expiredBytes) bytes) "
                        + "handed_over=\(report.counts.handedOver) removed=\(report.collection.removed.count) "
                        + "leased=\(report.collection.leased.count)")
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Match every object against the catalog and rehash them (or a sample).",
            discussion: """
                Reads the store prefix by prefix of the id (00 … ff), the objects and the catalog rows \
                side by side in id order, a page at a time, so memory does not grow with the store. \
                Each problem is printed as it is found (a JSON line with --json: {"problem", "id", \
                "location"}), then the totals. Each prefix is recorded as it completes: --resume goes on \
                from a verification that was cut off. Exits 1 when an object is corrupt or a recorded \
                object is missing.
                """
        )

        @OptionGroup var options: StoreOptions

        @Option(help: "The fraction of objects whose bytes are read and hashed (chosen by id; 1: all).")
        var sample: Double = 1

        @Flag(help: "Go on from the last verification that did not finish.")
        var resume = false

        func validate() throws {
            guard sample > 0, sample <= 1 else {
                throw ValidationError(
                    "--sample is a fraction above 0 and at most 1 (0.01: one object in a hundred), not \(sample)")
            }
        }

        func run() throws {
            let json = options.json
            let report = try options.open().verify(VerifyOptions(sample: sample, resume: resume)) { problem in
                var line = JSONLine()
                line.add("problem", problem.kind.rawValue)
                line.add("id", problem.id)
                line.add("location", problem.location)
                let text = json ? line.text : "\(problem.kind.rawValue): \(problem.location)"
                FileHandle.standardOutput.write(Data((text + "\n").utf8))
            }
            var line = JSONLine()
            line.add("clean", report.isClean)
            line.add("objects", report.objects)
            line.add("hashed", report.hashed)
            line.add("corrupt", report.corruptCount)
            line.add("missing", report.missingCount)
            line.add("orphans", report.orphanCount)
            line.add("temps", report.temps)
            line.add("resumed_prefixes", report.resumedPrefixes)
            print(
                json
                    ? line.text
                    : "clean=\(report.isClean) objects=\(report.objects) hashed=\(report.hashed) "
                        + "corrupt=\(report.corruptCount) missing=\(report.missingCount) orphans=\(report.orphanCount) "
                        + "temps=\(report.temps) resumed_prefixes=\(report.resumedPrefixes)")
            if !report.isClean { throw ExitCode(1) }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Refuse every token issued so far for one attachment.")

        @OptionGroup var options: StoreOptions

        @Argument(help: "Attachment id.")
        var id: String

        func run() throws {
            try options.open().revokeTokens(for: try attachmentID(id))
            print(options.json ? "{\"id\":\"\(id)\",\"revoked\":true}" : "\(id)\trevoked")
        }
    }

    /// Writes random objects as fast as it can, printing a line as each is stored; the
    /// crash-safety tests kill it mid-write once it has reported writing.
    struct Storm: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write random objects in a loop (crash-safety testing).", shouldDisplay: false)

        @OptionGroup var options: StoreOptions

        @Option var count = 1_000
        @Option var maxSize = 256 * 1024

        func validate() throws {
            try Ranges.check(count, 1...10_000_000, "--count")
            try Ranges.check(maxSize, 1...(64 << 20), "--max-size")
        }

        func run() throws {
            let store = try options.open()
            var generator = SystemRandomNumberGenerator()
            // One random buffer, made once; each object is a random length of it with a fresh
            // random first 16 bytes, so objects differ and the time goes to storing them.
            var pool = [UInt8](repeating: 0, count: maxSize + 16)
            for i in stride(from: 0, to: pool.count, by: 8) {
                withUnsafeBytes(of: generator.next()) { word in
                    for j in 0..<min(8, pool.count - i) { pool[i + j] = word[j] }
                }
            }
            for _ in 0..<count {
                var bytes = Array(pool[0..<Int.random(in: 1...maxSize, using: &generator)])
                withUnsafeBytes(of: (generator.next(), generator.next())) { word in
                    for j in 0..<min(16, bytes.count) { bytes[j] = word[j] }
                }
                let stored = try store.put(bytes, metadata: ObjectMetadata(kind: .jpeg), ttl: 3600)
                FileHandle.standardOutput.write(Data("stored \(stored.id)\n".utf8))
            }
        }
    }
}
