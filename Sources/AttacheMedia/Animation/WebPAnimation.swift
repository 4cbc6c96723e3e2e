internal import AttacheBase
internal import CAttacheCodecs

/// An animated WebP made into an animated GIF (what a device shows), through the GIF path's
/// budgets: frames dropped evenly beyond ``RenditionSpec/gifMaxFrames`` (their time kept), then
/// frames dropped or the size shrunk until the file fits ``RenditionSpec/gifMaxBytes``. Where it
/// cannot fit, the first frame is kept as a still (PNG with alpha, else JPEG).
///
/// libwebpdemux composes each frame on its canvas (two RGBA canvases: checked against
/// ``ImageLimits/maxDecoderMemory`` from the header, as are the frame count and the frames'
/// pixels); each kept frame is downscaled, given its own median-cut palette and written.
enum WebPAnimation {
    static func render(
        _ bytes: MediaBytes, spec: RenditionSpec, limits: ImageLimits, deadline: WorkDeadline, smallSide: Int?
    ) throws(AttacheError) -> Rendition {
        let header = try header(bytes, limits: limits)
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        let loopCount = gifLoopCount(header)
        var actions: [String] = []
        let keep = min(frames, max(1, spec.gifMaxFrames))
        if keep < frames { actions.append("dropped \(frames - keep) of \(frames) frames (max_frames)") }
        let outcome = try AnimationBudget.fit(
            frames: frames, keep: keep, maxSide: spec.maxSide(forWidth: width, height: height), spec: spec,
            actions: actions
        ) { (keep, maxSide) throws(AttacheError) in
            let gif = try encode(
                bytes, limits: limits, keep: keep, maxSide: maxSide, loopCount: loopCount, spec: spec,
                deadline: deadline)
            return (gif, gif.data.count, max(gif.width, gif.height))
        }
        switch outcome {
        case .fits(let gif, let actions):
            return try rendition(
                gif, actions: actions, width: width, height: height, frames: frames, loopCount: loopCount,
                smallSide: smallSide)
        case .over(_, _, _, let actions):
            // Past every budget: the first frame as a still.
            var still = try still(bytes, spec: spec, limits: limits, deadline: deadline)
            still.actions =
                actions + ["a still of the first frame: the animation does not fit \(spec.gifMaxBytes) bytes as a GIF"]
            return still
        }
    }

    /// The GIF made as the rendition (its first frame the poster, and the small rendition from it).
    private static func rendition(
        _ gif: Encoded, actions: [String], width: Int, height: Int, frames: Int, loopCount: Int?,
        smallSide: Int?
    ) throws(AttacheError) -> Rendition {
        var source = ImageInfo(
            kind: .webp, width: width, height: height, frames: frames, orientation: .up, isProgressive: false)
        (source.loopCount, source.duration) = (loopCount, gif.duration)
        var rendition = Rendition(
            kind: .gif, width: gif.width, height: gif.height, data: gif.data, source: source,
            frames: gif.frames, posterFrame: 0, posterTime: 0, actions: actions)
        rendition.pixels = gif.first
        if let smallSide, max(gif.width, gif.height) > smallSide {
            let target = RenditionSpec.fit(width: gif.width, height: gif.height, into: smallSide)
            let small = try ImageProcessor.resampleImage(gif.first, target: target)
            rendition.small = SmallRendition(
                width: small.width, height: small.height, data: try ImageProcessor.stillGIF(small))
        }
        return rendition
    }

    /// The first frame as a still: PNG when it has transparency, else JPEG.
    static func still(
        _ bytes: MediaBytes, spec: RenditionSpec, limits: ImageLimits, deadline: WorkDeadline
    )
        throws(AttacheError) -> Rendition
    {
        let header = try header(bytes, limits: limits)
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        let (kind, data, first) = try Encoders.still(
            try encode(
                bytes, limits: limits, keep: 1, maxSide: spec.maxSide(forWidth: width, height: height),
                loopCount: nil, spec: spec, deadline: deadline
            ).first, spec: spec)
        var rendition = Rendition(
            kind: kind, width: first.width, height: first.height, data: data,
            source: ImageInfo(
                kind: .webp, width: width, height: height, frames: frames, orientation: .up, isProgressive: false),
            posterFrame: 0, posterTime: 0)
        rendition.pixels = first
        return rendition
    }

    /// The header, checked; with `decode`, every frame decoded too.
    static func info(
        _ bytes: MediaBytes, limits: ImageLimits, decode: Bool, deadline: WorkDeadline
    ) throws(AttacheError)
        -> ImageInfo
    {
        let (handle, header) = try open(bytes, limits: limits)
        defer { att_webp_anim_close(handle) }
        var info = ImageInfo(
            kind: .webp, width: Int(header.width), height: Int(header.height), frames: Int(header.frames),
            orientation: .up, isProgressive: false)
        info.loopCount = gifLoopCount(header)
        guard decode else { return info }
        var error = att_error()
        guard att_webp_anim_start(handle, &error) == 0 else { throw AttacheError(shim: error, format: "webp") }
        var end: Int32 = 0
        while true {
            try deadline.check()
            var rgba: UnsafePointer<UInt8>? = nil
            guard att_webp_anim_next(handle, &rgba, &end, &error) == 0 else {
                throw AttacheError(shim: error, format: "webp")
            }
            if rgba == nil { break }
        }
        info.duration = (Int(end) + 5) / 10
        return info
    }

