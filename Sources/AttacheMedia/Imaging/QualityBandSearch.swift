internal import AttacheBase
internal import AttacheWork

extension QualitySearch {
    /// The tries of one ``Quality/auto(target:)`` encode: at 4:2:0 first, each aimed on a line
    /// through the last two tries (or at the picture's predicted slope after one) in
    /// ``step(_:)``'s units, where scores move about evenly; then at 4:4:4 for a picture whose
    /// colour 4:2:0 cannot carry. The smallest encode in the band wins, else the smallest that
    /// met its floor, else the best scored.
    struct BandSearch {
        typealias Try = (quality: Int, score: Double, blocking: Double, data: [UInt8])

        let image: PixelImage
        let format: MediaKind
        let judge: Judge
        let deadline: WorkDeadline
        let tables: JPEGTables
        /// Trellis quantisation (``JPEGEncoder/thorough``) for a JPEG.
        let trellis: Bool
        /// The fast encoder's JPEG as progressive scans (``progressiveArea``).
        let progressive: Bool
        let band: ClosedRange<Double>
        let blockingAllowed: Double
        /// The highest quality it may write: ``highest``, or the source JPEG's own.
        let top: Int
        let predicted: Prediction
        let start: Int
        private(set) var tries: [Try] = []
        /// The tries from this index on are 4:4:4.
        private var fullFrom = Int.max

        init(
            _ image: PixelImage, _ format: MediaKind, target: Double, judge: Judge, deadline: WorkDeadline,
            hint: QualityHint
        ) {
            (self.image, self.format, self.judge, self.deadline) = (image, format, judge, deadline)
            let tables = hint.tables.resolved(for: .auto(target: target))
            self.tables = tables
            trellis = format == .jpeg && hint.encoder.trellis
            progressive = QualitySearch.progressive(image, format, trellis: trellis)
            // The source's quality (an IJG number) as a number of these tables; a JPEG's only (a
            // WebP's numbers are libwebp's own).
            let ceiling = format == .jpeg ? hint.ceiling.map { tables.equivalent(ijg: $0) } : nil
            top = max(lowest, min(highest, ceiling ?? highest))
            let predicted = Prediction(judge.features)
            self.predicted = predicted
            band = QualitySearch.band(target: target)
            blockingAllowed = maxBlocking(target: target)
            // The thorough encoder's pictures score a little under the fast one's at a quality
            // number: its first guess aims that much higher.
            let aim = target + (trellis ? JPEGEncoder.scoreLoss : 0)
            start = min(top, hint.guess.map { min(highest, max(lowest, $0)) } ?? firstGuess(aim, predicted))
        }

        /// Score points a unit of ``step(_:)`` from `a` to `b`; nil when both are at one step.
        static func slope(_ a: Try, _ b: Try) -> Double? {
            let run = step(a.quality) - step(b.quality)
            return run == 0 ? nil : (b.score - a.score) / run
        }

        /// A colour JPEG not bounded by its source's own quality may be written 4:4:4.
        var mayGoFull: Bool { top == highest && format == .jpeg && image.channels == 3 }

        func met(_ attempt: Try) -> Bool { attempt.score >= band.lowerBound && attempt.blocking <= blockingAllowed }
        func inBand(_ attempt: Try) -> Bool { met(attempt) && attempt.score <= band.upperBound }

        private mutating func attempt(_ quality: Int, fullChroma: Bool = false) throws(AttacheError) {
            try deadline.check()
            let (data, held) = try encodeHeld(
                image, format, quality, tables: tables, fullChroma: fullChroma, trellis: trellis,
                progressive: progressive)
            let score = try judge.score(data, format, held: held)
            tries.append((quality, score, judge.lastBlocking, data))
        }

        mutating func run() throws(AttacheError) {
            try subsampled()
            // Missed at the highest quality it may write, or climbing too slowly to reach the
            // floor: chroma that 4:2:0 cannot carry (a saturated red, fine coloured text, a flat
            // colour with a thin outline). (Not when a source JPEG's own quality is the top: its
            // coarseness is not in its chroma.)
            if !tries.contains(where: met), mayGoFull,
                tries.contains(where: { $0.quality == top }) || tries.count < maxEncodes
            {
                try fullChroma()
            }
        }

