import AttacheTestSupport
import Foundation
import Testing

/// What docs/operations.md hands an operator works as written: the systemd unit verifies, the
/// example settings load, and the shell completions are valid scripts naming every command.
@Suite struct OperationsFilesTests {
    static let folder = Paths.package + "/docs/operations"

    /// Runs a program to its end; its status and what it printed.
    static func run(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try runChild(path, arguments, outputs: .merged)
        return (result.status, result.text)
    }

    @Test("the example settings file loads: serve --check-config accepts it")
    func theExampleSettingsLoad() throws {
        let directory = try TemporaryDirectory()
        let keys = directory.path + "/api-keys"
        try Data("# rotation: both live\nfirst-key-0123456789abcdef\nsecond-key-0123456789abcdef\n".utf8)
            .write(to: URL(fileURLWithPath: keys))
        // The file's paths are a server's; a flag wins over the file, so only those two change.
        let (status, output) = try Self.run(
            try attacheExecutable(),
            [
                "serve", "--config", Self.folder + "/settings.json", "--check-config", "--store",
                directory.path + "/store", "--api-key-files", keys,
            ])
        #expect(status == 0, "\(output)")
        #expect(output.contains("the settings are valid"))
        #expect(output.contains("https://media.example.com/attachments"), "the file's base URL is taken")
        #expect(output.contains("api keys     2"))
        // A setting the file gets wrong is refused, with its name.
        let bad = directory.path + "/bad.json"
        try Data(#"{"maxQueued": -1, "logLevel": "loud"}"#.utf8).write(to: URL(fileURLWithPath: bad))
        let refused = try Self.run(
            try attacheExecutable(), ["serve", "--config", bad, "--check-config", "--api-key-files", keys])
        #expect(refused.status == 2)
        #expect(
            refused.output.contains("\"maxQueued\"") && refused.output.contains("\"logLevel\""), "\(refused.output)")
    }

    @Test(
        "the systemd unit verifies (systemd-analyze)",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func theSystemdUnitVerifies() throws {
        let directory = try TemporaryDirectory()
        let unit = try String(contentsOfFile: Self.folder + "/attache.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/attache serve --config /etc/attache/settings.json"))
        #expect(unit.contains("--check-config"))
        // verify needs the binary the unit names to exist: this build's, at the same place in the text.
        let local = unit.replacingOccurrences(of: "/usr/local/bin/attache", with: try attacheExecutable())
        let path = directory.path + "/attache.service"
        try Data(local.utf8).write(to: URL(fileURLWithPath: path))
        let (status, output) = try Self.run("/usr/bin/systemd-analyze", ["verify", path])
        #expect(status == 0, "\(output)")
        #expect(!output.contains("Unknown key") && !output.contains("Unknown section"), "\(output)")
        // And it is able to fail: a misspelt key is reported.
        try Data(local.replacingOccurrences(of: "ExecStart=", with: "ExecStrat=").utf8)
            .write(to: URL(fileURLWithPath: path))
        let broken = try Self.run("/usr/bin/systemd-analyze", ["verify", path])
        #expect(broken.status != 0 || broken.output.contains("Unknown key"))
    }

    @Test("shell completions for bash, zsh and fish name every command and option")
    func shellCompletionsNameEveryCommand() throws {
        for shell in ["bash", "zsh", "fish"] {
            let (status, script) = try Self.run(try attacheExecutable(), ["--generate-completion-script", shell])
            #expect(status == 0)
            for word in ["serve", "batch", "process", "check-config", "campaign"] {
                #expect(script.contains(word), "\(shell) completion lacks \(word)")
            }
            // The service's settings are one table read at run time: bash offers them as the
            // words of serve's settings argument (zsh and fish scripts have no such list).
            if shell == "bash" { #expect(script.contains("--allow-anonymous") && script.contains("--no-faces")) }
        }
        let directory = try TemporaryDirectory()
        let path = directory.path + "/attache.bash"
        try Data(try Self.run(try attacheExecutable(), ["--generate-completion-script", "bash"]).output.utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect(try Self.run("/bin/bash", ["-n", path]).status == 0, "the bash script parses")
    }
}