    /// WebP counts plays (0 = forever); GIF's NETSCAPE2.0 counts repeats, absent = once.
    static func gifLoopCount(_ header: att_webp_anim_header) -> Int? {
        header.loop_count == 0 ? 0 : (header.loop_count > 1 ? Int(header.loop_count) - 1 : nil)
    }

    /// The header, checked against `limits` (the animation closed again).
    static func header(_ bytes: MediaBytes, limits: ImageLimits) throws(AttacheError) -> att_webp_anim_header {
        let (handle, header) = try open(bytes, limits: limits)
        att_webp_anim_close(handle)
        return header
    }

    /// Opens the animation and checks its header against `limits`.
    static func open(
        _ bytes: MediaBytes, limits: ImageLimits
    ) throws(AttacheError) -> (
        handle: OpaquePointer, header: att_webp_anim_header
    ) {
        var header = att_webp_anim_header()
        var error = att_error()
        guard
            let handle = att_webp_anim_open(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &header, &error)
        else { throw AttacheError(shim: error, format: "webp") }
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        do throws(AttacheError) {
            try limits.check(width: width, height: height)
            guard frames >= 1 else { throw AttacheError(.corruptData, "webp: the animation has no frames") }
            guard frames <= limits.maxFrames else {
                throw AttacheError(.tooManyFrames, "webp: more than \(limits.maxFrames) frames", limit: .maxFrames)
            }
            guard frames * width * height <= limits.maxTotalFramePixels else {
                throw AttacheError(
                    .tooManyPixels, "webp: frames add up to more than \(limits.maxTotalFramePixels) pixels",
                    limit: .maxTotalFramePixels)
            }
            try limits.checkDecoderMemory(width * height * 8, what: "animated WebP canvases")
        } catch {
            att_webp_anim_close(handle)
            throw error
        }
        return (handle, header)
    }

    private struct Encoded {
        var data: [UInt8]
        var width: Int
        var height: Int
        var frames: Int
        var duration: Int
        var first: PixelImage
    }

    /// Writes `keep` frames spread evenly over the animation, fitting `maxSide`.
    private static func encode(
        _ bytes: MediaBytes, limits: ImageLimits, keep: Int, maxSide: Int, loopCount: Int?, spec: RenditionSpec,
        deadline: WorkDeadline
    ) throws(AttacheError) -> Encoded {
        let (handle, header) = try open(bytes, limits: limits)
        defer { att_webp_anim_close(handle) }
        var error = att_error()
        guard att_webp_anim_start(handle, &error) == 0 else { throw AttacheError(shim: error, format: "webp") }
        let (width, height, frames) = (Int(header.width), Int(header.height), Int(header.frames))
        let target = RenditionSpec.fit(width: width, height: height, into: maxSide)
        let pixels = target.width * target.height
        let writer = try GIFFrameWriter(
            width: target.width, height: target.height, loopCount: loopCount, globalPalette: nil)
        let resampler =
            target.width == width && target.height == height
            ? nil
            : Resampler(
                inWidth: width, inHeight: height, outWidth: target.width, outHeight: target.height, channels: 4,
                lanczosReserve: 1)
        var first: PixelImage? = nil
        var index = 0
        var endedAt = 0  // centiseconds
        while true {
            try deadline.check()
            var rgba: UnsafePointer<UInt8>? = nil
            var timestamp: Int32 = 0
            guard att_webp_anim_next(handle, &rgba, &timestamp, &error) == 0 else {
                throw AttacheError(shim: error, format: "webp")
            }
            guard let rgba else { break }
            defer { index += 1 }
            // Delays in centiseconds from the end times, so rounding never adds up.
            let end = (Int(timestamp) + 5) / 10
            let delay = max(0, end - endedAt)
            endedAt = end
            let slot = index * keep / frames
            guard index == 0 || slot != (index - 1) * keep / frames else {
                writer.extendLast(by: delay)
                continue
            }
            var scaled: [UInt8]
            if let resampler {
                resampler.reset()
                for y in 0..<height { resampler.push(rgba + y * width * 4) }
                scaled = resampler.output
            } else {
                scaled = Array(UnsafeBufferPointer(start: rgba, count: pixels * 4))
            }
            let palette = scaled.withUnsafeBufferPointer { GIFPalette.medianCut($0.baseAddress!, count: pixels) }
            var indices = [UInt8](repeating: 0, count: pixels)
            scaled.withUnsafeBufferPointer { source in
                indices.withUnsafeMutableBufferPointer { out in
                    if spec.gifDither {
                        palette.mapDithered(
                            source.baseAddress!, width: target.width, height: target.height, into: out.baseAddress!)
                    } else {
                        _ = palette.map(source.baseAddress!, count: pixels, into: out.baseAddress!, exact: false)
                    }
                }
            }
            try writer.add(indices: indices, source: scaled, palette: palette, delay: delay)
            if first == nil {
                first = PixelImage(width: target.width, height: target.height, channels: 4, pixels: scaled)
            }
        }
        guard let first else { throw AttacheError(.corruptData, "webp: the animation has no frames") }
        return Encoded(
            data: try writer.finish(), width: target.width, height: target.height, frames: writer.framesWritten,
            duration: writer.duration, first: first)
    }
}
