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
}
