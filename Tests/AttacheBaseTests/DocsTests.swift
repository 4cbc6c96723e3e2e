import AttacheTestSupport
import Foundation
import Testing

/// The README and the pages under docs/ stay true: the README is a landing page, every link
/// between them resolves (files and headings), and the architecture page's target graph is the
/// package's.
@Suite struct DocsTests {
    static let root = Paths.package

    /// README.md and every Markdown file under docs/.
    static func pages() throws -> [String] {
        let docs = root + "/docs"
        let names = try FileManager.default.subpathsOfDirectory(atPath: docs).filter { $0.hasSuffix(".md") }
        return [root + "/README.md"] + names.sorted().map { docs + "/" + $0 }
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
    static func slug(_ heading: String) -> String {
        let kept = heading.lowercased().unicodeScalars.filter {
            $0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-" || $0 == "_" || $0 == " "
        }
        return String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-")
    }

    /// The anchors of a Markdown file's headings (outside code blocks).
    static func anchors(_ path: String) throws -> Set<String> {
        var inCode = false
        var found: Set<String> = []
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("```") { inCode.toggle() }
            if !inCode, line.hasPrefix("#"), let space = line.firstIndex(of: " ") {
                found.insert(slug(String(line[line.index(after: space)...])))
            }
        }
        return found
    }

    /// `[text](target)` links outside code blocks and inline code.
    static func links(_ path: String) throws -> [String] {
        var inCode = false
        var targets: [String] = []
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("```") {
                inCode.toggle()
                continue
            }
            if inCode { continue }
            // Inline code is not a link.
            let parts = line.split(separator: "`", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() where index % 2 == 0 {
                var rest = part[...]
                while let open = rest.range(of: "](") {
                    let after = rest[open.upperBound...]
                    guard let close = after.firstIndex(of: ")") else { break }
                    targets.append(String(after[..<close]))
                    rest = after[close...]
                }
            }
        }
        return targets
    }

    @Test("the README is a landing page of at most 300 lines")
    func theReadmeIsShort() throws {
        let lines = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 300, "\(lines.count) lines")
    }

    @Test("every link of the README and the docs resolves, to a file and to a heading in it")
    func everyLinkResolves() throws {
        var broken: [String] = []
        var checked = 0
        for page in try Self.pages() {
            let folder = (page as NSString).deletingLastPathComponent
            for target in try Self.links(page) where !target.hasPrefix("http://") && !target.hasPrefix("https://") {
                checked += 1
                let pieces = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = pieces[0].isEmpty ? page : (folder + "/" + pieces[0]) as NSString as String
                let resolved = (file as NSString).standardizingPath
                guard FileManager.default.fileExists(atPath: resolved) else {
                    broken.append("\(page): \(target) (no such file)")
                    continue
                }
                if pieces.count == 2, resolved.hasSuffix(".md"),
                    !(try Self.anchors(resolved)).contains(String(pieces[1]))
                {
                    broken.append("\(page): \(target) (no such heading)")
                }
            }
        }
        #expect(checked > 30, "links were found")
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
        print("doc links checked: \(checked)")
    }

    @Test("the architecture page's target graph is the package's (swift package describe)")
    func theTargetGraphIsThePackages() throws {
        // The lock: `swift test` holds it while this runs; describing reads only the manifest.
        let data = Data(
            try runChild("swift", ["package", "--ignore-lock", "describe", "--type", "json"], directory: Self.root)
                .output)
        let description = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var actual: [String: Set<String>] = [:]
        for target in description["targets"] as? [[String: Any]] ?? [] where target["type"] as? String != "test" {
            let name = try #require(target["name"] as? String)
            actual[name] = Set(target["target_dependencies"] as? [String] ?? [])
        }
        #expect(actual.count >= 15)

        var documented: [String: Set<String>] = [:]
        let page = try String(contentsOfFile: Self.root + "/docs/architecture.md", encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## Target graph").dropFirst().first)
        for line in section.split(separator: "\n") {
            if line.hasPrefix("## ") { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3, cells[0].hasPrefix("`") else { continue }
            let names = cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
            }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = Set(
                names.filter { $0 != "—" })
        }
        #expect(documented == actual, "docs/architecture.md's target graph differs from Package.swift")

        // A library user of the pipeline and the directory store links neither libpq nor the S3
        // shim: they are reached only through AttacheStoreShared.
        var closure: Set<String> = []
        var next = ["AttacheCore"]
        while let name = next.popLast() {
            for dependency in actual[name] ?? [] where closure.insert(dependency).inserted { next.append(dependency) }
        }
        #expect(closure.contains("AttacheStore") && closure.contains("CAttacheCodecs"))
        #expect(closure.isDisjoint(with: ["CLibPQ", "CAttacheObjects", "AttacheStoreShared"]), "\(closure.sorted())")
    }
}
