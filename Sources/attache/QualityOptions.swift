import ArgumentParser
import AttacheBase
import AttacheMedia

/// How JPEG and WebP renditions and pictures are encoded: `auto` (the lowest quality that
/// reaches a perceptual score) or a fixed number.
struct QualityOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "JPEG and WebP quality: auto, or a fixed number from \(Quality.fixedRange.lowerBound) to \(Quality.fixedRange.upperBound).",
            discussion: "auto encodes each picture at the lowest quality that reaches --quality-target."))
    var quality = "auto"

    @Option(
        help:
            "With --quality auto: the SSIMULACRA2 score each picture reaches (\(Quality.trimmedRange); 90 visually lossless, 70 high)."
    )
    var qualityTarget = Quality.defaultTarget

    func validate() throws {
        guard Quality.targetRange.contains(qualityTarget) else {
            throw ValidationError("--quality-target \(qualityTarget) is not from \(Quality.trimmedRange)")
        }
        guard Quality(quality, target: qualityTarget) != nil else {
            throw ValidationError(
                "--quality '\(quality)' is not \(Quality.accepted)"
            )
        }
    }

    /// What was asked for.
    var value: Quality { Quality(quality, target: qualityTarget) ?? .default }
}
