import AttacheBase
import Testing

@Suite("Type from magic bytes")
struct SnifferTests {
    @Test(
        "accepted and refused signatures",
        arguments: [
            ([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0, count: 12), "jpeg"),
            ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 8), "png"),
            (Array("GIF89a".utf8) + [UInt8](repeating: 0, count: 10), "gif"),
            (Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8), "webp"),  // accepted: converted
            (Array("<!DOCTYPE html><html>".utf8), "html"),
            (Array("  <svg xmlns=\"http://www.w3.org/2000/svg\">".utf8), "svg"),
            (Array("%PDF-1.7 and more bytes".utf8), "pdf"),
            ([0, 0, 0, 0x1C] + Array("ftypheic".utf8) + [0, 0, 0, 0], "heic"),  // accepted: converted
        ] as [([UInt8], String)])
    func signatures(bytes: [UInt8], name: String) {
        switch Sniffer.sniff(bytes) {
        case .accepted(let kind): #expect(kind.rawValue == name)
        case .refused(let refused): #expect(refused == name)
        default: Issue.record("not identified: \(name)")
        }
    }

    @Test("empty input and unknown bytes get typed errors")
    func errors() {
        #expect(throws: AttacheError.self) { try Sniffer.kind(of: [UInt8]()) }
        do {
            _ = try Sniffer.kind(of: Array("hello world, not an image".utf8))
            Issue.record("accepted text")
        } catch {
            #expect(error.code == .unsupportedType)
        }
    }
}
