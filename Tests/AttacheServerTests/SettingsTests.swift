import AttacheCore
import AttacheMedia
import AttacheStore
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

    /// What a fetch may reach is one table (``AddressSettings``): serve's rows are its rows, and
    /// every command that fetches takes the same switches with the same words, each reaching the
    /// fetch policy.
    @Test func theAddressSwitchesAreOneTableForEveryCommand() async throws {
        for row in AddressSettings.all {
            let served = try #require(ServerSettings.all.first { $0.key == row.key })
            #expect(served.help == row.help && served.boolean)
            var configuration = ServerSettings.defaults
            try served.read("true", into: &configuration)
            #expect(row.shown(configuration.fetch) == "true" && row.shown(ServerSettings.defaults.fetch) == "false")
        }
        for command in ["process", "batch", "fetch", "preview"] {
            // ArgumentParser wraps help lines: compared with the blanks folded.
            let help = try await Self.run([command, "--help"]).output.split(whereSeparator: \.isWhitespace)
                .joined(separator: " ")
            for row in AddressSettings.all {
                #expect(help.contains("--\(row.flag) \(row.help)"), "\(command): --\(row.flag)")
            }
        }
    }

    /// The store's quotas are one table (``StoreSettings``): serve's rows are its rows, and the
    /// commands that open a store take them with the same words and refuse a bad value as serve
    /// does.
    @Test func theStoreQuotasAreOneTableForEveryCommand() async throws {
        for row in StoreSettings.all {
            let served = try #require(ServerSettings.all.first { $0.key == row.key })
            #expect(served.help == row.help && served.defaultText == row.shown(StoreConfiguration(root: "")))
            let help = try await Self.run(["store", "stats", "--help"]).output.split(whereSeparator: \.isWhitespace)
                .joined(separator: " ")
            #expect(help.contains(String(row.help.dropLast())), "store stats --help: \(row.flag)")
            let refused = try await Self.run(["store", "stats", "--store", "/nonexistent", "--\(row.flag)", "0x"])
            #expect(refused.status != 0 && refused.output.contains("--\(row.flag): '0x' is not a whole number from 1"))
        }
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

    @Test("a settings file's misspelt and repeated keys are refused, the nearest key named; a good file passes")
    func settingsFileKeysAreChecked() async throws {
        let directory = try TemporaryDirectory()
        let file = directory.path + "/settings.json"
        let base = [
            "serve", "--check-config", "--store", directory.path + "/store", "--allow-anonymous", "--config", file,
        ]
        try Data(#"{"maxQueud": 3, "max_queued": 4, "MaxQueued": 5, "bogusKey": 1}"#.utf8).write(
            to: URL(fileURLWithPath: file))
        let misspelt = try await Self.run(base)
        #expect(misspelt.status == 2, "\(misspelt.output)")
        for key in ["maxQueud", "max_queued", "MaxQueued"] {
            #expect(
                misspelt.output.contains(#""\#(key)" is not a setting; did you mean "maxQueued"?"#),
                "\(misspelt.output)")
        }
        #expect(misspelt.output.contains(#""bogusKey" is not a setting"#), "\(misspelt.output)")
        #expect(!misspelt.output.contains("the settings are valid"))
        try Data(#"{"maxQueued": 3, "maxQueued": 30}"#.utf8).write(to: URL(fileURLWithPath: file))
        let repeated = try await Self.run(base)
        #expect(repeated.status == 2 && repeated.output.contains("duplicate key \"maxQueued\""), "\(repeated.output)")
        try Data(#"[1]"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(try await Self.run(base).status == 2)
        try Data(#"{"maxQueued": 30, "port": 0}"#.utf8).write(to: URL(fileURLWithPath: file))
        let good = try await Self.run(base)
        #expect(good.status == 0 && good.output.contains("the settings are valid"), "\(good.output)")
        #expect(ServerSettings.nearestKey("idletimeout") == "idleTimeout")
        #expect(ServerSettings.nearestKey("zzzzzzzz") == nil)
    }

    @Test("the edge times are whole seconds: 1-999 ms is refused, not taken as 0s")
    func edgeTimesAreWholeSeconds() async throws {
        for key in ["edgeMaxAge", "edgeStale"] {
            func problems(_ text: String) async throws -> [String] {
                ServerSettings.load(
                    try await ServerSettings.reader(
                        flags: [key: text, "allowAnonymous": "true"], environment: [:], file: nil),
                    environment: ["HOME": "/nonexistent"]
                ).problems
            }
            #expect(try await problems("500ms").contains { $0.contains("not a whole number of seconds") }, "\(key)")
            #expect(try await problems("1500ms").contains { $0.contains("not a whole number of seconds") }, "\(key)")
            #expect(try await problems("2000ms").isEmpty, "\(key)")
            #expect(try await problems("0s").isEmpty, "\(key)")
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
        #expect(used.isSubset(of: keys), "read but not declared: \(used.subtracting(keys))")
        // Every row is read: by its own value, or in ServerSettings+Load.swift.
        let typed = Set(ServerSettings.all.filter { $0.readsItself }.map(\.key))
        #expect(used.union(typed) == keys, "declared but never read: \(keys.subtracting(used.union(typed)))")
        let docs = try String(contentsOfFile: Paths.package + "/docs/service-api.md", encoding: .utf8)
        let rows = docs.split(separator: "\n").filter { $0.hasPrefix("| `--") }.joined(separator: "\n")
        for setting in ServerSettings.all {
            #expect(
                rows.contains("`--\(setting.flag)`") || rows.contains("`--[no-]\(setting.flag)`"),
                "docs/service-api.md has no row for --\(setting.flag)")
        }
    }

    @Test("a setting read straight into the configuration is one row: its parser, range and default come from it")
    func typedSettingsAreOneRow() async throws {
        let typed = ServerSettings.all.filter { $0.readsItself }
        #expect(typed.count >= 20)
        let docs = try String(contentsOfFile: Paths.package + "/docs/service-api.md", encoding: .utf8)
        let rows = docs.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        for setting in typed {
            // A bad value is a problem naming the setting; its default read back is none, and
            // leaves the configuration as it was.
            func load(_ text: String) async throws -> ServerSettings.Loaded {
                ServerSettings.load(
                    try await ServerSettings.reader(flags: [setting.key: text], environment: [:], file: nil),
                    environment: ["HOME": "/nonexistent"])
            }
            // Free text is refused by its length instead, a host name by its blank.
            let wrong =
                ["sealPlaceholder": String(repeating: "x", count: 1001), "host": "no host"][setting.key] ?? "0x"
            let bad = try await load(wrong).problems.filter { $0.hasPrefix("\(setting.flag) / \(setting.environment)") }
            #expect(bad.count == 1, "--\(setting.flag) 0x: \(bad)")
            let again = try await load(setting.shown(ServerSettings.defaults))
            #expect(
                again.problems.allSatisfy { !$0.hasPrefix(setting.flag + " ") }
                    && setting.shown(again.configuration) == setting.shown(ServerSettings.defaults),
                "--\(setting.flag) \(setting.defaultText): \(again.problems)")
            // A switch set the other way reaches the configuration.
            if setting.boolean {
                let other = setting.defaultText == "true" ? "false" : "true"
                #expect(
                    setting.shown(try await load(other).configuration) == other, "--\(setting.flag) \(other)")
            }
            // The docs table shows the default the configuration has (unless the row says it
            // follows the machine).
            guard setting.defaultText == setting.shown(ServerSettings.defaults) else { continue }
            let row = try #require(
                rows.first { $0.contains("`--\(setting.flag)`") || $0.contains("`--[no-]\(setting.flag)`") })
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let flags = cells[0].components(separatedBy: ", ").map { $0.replacingOccurrences(of: "[no-]", with: "") }
            let index = try #require(flags.firstIndex(of: "`--\(setting.flag)`"), "\(row)")
            var shown = cells[2].components(separatedBy: ", ")
            if shown.count == 1, shown[0].hasSuffix(" each") {
                shown = Array(repeating: String(shown[0].dropLast(5)), count: flags.count)
            }
            let documented = shown.count == flags.count ? shown[index] : "?"
            #expect(
                documented.replacingOccurrences(of: ",", with: "").replacingOccurrences(of: "`", with: "")
                    == setting.defaultText, "docs/service-api.md: --\(setting.flag)'s default \(documented)")
        }
    }

    @Test("a setting of how payloads are treated is one row for serve, process, batch, resize and the request")
    func pipelineSettingsAreOneRowForEverySurface() async throws {
        let rows = PipelineSettings.all
        #expect(Set(rows.map(\.key)).count == rows.count, "a key declared twice")
        let docs = try String(contentsOfFile: Paths.package + "/docs/command-line.md", encoding: .utf8)
        let table = docs.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        let process = try await Self.run(["process", "--help"])
        let batch = try await Self.run(["batch", "--help"])
        for row in rows {
            // serve reads the row itself: its help, and its default where it is the configuration's.
            let served = try #require(ServerSettings.all.first { $0.key == row.key }, "serve lacks \(row.key)")
            #expect(served.help == row.help && served.boolean == row.boolean)
            if row.key != "baseUrl" { #expect(served.defaultText == row.shown(ServerSettings.defaults.pipeline)) }
            // process lists it with the pipeline's default, batch with the batch's; the docs' row
            // says the same ("fast (batch: thorough)" where they differ).
            let flag = row.boolean ? "--[no-]\(row.flag)" : "--\(row.flag) <value>"
            let (shown, batchShown) = (row.shown(PipelineConfiguration()), row.shown(PipelineConfiguration.batch))
            #expect(process.output.contains("\(flag) (default \(shown))"), "process --help lists \(flag)")
            #expect(batch.output.contains("\(flag) (default \(batchShown))"), "batch --help lists \(flag)")
            let documented = try #require(
                table.first { $0.hasPrefix("| `--\(row.flag)` |") || $0.hasPrefix("| `--[no-]\(row.flag)` |") },
                "docs/command-line.md has no row for --\(row.flag)")
            let cells = documented.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let expected = shown == batchShown ? shown : "\(shown) (batch: \(batchShown))"
            #expect(cells[1] == expected, "docs: --\(row.flag)'s default \(cells[1])")
            #expect(cells[2] == (row.term.map { "`?\($0)=`" } ?? "—"), "docs: --\(row.flag)'s term \(cells[2])")
        }
        // A value out of range is refused by the row, naming the flag, before anything runs.
        let refused = try await Self.run(["process", "--store", "/nonexistent/store", "--android-aspect", "9", "-"])
        #expect(
            refused.status == 64 && refused.output.contains("--android-aspect: '9' is not a number from 0.25 to 8.0"),
            "\(refused.output)")
        let resize = try await Self.run(["resize", "--out", "/nonexistent/out", "--quality-target", "99", "x.jpg"])
        #expect(resize.status == 64 && resize.output.contains("--quality-target: '99' is not a score from 60 to 90"))
        let notResize = try await Self.run(["resize", "--out", "/nonexistent/out", "--max-payload-bytes", "9", "x.jpg"])
        #expect(notResize.status == 64 && notResize.output.contains("unknown option '--max-payload-bytes'"))
    }

    @Test("the rows read together: quality and its target in either order, a target alone is auto")
    func qualityAndItsTargetReadTogether() {
        func read(_ values: [String: String]) -> Quality {
            var configuration = PipelineConfiguration()
            #expect(PipelineSettings.read({ values[$0] }, into: &configuration).isEmpty)
            #expect(configuration.targets.values.allSatisfy { $0.quality == configuration.rendition.quality })
            return configuration.rendition.quality
        }
        #expect(read(["quality": "85", "qualityTarget": "80"]) == .fixed(85))
        #expect(read(["quality": "auto", "qualityTarget": "80"]) == .auto(target: 80))
        #expect(read(["qualityTarget": "82"]) == .auto(target: 82))
        #expect(read(["quality": "auto"]) == .auto(target: Quality.defaultTarget))
        #expect(read([:]) == .default)
    }

    /// `--log-format json`: every line the service writes is one JSON object, the request
    /// line's fields among its members, a control character in a value escaped.
    /// The standard OTEL_* values this build cannot honour: each one said by name at start, exit
    /// 2 — never a crash inside the exporter's set-up (swift-otel stops the process on gRPC).
    static let refusedTraceEnvironments: [[String: String]] = [
        ["OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"],
        ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"],
        ["OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"],
        ["OTEL_TRACES_SAMPLER": "jaeger_remote"],
        ["OTEL_TRACES_SAMPLER": "parentbased_jaeger_remote"],
        ["OTEL_TRACES_SAMPLER": "xray"],
        ["OTEL_TRACES_SAMPLER_ARG": "lots"],
        ["OTEL_TRACES_EXPORTER": "console"],
        ["OTEL_TRACES_EXPORTER": "zipkin"],
        ["OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT": "notaurl"],
        ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1"],
    ]

    @Test(
        "an OTEL_* value this build cannot honour stops serve and process by name, exit 2, no crash",
        arguments: refusedTraceEnvironments)
    func anUnsupportedTraceSettingIsRefusedByName(variables: [String: String]) async throws {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") }
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
        environment.merge(variables) { _, new in new }
        let (name, value) = try #require(variables.first)
        let directory = try TemporaryDirectory()
        let serve = await runProcess(
            try attacheExecutable(),
            ["serve", "--check-config", "--allow-anonymous", "--store", directory.path + "/store"],
            environment: environment)
        #expect(serve.status == 2 && serve.output.contains(name) && serve.output.contains(value), "\(serve)")
        let payload = directory.path + "/p.json"
        try Data(#"{"aps":{"alert":"a"}}"#.utf8).write(to: URL(fileURLWithPath: payload))
        let process = await runProcess(try attacheExecutable(), ["process", payload], environment: environment)
        #expect(process.status == 2 && process.output.contains(name), "\(process)")
        // Without a collector named, traces are off and nothing is checked.
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = nil
        environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = nil
        let off = await runProcess(try attacheExecutable(), ["process", payload], environment: environment)
        #expect(off.status == 0, "\(off)")
    }

    @Test("OTEL_PROPAGATORS keeps what this build has and notes the rest; a service starts and stops with it")
    func unsupportedPropagatorsAreDroppedWithANote() async throws {
        let checked = TraceEnvironment(
            ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_PROPAGATORS": "tracecontext,baggage,b3"],
            settings: .init())
        #expect(checked.problems.isEmpty && checked.environment["OTEL_PROPAGATORS"] == "tracecontext")
        #expect(checked.notes.count == 1 && checked.notes[0].contains("baggage, b3 dropped"), "\(checked.notes)")
        let only = TraceEnvironment(
            ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_PROPAGATORS": "b3multi"], settings: .init())
        #expect(only.environment["OTEL_PROPAGATORS"] == "tracecontext")
        // Empty is unset; turned off is not checked.
        let empty = TraceEnvironment(
            ["OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"], settings: .init())
        #expect(!empty.wanted && empty.problems.isEmpty && empty.environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == nil)
        let disabled = TraceEnvironment(
            [
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_SDK_DISABLED": "true",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            ], settings: .init())
        #expect(!disabled.wanted && disabled.problems.isEmpty)

        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") }
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:9"
        environment["OTEL_PROPAGATORS"] = "tracecontext,baggage,b3,jaeger,xray,ottrace"
        environment["OTEL_BSP_SCHEDULE_DELAY"] = "100"
        let directory = try TemporaryDirectory()
        let payload = directory.path + "/p.json"
        try Data(#"{"aps":{"alert":"a"}}"#.utf8).write(to: URL(fileURLWithPath: payload))
        let process = await runProcess(try attacheExecutable(), ["process", payload], environment: environment)
        #expect(process.status == 0 && process.output.contains("dropped"), "\(process)")
    }

    @Test("a shared store's tuning given to a directory store is accepted with a note; problems come all at once")
    func settingsProblemsAreSaidTogether() async throws {
        func load(_ flags: [String: String]) async throws -> ServerSettings.Loaded {
            ServerSettings.load(
                try await ServerSettings.reader(flags: flags, environment: [:], file: nil),
                environment: ["HOME": "/nonexistent"])
        }
        let directory = try await load(["allowAnonymous": "true", "catalogTimeout": "5s", "catalogOutageGrace": "1m"])
        #expect(directory.problems.isEmpty, "\(directory.problems)")
        #expect(directory.notes.filter { $0.contains("only a postgres:// store uses it") }.count == 2)
        let bad = try await load(["allowAnonymous": "true", "catalogTimeout": "soon"])
        #expect(bad.problems.count == 1 && bad.problems[0].contains("catalog-timeout"), "\(bad.problems)")
        // A shared store missing its bucket and a bad timeout: both said, not the first alone.
        let shared = try await load(
            ["allowAnonymous": "true", "store": "postgres://h/db", "catalogTimeout": "soon", "port": "99999"])
        #expect(shared.problems.contains { $0.contains("catalog-timeout") }, "\(shared.problems)")
        #expect(shared.problems.contains { $0.contains("store / ATTACHE_STORE") }, "\(shared.problems)")
        #expect(shared.problems.contains { $0.contains("port") }, "\(shared.problems)")
        let blobs = try await load(["allowAnonymous": "true", "blobs": "s3://bucket"])
        #expect(blobs.problems.contains { $0.contains("blobs") }, "a bucket for a directory store is a mistake")
    }

    @Test func jsonLogLinesParse() async throws {
        let directory = try TemporaryDirectory()
        let process = try ChildProcess(
            try attacheExecutable(),
            ["serve", "--port", "0", "--allow-anonymous", "--store", directory.path + "/store", "--log-format", "json"])
        func logged() -> String { String(decoding: process.errorsSoFar, as: UTF8.self) }
        func lines() -> [[String: Any]] {
            let text = logged()
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let started = await eventually { lines().contains { $0["message"] as? String == "listening" } }
        #expect(started, "\(logged())")
        let address = try #require(lines().first { $0["message"] as? String == "listening" }?["address"] as? String)
        _ = try await curl("GET", address + "healthz")
        _ = try await curl("GET", address + "no%0Awhere")
        process.stop()
        let text = logged()
        let all = text.split(separator: "\n")
        #expect(all.count == lines().count, "a line that is not JSON: \(text)")
        let request = lines().first { $0["route"] as? String == "healthz" }
        #expect(request?["status"] as? String == "200" && request?["level"] as? String == "info", "\(text)")
        #expect(lines().contains { $0["route"] as? String == "unmatched" })
    }
}