        /// At 4:2:0: the first guess, then at most two more aimed inside the band.
        private mutating func subsampled() throws(AttacheError) {
            var quality = start
            while true {
                try attempt(quality)
                let last = tries[tries.count - 1]
                if tries.count == maxEncodes || inBand(last) { return }
                var slope = predicted.slope
                if tries.count >= 2, let measured = Self.slope(tries[tries.count - 2], last) {
                    if measured > 0.5 { slope = measured }
                    // Under the floor twice and climbing slowly: the loss is in the colour that
                    // 4:2:0 cannot carry, and a higher quality buys little of it (a colour JPEG's
                    // 4:4:4 stage follows).
                    if mayGoFull, !tries.contains(where: met), measured < chromaSlope { return }
                }
                // Blocking in the flat parts is a miss, whatever the score: a step up. Below the
                // band, aim just inside its floor; above it, just inside its ceiling.
                let aim = last.score < band.lowerBound ? band.lowerBound + aimInside : band.upperBound - aimInside
                var next =
                    last.score >= band.lowerBound && !met(last)
                    ? quality + blockingStep : QualitySearch.quality(atStep: step(quality) - (aim - last.score) / slope)
                // Never a number already tried, never at or below a miss, never at or above a try
                // over the band or in it.
                if let lowestMet = tries.filter(met).map(\.quality).min() { next = min(next, lowestMet - 1) }
                if let highestMissed = tries.filter({ !met($0) }).map(\.quality).max() {
                    next = max(next, highestMissed + 1)
                }
                next = min(top, max(lowest, next))
                if tries.contains(where: { $0.quality == next }) { return }
                quality = next
            }
        }

        /// At 4:4:4: the first guess; if that misses too, the highest quality; if it is well over
        /// the floor, down toward it on the line through its 4:4:4 tries (4:4:4 costs more bytes
        /// a quality than 4:2:0), a blocked one stepping up as at 4:2:0. At most two encodes
        /// more than the search's three.
        private mutating func fullChroma() throws(AttacheError) {
            fullFrom = tries.count
            try attempt(tries[0].quality, fullChroma: true)
            let first = tries[tries.count - 1]
            if !met(first) {
                if first.quality < top { try attempt(top, fullChroma: true) }
                return
            }
            let aim = band.lowerBound + aimInside
            guard first.score > aim + aimInside else { return }
            var (above, below) = (first, nil as Try?)
            while tries.count < mostEncodes {
                let slope = below.flatMap { Self.slope($0, above) }.map { max(0.5, $0) } ?? typicalSlope
                let least = max(lowest, (below?.quality ?? lowest - 1) + 1)
                // Blocked (its score was enough): a step up, as at 4:2:0.
                var aimed = QualitySearch.quality(atStep: step(above.quality) + (above.score - aim) / slope)
                if let below, below.score >= band.lowerBound { aimed = below.quality + blockingStep }
                let down = max(least, min(above.quality - 1, aimed))
                if down >= above.quality { return }
                try attempt(down, fullChroma: true)
                let last = tries[tries.count - 1]
                if inBand(last), last.score <= aim + 2 * aimInside { return }
                if met(last) { above = last } else { below = last }
            }
        }

        /// The smallest encode in the band, else the smallest that met the floor, else the best
        /// scored; and why the target was missed when none met the floor.
        func result() -> (data: [UInt8], choice: QualityChoice) {
            func smallest(_ indices: [Int]) -> Int? { indices.min { tries[$0].data.count < tries[$1].data.count } }
            let metting = tries.indices.filter { met(tries[$0]) }
            let index =
                smallest(metting.filter { inBand(tries[$0]) }) ?? smallest(metting)
                ?? tries.indices.max { tries[$0].score < tries[$1].score }!
            let chosen = tries[index]
            var missed: Missed? = nil
            if metting.isEmpty {
                let atTop = tries.contains { $0.quality == top }
                missed = !atTop ? .encodes : (top < highest ? .sourceQuality : .highestQuality)
            }
            var choice = QualityChoice(
                quality: chosen.quality, score: chosen.score, encodes: tries.count, missed: missed?.rawValue)
            (choice.blocking, choice.features) = (chosen.blocking, judge.features)
            choice.fullChroma = index >= fullFrom
            return (chosen.data, choice)
        }
    }
}
