import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import Foundation

struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch media URLs under the fetch policy and report each transfer.",
        discussion: """
            Prints one line per URL, in the order given: status, bytes, sniffed kind, final URL \
            and milliseconds, or the error. Exits 0 even when some URLs fail.
            """
    )

    @Flag(help: "Print one JSON object per URL.")
    var json = false

    @OptionGroup var address: AddressOptions

    @Option(help: "Write each body to DIR/<n>.<ext> (the extension from the sniffed kind).")
    var out: String?

    @Option(help: "Largest body in bytes.")
    var maxBytes: Int64 = FetchPolicy().maxBytes

    @Option(help: "Time allowed per URL, retries included.")
    var timeout = DurationArgument(.seconds(20))

    @Option(help: "Redirects followed.")
    var maxRedirects = FetchPolicy().maxRedirects

    @Option(help: "Retries after connection failures, 429 and 5xx.")
    var retries = FetchPolicy().maxRetries

    @Option(name: .customLong("allow-host"), help: "Allowed host (repeatable; *.example.com for subdomains).")
    var allowedHosts: [String] = []

    @Option(help: "Pin host:port:address like curl --resolve (repeatable).")
    var resolve: [String] = []

    @Option(help: "Trust this CA bundle instead of the system's (verification stays on).")
    var caFile: String?

    @Option(help: "Transfers in flight at once.")
    var concurrency = 64

    @Option(help: "Read more URLs from this file, one per line.")
    var urls: String?

    @Flag(help: "Print only a summary line.")
    var quiet = false

    @Argument(help: "URLs.")
    var arguments: [String] = []

    func validate() throws {
        try Ranges.check(maxBytes, 1...Int64(Int32.max) * 64, "--max-bytes")
        guard timeout.value >= .milliseconds(1), timeout.value <= .seconds(86_400) else {
            throw ValidationError("--timeout must be from 1ms to 1d, not \(DurationText.format(timeout.value))")
        }
        try Ranges.check(maxRedirects, 0...50, "--max-redirects")
        try Ranges.check(retries, 0...10, "--retries")
        try Ranges.check(concurrency, 1...10_000, "--concurrency")
        for host in allowedHosts where !Self.isHostRule(host) {
            throw ValidationError("--allow-host '\(host)' is not a host name (example.com) or *.example.com")
        }
        for entry in resolve where !Self.isResolveEntry(entry) {
            throw ValidationError("--resolve '\(entry)' is not host:port:address, e.g. media.test:443:127.0.0.1")
        }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--ca-file \(caFile): no readable file there (a PEM bundle of CA certificates)")
        }
    }

    static func isHostRule(_ text: String) -> Bool {
        let host: Substring = text.hasPrefix("*.") ? text.dropFirst(2) : Substring(text)
        let allowed: Set<UInt8> = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:".utf8)
        return !host.isEmpty && host.utf8.allSatisfy { allowed.contains($0) }
    }

    static func isResolveEntry(_ text: String) -> Bool {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let port = Int(parts[1]), (1...65_535).contains(port) else {
            return false
        }
        return !parts[2].isEmpty
    }

    /// The fetch policy the options say.
    func policy() -> FetchPolicy {
        var policy = FetchPolicy()
        address.apply(to: &policy)
        policy.maxBytes = maxBytes
        policy.totalTimeout = timeout.value
        policy.maxRedirects = maxRedirects
        policy.maxRetries = retries
        policy.allowedHosts = allowedHosts.isEmpty ? nil : allowedHosts
        policy.resolve = resolve
        policy.caFile = caFile
        return policy
    }

    func run() async throws {
        Attache.tuneAllocatorForBatch()
        var list = arguments
        if let urls {
            // Read bounded (64 MiB: about half a million URLs), as every input is.
            let text = String(decoding: try BoundedInput.read(urls, limit: 64 << 20), as: UTF8.self)
            list += text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        }
        guard !list.isEmpty else { throw ValidationError("give at least one URL") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        let policy = self.policy()
        if let out { try OptionChecks.directory(out, "--out") }

        let fetcher = Fetcher(policy: policy, maxHostConnections: concurrency, maxTotalConnections: concurrency)
        let started = ContinuousClock.now
        var lines = [String?](repeating: nil, count: list.count)
        var next = 0
        var printed = 0
        var failures = 0
        var bytes = 0
        await withTaskGroup(of: (Int, String, Bool, Int).self) { group in
            func submit(_ index: Int) {
                let url = list[index]
                group.addTask {
                    let begin = ContinuousClock.now
                    let result: Result<FetchedMedia, AttacheError>
                    do throws(AttacheError) {
                        result = .success(try await fetcher.fetch(url))
                    } catch { result = .failure(error) }
                    let ms = (ContinuousClock.now - begin).milliseconds
                    var outcome = result
                    if case .success(let media) = result, let out, let kind = media.kind {
                        do throws(AttacheError) {
                            try media.bytes.write(to: "\(out)/\(index + 1).\(kind.fileExtension)")
                        } catch { outcome = .failure(error) }
                    }
                    let size = (try? outcome.get().bytes.count) ?? 0
                    let line = quiet ? "" : Self.line(url: url, outcome, ms: ms, json: json)
                    return (index, line, (try? outcome.get()) == nil, size)
                }
            }
            // libcurl caps connections at --concurrency and queues the rest; a window of twice
            // that keeps the loop thread fed without holding many finished bodies at once.
            while next < min(2 * concurrency, list.count) {
                submit(next)
                next += 1
            }
            for await (index, line, failed, size) in group {
                lines[index] = line
                if failed { failures += 1 }
                bytes += size
                if next < list.count {
                    submit(next)
                    next += 1
                }
                while printed < lines.count, let ready = lines[printed] {
                    if !quiet { print(ready) }
                    lines[printed] = nil
                    printed += 1
                }
            }
        }
        let seconds = (ContinuousClock.now - started).milliseconds / 1000
        if quiet || list.count > 1 {
            let rate = seconds > 0 ? Double(list.count) / seconds : 0
            FileHandle.standardError.write(
                Data(
                    String(
                        format: "fetched %d URLs (%d failed, %d bytes) in %.3f s: %.1f transfers/s\n",
                        list.count, failures, bytes, seconds, rate
                    ).utf8))
        }
    }

    static func line(url: String, _ result: Result<FetchedMedia, AttacheError>, ms: Double, json: Bool) -> String {
        var line = JSONLine()
        line.add("url", url)
        switch result {
        case .success(let media):
            if !json {
                return "\(url)\tok\t\(media.status)\t\(media.bytes.count) bytes\t\(media.kind?.rawValue ?? "-")\t"
                    + "\(media.finalURL)\t\(String(format: "%.1f", ms)) ms"
            }
            line.add("ok", true)
            line.add("status", media.status)
            line.add("bytes", media.bytes.count)
            line.add("kind", media.kind?.rawValue)
            line.add("final_url", media.finalURL)
            line.add("redirects", media.redirects)
            line.add("attempts", media.attempts)
            line.add("ms", (ms * 10).rounded() / 10)
            line.add("error", object: nil)
        case .failure(let error):
            if !json {
                return "\(url)\terror\t\(error.code)\t\(error.message)\t\(String(format: "%.1f", ms)) ms"
            }
            line.add("ok", false)
            line.add("ms", (ms * 10).rounded() / 10)
            line.add("error", object: JSONLine.error(error))
        }
        return line.text
    }
}
