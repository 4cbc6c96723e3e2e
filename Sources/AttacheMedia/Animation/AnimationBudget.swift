internal import AttacheBase

/// The one fit-to-budget step of every animation made a GIF (a GIF's own frames, an animated
/// WebP's): render with the frames kept at the side allowed; while the file is over
/// ``RenditionSpec/gifMaxBytes``, drop frames evenly in proportion (down to 10, or the file's
/// count), then shrink the side (down to 16 px); at most 8 renders. What a caller does with an
/// animation that cannot fit is its own rule (a GIF goes to MP4 or is refused, a WebP becomes a
/// still), so `fit` says which it was.
enum AnimationBudget {
    enum Outcome<Made> {
        /// Within the budget, with what was dropped or shrunk to get there.
        case fits(Made, actions: [String])
        /// The last render, over the budget at the smallest step or after the last try, with
        /// the frames it kept and the side it was allowed.
        case over(Made, keep: Int, maxSide: Int, actions: [String])
    }

    /// Whether frame `index` of `frames` is one of `keep` spread evenly over them: the even
    /// spread reaches a new slot there (frame 0 always is). A frame not kept adds its time to
    /// the one before.
    static func keeps(_ index: Int, of frames: Int, keeping keep: Int) -> Bool {
        index == 0 || index * keep / frames != (index - 1) * keep / frames
    }

    /// One render: what was made, its bytes and its longest side.
    typealias Render<Made> = (_ keep: Int, _ maxSide: Int) throws(AttacheError) -> (made: Made, bytes: Int, side: Int)

    /// `frames` in the file, `keep` of them to start with, at `maxSide`; `actions` so far.
    static func fit<Made>(
        frames: Int, keep: Int, maxSide: Int, spec: RenditionSpec, actions: [String], render: Render<Made>
    ) throws(AttacheError) -> Outcome<Made> {
        var (keep, maxSide, actions) = (keep, maxSide, actions)
        var last: (made: Made, keep: Int, maxSide: Int)? = nil
        for _ in 0..<8 {
            let (made, size, side) = try render(keep, maxSide)
            last = (made, keep, maxSide)
            if size <= spec.gifMaxBytes { return .fits(made, actions: actions) }
            let ratio = Double(size) / Double(spec.gifMaxBytes)
            let floor = min(keep, max(1, min(10, frames)))
            if keep > floor {
                let next = max(floor, Int(Double(keep) / ratio * 0.9))
                actions.append("dropped \(keep - next) more frames to fit \(spec.gifMaxBytes) bytes (\(size) bytes)")
                keep = next
            } else if maxSide > 16 {
                let next = max(16, Int(Double(min(maxSide, side)) / ratio.squareRoot() * 0.9))
                actions.append("shrank to \(next) px to fit \(spec.gifMaxBytes) bytes (\(size) bytes)")
                maxSide = next
            } else {
                break
            }
        }
        return .over(last!.made, keep: last!.keep, maxSide: last!.maxSide, actions: actions)
    }
}
