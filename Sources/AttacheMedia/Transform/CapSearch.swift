internal import AttacheBase
internal import AttacheWork
internal import Foundation

/// A receiver's picture under its byte cap: encoded first as its ``Quality`` asks (a number, or
/// `auto`'s search), then, only when over the cap, at a lower quality down to ``softFloor``, then
/// with fewer pixels down to the spec's ``TargetSpec/minWidth``, and only there at a lower
/// quality down to ``floor``; a picture that cannot fit even so is refused, saying why. Each step is aimed
/// from the sizes already measured (bytes fall about exponentially with quality and in
/// proportion to pixels), so the picture kept is the best found under the cap, not the first.
enum CapSearch {
    /// The quality a cap takes a picture down to before it takes pixels instead.
    static let softFloor = 50
    /// The lowest quality a cap takes a picture to, at the spec's narrowest width only.
    static let floor = 30
    /// Encodes the cap may add to the quality's own.
    static let maxEncodes = 4

    struct Fitted {
        var data: [UInt8]
        var width: Int
        var height: Int
        var choice: QualityChoice
    }

    /// `picture` (resampled from `cut`) encoded under `spec`'s cap.
    static func fit(
        _ picture: PixelImage, from cut: PixelImage, spec: TargetSpec, deadline: WorkDeadline,
        hint: QualityHint = .init()
    ) throws(AttacheError) -> Fitted {
        var hint = hint
        if spec.format != .jpeg { hint.guess = nil }
        let first = try QualitySearch.encode(
            picture, as: spec.format, quality: spec.quality, deadline: deadline, hint: hint)
        if first.data.count <= spec.maxBytes {
            return Fitted(data: first.data, width: picture.width, height: picture.height, choice: first.choice)
        }
        let ceiling = first.choice.quality
        var tries: [(quality: Int, width: Int, bytes: Int)] = [(ceiling, picture.width, first.data.count)]
        var best: (data: [UInt8], image: PixelImage, quality: Int)? = nil
        var (image, quality, added) = (picture, ceiling, 0)
        let aim = Double(spec.maxBytes) * 0.95
        let soft = min(ceiling, softFloor)
        while added < maxEncodes {
            let last = tries[tries.count - 1]
            let rate = Self.rate(tries)
            var next = quality
            if let kept = best {
                // Under the cap with room left: one step up, aimed at the cap.
                let room = Double(kept.data.count)
                guard room < aim * 0.9, kept.quality < ceiling else { break }
                next = min(ceiling, kept.quality + max(1, Int((log(aim / room) / rate).rounded(.down))))
                guard !tries.contains(where: { $0.quality == next && $0.width == kept.image.width }) else { break }
                image = kept.image
            } else {
                // Quality first, down to `soft`; then pixels at that quality, down to the spec's
                // narrowest; only there quality below it, down to the floor.
                let narrowest = image.width <= spec.minWidth
                let lowestHere = narrowest ? floor : soft
                let wanted = Double(last.quality) + log(aim / Double(last.bytes)) / rate
                if last.quality > lowestHere {
                    next = max(lowestHere, min(last.quality - 1, Int(wanted.rounded(.down))))
                } else if !narrowest {
                    try deadline.check()
                    (image, next) = try narrower(cut, than: image, last: last, rate: rate, aim: aim, spec: spec)
                } else {
                    throw Self.tooLarge(
                        spec,
                        "\(last.bytes) bytes at \(image.width)x\(image.height) and quality \(last.quality), "
                            + "the smallest it may be (\(spec.minWidth) px wide, quality \(floor)); it cannot fit")
                }
            }
            try deadline.check()
            quality = next
            let data = try QualitySearch.encode(
                image, spec.format, quality, tables: hint.tables.resolved(for: spec.quality),
                trellis: hint.encoder.trellis)
            added += 1
            tries.append((quality, image.width, data.count))
            if data.count <= spec.maxBytes,
                best.map({ image.width > $0.image.width || (image.width == $0.image.width && quality > $0.quality) })
                    ?? true
            {
                best = (data, image, quality)
            }
        }
        guard let best else {
            let last = tries[tries.count - 1]
            throw Self.tooLarge(
                spec,
                "\(last.bytes) bytes at quality \(last.quality) and \(last.width) px wide after "
                    + "\(first.choice.encodes + added) encodes, over")
        }
        // The score it reached, against the pixels it was encoded from.
        let score = try QualitySearch.Judge(best.image)?.score(best.data, spec.format)
        return Fitted(
            data: best.data, width: best.image.width, height: best.image.height,
            choice: QualityChoice(
                quality: best.quality, score: score, encodes: first.choice.encodes + added, missed: first.choice.missed)
        )
    }

    /// Fewer pixels: bytes follow the pixel count, so the width that fits at `last`'s quality,
    /// or the narrowest the spec allows with the quality that fits there; resampled from `cut`.
    static func narrower(
        _ cut: PixelImage, than image: PixelImage, last: (quality: Int, width: Int, bytes: Int), rate: Double,
        aim: Double, spec: TargetSpec
    ) throws(AttacheError) -> (image: PixelImage, quality: Int) {
        let shrink = min(0.97, (aim / Double(last.bytes)).squareRoot())
        let width = max(spec.minWidth, Int(Double(image.width) * shrink))
        var quality = last.quality
        if width == spec.minWidth {
            let there = Double(last.bytes) * Double(width * width) / Double(image.width * image.width)
            let fits = Double(last.quality) + log(aim / there) / rate
            quality = max(floor, min(last.quality, Int(fits.rounded(.down))))
        }
        let height = max(1, Int((Double(width) * Double(cut.height) / Double(cut.width)).rounded()))
        return (try ImageProcessor.resampleImage(cut, target: (width, height)), quality)
    }

    /// Bytes per quality step at the last try's width, from its last two tries there (2.5%
    /// before two tries say otherwise).
    static func rate(_ tries: [(quality: Int, width: Int, bytes: Int)]) -> Double {
        let same = tries.filter { $0.width == tries[tries.count - 1].width }
        guard same.count >= 2 else { return 0.025 }
        let (a, b) = (same[same.count - 2], same[same.count - 1])
        guard a.quality != b.quality, a.bytes != b.bytes else { return 0.025 }
        let measured = log(Double(a.bytes) / Double(b.bytes)) / Double(a.quality - b.quality)
        return measured > 0.003 ? measured : 0.025
    }

    /// The picture that cannot be brought under its cap: `said` is where the search stopped.
    static func tooLarge(_ spec: TargetSpec, _ said: String) -> AttacheError {
        AttacheError(
            .tooLarge, "the \(spec.target.rawValue) picture is \(said) its cap of \(spec.maxBytes) bytes",
            limit: .maxImageBytes)
    }
}
