import AttacheCore
import AttacheTestSupport
import Foundation
import Testing

/// The OpenAPI document says what each request term takes; the term's row decides it. Each
/// schema is held to its row at its edges: a range's ends are taken and the values just past
/// them refused, an enum is the row's words exactly, a pattern matches what the row takes on a
/// sample either side of every edge. So a range, a word or a syntax changed in a row and not in
/// the document (or the other way) fails here.
@Suite struct OpenAPITermsTests {
    /// The document's parameters, by term: the text of each one's schema.
    static func schemas() throws -> [String: String] {
        let document = try String(
            contentsOfFile: Paths.package + "/Sources/AttacheServer/openapi.yaml", encoding: .utf8)
        var schemas: [String: String] = [:]
        var (term, inTerm): (String?, Bool) = (nil, false)
        for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
            // A component's first line: a term's parameter is named Term….
            if line.hasPrefix("    "), line.dropFirst(4).first.map({ $0 != " " }) == true {
                (term, inTerm) = (nil, line.hasPrefix("    Term"))
            }
            if inTerm, line.hasPrefix("      name: ") { term = String(line.dropFirst("      name: ".count)) }
            if let name = term, line.hasPrefix("      schema:") || line.hasPrefix("          - ") {
                schemas[name, default: ""] += line + "\n"
            }
        }
        return schemas
    }

    static func takes(_ row: PipelineSetting, _ text: String) -> Bool {
        var configuration = PipelineConfiguration()
        return (try? row.read(text, into: &configuration)) != nil
    }

    static func refusal(_ row: PipelineSetting, _ text: String) -> SettingRefusal? {
        var configuration = PipelineConfiguration()
        do throws(SettingRefusal) {
            try row.read(text, into: &configuration)
            return nil
        } catch {
            return error
        }
    }

    static func first(_ pattern: String, in text: String) -> String? {
        guard let expression = try? NSRegularExpression(pattern: pattern),
            let match = expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
            let range = Range(match.range(at: 1), in: text)
        else { return nil }
        return String(text[range])
    }

    @Test func everyTermsSchemaSaysWhatItsRowTakes() throws {
        let schemas = try Self.schemas()
        let rows = PipelineSettings.all.filter { $0.term != nil }
        // Every term the document names is a row's, but the subject's point (a request's own,
        // no setting of the service).
        #expect(Set(schemas.keys).subtracting(["focus"]) == Set(rows.compactMap(\.term)), "\(schemas.keys.sorted())")
        for row in rows {
            let term = row.term!
            let schema = try #require(schemas[term], "openapi.yaml has no parameter \(term)")
            if let low = Self.first(#"minimum: ([0-9.]+)"#, in: schema),
                let high = Self.first(#"maximum: ([0-9.]+)"#, in: schema)
            {
                let step = schema.contains("type: integer") ? 1.0 : 0.01
                #expect(Self.takes(row, low) && Self.takes(row, high), "\(term): \(low)…\(high)")
                for past in [Double(low)! - step, Double(high)! + step] {
                    let text = step == 1 ? String(Int(past)) : String(past)
                    #expect(!Self.takes(row, text), "\(term) takes \(text), past the document's range")
                }
            }
            if let words = Self.first(#"enum: \[([^\]]*)\]"#, in: schema), !schema.contains("pattern") {
                let listed = Set(words.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                let refusal = try #require(Self.refusal(row, "nonesuch"), "\(term) takes any word")
                let accepted = (refusal.accepted ?? "").replacingOccurrences(of: " or ", with: ", ")
                #expect(Set(accepted.components(separatedBy: ", ")) == listed, "\(term): \(accepted) vs \(listed)")
            }
            if let pattern = Self.first(#"pattern: '([^']*)'"#, in: schema) {
                let expression = try NSRegularExpression(pattern: pattern)
                let enumerated =
                    Self.first(#"enum: \[([^\]]*)\]"#, in: schema).map {
                        Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                    } ?? []
                let samples =
                    term == "deadline"
                    ? [
                        "0ms", "1ms", "999ms", "3600000ms", "3600001ms", "0s", "1s", "5", "3600s", "3601s", "1.5s",
                        "60m", "61m", "1h", "2h", "1d", "-1s", "2 s",
                    ]
                    : (-1...101).map(String.init) + ["auto", "05", "1.5"]
                for sample in samples {
                    let matches =
                        enumerated.contains(sample)
                        || expression.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)) != nil
                    #expect(
                        matches == Self.takes(row, sample), "\(term)=\(sample): document \(matches), row \(!matches)")
                }
            }
            if schema.contains("type: boolean") {
                #expect(Self.takes(row, "false") && !Self.takes(row, "maybe"), "\(term)")
            }
        }
    }
}
