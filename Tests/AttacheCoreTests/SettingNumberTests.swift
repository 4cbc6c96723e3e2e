import AttacheCore
import AttacheMedia
import Testing

/// Every number a setting row reads (and so every request term and `ATTACHE_` variable) is
/// read by one strict decimal grammar.
@Suite struct SettingNumberTests {
    @Test("quality_target, android_aspect, target_width, quality and byte caps refuse what is not plain decimal")
    func rowsReadOnlyPlainDecimals() {
        for key in ["qualityTarget", "androidAspect", "targetWidth", "quality", "androidMaxBytes", "maxSide"] {
            let row = PipelineSettings.named(key)!
            for text in ["0x50", "8e1", "0x1.4p6", "+80", " 75", "80\u{0}"] {
                var configuration = PipelineConfiguration()
                #expect(throws: SettingRefusal.self, "\(key) \(text.debugDescription)") {
                    try row.read(text, into: &configuration)
                }
            }
        }
        var configuration = PipelineConfiguration()
        #expect(throws: Never.self) { try PipelineSettings.named("qualityTarget")!.read("80", into: &configuration) }
        #expect(configuration.rendition.quality.target == 80)
    }

    /// A setting kept in whole seconds refuses a part of a second rather than cut it (a TTL of
    /// 1500ms is not 1 s), with the same words `serve` says for its own such settings.
    @Test func wholeSecondSettingsRefuseAPartOfASecond() throws {
        for key in ["storeTtl", "tokenTtl"] {
            let row = try #require(PipelineSettings.named(key))
            var configuration = PipelineConfiguration()
            #expect {
                try row.read("1500ms", into: &configuration)
            } throws: { error in
                (error as? SettingRefusal)?.said("1500ms")
                    == "'1500ms' is not a whole number of seconds (0s, 30s, 5m, 1h)"
            }
            try row.read("2m", into: &configuration)
        }
        var configuration = PipelineConfiguration()
        try PipelineSettings.named("tokenTtl")!.read("90s", into: &configuration)
        #expect(configuration.tokenTTL == 90)
    }

    /// A duration's digits are read by the same grammar: no sign, no hexadecimal, no exponent.
    @Test func durationsReadOnlyPlainDecimals() throws {
        for key in ["deadline", "storeTtl"] {
            let row = try #require(PipelineSettings.named(key))
            for text in ["+2s", "0x10s", "2e1s", "+800ms", "1_000ms"] {
                var configuration = PipelineConfiguration()
                #expect(throws: SettingRefusal.self, "\(key) \(text)") { try row.read(text, into: &configuration) }
            }
            var configuration = PipelineConfiguration()
            try row.read("2m", into: &configuration)
        }
    }
}
