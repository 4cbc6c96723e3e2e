internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs
internal import Foundation

/// How a lossy still (JPEG, WebP) is encoded: at a fixed quality number, or at the quality a
/// typical photo needs for a perceptual score, checked on each picture (``auto(target:)``).
public enum Quality: Hashable, Sendable, CustomStringConvertible {
    /// libjpeg's or libwebp's quality, 1–100, for every picture alike.
    case fixed(Int)
    /// `target` on SSIMULACRA2's scale (100 identical, 90 visually lossless, 80 very high, 70
    /// high) against the pixels it was made from: the quality a typical photo reaches it at,
    /// kept when the picture's own score is within ``QualitySearch/band(target:)`` (10 below to 8
    /// above) with no blocking in its flat parts, else moved into the band in at most
    /// ``QualitySearch/maxEncodes`` encodes.
    case auto(target: Double)

    /// The default: `auto` at ``defaultTarget``.
    public static let `default` = Quality.auto(target: defaultTarget)
    /// The score `auto` aims at unless told, stated in what a viewer sees: a notification's
    /// expanded picture is shown at about its full 1024 px on a 3× phone, and 80 is
    /// SSIMULACRA2's "very high quality" (no difference seen side by side at 1:1; 90 is visually
    /// lossless, 70 high). Checked on photo sets it was not chosen on (docs/quality.md).
    public static let defaultTarget = 80.0
    /// The fixed qualities a sender may ask for.
    public static let fixedRange = 1...100
    /// The targets a sender may ask for: what the search can reach on photos. Below, its
    /// floor (quality 30, where a photo at 1024 px scores 55–65) would give every target the same
    /// file; above, its top (quality 97, where one scores 90–93) would miss them all.
    public static let targetRange = 60.0...90.0

    /// What a quality may be, as text (`auto or a whole number from 1 to 100`): every surface
    /// that reads one says it alike.
    public static var accepted: String {
        "auto or a whole number from \(fixedRange.lowerBound) to \(fixedRange.upperBound)"
    }

    /// The target range as text (`30 to 95`).
    public static var trimmedRange: String {
        "\(trimmed(targetRange.lowerBound)) to \(trimmed(targetRange.upperBound))"
    }

    /// `85` or `auto` (at `target`, else ``defaultTarget``); nil for anything else or out of range.
    public init?(_ text: String, target: Double? = nil) {
        if text == "auto" {
            let target = target ?? Self.defaultTarget
            guard Self.targetRange.contains(target) else { return nil }
            self = .auto(target: target)
        } else if let number = DecimalText.integer(text, as: Int.self), Self.fixedRange.contains(number) {
            self = .fixed(number)
        } else {
            return nil
        }
    }

    /// `85` or `auto:80`: the name in cache keys and reports.
    public var description: String {
        switch self {
        case .fixed(let number): String(number)
        case .auto(let target): "auto:" + Self.trimmed(target)
        }
    }

    /// `auto` or `85`: the quality as a setting writes it (the target is a setting of its own).
    public var setting: String {
        switch self {
        case .fixed(let number): String(number)
        case .auto: "auto"
        }
    }

    /// The score `auto` aims at; nil for a fixed quality.
    public var target: Double? {
        if case .auto(let target) = self { target } else { nil }
    }

    static func trimmed(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}

/// What a lossy encode chose: the quality number written, the score it reached (measured when
/// ``Quality/auto(target:)`` chose it or a score was asked for) and the encodes spent.
public struct QualityChoice: Sendable, Hashable {
    public var quality: Int
    public var score: Double?
    public var encodes: Int
    /// Why `auto` did not reach its target, or wrote no score: ``QualitySearch/Missed``.
    public var missed: String? = nil
    /// The blocking in the picture's flat parts (luma levels; ``QualitySearch/blocking(_:_:)``),
    /// when it was scored.
    public var blocking: Double? = nil
    /// What the first guess was made from (``QualitySearch/Judge/features``), when it was scored.
    public var features: [Double]? = nil
    /// The JPEG was written with 4:4:4 chroma (its colour needed it), not 4:2:0.
    public var fullChroma = false

    public init(quality: Int, score: Double?, encodes: Int, missed: String? = nil) {
        self.quality = quality
        self.score = score
        self.encodes = encodes
        self.missed = missed
    }
}

/// The quantisation tables a JPEG's quality number scales: with `automatic`, jpegli's
/// perceptual tables when the quality is `auto` (5-6% fewer bytes at an equal score than
/// Robidoux's, 10% fewer than the IJG's, on the photo sets; docs/quality.md) and the IJG's when it
/// is a fixed number (the bytes a fixed quality always gave).
public enum JPEGTables: String, Sendable, Hashable, CaseIterable {
    case automatic = "auto"
    case ijg
    case robidoux
    /// libjxl's jpegli tables (luma and chroma apart, steeper as the quality falls; chroma steps
    /// halved at 4:2:0), on a quality scale where a number gives about the score Robidoux's
    /// give at it.
    case jpegli

