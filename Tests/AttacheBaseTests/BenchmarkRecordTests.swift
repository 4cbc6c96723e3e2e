import AttacheTestSupport
import Foundation
import Testing

/// The benchmark user's record (Benchmarks/run.py, report.py, regress.py, headline.py), on a
/// small results file of a real quick run (Tests/Fixtures/benchmarks/results.json): its page
/// renders in a browser with its charts, `--compare` flags a change of known size and not the
/// same figures again, and the README's headline table is the one its results file gives.
@Suite struct BenchmarkRecordTests {
    static let benchmarks = Paths.package + "/Benchmarks"
    static let fixture = Paths.fixtures + "/benchmarks/results.json"
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    static func python(_ arguments: [String]) throws -> ChildResult {
        try runChild("/usr/bin/env", ["python3"] + arguments, directory: benchmarks)
    }

    static func results() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: fixture))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A results folder holding `results` as its results.json.
    static func folder(_ results: [String: Any], in directory: TemporaryDirectory, _ name: String) throws -> String {
        let path = directory.path + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: results).write(to: URL(fileURLWithPath: path + "/results.json"))
        return path
    }

    @Test(.enabled(if: chromium != nil, "Chromium is not installed here: the report is not drawn"))
    func theReportRendersWithItsChartsAndNoConsoleMessage() throws {
        let directory = try TemporaryDirectory()
        let results = try Self.results()
        let path = try Self.folder(results, in: directory, "run")
        let made = try Self.python(["report.py", path])
        #expect(made.status == 0, "\(made.text) \(made.errorText)")
        let page = try String(contentsOfFile: path + "/report.html", encoding: .utf8)
        #expect(!page.contains("<script"))
        let shown = try runChild(
            Self.chromium!,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=\(directory.path)/profile",
                "--enable-logging=stderr", "--v=0", "--dump-dom", "file://\(path)/report.html",
            ])
        #expect(shown.status == 0, "\(shown.errorText.suffix(2000))")
        let console = shown.errorText.split(separator: "\n").filter { $0.contains(":CONSOLE") }
        #expect(console.isEmpty, "\(console)")
        // The DOM the browser built: every chart kind the run recorded, a row per figure, the failed step.
        let dom = shown.text
        for kind in ["ratio", "cdf", "line", "scatter"] {
            #expect(dom.contains("data-chart=\"\(kind)\""), "no \(kind) chart")
        }
        let figures = try #require(results["figures"] as? [[String: Any]])
        #expect(figures.count > 20)
        for figure in figures {
            let name = try #require(figure["name"] as? String)
            let escaped = name.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: ">", with: "&gt;")
            #expect(dom.contains("<td>\(escaped)</td>"), "no row for \(name)")
        }
        #expect(dom.contains("modern.sh exited with 100"))
    }

    /// Each figure with a peer scaled by `factor` on Attache's side (its ratio with it).
    static func slowed(
        _ results: [String: Any], by factor: Double, where keep: (String) -> Bool
    ) throws -> [String: Any] {
        var copy = results
        var figures = try #require(results["figures"] as? [[String: Any]])
        for i in figures.indices {
            guard let name = figures[i]["name"] as? String, keep(name), let ratio = figures[i]["ratio"] as? Double,
                let value = figures[i]["value"] as? Double
            else { continue }
            figures[i]["ratio"] = ratio * factor
            figures[i]["value"] = value * factor
            figures[i]["ratios"] = (figures[i]["ratios"] as? [Double] ?? [ratio]).map { $0 * factor }
        }
        copy["figures"] = figures
        return copy
    }

    @Test func compareFlagsATenPercentSlowdownAndNotTheSameFiguresAgain() throws {
        let directory = try TemporaryDirectory()
        let results = try Self.results()
        let a = try Self.folder(results, in: directory, "a")
        let same = try Self.folder(results, in: directory, "same")
        let rates: (String) -> Bool = { $0.contains("throughput") }
        let slow = try Self.folder(try Self.slowed(results, by: 1 / 1.1, where: rates), in: directory, "slow")
        let again = try Self.python(["run.py", "--compare", a, same])
        #expect(again.status == 0, "\(again.errorText)")
        #expect(again.text.contains("\n0 of "), "\(again.text)")
        let slower = try Self.python(["run.py", "--compare", a, slow])
        #expect(slower.status == 0, "\(slower.errorText)")
        let worse = slower.text.split(separator: "\n").filter { $0.contains("**worse**") }
        let flagged = worse.filter { !$0.contains("speed against the peers") }
        let throughput = (results["figures"] as? [[String: Any]] ?? []).filter {
            rates($0["name"] as? String ?? "") && $0["ratio"] != nil
        }
        #expect(!throughput.isEmpty)
        #expect(flagged.count == throughput.count, "\(slower.text)")
        #expect(flagged.allSatisfy { $0.contains("throughput") && $0.contains("-9.1%") })
        // The speed over every step moves too, by less: the times in it did not change.
        #expect(worse.count == flagged.count + 1, "\(slower.text)")
        // The report of what moved is written beside the second run.
        #expect(FileManager.default.fileExists(atPath: slow + "/compare-a.md"))
        // The same slowdown inside a spread of 20% between a figure's rounds is not a change of it.
        var noisy = try Self.slowed(results, by: 1 / 1.1, where: rates)
        var figures = try #require(noisy["figures"] as? [[String: Any]])
        for i in figures.indices where figures[i]["ratio"] != nil { figures[i]["ratio_spread"] = 0.2 }
        noisy["figures"] = figures
        let inside = try Self.python(["run.py", "--compare", a, try Self.folder(noisy, in: directory, "noisy")])
        let moved = inside.text.split(separator: "\n").filter {
            $0.contains("**worse**") && !$0.contains("speed against the peers")
        }
        #expect(inside.status == 0 && moved.isEmpty, "\(inside.text)")
    }

    @Test func theREADMEsHeadlineTableIsTheOneItsResultsFileGives() throws {
        let readme = try String(contentsOfFile: Paths.readme, encoding: .utf8)
        let start = try #require(readme.range(of: "<!-- headline: "), "the README has no headline block")
        let rest = readme[start.upperBound...]
        let path = String(rest.prefix { $0 != " " })
        let body = rest[try #require(rest.firstIndex(of: "\n"))...].dropFirst()
        let end = try #require(body.range(of: "<!-- /headline -->"))
        let printed = try Self.python(["headline.py", Paths.package + "/" + path])
        #expect(printed.status == 0, "\(printed.errorText)")
        #expect(
            String(body[..<end.lowerBound]) == printed.text,
            "rerun: python3 Benchmarks/headline.py --write README.md \(path)")
        let rows = printed.text.split(separator: "\n").dropFirst(2)
        #expect(!rows.isEmpty && rows.count <= 12)
    }

    /// Every step `run.sh --list` names is a row of docs/benchmarks.md's table with its script,
    /// and every script of Benchmarks/ that measures is either a step or named as not one.
    @Test func everyStepIsInTheDocsAndEveryScriptIsAStepOrSaysWhyNot() throws {
        let listed = try Self.python(["run.py", "--list"])
        #expect(listed.status == 0, "\(listed.errorText)")
        let steps = listed.text.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(steps.count >= 20, "\(listed.text)")
        let docs = try String(contentsOfFile: Paths.package + "/docs/benchmarks.md", encoding: .utf8)
        let run = try String(contentsOfFile: Self.benchmarks + "/run.py", encoding: .utf8)
        var scripts: Set<String> = []
        for step in steps {
            let row = try #require(
                docs.split(separator: "\n").first { $0.hasPrefix("| \(step) | ") },
                "docs/benchmarks.md has no row for \(step)")
            let script = String(row.split(separator: "|")[1].trimmingCharacters(in: .whitespaces))
            #expect(run.contains("Step(\"\(step)\", \"\(script)\""), "\(step)'s row names \(script)")
            scripts.insert(script)
        }
        let notSteps = try #require(
            docs.range(of: "Not steps (each runs alone"), "the docs name no scripts that are not steps")
        let paragraph = docs[notSteps.lowerBound...].prefix { $0 != "*" }
        // The helpers every step sources or runs: not measurements of their own.
        let helpers: Set<String> = ["binary.sh", "prepare.sh", "run.sh"]
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.benchmarks) where name.hasSuffix(".sh") {
            guard !helpers.contains(name), !scripts.contains(name) else { continue }
            #expect(paragraph.contains("`\(name)`"), "Benchmarks/\(name) is neither a step nor named as not one")
        }
    }
}
