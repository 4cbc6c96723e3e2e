internal import AttacheBase
internal import AttacheWork

/// A GIF as an ``AnimationSource``: its records scanned when it is made (no pixel decoded),
/// its frames decoded by giflib and composed here as a browser shows them. Made a GIF again,
/// it keeps its own palettes (``GIFPalettes``) and screen (``GIFScreen``), and its poster is
/// the first frame that covers the picture (``GIFPosterChoice``).
final class GIFAnimation: AnimationSource {
    /// What the scan found.
    let scan: GIFInfo
    let info: ImageInfo
    let deadline: WorkDeadline
    let decodeNanoseconds: Double
    private let bytes: MediaBytes
    private let limits: DecodeLimits
    private let allowPartial: Bool

    init(bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, allowPartial: Bool) throws(AttacheError) {
        (self.bytes, self.limits, self.deadline, self.allowPartial) = (bytes, limits, deadline, allowPartial)
        scan = try ImageProcessor.scanGIF(bytes, limits: limits, allowPartial: allowPartial, deadline: deadline)
        info = ImageInfo(scan)
        decodeNanoseconds = Double(scan.framePixels) * WorkEstimate.PerPixel.gifDecode
    }

    private func decoder() throws(AttacheError) -> GIFDecoder {
        try GIFDecoder(bytes: bytes, limits: limits, allowPartial: allowPartial, deadline: deadline)
    }

    func forEachFrame(_ body: (UnsafePointer<UInt8>, Int) throws(AttacheError) -> Bool) throws(AttacheError) {
        let decoder = try decoder()
        var compositor = GIFCompositor(width: decoder.width, height: decoder.height)
        while let frame = try decoder.next() {
            compositor.draw(frame)
            let more = try compositor.canvas.withUnsafeBufferPointer { (canvas) throws(AttacheError) in
                try body(canvas.baseAddress!, frame.delay)
            }
            guard more else { return }
        }
    }

    /// Every frame decoded and composed, on an indexed screen when the scan allows.
    func inspect() throws(AttacheError) -> ImageInfo {
        var compositor = GIFCompositor(screenOf: scan)
        let decoder = try decoder()
        var (frames, duration) = (0, 0)
        while let frame = try decoder.next() {
            try deadline.check()
            compositor.draw(frame)
            (frames, duration) = (frames + 1, duration + frame.delay)
        }
        guard frames > 0 else { throw AttacheError(.corruptData, "gif: no frames") }
        var found = info
        (found.frames, found.duration) = (frames, duration)
        return found
    }

    /// Two costs are counted, each against ``DecodeLimits/maxTotalFramePixels``: decoding, every
    /// frame's rectangle (the scan refuses a file over it), and composing, the whole screen for
    /// each frame shown (composed, resampled, mapped): a thousand one-pixel frames on a
    /// 7000 × 7000 screen cost little to decode and 49 billion pixels to show.
    func framesShown(_ keep: Int) -> (frames: Int, why: String?) {
        let screen = max(1, scan.width * scan.height)
        let (total, overflow) = keep.multipliedReportingOverflow(by: screen)
        guard overflow || total > limits.maxTotalFramePixels else { return (keep, nil) }
        return (
            max(1, min(keep, limits.maxTotalFramePixels / screen)),
            "each frame shown composes the whole \(scan.width)x\(scan.height) screen (max_total_frame_pixels)"
        )
    }

    func workEstimate(frames: Int, output: (width: Int, height: Int), spec: RenditionSpec) -> WorkEstimate {
        let screen = scan.width * scan.height
        let out = output.width * output.height
        let resampled = out != screen
        let nanoseconds =
            decodeNanoseconds + Double(frames) * Double(screen)
            * (WorkEstimate.PerPixel.composite + (resampled ? WorkEstimate.PerPixel.shrink : 0)) + Double(frames)
            * Double(out) * (WorkEstimate.PerPixel.lanczos + WorkEstimate.PerPixel.encode)
        // The screen (indices or RGBA) and a frame's rectangle kept for disposal 3, one frame's
        // indices as decoded, the resampled frame, its indices, the poster, and the file.
        let screenBytes = scan.screenBlank == nil ? 4 : 1
        let memory =
            screen * screenBytes + scan.largestFrame * (screenBytes + 1) + out * (4 * 4 + 1)
            + min(spec.gifMaxBytes, frames * out) + (2 << 20)
        return WorkEstimate(seconds: nanoseconds / 1e9, memory: memory)
    }

