import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheMedia

@Suite("Shared corpus: JPEG and PNG rows of manifest.tsv")
struct CorpusTests {
    @Test("the manifest is present and has JPEG and PNG rows")
    func manifestLoads() {
        #expect(Corpus.jpegAndPNG.count > 300, "corpus not found at \(Corpus.root)")
    }

    @Test("each row decodes to its size or is refused with a typed error", arguments: Corpus.jpegAndPNG)
    func row(_ row: Corpus.Row) throws {
        let bytes = try MediaBytes(contentsOfFile: row.path)
        let known: Set<AttacheError.Code> = [
            .corruptData, .truncated, .unsupportedType, .unsupportedVariant, .emptyInput,
        ]
        switch Result(catching: { () throws(AttacheError) in try ImageProcessor.inspect(bytes) }) {
        case .success(let info):
            #expect(row.expectOK, "accepted a file the manifest rejects: \(info)")
            #expect(info.width == row.width)
            #expect(info.height == row.height)
            // APNG is decoded as its default image: one frame (see README).
            #expect(info.frames == 1)
            #expect(info.kind.rawValue == row.format.lowercased())
        case .failure(let error):
            #expect(!row.expectOK, "refused a file the manifest accepts: \(error)")
            #expect(known.contains(error.code), "unexpected code \(error.code)")
        }
    }

    @Test(
        "each accepted row renders to an image that fits 64 px and re-decodes",
        arguments: Corpus.jpegAndPNG.filter(\.expectOK))
    func renders(_ row: Corpus.Row) throws {
        let rendition = try ImageProcessor.render(
            try MediaBytes(contentsOfFile: row.path), spec: RenditionSpec(maxSide: 64))
        #expect(max(rendition.width, rendition.height) <= 64)
        let again = try ImageProcessor.inspect(MediaBytes(rendition.data))
        #expect(again.width == rendition.width && again.height == rendition.height)
        #expect(again.orientation == .up)
    }
}
