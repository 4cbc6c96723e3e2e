import AttacheCore
import AttacheMedia
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheServer

/// A request's terms are the rows' terms, applied whole over the configuration: each one given
/// a value other than its default changes what comes back, so a term that is read, validated
/// and then dropped on its way to the pipeline cannot pass unnoticed.
@Suite(.enabled(if: inIsolatedChild)) struct RequestTermsTests {
    /// One case per term: the query, and the picture it is asked for on (faces need a face).
    static let cases: [String: (query: String, media: String)] = [
        "deadline": ("deadline=1ms", "/photo.jpg"),
        "format": ("format=webp", "/photo.jpg"),
        "quality": ("quality=30", "/photo.jpg"),
        "quality_target": ("quality_target=60", "/photo.jpg"),
        "android_max_bytes": ("android_max_bytes=40000", "/photo.jpg"),
        "web_max_bytes": ("web_max_bytes=40000", "/photo.jpg"),
        "android_aspect": ("android_aspect=3", "/photo.jpg"),
        "faces": ("faces=true", "/face.jpg"),
    ]

    /// What an answer says was made: the outcome, and per attachment and per platform's picture
    /// its reason, object (the id is the bytes' digest), type, size and placement — not its
    /// times or cache use, which differ between two runs of the same request.
    static func made(_ answer: HTTPAnswer) throws -> String {
        guard answer.status == 200 else { return "status \(answer.status): \(answer.text)" }
        let report = try #require(answer.json()["report"] as? [String: Any], "\(answer.text)")
        func fields(_ item: [String: Any], _ names: [String]) -> String {
            names.map { "\($0)=\(item[$0].map { "\($0)" } ?? "-")" }.joined(separator: " ")
        }
        var lines = [fields(report, ["best_attempt", "passed_through"])]
        for item in report["attachments"] as? [[String: Any]] ?? [] {
            lines.append(fields(item, ["reason", "id", "type", "width", "height"]))
            for target in item["targets"] as? [[String: Any]] ?? [] {
                lines.append("  " + fields(target, ["target", "id", "type", "width", "height", "placement", "error"]))
            }
        }
        return lines.joined(separator: "\n")
    }

    @Test func everyTermChangesWhatIsMade() async throws {
        // A row given a term without a case here fails: the case is what proves it is used.
        let terms = Set(PipelineSettings.all.compactMap(\.term))
        #expect(Set(Self.cases.keys) == terms, "terms without a case: \(terms.subtracting(Self.cases.keys))")

        let media = try ServiceTests.mediaServer()
        let face = Array(try #require(FileManager.default.contents(atPath: Paths.fixtures + "/faces/astronaut.jpg")))
        media.route("/face.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: face) }
        let service = try await ServiceTests.start()
        defer { Task { await service.stop() } }
        // Every platform's picture from one send body: the iOS side's, Android's and the web's.
        func post(_ path: String, _ query: String) async throws -> HTTPAnswer {
            let url = media.url(path)
            let body = """
                {"message":{"token":"t","notification":{"image":"\(url)"},\
                "apns":{"payload":{"aps":{"mutable-content":1}}},"webpush":{"notification":{"image":"\(url)"}}}}
                """
            return try await curl(
                "POST", service.base + "/v1/notifications?envelope=true" + (query.isEmpty ? "" : "&" + query),
                headers: ServiceTests.auth, body: Array(body.utf8))
        }
        var plain: [String: String] = [:]
        for path in Set(Self.cases.values.map(\.media)) {
            let answer = try await post(path, "")
            #expect(answer.status == 200, "\(answer.text)")
            plain[path] = try Self.made(answer)
            // The same request again makes the same: a difference below is the term's.
            #expect(try Self.made(try await post(path, "")) == plain[path], "\(path) twice")
        }
        for (term, asked) in Self.cases.sorted(by: { $0.key < $1.key }) {
            let answer = try await post(asked.media, asked.query)
            if term != "faces" || ImageProcessor.facesUnavailable == nil {
                #expect(answer.status == 200, "\(asked.query): \(answer.text)")
            }
            let made = try Self.made(answer)
            #expect(made != plain[asked.media], "?\(asked.query) changed nothing:\n\(made)")
            // A cap's picture is made under it, not refused: the term changed the picture.
            if term.hasSuffix("_max_bytes") {
                let pictures = made.split(separator: "\n").filter { $0.hasPrefix("  target=") }
                #expect(
                    pictures.count == 2 && pictures.allSatisfy { $0.hasSuffix("error=-") },
                    "\(asked.query): \(made)")
            }
        }
    }
}
