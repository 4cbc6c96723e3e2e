public import AttacheBase
public import AttacheWork

/// What a GIF holds, from a scan of its records (no pixel is decoded).
public struct GIFInfo: Hashable, Sendable {
    public var width: Int
    public var height: Int
    public var frames: Int
    /// NETSCAPE2.0 loop count (0 = forever), nil = play once.
    public var loopCount: Int?
    /// Total duration in centiseconds, delays as browsers play them.
    public var duration: Int
    /// Pixels summed over every frame's rectangle (what decoding them costs), and the largest
    /// rectangle's.
    public var framePixels: Int = 0
    public var largestFrame: Int = 0
    /// The global palette (RGB triples; empty when none).
    var globalPalette: [UInt8] = []
    /// The transparent index most frames using the global palette declare.
    var globalTransparent: Int? = nil
    /// When every frame uses the global palette: an index no frame draws (their common
    /// transparent index, or one past the palette's colours), so the screen can be kept as
    /// indices with it standing for transparent. Nil otherwise.
    var screenBlank: UInt8? = nil
}

extension GIFCompositor {
    /// The screen a scanned GIF needs: indexed when its frames allow, else RGBA.
    init(screenOf info: GIFInfo) {
        if let blank = info.screenBlank {
            self.init(width: info.width, height: info.height, palette: info.globalPalette, blank: blank)
        } else {
            self.init(width: info.width, height: info.height)
        }
    }
}

extension ImageProcessor {
    /// Scans a GIF's records: size, frame count, loop, duration, with every limit checked and
    /// no pixel decoded.
    public static func scanGIF(
        _ bytes: MediaBytes, limits: DecodeLimits = .default, allowPartial: Bool = false,
        deadline: WorkDeadline = .none
    ) throws(AttacheError) -> GIFInfo {
        let decoder = try GIFDecoder(bytes: bytes, limits: limits, allowPartial: allowPartial, deadline: deadline)
        var frames = 0
        var duration = 0
        var framePixels = 0
        var largestFrame = 0
        var transparentVotes: [Int: Int] = [:]
        var onePalette = !decoder.globalPalette.isEmpty
        var sharedTransparent: Int?? = .none
        while let frame = try decoder.next(pixels: false) {
            if frames & 63 == 0 { try deadline.check() }
            frames += 1
            duration += frame.delay
            framePixels += frame.width * frame.height
            largestFrame = max(largestFrame, frame.width * frame.height)
            if frame.palette == decoder.globalPalette {
                transparentVotes[frame.transparent ?? -1, default: 0] += 1
            } else {
                onePalette = false
            }
            if sharedTransparent == .none {
                sharedTransparent = frame.transparent
            } else if sharedTransparent != frame.transparent {
                sharedTransparent = .some(nil)
            }
        }
        guard frames > 0 else { throw AttacheError(.corruptData, "gif: no frames") }
        let transparent = transparentVotes.max { $0.value < $1.value }?.key
        let colors = decoder.globalPalette.count / 3
        var blank: UInt8?
        if onePalette {
            if case .some(.some(let shared)) = sharedTransparent {
                blank = UInt8(shared)
            } else if colors < 256 {
                blank = UInt8(colors)
            }
        }
        return GIFInfo(
            width: decoder.width, height: decoder.height, frames: frames, loopCount: decoder.loopCount,
            duration: duration, framePixels: framePixels, largestFrame: largestFrame,
            globalPalette: decoder.globalPalette,
            globalTransparent: transparent == -1 ? nil : transparent, screenBlank: blank)
    }

    /// Composited frames at the screen size (RGBA), the first `limit` of them, for tests and tools.
    static func compositeGIF(
        _ bytes: MediaBytes, limits: DecodeLimits = .default, limit: Int = .max
    )
        throws(AttacheError) -> [PixelImage]
    {
        let decoder = try GIFDecoder(bytes: bytes, limits: limits)
        var compositor = GIFCompositor(width: decoder.width, height: decoder.height)
        var out: [PixelImage] = []
        while out.count < limit, let frame = try decoder.next() {
            compositor.draw(frame)
            out.append(PixelImage(width: decoder.width, height: decoder.height, channels: 4, pixels: compositor.canvas))
        }
        return out
    }
}

extension ImageProcessor {
    /// One RGBA image as a one-frame GIF: a median-cut palette (with a transparent slot when
    /// the image has transparency).
    static func stillGIF(_ image: PixelImage) throws(AttacheError) -> [UInt8] {
        guard image.channels == 4 else { throw AttacheError(.internalError, "a still GIF is made from RGBA pixels") }
        let (indices, palette) = GIFPalette.quantize(
            image.pixels, target: (image.width, image.height), dither: false)
        let writer = try GIFFrameWriter(width: image.width, height: image.height, loopCount: nil, globalPalette: nil)
        try writer.add(indices: indices, source: image.pixels, palette: palette, delay: 0)
        return try writer.finish()
    }
}

