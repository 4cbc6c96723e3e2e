public import AttacheBase
public import AttacheCore
public import AttacheFetch
import Foundation

/// `attache batch --warm EDGE`: once a campaign is prepared, each attachment URL its payloads
/// name is requested once through each edge (a caching proxy in front of the service,
/// docs/operations/edge.md), so the first device to ask is answered from the edge's copy.
///
/// The URLs are read from the mutated payloads (`--out`): every string that begins with the
/// attachments' base URL, in the order first met, each once. An edge is `http(s)://host[:port]`;
/// a URL's scheme and authority are replaced by the edge's and the rest (the path with its
/// token) kept. The bodies are read with libcurl and dropped; an answer other than 200 (or
/// a transfer that fails, after the fetcher's retries) is a failure, reported with its URL.
public struct EdgeWarmup: Sendable {
    /// One request's failure.
    public struct Failure: Sendable {
        public var edge: String
        public var url: String
        public var code: String
        public var message: String
    }

    /// What the warm-up did.
    public struct Outcome: Sendable {
        public var urls = 0
        public var edges = 0
        public var requests = 0
        public var ok = 0
        public var failed = 0
        public var bytes: Int64 = 0
        public var seconds = 0.0
        /// The first failures (at most ``EdgeWarmup/keptFailures``).
        public var failures: [Failure] = []

        public init() {}

        /// `{"urls":…,"edges":…,"requests":…,"ok":…,"failed":…,"bytes":…,"seconds":…,"failures":[…]}`.
        public var json: JSONLine {
            var line = JSONLine()
            line.add("urls", urls)
            line.add("edges", edges)
            line.add("requests", requests)
            line.add("ok", ok)
            line.add("failed", failed)
            line.add("bytes", Int(bytes))
            line.add("seconds", (seconds * 10).rounded() / 10)
            let items = failures.map { failure -> String in
                var item = JSONLine()
                item.add("edge", failure.edge)
                item.add("url", failure.url)
                item.add("code", failure.code)
                item.add("message", failure.message)
                return item.text
            }
            line.addRaw("failures", "[" + items.joined(separator: ",") + "]")
            return line
        }

        /// `warmed 60 URLs through 2 edges: 120 requests, 120 ok, 0 failed (12.3 MB, 1.2 s)`.
        public var summary: String {
            String(
                format: "warmed %d URLs through %d edge%@: %d requests, %d ok, %d failed (%@, %.1f s)", urls, edges,
                edges == 1 ? "" : "s", requests, ok, failed, BatchSummary.bytes(bytes), seconds)
        }
    }

    public static let keptFailures = 20

    public let edges: [String]
    /// Requests in flight at once, per edge.
    public let concurrency: Int

    /// Checks each edge (`http(s)://host[:port]`, nothing after it).
    public init(edges: [String], concurrency: Int = 16) throws(AttacheError) {
        for edge in edges {
            guard let problem = Self.problem(edge) else { continue }
            throw AttacheError(.invalidRequest, "--warm \(edge): \(problem)")
        }
        self.edges = edges.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.concurrency = max(1, concurrency)
    }

    /// Why `edge` is not `http(s)://host[:port]`, or nil.
    static func problem(_ edge: String) -> String? {
        guard let url = URLComponents(string: edge), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { return "an edge is http://host[:port] or https://host[:port]" }
        guard let host = url.host, !host.isEmpty else { return "an edge names a host" }
        guard url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil else {
            return "an edge is a scheme, host and port only (the attachment URL's path is kept)"
        }
        return nil
    }

