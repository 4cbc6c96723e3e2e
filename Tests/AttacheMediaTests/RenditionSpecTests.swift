import AttacheBase
import AttacheTestSupport
import Testing

@testable import AttacheMedia

@Suite struct RenditionSpecTests {
    @Test func everyFieldHasAVariant() {
        let fields = Mirror(reflecting: RenditionSpec()).children.compactMap(\.label)
        #expect(fields.count >= 10)
        #expect(Set(fields) == Set(renditionSpecVariants.map(\.field)), "every stored field is varied by the tests")
    }

    @Test("each field changes the cache key", arguments: renditionSpecVariants.map(\.field))
    func eachFieldChangesTheCacheKey(field: String) throws {
        let change = try #require(renditionSpecVariants.first { $0.field == field }?.change)
        let base = RenditionSpec()
        var changed = base
        change(&changed)
        #expect(changed != base, "the variant changes \(field)")
        #expect(changed.cacheKey != base.cacheKey, "\(field) is part of the key: \(changed.cacheKey)")
    }

    @Test func everyVariantHasItsOwnKey() {
        var keys = Set([RenditionSpec().cacheKey])
        for (_, change) in renditionSpecVariants {
            var spec = RenditionSpec()
            change(&spec)
            keys.insert(spec.cacheKey)
        }
        #expect(keys.count == renditionSpecVariants.count + 1)
    }

    @Test func theDecodedMemoryBudgetShrinksTheOutput() {
        var spec = RenditionSpec(maxSide: 1024)
        #expect(spec.outputSize(width: 1800, height: 1200) == (1024, 683))
        spec.decodedMemoryBudget = 200 * 200 * 4
        let size = spec.outputSize(width: 1800, height: 1200)
        #expect(size.width * size.height * 4 <= 200 * 200 * 4 && size.width > size.height)
        // The budget depends on the area only: turning the image turns the output.
        let turned = spec.outputSize(width: 1200, height: 1800)
        #expect(turned.width == size.height && turned.height == size.width)
        #expect(spec.outputSize(width: 100, height: 50) == (100, 50), "never enlarged")
    }
}