    func gif(keep: Int, maxSide: Int, spec: RenditionSpec) throws(AttacheError) -> AnimatedGIF {
        let target = RenditionSpec.fit(width: scan.width, height: scan.height, into: maxSide)
        let decoder = try decoder()
        var screen = GIFScreen(info: scan, target: target)
        // The source's global palette (with its usual transparent slot) becomes the output's.
        var palettes = GIFPalettes(info: scan)
        let writer = try GIFFrameWriter(
            width: target.width, height: target.height, loopCount: scan.loopCount, globalPalette: palettes.global)
        var sourceIndex = 0
        var time = 0
        var poster = GIFPosterChoice(pixels: target.width * target.height)
        while let frame = try decoder.next() {
            try deadline.check()
            defer { sourceIndex += 1 }
            guard AnimationBudget.keeps(sourceIndex, of: scan.frames, keeping: keep) else {
                screen.compositor.draw(frame)
                writer.extendLast(by: frame.delay)
                time += frame.delay
                continue
            }
            let scaled = screen.draw(frame)
            // Compositing and resampling are half a frame's work: look again before mapping.
            try deadline.check()
            let (indices, palette) = palettes.map(
                scaled, frame: frame, exact: screen.resampler == nil, dither: spec.gifDither, target: target)
            try writer.add(indices: indices, source: scaled, palette: palette, delay: frame.delay)
            // The frame is the pending one (merged or not): its output index is the count written.
            poster.consider(scaled, indices: indices, palette: palette, index: writer.framesWritten, time: time)
            time += frame.delay
        }
        let data = try writer.finish()
        let chosen = poster.chosen!
        return AnimatedGIF(
            data: data, width: target.width, height: target.height, frames: writer.framesWritten,
            duration: writer.duration, posterFrame: chosen.index, posterTime: Double(chosen.time) / 100,
            poster: PixelImage(width: target.width, height: target.height, channels: 4, pixels: chosen.image))
    }

    /// Of the frames kept, the first that covers 90% of the screen with opaque pixels, else
    /// the one that covers most (as the GIF made of them chooses): frames are composed until it
    /// is found, and only it is resampled.
    func poster(keep: Int, maxSide: Int) throws(AttacheError) -> AnimationPoster {
        let pixels = scan.width * scan.height
        var best: (frame: Int, time: Int, coverage: Int, image: [UInt8])? = nil
        var (index, kept, time) = (0, 0, 0)
        try forEachFrame { (canvas, delay) throws(AttacheError) in
            try deadline.check()
            defer { (index, time) = (index + 1, time + delay) }
            guard AnimationBudget.keeps(index, of: scan.frames, keeping: keep) else { return true }
            defer { kept += 1 }
            var coverage = 0
            for i in 0..<pixels where canvas[i * 4 + 3] >= 128 { coverage += 1 }
            if best == nil || coverage > best!.coverage {
                best = (kept, time, coverage, Array(UnsafeBufferPointer(start: canvas, count: pixels * 4)))
            }
            return coverage * 10 < pixels * 9
        }
        guard let best else { throw AttacheError(.corruptData, "gif: no frames") }
        let image = PixelImage(width: scan.width, height: scan.height, channels: 4, pixels: best.image)
        let target = RenditionSpec.fit(width: scan.width, height: scan.height, into: maxSide)
        return AnimationPoster(
            image: try ImageProcessor.resampleImage(image, target: target), frame: best.frame,
            time: Double(best.time) / 100)
    }
}