    /// The tables an encode at `quality` uses.
    public func resolved(for quality: Quality) -> JPEGTables {
        guard self == .automatic else { return self }
        if case .auto = quality { return .jpegli }
        return .ijg
    }

    /// Perceptual tables come with 4:2:0 chroma sharpened for the decoder's upsampling; the IJG's
    /// with libjpeg's own (a fixed quality's bytes as they always were).
    var sharpensChroma: Bool { self == .robidoux || self == .jpegli }

    var shim: Int32 {
        switch self {
        case .robidoux: Int32(ATT_JPEG_TABLES_ROBIDOUX)
        case .jpegli: Int32(ATT_JPEG_TABLES_JPEGLI)
        case .automatic, .ijg: Int32(ATT_JPEG_TABLES_IJG)
        }
    }

    /// The quality number of these tables whose mean luma step is the IJG's at `quality`.
    func equivalent(ijg quality: Int) -> Int { Int(att_jpeg_equivalent_quality(Int32(quality), shim)) }
}

/// How a JPEG's coefficients are chosen and written: each rounded to its step and written as one
/// baseline scan (`fast`, the default: libjpeg's own), or each block's chosen for bits and
/// distortion together (`thorough`: trellis quantisation) and written as progressive scans or
/// one scan, whichever is smaller. The thorough encoder is `attache batch`'s default: a
/// campaign's picture is prepared once and downloaded by many (docs/quality.md).
public enum JPEGEncoder: String, Sendable, Hashable, CaseIterable {
    case fast
    case thorough

    /// Whether encodes choose their coefficients by trellis quantisation.
    var trellis: Bool { self == .thorough }

    /// Score points the thorough encoder's picture reads under the fast one's at the same
    /// quality number: 1.2 on average at quality 82 on the photo benchmark at 1024 px with
    /// jpegli's tables, luma's lowest frequencies rounded (0.3 to 2.2; docs/quality.md). `auto`'s
    /// first guess for it aims that much higher, so that its pictures score as the fast one's do.
    static let scoreLoss = 1.2
}

/// Where `auto`'s search starts and how high it may go: the quality another picture of the same
/// pixels chose (a receiver's picture starts where the rendition ended), and the source JPEG's
/// own quality when the picture is at about the source's size (a re-encode above it only spends
/// bytes on the source's artefacts, and would be larger than the source).
public struct QualityHint: Sendable, Hashable {
    public var guess: Int?
    public var ceiling: Int?
    /// The tables the quality number scales (``JPEGTables``).
    public var tables: JPEGTables = .automatic
    /// How the coefficients are chosen (``JPEGEncoder``).
    public var encoder: JPEGEncoder = .fast

    public init(
        guess: Int? = nil, ceiling: Int? = nil, tables: JPEGTables = .automatic, encoder: JPEGEncoder = .fast
    ) {
        self.guess = guess
        self.ceiling = ceiling
        self.tables = tables
        self.encoder = encoder
    }

    /// The ceiling for a picture `width` px wide made from a source `sourceWidth` px wide whose
    /// JPEG quality is `quality`: that quality while the picture is more than half the source's
    /// width (its blocks are still seen at about their size), none below.
    public static func ceiling(jpegQuality quality: Int?, width: Int, sourceWidth: Int) -> Int? {
        guard let quality, width * 2 > sourceWidth else { return nil }
        return quality
    }
}

/// The search behind ``Quality/auto(target:)``: encode, read back, score against the pixels,
/// and move the quality number by how far the score is from the target.
enum QualitySearch {
    /// Encodes one rendition's search may take at 4:2:0 chroma.
    static let maxEncodes = 3
    /// And in all: two more at 4:4:4 for a picture whose colour 4:2:0 cannot carry.
    static let mostEncodes = maxEncodes + 2
    /// What the in-process score reads above the public SSIMULACRA2 on average (+0.20 over 76
    /// encodes of the photo benchmark; docs/quality.md): taken off every score, so that a
    /// target is a target by the public judge.
    static let calibration = 0.2
    /// `auto` writes the fast encoder's JPEGs of this many pixels and up as progressive scans:
    /// 3-5% fewer bytes for the same pixels at 1024 px, 2% at 320 px, none on smaller
    /// pictures, whose scans' headers cost what they save (docs/quality.md). A fixed quality
    /// keeps one baseline scan, byte for byte as before.
    static let progressiveArea = 256 * 256

