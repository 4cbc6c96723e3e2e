import AttacheBase
import Testing

/// The one grammar of numbers in requests and settings.
@Suite struct DecimalTextTests {
    @Test("decimal digits, a leading minus and one point between digits, and nothing else")
    func onlyPlainDecimalsAreNumbers() {
        #expect(DecimalText.number("80") == 80)
        #expect(DecimalText.number("0.35") == 0.35)
        #expect(DecimalText.number("-1.5") == -1.5)
        #expect(DecimalText.integer("-5", as: Int.self) == -5)
        #expect(DecimalText.integer("1048576", as: Int.self) == 1_048_576)
        for text in [
            "0x50", "8e1", "8E1", "0x1.4p6", "+80", " 75", "75 ", "80\u{0}", "inf", "nan", "", "-", ".5", "5.", "1.2.3",
            "1,5", "٨٠", "--1", "1_000",
        ] {
            #expect(DecimalText.number(text) == nil, "\(text.debugDescription)")
            #expect(DecimalText.integer(text, as: Int.self) == nil, "\(text.debugDescription)")
        }
        #expect(DecimalText.integer("1.5", as: Int.self) == nil)
        #expect(DecimalText.integer("99999999999999999999", as: Int.self) == nil)
    }
}
