internal import AttacheBase
internal import AttacheWork

/// One animation, whatever its format, beside ``StillDecoder``: its canvas, its frames with
/// their delays, its loop count — what every animated source answers (as libvips' loaders all
/// answer `n` and `page`). A GIF (``GIFAnimation``), an animated WebP (``WebPAnimation``) and a
/// JPEG XL animation (``JXLAnimation``) implement it; another animated source (an AVIF image
/// sequence) would be one more type and one more row in ``ImageProcessor/animation(_:_:)``. Everything else is done
/// once for all of them: the budgets (``ImageProcessor/fitAnimation(_:spec:)``), the one
/// fallback rule, the output kind, the first frame, the full check and the video
/// (``MediaEncoder/video(fromAnimation:kind:spec:limits:cap:deadline:)``).
protocol AnimationSource: AnyObject {
    /// Reads the header (a GIF's records are scanned) and checks every limit against it:
    /// nothing is decoded and nothing large allocated before that passes. `allowPartial` keeps
    /// the frames before a cut (a GIF's).
    init(bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, allowPartial: Bool) throws(AttacheError)
    /// What the header says: the kind, the canvas, the frames, the loop count (GIF's meaning:
    /// repeats, 0 = forever, nil = once) and the duration in centiseconds.
    var info: ImageInfo { get }
    /// The deadline checked between frames.
    var deadline: WorkDeadline { get }
    /// The CPU time decoding every frame costs (before they are composed), in nanoseconds.
    var decodeNanoseconds: Double { get }
    /// Calls `body` with each frame composed on the canvas (RGBA, `width` × 4 bytes a row,
    /// valid during the call) and how long it shows, in centiseconds, until `body` returns
    /// false or the frames end.
    func forEachFrame(_ body: (UnsafePointer<UInt8>, Int) throws(AttacheError) -> Bool) throws(AttacheError)
    /// Of `keep` frames, how many can be shown within the work limits (at least 1), and why fewer.
    func framesShown(_ keep: Int) -> (frames: Int, why: String?)
    /// What rendering `frames` frames at `output` costs.
    func workEstimate(frames: Int, output: (width: Int, height: Int), spec: RenditionSpec) -> WorkEstimate
    /// `keep` frames spread evenly over the animation (the time of those dropped kept), fitting
    /// `maxSide`, written as a GIF.
    func gif(keep: Int, maxSide: Int, spec: RenditionSpec) throws(AttacheError) -> AnimatedGIF
    /// The frame a still of the animation shows (of `keep` spread evenly), fitting `maxSide`.
    func poster(keep: Int, maxSide: Int) throws(AttacheError) -> AnimationPoster
    /// Every frame decoded: a full check of the file.
    func inspect() throws(AttacheError) -> ImageInfo
}

/// The frame a still of an animation shows: its pixels (RGBA), its index and start (seconds).
struct AnimationPoster {
    var image: PixelImage
    var frame: Int
    var time: Double
}

/// An animation written as a GIF, with its poster frame.
struct AnimatedGIF {
    var data: [UInt8]
    var width: Int
    var height: Int
    /// Frames written (identical consecutive frames merged).
    var frames: Int
    /// Centiseconds, kept when frames are dropped.
    var duration: Int
    /// The frame a thumbnail shows, when it starts (seconds), and its pixels (RGBA) at the
    /// output size.
    var posterFrame: Int
    var posterTime: Double
    var poster: PixelImage
}

extension AnimationSource {
    var canvas: (width: Int, height: Int) { (info.width, info.height) }

    func framesShown(_ keep: Int) -> (frames: Int, why: String?) { (keep, nil) }