    /// Whether `auto` writes `image` as `format` in progressive scans (``progressiveArea``).
    static func progressive(_ image: PixelImage, _ format: MediaKind, trellis: Bool) -> Bool {
        format == .jpeg && !trellis && image.width * image.height >= progressiveArea
    }
    /// Bounds of the quality numbers a search tries.
    static let lowest = 30
    static let highest = 97

    /// Why a search did not reach its target (``QualityChoice/missed``).
    enum Missed: String {
        /// The source JPEG's own quality (``QualityHint/ceiling``) did not reach it.
        case sourceQuality = "source_quality"
        /// The highest quality tried (``highest``) did not.
        case highestQuality = "highest_quality"
        /// ``maxEncodes`` encodes did not find a quality that does.
        case encodes
        /// Under 8 × 8 pixels: too small to score, written at a fixed 85.
        case tooSmall = "too_small"
    }

    /// `image` (1 or 3 channels, or 4 for WebP) encoded as `format` at `quality`; the score is
    /// measured for `auto`, or for a fixed quality when `score` is set.
    static func encode(
        _ image: PixelImage, as format: MediaKind, quality: Quality, score measure: Bool = false,
        deadline: WorkDeadline = .none, hint: QualityHint = .init()
    ) throws(AttacheError) -> (data: [UInt8], choice: QualityChoice) {
        let tables = hint.tables.resolved(for: quality)
        switch quality {
        case .fixed(let number):
            let data = try encode(image, format, number, tables: tables, trellis: hint.encoder.trellis)
            guard measure, let judge = try Judge(image) else {
                return (data, QualityChoice(quality: number, score: nil, encodes: 1))
            }
            var choice = QualityChoice(quality: number, score: try judge.score(data, format), encodes: 1)
            (choice.blocking, choice.features) = (judge.lastBlocking, judge.features)
            return (data, choice)
        case .auto(let target):
            guard let judge = try Judge(image) else {
                // Too small to score (under 8 × 8): what a fixed 85 gives.
                return (
                    try encode(image, format, 85, tables: tables, trellis: hint.encoder.trellis),
                    QualityChoice(quality: 85, score: nil, encodes: 1, missed: Missed.tooSmall.rawValue)
                )
            }
            return try search(image, format, target: target, judge: judge, deadline: deadline, hint: hint)
        }
    }

    /// One encode at the quality a typical photo needs for the target (or the one the
    /// prediction says lands in the band), kept when its score is in the ``band(target:)`` and
    /// its flat parts show no blocking; outside the band, at most two more (``BandSearch``).
    private static func search(
        _ image: PixelImage, _ format: MediaKind, target: Double, judge: Judge, deadline: WorkDeadline,
        hint: QualityHint
    ) throws(AttacheError) -> (data: [UInt8], choice: QualityChoice) {
        var search = BandSearch(image, format, target: target, judge: judge, deadline: deadline, hint: hint)
        try search.run()
        return search.result()
    }

    /// The scores an encode for `target` is kept at without another: from ``floorBelow`` under
    /// it (no picture lower) to ``ceilingAbove`` over it (none spending more). Within the band
    /// each picture gets the one quality a typical photo needs, so pictures spread as a fixed
    /// quality spreads them: that spends each byte where it buys the most score (an equal score
    /// for every picture cost 5–12% more bytes for the same mean on the photo sets;
    /// docs/quality.md).
    static func band(target: Double) -> ClosedRange<Double> { (target - floorBelow)...(target + ceilingAbove) }
    /// 10 below 80 is 70, SSIMULACRA2's "high quality".
    static let floorBelow = 10.0
    static let ceilingAbove = 8.0
    /// Where a search out of the band aims: this far inside its floor or ceiling.
    static let aimInside = 1.0
    /// Score points a unit of ``step(_:)`` under which a picture below its floor is taken to be
    /// limited by its chroma (a typical photo gains 3.7–5.2; `2004default.jpg` of the Ubuntu
    /// wallpapers, flat orange with a thin white outline, 2.1 at 4:2:0).
    static let chromaSlope = 2.5

