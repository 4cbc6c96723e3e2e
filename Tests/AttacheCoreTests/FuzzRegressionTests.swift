import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheCore

/// Every input a fuzz target ever found (`Tests/Fixtures/fuzz/<target>/`), replayed through
/// the same check the fuzzer runs, and the payload parser against Python's `json`.
@Suite struct FuzzRegressionTests {
    static let folder = Paths.fixtures + "/fuzz"

    static let findings: [String] = FuzzChecks.targets.keys.sorted().flatMap { target in
        ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + target)) ?? []).sorted().map {
            target + "/" + $0
        }
    }

    @Test("every saved finding passes its check", arguments: findings)
    func savedFinding(_ path: String) throws {
        let target = String(path.split(separator: "/").first!)
        let check = try #require(FuzzChecks.targets[target])
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: Self.folder + "/" + path)))
        do {
            try check(bytes)
        } catch {
            Issue.record("\(path): \(error)")
        }
    }

    /// The documents the differential check feeds both parsers: the sample payloads, edge
    /// cases, seeded mutations of them, and a fuzz corpus when `ATTACHE_JSON_CORPUS` names one.
    static func documents() throws -> [[UInt8]] {
        var seeds = try FileManager.default.contentsOfDirectory(atPath: Paths.package + "/Samples/payloads").sorted()
            .map { Array(try Data(contentsOf: URL(fileURLWithPath: Paths.package + "/Samples/payloads/" + $0))) }
        seeds += [
            #"{"a":1,"a":2}"#, #"{"s":"\ud800"}"#, #"[NaN,Infinity,-Infinity]"#, "\u{FEFF}{}", #"{"a":"\u0000"}"#,
            #"[1e999999,-0,0.0e-0]"#, "[" + String(repeating: "[", count: 70) + String(repeating: "]", count: 71),
            #"{"é":"😀","\u00e9":1}"#, "  {\t}\r\n", #""\/\b\f\n\r\t""#, "01", "[1,]", #"{"a" 1}"#,
        ].map { Array($0.utf8) }
        seeds.append([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D])
        var documents = seeds
        var random = SplitMix(seed: 2026)
        let alphabet = Array(#"{}[],:"\ 0123456789.eE+-tfnul\ud83d"#.utf8) + [0xC3, 0xA9, 0xFF, 0x00]
        for _ in 0..<4000 {
            var bytes = seeds[random.below(seeds.count)]
            for _ in 0..<(1 + random.below(4)) {
                let at = bytes.isEmpty ? 0 : random.below(bytes.count)
                switch random.below(3) {
                case 0 where !bytes.isEmpty: bytes.remove(at: at)
                case 1: bytes.insert(alphabet[random.below(alphabet.count)], at: at)
                default: if !bytes.isEmpty { bytes[at] = alphabet[random.below(alphabet.count)] }
                }
            }
            documents.append(bytes)
        }
        if let corpus = ProcessInfo.processInfo.environment["ATTACHE_JSON_CORPUS"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: corpus) {
                documents.append(Array(try Data(contentsOf: URL(fileURLWithPath: corpus + "/" + name))))
            }
        }
        return documents
    }

    /// Accept and reject agree with Python's `json`, except where Attache is stricter on
    /// purpose (README: strict input): repeated names, lone surrogates, NaN/Infinity, nesting
    /// over 64, a byte-order mark or another encoding, input over 1 MiB. Attache never accepts
    /// what Python refuses.
    @Test func thePayloadParserAgreesWithPythonsJSON() throws {
        let documents = try Self.documents()
        let text = documents.map { $0.map { String(format: "%02x", $0) }.joined() }.joined(separator: "\n") + "\n"
        let python = try runChild("python3", [Paths.fixtures + "/json_verdicts.py"], input: Array(text.utf8))
        let verdicts = python.text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        try #require(verdicts.count == documents.count, "python3 answered \(verdicts.count) of \(documents.count)")
        var accepted = 0
        var strictness = 0
        for (document, verdict) in zip(documents, verdicts) {
            let ours = (try? JSONParser.parse(document)) != nil
            let python = verdict.first == "accept"
            let text = String(decoding: document.prefix(200), as: UTF8.self)
            if ours {
                accepted += 1
                #expect(
                    python && verdict.count == 1, "Attache accepts what Python refuses or flags: \(verdict) \(text)")
            } else if python {
                strictness += 1
                #expect(verdict.count > 1, "Python accepts, Attache refuses, and no documented reason: \(text)")
            }
        }
        #expect(accepted > 100, "the check compared accepted documents too")
        print(
            "json differential: \(documents.count) documents, \(accepted) accepted by both, \(strictness) refused only by Attache's strictness"
        )
    }
}
