import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// The settings of `attache serve` are declared once, in ``ServerSettings/all``: the flags, the
/// variables, the file keys, `--help` and the docs table all follow it.
@Suite struct SettingsTests {
    /// Runs the attache binary to its end; its status and what it printed.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try attacheExecutable())
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("every setting is a flag of serve, read from the one table: values, =values, switches, --no-")
    func everySettingIsAFlag() throws {
        let directory = try TemporaryDirectory()
        let given = [
            "serve", "--check-config", "--store", directory.path + "/store", "--allow-anonymous", "--port=0",
            "--max-side", "2048", "--format", "webp", "--no-transcode", "--faces", "--receipts=false",
        ]
        let (status, output) = try Self.run(given)
        #expect(status == 0, "\(output)")
        // A value out of range is named by its flag; an unknown flag is refused before anything.
        let wrong = try Self.run(given + ["--max-side=0"])
        #expect(wrong.status == 2 && wrong.output.contains("max-side / ATTACHE_MAX_SIDE"), "\(wrong.output)")
        let unknown = try Self.run(["serve", "--check-config", "--max-sidee", "1"])
        #expect(unknown.status == 64 && unknown.output.contains("unknown option '--max-sidee'"), "\(unknown.output)")
        let help = try Self.run(["serve", "--help"])
        for setting in ServerSettings.all {
            let listed = ["-", "]"].contains { help.output.contains($0 + setting.flag + " ") }
            #expect(listed, "--help lists \(setting.flag)")
        }
    }

    @Test("the settings table is the one declaration: every key read is in it, every row in the docs")
    func theSettingsTableIsComplete() throws {
        let keys = Set(ServerSettings.all.map(\.key))
        #expect(keys.count == ServerSettings.all.count, "a key declared twice")
        let source = try String(
            contentsOfFile: Paths.package + "/Sources/AttacheServer/ServerSettings.swift", encoding: .utf8)
        let read = try Regex(#"(?:text|integer|flag|duration|named|setting)\(\s*"([A-Za-z]+)""#)
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
}