    /// The first quality: the typical photo's for `target` (``guess(target:)``), unless the
    /// picture's predicted score there is out of the band by more than the prediction's own
    /// error (``Prediction/error``); then the quality predicted to land inside it.
    static func firstGuess(_ target: Double, _ predicted: Prediction) -> Int {
        let typical = guess(target: target)
        let band = band(target: target)
        let expected = predicted.score(at: typical)
        if expected < band.lowerBound + Prediction.error {
            return predicted.quality(for: band.lowerBound + Prediction.error)
        }
        if expected > band.upperBound - Prediction.error {
            return predicted.quality(for: band.upperBound - Prediction.error)
        }
        return typical
    }

    /// The most blocking an encode that meets its target may show in its flat parts (luma levels
    /// at the ``blockingPercentile``): at 2 the 8 × 8 tiles of a sky are seen at 2×, at 1.5 not
    /// (docs/quality.md). That is the gate from a target of 80 (very high quality) up; a lower
    /// target asks for less, and a tenth of a level more is allowed for each point below 80.
    static let maxBlocking = 1.5

    static func maxBlocking(target: Double) -> Double { maxBlocking + max(0, 80 - target) / 10 }
    /// How far a blocked encode's quality moves up.
    static let blockingStep = 4

    /// A picture's score at quality 80 and its slope (points a unit of ``step(_:)``), predicted
    /// from its ``Judge/features`` by a linear fit on the photo benchmark's photos and crops (76
    /// pictures at 1024 px, Robidoux's tables; docs/quality.md): the search's first guess, and
    /// its aim after one encode.
    struct Prediction {
        let score80: Double
        let slope: Double

        init(_ features: [Double]) {
            guard features.count == Int(ATT_PICTURE_FEATURES) else {
                (score80, slope) = (80, typicalSlope)
                return
            }
            let x = [
                1, log(features[0] + 0.1), log(features[1] + 0.1), features[2], log(features[3] + 0.1),
            ]
            let scoreWeights = [82.738, -3.8864, 1.6982, -3.9618, -1.3036]
            let slopeWeights = [3.4174, -0.66746, 1.237, 0.63992, -0.24387]
            score80 = zip(x, scoreWeights).reduce(0) { $0 + $1.0 * $1.1 }
            slope = max(1.5, min(8, zip(x, slopeWeights).reduce(0) { $0 + $1.0 * $1.1 }))
        }

        /// The standard error of ``score80`` on the pictures it was fitted on (docs/quality.md).
        static let error = 2.5

        /// The score predicted at `quality`.
        func score(at quality: Int) -> Double { score80 + (step(80) - step(quality)) * slope }

        /// The quality predicted to reach `score`.
        func quality(for score: Double) -> Int {
            min(highest, max(lowest, QualitySearch.quality(atStep: step(80) - (score - score80) / slope)))
        }
    }

    /// Where scores move about evenly with quality: the square root of libjpeg's scale of its
    /// tables (200 − 2q from quality 50, 5000 / q below), falling as quality rises. Quality 80 is
    /// 6.3, 85 is 5.5, 90 is 4.5, 95 is 3.2.
    static func step(_ quality: Int) -> Double {
        let q = Double(min(100, max(1, quality)))
        return (q >= 50 ? 200 - 2 * q : 5000 / q).squareRoot()
    }

    /// The quality number nearest `step` (the inverse of ``step(_:)``), rounded up.
    static func quality(atStep step: Double) -> Int {
        let scale = max(0, step) * max(0, step)
        let q = scale <= 100 ? (200 - scale) / 2 : 5000 / scale
        return Int(q.rounded(.up))
    }

    /// Score points one unit of ``step(_:)`` adds on a typical photo at 1024 px (3.7 to 5.2 on
    /// the photo benchmark; docs/quality.md).
    static let typicalSlope = 4.5

    /// The first number tried for `target`: quality 80 reaches a score of 80 on a typical photo
    /// at 1024 px, and the typical slope goes from there.
    static func guess(target: Double) -> Int {
        min(highest, max(lowest, quality(atStep: step(80) - (target - 80) / typicalSlope)))
    }

    static func encode(
        _ image: PixelImage, _ format: MediaKind, _ quality: Int, tables: JPEGTables = .ijg, fullChroma: Bool = false,
        trellis: Bool = false, progressive: Bool = false
    ) throws(AttacheError) -> [UInt8] {
        try lossy(format).encode(
            image, quality: quality,
            options: EncodeOptions(tables: tables, fullChroma: fullChroma, trellis: trellis, progressive: progressive))
    }

