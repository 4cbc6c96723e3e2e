import AttacheBase
import AttacheFetch
import AttacheMedia
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheCore
@testable import AttacheStore

@Suite struct ContentTests {
    func content(_ text: String) throws -> NotificationContent { try NotificationContent(bytes: Array(text.utf8)) }

    @Test func parserKeepsOrderNumbersAndEscapes() throws {
        let value = try JSONParser.parse(
            Array(#"{"b":1.50,"a":[1e3,-0,12345678901234567890],"s":"\u00e9\ud83d\ude00\n\"","c":null,"t":true}"#.utf8))
        guard case .object(let members) = value else { throw AttacheError(.internalError, "not an object") }
        #expect(members.map(\.key) == ["b", "a", "s", "c", "t"])
        #expect(value["a"] == .array([.number("1e3"), .number("-0"), .number("12345678901234567890")]))
        #expect(value["b"] == .number("1.50"))
        #expect(value["s"]?.stringValue == "é😀\n\"")
        #expect(value.text == #"{"b":1.50,"a":[1e3,-0,12345678901234567890],"s":"é😀\n\"","c":null,"t":true}"#)
    }

    @Test(arguments: [
        "", "{", "}", "{\"a\"}", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", "-", "\"\\x\"", "\"\\ud800\"",
        "\"a\u{1}b\"", "{} {}", "tru", "nul",
        "[" + String(repeating: "[", count: 100) + String(repeating: "]", count: 101),
    ])
    func invalidDocumentsAreRefused(text: String) {
        #expect(throws: AttacheError.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func everyConventionFindsItsURLs() throws {
        let payload = """
            {"aps":{"mutable-content":1},
             "my-attachment":"https://a.test/1.jpg","attachment-url":"https://a.test/2.jpg",
             "media-url":"https://a.test/3.jpg","image":"https://a.test/4.jpg",
             "fcm_options":{"image":"https://a.test/5.jpg"},"ab":{"att":{"url":"https://a.test/11.jpg","type":"jpg"}},
             "att":{"x":"https://a.test/6.jpg","y":"https://a.test/7.jpg"},
             "com.urbanairship.media_attachment":{"url":["https://a.test/8.jpg","https://a.test/1.jpg"],
               "options":{"crop":{"x":0.25,"y":0,"width":0.5,"height":1},"time":1.5,"hidden":true}},
             "ct_mediaUrl":"https://a.test/9.jpg",
             "com.batch":{"at":{"u":"https://a.test/10.jpg"}}}
            """
        let sources = try content(payload).sources()
        #expect(
            sources.map(\.url) == [1, 2, 3, 4, 5, 11, 6, 7, 8, 9, 10].map { "https://a.test/\($0).jpg" },
            "each URL once, in rule order")
        #expect(
            sources.map(\.convention) == [
                "my-attachment", "attachment-url", "media-url", "image", "fcm", "braze", "onesignal", "onesignal",
                "airship", "clevertap", "batch",
            ])
        let airship = try #require(sources.first { $0.convention == "airship" })
        #expect(airship.options == ThumbnailOptions(hidden: true, clippingRect: [0.25, 0, 0.5, 1], time: 1.5))
        #expect(try content(#"{"aps":{},"custom":{"pic":"https://a.test/x.png"}}"#).sources().isEmpty)
        let custom = try #require(SourceRule(argument: "custom=custom/pic"))
        #expect(
            try content(#"{"custom":{"pic":"https://a.test/x.png"}}"#).sources(using: [custom]).map(\.url) == [
                "https://a.test/x.png"
            ])
    }

    /// Readers disagree on which of two same-named members wins, so a payload with one is
    /// refused (and passed through unchanged) instead of mutated.
    @Test(arguments: [
        #"{"a":1,"a":2}"#, #"{"x":{"a":1,"\u0061":2}}"#, #"[{"k":1},{"k":1,"k":1}]"#,
        #"{"aps":{"mutable-content":1},"attachments":[1],"image":"https://a.test/i.jpg","attachments":[2]}"#,
        #"{"aps":{"mutable-content":1},"aps":{"mutable-content":0}}"#,
    ])
    func repeatedMemberNamesAreRefused(text: String) {
        let error = failure { try JSONParser.parse(Array(text.utf8)) }
        #expect(error?.code == .invalidPayload && error?.message.contains("duplicate member name") == true)
    }

    @Test func theSameNameInDifferentObjectsIsFine() throws {
        let value = try JSONParser.parse(Array(#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#.utf8))
        #expect(value["a"]?["a"] == .number("1"))
    }

    /// Bytes that are not UTF-8 are refused, never read as U+FFFD.
    @Test(
        arguments: [
            [0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80], [0x80],
        ] as [[UInt8]])
    func bytesThatAreNotUTF8AreRefused(bad: [UInt8]) {
        let text = Array(#"{"image":"https://a.test/"#.utf8) + bad + Array(#".jpg"}"#.utf8)
        #expect(failure { try JSONParser.parse(text) }?.code == .invalidPayload)
        let good = Array(#"{"s":"é€😀"}"#.utf8)
        #expect((try? JSONParser.parse(good))?["s"]?.stringValue == "é€😀")
    }

    @Test func mutableContentDecides() throws {
        #expect(try content(#"{"aps":{"mutable-content":1}}"#).isMutable)
        for other in [#""1""#, "true", "1.0", "1e0", "0", "2", "null", "[1]"] {
            #expect(try !content(#"{"aps":{"mutable-content":\#(other)}}"#).isMutable, "\(other) is not the number 1")
        }
        #expect(try !content(#"{"aps":{"mutable-content":0}}"#).isMutable)
        #expect(try !content(#"{"aps":{}}"#).isMutable)
        #expect(try !content(#"{"mutable-content":1}"#).isMutable)
        #expect(throws: AttacheError.self) { try content("[1]") }
    }

    @Test func settingAMemberKeepsEveryOtherByte() throws {
        let original = """
            {
              "aps" : { "alert" : "hi", "mutable-content" : 1 },
              "n" : 1.50e2 ,  "unknown": {"z":[true,false,null]}
            }
            """
        let block = JSONValue.array([.string("x")])
        let out = try content(original).setting("attachments", to: block)
        let text = String(decoding: out, as: UTF8.self)
        let insertion = try #require(text.range(of: #","attachments":["x"]"#))
        #expect(text.replacingCharacters(in: insertion, with: "") == original, "only the new member was added")
        let reparsed = try JSONParser.parse(out)
        guard case .object(let members) = reparsed else { throw AttacheError(.internalError, "not an object") }
        #expect(members.map(\.key) == ["aps", "n", "unknown", "attachments"])

        // An existing member is replaced where it stands.
        let again = try NotificationContent(bytes: out).setting("attachments", to: .array([]))
        #expect(
            String(decoding: again, as: UTF8.self)
                == text.replacingCharacters(in: insertion, with: #","attachments":[]"#))
        #expect(String(decoding: try content("{ }").setting("k", to: .null), as: UTF8.self) == #"{ "k":null}"#)
    }

    @Test("an existing member replaced in place keeps its key's spelling and the spacing at its colon")
    func replacingAMemberKeepsItsKey() throws {
        let original = #"{"aps":{"mutable-content":1}, "\u0061ttachments" :  [1] ,"z":0}"#
        let out = try content(original).setting("attachments", to: .array([]))
        #expect(
            String(decoding: out, as: UTF8.self) == #"{"aps":{"mutable-content":1}, "\u0061ttachments" :  [] ,"z":0}"#)
    }

    @Test("command-line.md's conventions are the senders' APNs side, in the order they are read")
    func theConventionsTableIsTheSendersAPNsSide() throws {
        let docs = try String(contentsOfFile: Paths.package + "/docs/command-line.md", encoding: .utf8)
        let lines = docs.split(separator: "\n").map(String.init)
        let head = try #require(lines.firstIndex { $0.hasPrefix("| convention | payload key |") })
        let rows = lines[(head + 2)...].prefix { $0.hasPrefix("|") }.map {
            $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let senders = Sender.all.filter { !$0.apns.isEmpty }
        #expect(rows.count == senders.count, "one row per sender with an APNs side")
        for (sender, row) in zip(senders, rows) {
            for rule in sender.apns {
                let path = rule.path.prefix { $0 != "*" }.joined(separator: ".")
                #expect(row[1].contains("`\(path)`"), "\(sender.name): `\(path)` in \(row)")
            }
        }
        #expect(SourceRule.defaults.map(\.path) == senders.flatMap { $0.apns.map(\.path) })
    }

    @Test("every receiver but iOS is a picture's target, and every target a receiver, by the same name")
    func receiversAndTargetsAreOneList() {
        #expect(Receiver.allCases == [.ios] + TargetSpec.Target.allCases.map(Receiver.init))
        for receiver in Receiver.allCases {
            #expect(receiver.target.map(Receiver.init) == (receiver == .ios ? nil : receiver))
            #expect(receiver.target.map(\.rawValue) == (receiver == .ios ? nil : receiver.rawValue))
        }
    }

    @Test("docs/receivers.md's table is the senders' table: order, marks, fields and receivers")
    func theReceiversTableIsTheSendersTable() throws {
        let docs = try String(contentsOfFile: Paths.package + "/docs/receivers.md", encoding: .utf8)
        let lines = docs.split(separator: "\n").map(String.init)
        let head = try #require(lines.firstIndex { $0.hasPrefix("| shape | told by |") })
        var blocks: [[[String]]] = []
        for line in lines[(head + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if cells[0].isEmpty { blocks[blocks.count - 1].append(cells) } else { blocks.append([cells]) }
        }
        #expect(blocks.count == SendShape.all.count, "one block per sender, in the order they are tried")
        let words: [Receiver: String] = [.ios: "iOS", .android: "Android", .web: "web push", .icon: "large icon"]
        for (sender, block) in zip(SendShape.all, blocks) {
            #expect(block[0][0].hasPrefix(sender.name), "\(sender.name) is at its place: \(block[0][0])")
            #expect(block[0][1] == sender.toldBy, "\(sender.name): told by \(block[0][1])")
            for field in sender.fields {
                let path = field.path.prefix { $0 != "*" }.joined(separator: ".")
                let row = block.first { $0[2].contains("`\(path)`") }
                #expect(
                    row?[3].hasPrefix(words[field.receiver]!) == true, "\(sender.name): `\(path)` for \(field.receiver)"
                )
            }
        }
    }

    @Test("docs/receivers.md's placeholder table is the senders' data maps, and names those without")
    func thePlaceholderTableIsTheSendersMaps() throws {
        let docs = try String(contentsOfFile: Paths.package + "/docs/receivers.md", encoding: .utf8)
        let lines = docs.split(separator: "\n").map(String.init)
        let head = try #require(lines.firstIndex { $0.hasPrefix("| sender | Android | web push |") })
        let rows = lines[(head + 2)...].prefix { $0.hasPrefix("|") }.map {
            $0.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let withMaps = SendShape.all.filter { !$0.placeholderMaps.isEmpty }
        #expect(rows.count == withMaps.count)
        for (shape, row) in zip(withMaps, rows) {
            #expect(row[0].hasPrefix(shape.name), "\(shape.name) at its place: \(row[0])")
            for (receiver, column) in [(Receiver.android, 1), (.web, 2)] {
                for map in shape.placeholderMaps[receiver] ?? [] {
                    #expect(row[column].contains("`\(map.path.joined(separator: "."))`"), "\(shape.name) \(receiver)")
                }
            }
        }
    }
}