    /// Every frame composes the whole canvas, is resampled and encoded.
    func workEstimate(frames: Int, output: (width: Int, height: Int), spec: RenditionSpec) -> WorkEstimate {
        let screen = info.width * info.height
        let out = output.width * output.height
        let nanoseconds =
            decodeNanoseconds + Double(frames) * Double(screen)
            * (WorkEstimate.PerPixel.composite + WorkEstimate.PerPixel.shrink) + Double(frames) * Double(out)
            * (WorkEstimate.PerPixel.lanczos + WorkEstimate.PerPixel.encode)
        // Two canvases, the resampled frame and its indices, and the file.
        let memory = screen * 8 + out * 5 + min(spec.gifMaxBytes, frames * out) + (2 << 20)
        return WorkEstimate(seconds: nanoseconds / 1e9, memory: memory)
    }

    func inspect() throws(AttacheError) -> ImageInfo {
        var (frames, duration) = (0, 0)
        try forEachFrame { (_, delay) throws(AttacheError) in
            try deadline.check()
            (frames, duration) = (frames + 1, duration + delay)
            return true
        }
        guard frames > 0 else { throw AttacheError(.corruptData, "\(info.kind.rawValue): the animation has no frames") }
        var found = info
        (found.frames, found.duration) = (frames, duration)
        return found
    }

    /// The first frame composed, at the canvas size.
    func firstFrame() throws(AttacheError) -> PixelImage {
        var first: PixelImage? = nil
        try forEachFrame { (canvas, _) in
            first = PixelImage(
                width: info.width, height: info.height, channels: 4,
                pixels: Array(UnsafeBufferPointer(start: canvas, count: info.width * info.height * 4)))
            return false
        }
        guard let first else { throw AttacheError(.corruptData, "\(info.kind.rawValue): the animation has no frames") }
        return first
    }

    /// The first frame.
    func poster(keep: Int, maxSide: Int) throws(AttacheError) -> AnimationPoster {
        let first = try firstFrame()
        let target = RenditionSpec.fit(width: first.width, height: first.height, into: maxSide)
        let image = try ImageProcessor.resampleImage(first, target: target)
        return AnimationPoster(image: image, frame: 0, time: 0)
    }

    /// Each kept frame composed, resampled, given its own median-cut palette and written; the
    /// poster is the first frame. (A GIF keeps its own palettes instead: ``GIFAnimation``.)
    func gif(keep: Int, maxSide: Int, spec: RenditionSpec) throws(AttacheError) -> AnimatedGIF {
        let (width, height, frames) = (info.width, info.height, info.frames)
        let target = RenditionSpec.fit(width: width, height: height, into: maxSide)
        let pixels = target.width * target.height
        let writer = try GIFFrameWriter(
            width: target.width, height: target.height, loopCount: info.loopCount, globalPalette: nil)
        let resampler =
            target.width == width && target.height == height
            ? nil
            : Resampler(
                inWidth: width, inHeight: height, outWidth: target.width, outHeight: target.height, channels: 4,
                lanczosReserve: 1)
        var first: PixelImage? = nil
        var index = 0
        try forEachFrame { (rgba, delay) throws(AttacheError) in
            try deadline.check()
            defer { index += 1 }
            guard AnimationBudget.keeps(index, of: frames, keeping: keep) else {
                writer.extendLast(by: delay)
                return true
            }
            var scaled: [UInt8]
            if let resampler {
                resampler.reset()
                for y in 0..<height { resampler.push(rgba + y * width * 4) }
                scaled = resampler.output
            } else {
                scaled = Array(UnsafeBufferPointer(start: rgba, count: pixels * 4))
            }
            let (indices, palette) = GIFPalette.quantize(scaled, target: target, dither: spec.gifDither)
            try writer.add(indices: indices, source: scaled, palette: palette, delay: delay)
            if first == nil {
                first = PixelImage(width: target.width, height: target.height, channels: 4, pixels: scaled)
            }
            return true
        }
        guard let first else { throw AttacheError(.corruptData, "\(info.kind.rawValue): the animation has no frames") }
        return AnimatedGIF(
            data: try writer.finish(), width: target.width, height: target.height, frames: writer.framesWritten,
            duration: writer.duration, posterFrame: 0, posterTime: 0, poster: first)
    }
}