    /// ``encode(_:_:_:tables:fullChroma:trellis:progressive:)`` with what its read-back can be
    /// made from (``HeldCoefficients``), for a candidate about to be scored.
    static func encodeHeld(
        _ image: PixelImage, _ format: MediaKind, _ quality: Int, tables: JPEGTables, fullChroma: Bool, trellis: Bool,
        progressive: Bool
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?) {
        try lossy(format).encodeHeld(
            image, quality: quality,
            options: EncodeOptions(tables: tables, fullChroma: fullChroma, trellis: trellis, progressive: progressive))
    }

    /// The encoder a search moves the quality of: `format`'s lossy one.
    private static func lossy(_ format: MediaKind) throws(AttacheError) -> any LossyEncoder.Type {
        guard let encoder = StillEncoders.lossy(format) else {
            throw AttacheError(.internalError, "\(format.rawValue) has no quality to search")
        }
        return encoder
    }

    /// Where a picture's flat parts are: a mean step between neighbours under this, in luma levels.
    static let flatStep = 1.0
    /// The percentile of the flat segments' block-edge steps that is gated.
    static let blockingPercentile = 95.0

    /// The reference pixels, prepared once for every candidate's score.
    final class Judge {
        let reference: OpaquePointer
        let image: PixelImage
        private var scratch: [UInt8]
        /// The reference's flat segments, found once (nil when it could not be made).
        private let flat: OpaquePointer?
        /// What makes the picture hard to encode, read with its flat segments: its mean luma
        /// step, its fine detail, its share of flat blocks, its mean chroma step
        /// (att_blocking_prepare).
        let features: [Double]
        /// The blocking in the flat parts of the last JPEG scored: the ``blockingPercentile``-th
        /// step across a flat segment of the block grid, less the reference's own (luma levels).
        private(set) var lastBlocking = 0.0

        /// nil for a picture too small to score (under 8 × 8).
        init?(_ image: PixelImage) throws(AttacheError) {
            guard image.width >= 8, image.height >= 8 else { return nil }
            var error = att_error()
            let made = image.pixels.withUnsafeBufferPointer { p in
                att_quality_prepare(
                    p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * image.channels,
                    Int32(image.channels), &error)
            }
            guard let made else { throw AttacheError(shim: error, format: "score") }
            reference = made
            self.image = image
            scratch = []
            var features = [Double](repeating: 0, count: Int(ATT_PICTURE_FEATURES))
            flat = image.pixels.withUnsafeBufferPointer { p in
                features.withUnsafeMutableBufferPointer { f in
                    att_blocking_prepare(
                        p.baseAddress, image.width * image.channels, UInt32(image.width), UInt32(image.height),
                        Int32(image.channels), QualitySearch.flatStep, f.baseAddress)
                }
            }
            self.features = features
        }

        deinit {
            att_quality_free(reference)
            att_blocking_free(flat)
        }

        /// The score of `data` (an encode of the reference, as `format`), read back from `held`
        /// when the encoder kept its coefficients.
        func score(_ data: [UInt8], _ format: MediaKind, held: HeldCoefficients? = nil) throws(AttacheError) -> Double {
            guard let encoder = StillEncoders.lossy(format) else {
                throw AttacheError(.internalError, "\(format.rawValue) encodes are not scored")
            }
            let channels = encoder.readBackChannels(of: image)
            let stride = image.width * channels
            // Uninitialised: the decode writes every byte or fails.
            let size = stride * image.height
            if scratch.count != size { scratch = [UInt8](unsafeUninitializedCapacity: size) { $1 = size } }
            var error = att_error()
            var score = 0.0
            let status = data.withUnsafeBufferPointer { input in
                scratch.withUnsafeMutableBufferPointer { output in
                    if let held {
                        held.readBack(
                            width: image.width, height: image.height, channels: channels, into: output.baseAddress!,
                            stride: stride, error: &error)
                    } else {
                        encoder.readBack(
                            input, width: image.width, height: image.height, channels: channels,
                            into: output.baseAddress!, stride: stride, error: &error)
                    }
                }
            }
            guard status == 0 else { throw AttacheError(shim: error, format: format.rawValue) }
            let scored = image.pixels.withUnsafeBufferPointer { own in
                scratch.withUnsafeBufferPointer { p in
                    att_quality_score(
                        reference, own.baseAddress, image.width * image.channels, p.baseAddress, stride,
                        Int32(channels), &score, &error)
                }
            }
            guard scored == 0 else { throw AttacheError(shim: error, format: "score") }
            lastBlocking =
                format == .jpeg && channels == image.channels
                ? scratch.withUnsafeBufferPointer {
                    att_blocking_measure(flat, $0.baseAddress, stride, QualitySearch.blockingPercentile)
                } : 0
            return score - QualitySearch.calibration
        }
    }
}
