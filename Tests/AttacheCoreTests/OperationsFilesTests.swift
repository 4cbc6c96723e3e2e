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

    @Test("bash completes process, batch and resize settings by their rows, and their inputs as files")
    func bashCompletesSettingRowsAndInputs() throws {
        let directory = try TemporaryDirectory()
        let script = directory.path + "/attache.bash"
        try Data(try Self.run(try attacheExecutable(), ["--generate-completion-script", "bash"]).output.utf8)
            .write(to: URL(fileURLWithPath: script))
        try FileManager.default.createDirectory(atPath: directory.path + "/payloads", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path + "/payloads/one.json"))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory.path + "/payloads/.hidden.json"))
        // Each line as bash completes it at its end: the words, then `_attache` as `complete -F`
        // calls it (command, current word, previous word); what it offers, one per line.
        let lines = [
            "attache resize --max-s", "attache process --no-fa", "attache batch --android-m", "attache process --dead",
            "attache resize --dead",
            "attache resize --max-side 512 \(directory.path)/pay", "attache process \(directory.path)/payloads/",
            "attache process --js",
        ]
        var harness = "source \(script)\ncd \(directory.path)\n"
        for line in lines {
            harness += """
                COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$COMP_LINE"
                COMP_WORDS[0]='\(try attacheExecutable())'; COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
                _attache attache "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                echo "\(line) => ${COMPREPLY[*]}"

                """
        }
        try Data(harness.utf8).write(to: URL(fileURLWithPath: directory.path + "/harness.sh"))
        let (status, output) = try Self.run("/bin/bash", [directory.path + "/harness.sh"])
        #expect(status == 0, "\(output)")
        var offered: [String: Set<String>] = [:]
        for line in output.split(separator: "\n") {
            guard let arrow = line.range(of: " => ") else { continue }
            offered[String(line[..<arrow.lowerBound])] = Set(
                line[arrow.upperBound...].split(separator: " ").map(String.init))
        }
        // A row's flag beside the command's own option; a switch's negation.
        #expect(offered["attache resize --max-s"] == ["--max-side", "--max-scans"], "\(output)")
        #expect(offered["attache process --no-fa"] == ["--no-faces"], "\(output)")
        #expect(offered["attache batch --android-m"] == ["--android-max-bytes"], "\(output)")
        // Only the rows a command takes: resize has no payload deadline.
        #expect(offered["attache process --dead"] == ["--deadline"], "\(output)")
        #expect(offered["attache resize --dead"] == [], "\(output)")
        // Inputs are files and folders (a folder with its slash), a dot file not unless asked.
        #expect(
            offered["attache resize --max-side 512 \(directory.path)/pay"] == ["\(directory.path)/payloads/"],
            "\(output)")
        #expect(
            offered["attache process \(directory.path)/payloads/"] == ["\(directory.path)/payloads/one.json"],
            "\(output)")
        // The command's own flags are still offered.
        #expect(offered["attache process --js"] == ["--json"], "\(output)")
    }
}