    /// The attachment URLs that mutated payloads name: every string value beginning with
    /// `base` + `/`, each once, in the order first met. `output` is a directory of payload
    /// files or a JSONL file, as `--out` writes them.
    public static func urls(inOutput output: String, base: String) throws(AttacheError) -> [String] {
        let prefix = (base.hasSuffix("/") ? base : base + "/")
        var seen: Set<String> = []
        var urls: [String] = []
        func visit(_ value: JSONValue) {
            switch value {
            case .string(let text):
                if text.hasPrefix(prefix), seen.insert(text).inserted { urls.append(text) }
            case .array(let items):
                for item in items { visit(item) }
            case .object(let members):
                for member in members { visit(member.value) }
            default:
                break
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) else {
            throw AttacheError(.notFound, "--warm: no output at \(output) to read the URLs from")
        }
        if isDirectory.boolValue {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).filter {
                !$0.hasPrefix(".")
            }
            for name in names.sorted() {
                let bytes = try BoundedInput.read(output + "/" + name, limit: 16 << 20)
                if let value = try? JSONParser.parse(bytes) { visit(value) }
            }
        } else {
            let reader = try LineReader(path: output, limit: 16 << 20, wholeLinesOnly: true)
            while let line = reader.next() {
                if !line.tooLong, let value = try? JSONParser.parse(line.bytes) { visit(value) }
            }
        }
        return urls
    }

    /// `url` as requested through `edge`: the edge's scheme and authority, the URL's path.
    static func through(_ edge: String, _ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return edge + url }
        let rest = url[scheme.upperBound...]
        let path = rest.firstIndex(of: "/").map { rest[$0...] } ?? ""
        return edge + path
    }

    /// An edge whose last this many requests all failed is given up on: what is left for it is
    /// reported failed, not waited for one request at a time.
    public var givenUpAfter: Int { 2 * concurrency }

    /// Requests every URL once through every edge, `concurrency` at a time per edge, within
    /// `limit` in all; `progress` hears the running outcome after each request. What is not
    /// done when the limit passes, or is left for an edge given up on (``givenUpAfter`` failures
    /// in a row: a hung or unreachable edge), is reported failed with its reason.
    public func run(
        _ urls: [String], fetcher: Fetcher, limit: Duration = .seconds(600),
        progress: @Sendable (Outcome) -> Void = { _ in }
    ) async -> Outcome {
        let start = ContinuousClock.now
        let deadline = start + limit
        var outcome = Outcome()
        outcome.urls = urls.count
        outcome.edges = edges.count
        let work = edges.flatMap { edge in urls.map { (edge, $0) } }
        var failedInARow: [String: Int] = [:]
        func failed(_ edge: String, _ url: String, _ error: AttacheError) {
            outcome.failed += 1
            if outcome.failures.count < Self.keptFailures {
                outcome.failures.append(
                    Failure(edge: edge, url: url, code: error.code.rawValue, message: error.message))
            }
        }
        await withTaskGroup(of: (String, String, Result<Int64, AttacheError>).self) { group in
            var next = 0
            func add() {
                while next < work.count {
                    let (edge, url) = work[next]
                    next += 1
                    // Past the limit, or an edge given up on: reported, not requested.
                    if ContinuousClock.now >= deadline {
                        failed(edge, url, AttacheError(.timedOut, "the warm-up's time (\(limit)) ran out first"))
                        continue
                    }
                    if failedInARow[edge, default: 0] >= givenUpAfter {
                        failed(
                            edge, url,
                            AttacheError(
                                .fetchFailed, "not requested: the edge failed \(givenUpAfter) requests in a row"))
                        continue
                    }
                    group.addTask {
                        do throws(AttacheError) {
                            let media = try await fetcher.fetch(
                                Self.through(edge, url), deadline: min(deadline, .now + fetcher.policy.totalTimeout),
                                limits: nil)
                            return (edge, url, .success(Int64(media.bytes.count)))
                        } catch {
                            return (edge, url, .failure(error))
                        }
                    }
                    return
                }
            }
            for _ in 0..<(concurrency * max(1, edges.count)) { add() }
            while let (edge, url, result) = await group.next() {
                outcome.requests += 1
                switch result {
                case .success(let bytes):
                    outcome.ok += 1
                    outcome.bytes += bytes
                    failedInARow[edge] = 0
                case .failure(let error):
                    failed(edge, url, error)
                    failedInARow[edge, default: 0] += 1
                }
                outcome.seconds = (ContinuousClock.now - start).milliseconds / 1000
                progress(outcome)
                add()
            }
        }
        outcome.seconds = (ContinuousClock.now - start).milliseconds / 1000
        return outcome
    }
}
