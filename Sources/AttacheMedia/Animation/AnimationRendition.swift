public import AttacheBase
import AttacheWork

/// What is made of an animation, the same for every ``AnimationSource``: a GIF within the
/// frame, work and byte budgets; past every budget, the one fallback rule — a still of its
/// poster frame (PNG with transparency, else JPEG). (``MediaTransform`` makes an MP4 instead of
/// any animation the budgets clip, where video is on.)
extension ImageProcessor {
    /// The animation that reads `bytes` of `kind`, or nil for a still (``stillDecoder(_:)``)
    /// and for audio and video. Every kind is named: a kind added to ``MediaKind`` does not
    /// compile until it is said to be animated or not.
    static func animation(_ kind: MediaKind, _ bytes: MediaBytes) -> (any AnimationSource.Type)? {
        switch kind {
        case .gif: GIFAnimation.self
        case .webp: WebPDecoder.isAnimated(bytes) ? WebPAnimation.self : nil
        case .jxl: JXLDecoder.isAnimated(bytes) ? JXLAnimation.self : nil
        // An APNG decodes as its default image; an AVIF image sequence as its first frame.
        case .jpeg, .png, .heic, .avif: nil
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: nil
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: nil
        }
    }

    /// The animation in `bytes`, its header read and checked.
    static func openAnimation(
        _ type: any AnimationSource.Type, _ bytes: MediaBytes, spec: RenditionSpec = .init(), limits: DecodeLimits,
        deadline: WorkDeadline
    ) throws(AttacheError) -> any AnimationSource {
        try type.init(bytes: bytes, limits: limits, deadline: deadline, allowPartial: spec.gifAllowPartial)
    }

    /// The frames kept for the frame budget (``RenditionSpec/gifMaxFrames``) and the work
    /// budget, and what was dropped for them.
    static func framesKept(_ source: some AnimationSource, spec: RenditionSpec) -> (keep: Int, actions: [String]) {
        let frames = source.info.frames
        var actions: [String] = []
        var keep = min(frames, max(1, spec.gifMaxFrames))
        if keep < frames { actions.append("dropped \(frames - keep) of \(frames) frames (max_frames)") }
        let shown = source.framesShown(keep)
        if shown.frames < keep, let why = shown.why {
            actions.append("dropped \(keep - shown.frames) more frames: \(why)")
            keep = shown.frames
        }
        return (keep, actions)
    }

    /// The one fit of every animation made a GIF: the frame and work budgets, the work said to
    /// the deadline before any frame is decoded, then ``AnimationBudget`` for the bytes.
    static func fitAnimation(
        _ source: some AnimationSource, spec: RenditionSpec
    ) throws(AttacheError) -> AnimationBudget.Outcome<AnimatedGIF> {
        let (keep, actions) = framesKept(source, spec: spec)
        let (width, height) = source.canvas
        let maxSide = spec.maxSide(forWidth: width, height: height)
        try source.deadline.expect(
            source.workEstimate(
                frames: keep, output: RenditionSpec.fit(width: width, height: height, into: maxSide), spec: spec))
        return try AnimationBudget.fit(
            frames: source.info.frames, keep: keep, maxSide: maxSide, spec: spec, actions: actions
        ) { (keep, maxSide) throws(AttacheError) in
            let gif = try source.gif(keep: keep, maxSide: maxSide, spec: spec)
            return (gif, gif.data.count, max(gif.width, gif.height))
        }
    }

    /// An animation's rendition: the GIF that fits, else a still of its poster.
    static func renderAnimation(
        _ source: some AnimationSource, _ bytes: MediaBytes, spec: RenditionSpec, smallSide: Int?
    ) throws(AttacheError) -> Rendition {
        let info = source.info
        switch try fitAnimation(source, spec: spec) {
        case .fits(let gif, let actions):
            var rendition = Rendition(
                kind: .gif, width: gif.width, height: gif.height, data: gif.data, source: info,
                frames: gif.frames, posterFrame: gif.posterFrame, posterTime: gif.posterTime, actions: actions)
            // Never larger than it came: a GIF within every budget as it is (its size, its frame
            // count, its bytes; no budget acted) whose re-encoding is not smaller is stored as it
            // was, its comments and metadata extensions removed.
            if info.kind == .gif, gif.width == info.width, gif.height == info.height, actions.isEmpty,
                info.frames <= spec.gifMaxFrames, bytes.count <= spec.gifMaxBytes,
                let stripped = MetadataStripper.strip(bytes, kind: .gif), stripped.count <= rendition.data.count
            {
                rendition.data = stripped
                rendition.keptSource = true
            }
            rendition.pixels = gif.poster
            // The placeholder is the poster's: the frame the stills are cut from.
            rendition.placeholder = ThumbHash.make(gif.poster)
            // An animation's small rendition is its poster frame, a still GIF, from the pixels
            // the render already composed.
            if let smallSide, max(gif.width, gif.height) > smallSide {
                try source.deadline.check()
                let target = RenditionSpec.fit(width: gif.width, height: gif.height, into: smallSide)
                let small = try resample(gif.poster, target: target, lanczosReserve: 1)
                rendition.small = SmallRendition(width: small.width, height: small.height, data: try stillGIF(small))
            }
            return rendition
        case .over(_, _, _, let actions):
            var still = try stillOfAnimation(source, spec: spec)
            still.actions =
                actions + [
                    "a still of frame \(still.posterFrame ?? 0): the animation does not fit \(spec.gifMaxBytes) bytes "
                        + "as a GIF"
                ]
            return still
        }
    }

    /// The fallback of every animation: its poster, at the side allowed, as a still.
    static func stillOfAnimation(_ source: some AnimationSource, spec: RenditionSpec) throws(AttacheError) -> Rendition
    {
        let (width, height) = source.canvas
        let poster = try source.poster(
            keep: framesKept(source, spec: spec).keep, maxSide: spec.maxSide(forWidth: width, height: height))
        let still = try Encoders.still(poster.image, spec: spec)
        var rendition = Rendition(
            kind: still.kind, width: still.image.width, height: still.image.height, data: still.data,
            source: source.info, frames: 1, posterFrame: poster.frame, posterTime: poster.time)
        rendition.pixels = still.image
        rendition.placeholder = ThumbHash.make(still.image)
        return rendition
    }

    /// An animation's poster frame (the first frame that covers the picture, for a GIF; the
    /// first, for an animated WebP), or any image, as a still: PNG when it has transparency,
    /// else JPEG (a JPEG or PNG stays as it is).
    public static func renderStill(
        _ bytes: MediaBytes, spec: RenditionSpec = .init(), limits: DecodeLimits = .default
    ) throws(AttacheError) -> Rendition {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        guard let type = animation(kind, bytes) else {
            return try render(bytes, kind: kind, spec: spec, limits: limits, deadline: .none)
        }
        let source = try openAnimation(type, bytes, spec: spec, limits: limits, deadline: .none)
        return try stillOfAnimation(source, spec: spec)
    }
}