/// The GIF's screen as frames are drawn on it, and the resampler that takes its rows to the
/// output size as they are drawn (none when the size stays).
struct GIFScreen {
    var compositor: GIFCompositor
    let resampler: Resampler?
    /// Premultiplied colours of an indexed screen, for the resampler.
    private var colors = [SIMD4<Float>](repeating: .zero, count: 256)

    init(info: GIFInfo, target: (width: Int, height: Int)) {
        compositor = GIFCompositor(screenOf: info)
        for i in 0..<min(info.globalPalette.count / 3, 256) where i != info.screenBlank.map(Int.init) {
            let p = info.globalPalette
            colors[i] = SIMD4(Float(p[i * 3]), Float(p[i * 3 + 1]), Float(p[i * 3 + 2]), 255)
        }
        resampler =
            target.width == info.width && target.height == info.height
            ? nil
            : Resampler(
                inWidth: info.width, inHeight: info.height, outWidth: target.width, outHeight: target.height,
                channels: 4, lanczosReserve: 1)
    }

    /// Draws `frame` and returns the screen at the output size (RGBA).
    mutating func draw(_ frame: GIFSourceFrame) -> [UInt8] {
        guard let resampler else {
            compositor.draw(frame)
            return compositor.rgba
        }
        // Each screen row goes to the resampler as soon as it is drawn.
        resampler.reset()
        if compositor.blank != nil {
            colors.withUnsafeBufferPointer { colors in
                compositor.draw(frame) { resampler.push(indices: $0, colors: colors.baseAddress!) }
            }
        } else {
            compositor.draw(frame, rows: resampler.push)
        }
        return resampler.output
    }
}

/// The palettes frames are mapped to: each frame's own (the last 16 kept, by their colours and
/// transparent slot), or one built for a frame its own cannot show.
struct GIFPalettes {
    let global: GIFPalette?
    private var cache: [[UInt8]: GIFPalette] = [:]

    init(info: GIFInfo) {
        global =
            info.globalPalette.isEmpty
            ? nil : GIFPalette(source: info.globalPalette, transparent: info.globalTransparent)
        if let global { cache[Self.key(info.globalPalette, transparent: info.globalTransparent)] = global }
    }

    static func key(_ colors: [UInt8], transparent: Int?) -> [UInt8] {
        colors + [UInt8(truncatingIfNeeded: transparent ?? 999), transparent == nil ? 1 : 0]
    }

    /// The frame's pixels (`scaled`, RGBA at `target`) as indices into the palette chosen for it.
    mutating func map(
        _ scaled: [UInt8], frame: GIFSourceFrame, exact: Bool, dither: Bool, target: (width: Int, height: Int)
    ) -> (indices: [UInt8], palette: GIFPalette) {
        let pixels = target.width * target.height
        let key = Self.key(frame.palette, transparent: frame.transparent)
        let source = cache[key] ?? GIFPalette(source: frame.palette, transparent: frame.transparent)
        if cache.count >= 16 { cache.removeAll() }
        cache[key] = source
        var indices = [UInt8](repeating: 0, count: pixels)
        func map(_ palette: GIFPalette) -> Double {
            scaled.withUnsafeBufferPointer { rgba in
                indices.withUnsafeMutableBufferPointer {
                    palette.map(rgba.baseAddress!, count: pixels, into: $0.baseAddress!, exact: exact)
                }
            }
        }
        var chosen = source
        let error = map(source)
        // The frame's own palette cannot show what the screen holds (colours restored from
        // other frames, or a small local palette): build one for this frame instead.
        if error > 64 {
            let built = scaled.withUnsafeBufferPointer { GIFPalette.medianCut($0.baseAddress!, count: pixels) }
            if map(built) < error {
                chosen = built
            } else {
                _ = map(source)
            }
        }
        if dither {
            scaled.withUnsafeBufferPointer { rgba in
                indices.withUnsafeMutableBufferPointer {
                    chosen.mapDithered(
                        rgba.baseAddress!, width: target.width, height: target.height, into: $0.baseAddress!)
                }
            }
        }
        return (indices, chosen)
    }
}

/// The poster of an animation made a GIF: the first frame that covers 90% of the picture with
/// opaque pixels, else the one that covers most.
struct GIFPosterChoice {
    let pixels: Int
    private(set) var chosen: (index: Int, time: Int, coverage: Int, image: [UInt8])?

    init(pixels: Int) { self.pixels = pixels }

    mutating func consider(_ scaled: [UInt8], indices: [UInt8], palette: GIFPalette, index: Int, time: Int) {
        // Coverage matters only until a frame covering 90% has been found.
        if let chosen, chosen.coverage * 10 >= pixels * 9 { return }
        var coverage = 0
        scaled.withUnsafeBufferPointer { rgba in
            for i in 0..<pixels where rgba[i * 4 + 3] >= 128 { coverage += 1 }
        }
        if let chosen, coverage <= chosen.coverage { return }
        var shown = [UInt8](repeating: 0, count: pixels * 4)
        shown.withUnsafeMutableBufferPointer { out in
            for i in 0..<pixels { palette.rgba(indices[i], into: out.baseAddress! + i * 4) }
        }
        chosen = (index, time, coverage, shown)
    }
}
