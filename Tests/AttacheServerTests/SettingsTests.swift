import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// The settings of `attache serve` are declared once, in ``ServerSettings/all``: the flags, the
/// variables, the file keys, `--help` and the docs table all follow it.
@Suite struct SettingsTests {
    /// Runs the attache binary to its end; its status and what it printed.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        await runProcess(try attacheExecutable(), arguments)
    }

    @Test("every setting is a flag of serve, read from the one table: values, =values, switches, --no-")
    func everySettingIsAFlag() async throws {
        let directory = try TemporaryDirectory()
        let given = [
            "serve", "--check-config", "--store", directory.path + "/store", "--allow-anonymous", "--port=0",
            "--max-side", "2048", "--format", "webp", "--no-transcode", "--faces", "--receipts=false",
        ]
        let (status, output) = try await Self.run(given)
        #expect(status == 0, "\(output)")
        // A value out of range is named by its flag; an unknown flag is refused before anything.
        let wrong = try await Self.run(given + ["--max-side=0"])
        #expect(wrong.status == 2 && wrong.output.contains("max-side / ATTACHE_MAX_SIDE"), "\(wrong.output)")
        let unknown = try await Self.run(["serve", "--check-config", "--max-sidee", "1"])
        #expect(unknown.status == 64 && unknown.output.contains("unknown option '--max-sidee'"), "\(unknown.output)")
        let help = try await Self.run(["serve", "--help"])
        for setting in ServerSettings.all {
            let listed = ["-", "]"].contains { help.output.contains($0 + setting.flag + " ") }
            #expect(listed, "--help lists \(setting.flag)")
        }
    }

    @Test("the settings table is the one declaration: every key read is in it, every row in the docs")
    func theSettingsTableIsComplete() throws {
        let keys = Set(ServerSettings.all.map(\.key))
        #expect(keys.count == ServerSettings.all.count, "a key declared twice")
        let source = try ["ServerSettings.swift", "ServerSettings+Load.swift"].map { name in
            try String(contentsOfFile: Paths.package + "/Sources/AttacheServer/" + name, encoding: .utf8)
        }.joined(separator: "\n")
        let read = try Regex(#"(?:text|integer|flag|duration|named|setting|problem|file)\(\s*"([A-Za-z]+)""#)
        var used = Set<String>()
        for match in source.matches(of: read) {
            if let key = match.output[1].substring { used.insert(String(key)) }
        }
        #expect(used.count > 30 && used.isSubset(of: keys), "read but not declared: \(used.subtracting(keys))")
        let docs = try String(contentsOfFile: Paths.package + "/docs/service-api.md", encoding: .utf8)
        let rows = docs.split(separator: "\n").filter { $0.hasPrefix("| `--") }.joined(separator: "\n")
        for setting in ServerSettings.all {
            #expect(
                rows.contains("`--\(setting.flag)`") || rows.contains("`--[no-]\(setting.flag)`"),
                "docs/service-api.md has no row for --\(setting.flag)")
        }
    }

    /// `--log-format json`: every line the service writes is one JSON object, the request
    /// line's fields among its members, a control character in a value escaped.
    @Test func jsonLogLinesParse() async throws {
        let directory = try TemporaryDirectory()
        let log = directory.path + "/log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try attacheExecutable())
        process.arguments = [
            "serve", "--port", "0", "--allow-anonymous", "--store", directory.path + "/store", "--log-format", "json",
        ]
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        func lines() -> [[String: Any]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let started = await eventually { lines().contains { $0["message"] as? String == "listening" } }
        #expect(started, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        let address = try #require(lines().first { $0["message"] as? String == "listening" }?["address"] as? String)
        _ = try await curl("GET", address + "healthz")
        _ = try await curl("GET", address + "no%0Awhere")
        process.terminate()
        process.waitUntilExit()
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let all = text.split(separator: "\n")
        #expect(all.count == lines().count, "a line that is not JSON: \(text)")
        let request = lines().first { $0["route"] as? String == "healthz" }
        #expect(request?["status"] as? String == "200" && request?["level"] as? String == "info", "\(text)")
        #expect(lines().contains { $0["route"] as? String == "unmatched" })
    }
}
