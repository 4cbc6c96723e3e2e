import AttacheTestSupport
import Crypto
import Foundation
import Synchronization
import Testing

/// Every option of every command, given a bad value: the command refuses it before doing
/// anything, in words that name the option (or the file or setting it names) and say what is
/// accepted — never a Swift enum, a Foundation error's debug form or a decoder's dump.
@Suite(.enabled(if: inIsolatedChild)) struct OptionErrorTests {
    /// A bad value per option name; options not listed take a number, and get `-5`.
    static let badValues: [String: String] = [
        "deadline": "soon", "max-deadline": "soon", "timeout": "soon", "grace-period": "soon", "gc-interval": "soon",
        "ttl": "soon", "token-ttl": "soon", "store-ttl": "soon", "store": "/dev/null/store", "blobs": "ftp://bucket",
        "blob-cache": "/dev/null/cache", "base-url": "not a url", "source": "no-equals-sign",
        "seal-key": "/nonexistent/key.pem", "seal-kid": "bad kid!",
        "seal-placeholder": String(repeating: "x", count: 5000),
        "seal-member": "aps", "categories": "bad.json", "out": "/dev/null/out", "manifest": "notes.txt",
        "report": "/dev/null/report.html", "metrics-file": "/dev/null/batch.prom", "campaign": "spring",
        "previews": "/dev/null/previews",
        "jpeg-fancy": "maybe", "allow-host": "http://x/",
        "resolve": "nonsense", "ca-file": "/nonexistent/ca.pem", "urls": "/nonexistent/urls.txt",
        "token": "not-a-token",
        "scope": "nowhere", "source-url": "not a url", "spec": "", "config": "/nonexistent/config.json",
        "host": "bad host!", "api-keys": "short", "api-key-files": "/nonexistent/keys", "log-level": "loud",
        "bind": "bad host!",
    ]

    /// The arguments a command needs besides the option under test.
    static func context(_ command: String, _ option: String) -> [String] {
        let id = String(repeating: "00", count: 32)
        switch command {
        case "process":
            return (option.hasPrefix("seal-") && option != "seal-key" ? seal.dropOption(option) : []) + ["payload.json"]
        case "batch":
            return (option.hasPrefix("seal-") && option != "seal-key" ? seal.dropOption(option) : []) + ["urls.txt"]
        case "inspect": return ["gray.jpg"]
        case "resize": return ["--max-side", "64", "--out", "out", "gray.jpg"].dropOption(option)
        case "fetch": return ["http://127.0.0.1:1/a.jpg"]
        case "store put": return ["gray.jpg"]
        case "store open": return (["--token", "t", "--out", "x.bin"].dropOption(option)) + [id]
        case "store revoke", "token issue": return [id]
        case "key retire": return ["1"]
        case "serve": return ["--check-config", "--allow-anonymous"]
        case "serve-files": return ["."]
        default: return []
        }
    }

    static let seal = ["--seal-key", "device.pem", "--seal-kid", "d1"]

    /// Swift's and Foundation's forms that a person should never read.
    static let debugForms = [
        "Error Domain=", "NSCocoaErrorDomain", "DecodingError", "Optional(", "badKey(", "(\"", "Swift.", "UserInfo=",
        "AttacheError(",
    ]

    @Test("every option of every command refuses a bad value in words that name it")
    func everyOptionRefusesABadValueInWords() async throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try write("payload.json", #"{"aps":{"alert":"hi"}}"#)
        try write("urls.txt", "http://127.0.0.1:1/a.jpg\n")
        try write("notes.txt", "my notes\n")
        try write("bad.json", #"{"nope":"#)
        try write("device.pem", P256.KeyAgreement.PrivateKey().publicKey.pemRepresentation)
        try FileManager.default.copyItem(atPath: Paths.samples + "/gray.jpg", toPath: folder + "/gray.jpg")

        let help = try await onOwnThread { try Self.run(["--experimental-dump-help"], in: folder) }
        let root = try #require(try JSONSerialization.jsonObject(with: Data(help.output.utf8)) as? [String: Any])
        var cases: [(command: [String], option: String)] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["kind"] as? String == "option"
            {
                let names = argument["names"] as? [[String: Any]] ?? []
                if let name = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String {
                    cases.append((path, name))
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard let name = sub["commandName"] as? String, name != "help" else { continue }
                walk(sub, path + [name])
            }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        // The settings a command reads by their rows (PipelineSettings) are listed in its help.
        for command in [["process"], ["batch"], ["resize"]] {
            let text = try await onOwnThread { try Self.run(command + ["--help"], in: folder) }.output
            for line in text.split(separator: "\n") where line.hasPrefix("--") && line.contains(" <value> (default ") {
                cases.append((command, String(line.dropFirst(2).prefix { $0 != " " })))
            }
        }
        #expect(cases.count >= 150, "the commands' options were all found")

        let all = cases
        // Many `attache` runs at once, waited for on threads of their own (never on Swift's).
        let found: [String] = try await onOwnThread {
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: all.count) { index in
                let (command, option) = all[index]
                let value = Self.badValues[option] ?? "-5"
                let arguments =
                    command + ["--\(option)=\(value)"] + Self.context(command.joined(separator: " "), option)
                let shown = "attache " + arguments.joined(separator: " ").prefix(160)
                guard let result = try? Self.run(arguments, in: folder) else {
                    return failures.withLock { $0.append("\(shown): did not run") }
                }
                let words = result.output
                var problems: [String] = []
                if result.status == 0 { problems.append("accepted (exit 0)") }
                let setting = option  // serve names a setting by its flag's name: `host / ATTACHE_HOST / "host"`
                if !words.contains("--\(option)") && !words.contains(setting + " / ")
                    && !(value.count > 3 && words.contains(value.prefix(40)))
                {
                    problems.append("does not name --\(option) or its value")
                }
                for form in Self.debugForms where words.contains(form) { problems.append("shows \(form)") }
                if !problems.isEmpty {
                    failures.withLock {
                        $0.append("\(shown): \(problems.joined(separator: ", ")) — \(words.prefix(300))")
                    }
                }
            }
            return failures.withLock { $0 }
        }
        let listed: String = found.joined(separator: "\n")
        #expect(found.isEmpty, "\(found.count) of \(all.count):\n\(listed)")
        print("options checked with a bad value: \(cases.count)")
    }

    /// Runs `attache` in `folder` with a store of its own there; standard output and error together.
    static func run(_ arguments: [String], in folder: String) throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["ATTACHE_STORE"] = folder + "/store"
        for name in ["ATTACHE_API_KEYS", "ATTACHE_CONFIG", "ATTACHE_BLOBS"] { environment[name] = nil }
        let result = try runChild(
            try attacheExecutable(), arguments, environment: environment, directory: folder, outputs: .merged)
        return (result.status, result.text)
    }
}

extension Array where Element == String {
    /// Without `--option` and its value (the one under test gives its own).
    fileprivate func dropOption(_ option: String) -> [String] {
        guard let at = firstIndex(of: "--" + option) else { return self }
        var copy = self
        copy.removeSubrange(at...(at + 1))
        return copy
    }
}
