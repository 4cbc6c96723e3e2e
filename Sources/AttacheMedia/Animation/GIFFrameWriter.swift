internal import AttacheBase
internal import CAttacheCodecs

/// Writes output frames to giflib with one frame of lookahead, so each frame is optimised
/// against what a viewer already shows: cropped to the rectangle that changed, unchanged
/// pixels inside it made transparent, identical frames merged (delays summed), and a frame
/// that must turn pixels transparent preceded by a clearing disposal.
final class GIFFrameWriter {
    let width: Int
    let height: Int
    private let encoder: OpaquePointer
    /// What a viewer shows after the frames written or pending (RGBA).
    private var shown: [UInt8]
    private var pending: Pending?
    private(set) var framesWritten = 0
    private(set) var duration = 0

    private struct Pending {
        /// What the frame writes: its index where it changes the screen, the transparent
        /// index (when it has one) where it does not.
        var indices: [UInt8]
        var palette: GIFPalette
        var delay: Int
        var rect: (x: Int, y: Int, w: Int, h: Int)
        var disposal: Int
    }

    /// The palette written once as the global one; frames with the same colours use it.
    private let globalColors: [UInt8]?

    init(width: Int, height: Int, loopCount: Int?, globalPalette: GIFPalette?) throws(AttacheError) {
        self.width = width
        self.height = height
        globalColors = globalPalette?.colors
        var error = att_error()
        let encoder = (globalPalette?.colors ?? []).withUnsafeBufferPointer { colors in
            att_gif_encoder_new(
                Int32(width), Int32(height), Int32(loopCount ?? -1), globalPalette == nil ? nil : colors.baseAddress,
                Int32(globalPalette?.count ?? 0), &error)
        }
        guard let encoder else {
            throw AttacheError(.encodeFailed, "gif: cannot start the encoder")
        }
        self.encoder = encoder
        shown = [UInt8](repeating: 0, count: width * height * 4)
    }

    deinit { att_gif_encoder_free(encoder) }

    /// Adds the delay of a dropped frame to the last frame.
    func extendLast(by delay: Int) {
        pending?.delay += delay
        duration += delay
    }

    /// Adds a frame: its palette indices over the whole screen and the RGBA they came from.
    /// A pixel whose source colour is what the viewer already shows is left unchanged (drawn
    /// transparent), so colours the frame's palette cannot express exactly do not drift.
    func add(indices: [UInt8], source: [UInt8], palette: GIFPalette, delay: Int) throws(AttacheError) {
        let pixels = width * height
        // A pixel that must become transparent where one is shown needs the last frame to
        // clear the screen when it is disposed.
        var needsClear = false
        if pending != nil {
            needsClear = source.withUnsafeBufferPointer { source in
                shown.withUnsafeBufferPointer { shown in
                    for i in 0..<pixels where source[i * 4 + 3] < 128 && shown[i * 4 + 3] != 0 { return true }
                    return false
                }
            }
        }
        if needsClear {
            pending!.disposal = 2
            pending!.rect = (0, 0, width, height)
            shown = [UInt8](repeating: 0, count: pixels * 4)
        }
        var (written, (minX, minY, maxX, maxY)) = draw(indices: indices, source: source, palette: palette)
        if maxX < 0 && pending != nil && !needsClear {
            pending!.delay += delay
            duration += delay
            return
        }
        if maxX < 0 {
            (minX, minY, maxX, maxY) = (0, 0, 0, 0)
        }
        try flush()
        let rect =
            framesWritten == 0 ? (0, 0, width, height) : (minX, minY, maxX - minX + 1, maxY - minY + 1)
        pending = Pending(indices: written, palette: palette, delay: delay, rect: rect, disposal: 1)
        duration += delay
    }

    /// Draws the frame over what is shown: a pixel that stays as it is shown is written
    /// transparent (where the palette has a slot for it). The indices to write, and the
    /// rectangle that changed (maxX < 0: none).
    private func draw(
        indices: [UInt8], source: [UInt8], palette: GIFPalette
    ) -> (written: [UInt8], changed: (minX: Int, minY: Int, maxX: Int, maxY: Int)) {
        let canSkip = palette.transparent != nil
        var written = indices
        let blank = UInt8(truncatingIfNeeded: palette.transparent ?? 0)
        var minX = width
        var minY = height
        var maxX = -1
        var maxY = -1
        let table = GIFCompositor.words(palette.colors, transparent: palette.transparent)
        let (width, height) = (self.width, self.height)
        // What is shown is updated in place (pixel i is read before it is written).
        shown.withUnsafeMutableBytes { shownRaw in
            source.withUnsafeBytes { sourceRaw in
                indices.withUnsafeBufferPointer { indices in
                    table.withUnsafeBufferPointer { table in
                        written.withUnsafeMutableBufferPointer { written in
                            let screen = shownRaw.baseAddress!.assumingMemoryBound(to: UInt32.self)
                            let src = sourceRaw.baseAddress!.assumingMemoryBound(to: UInt32.self)
                            for y in 0..<height {
                                var first = width
                                var last = -1
                                for x in 0..<width {
                                    let i = y * width + x
                                    let s = src[i]
                                    let o = screen[i]
                                    let opaque = s >> 24 >= 128
                                    let drawn = table[Int(indices[i])]
                                    // Unchanged: transparent over transparent, (when the frame can
                                    // draw transparent) the same opaque colour, or what is drawn
                                    // is what is shown. Branch-free: photos change at random.
                                    let same =
                                        (!opaque && o >> 24 == 0)
                                        || (canSkip && opaque && o >> 24 == 255 && (s | 0xFF00_0000) == o)
                                        || drawn == o
                                    screen[i] = same ? o : drawn
                                    written[i] = same && canSkip ? blank : written[i]
                                    first = same ? first : min(first, x)
                                    last = same ? last : x
                                }
                                if last >= 0 {
                                    minX = min(minX, first)
                                    maxX = max(maxX, last)
                                    minY = min(minY, y)
                                    maxY = y
                                }
                            }
                        }
                    }
                }
            }
        }
        return (written, (minX, minY, maxX, maxY))
    }

    /// Writes the pending frame.
    private func flush() throws(AttacheError) {
        guard let frame = pending else { return }
        pending = nil
        let (x0, y0, w, h) = frame.rect
        let transparent = frame.palette.transparent
        var cropped = [UInt8](repeating: 0, count: w * h)
        cropped.withUnsafeMutableBufferPointer { cropped in
            frame.indices.withUnsafeBufferPointer { indices in
                for y in 0..<h {
                    (cropped.baseAddress! + y * w).update(from: indices.baseAddress! + (y0 + y) * width + x0, count: w)
                }
            }
        }
        var error = att_error()
        let local = frame.palette.colors != globalColors
        let status = cropped.withUnsafeBufferPointer { pixels in
            frame.palette.colors.withUnsafeBufferPointer { colors in
                att_gif_encoder_add(
                    encoder, Int32(x0), Int32(y0), Int32(w), Int32(h), pixels.baseAddress,
                    local ? colors.baseAddress : nil,
                    Int32(frame.palette.count), Int32(min(frame.delay, 65_535)), Int32(frame.disposal),
                    Int32(transparent ?? -1), &error)
            }
        }
        guard status == 0 else { throw AttacheError(shim: error, format: "gif encode") }
        framesWritten += 1
    }

    /// Writes the last frame and the trailer.
    func finish() throws(AttacheError) -> [UInt8] {
        try flush()
        var error = att_error()
        var size = 0
        guard let bytes = att_gif_encoder_finish(encoder, &size, &error) else {
            throw AttacheError(.encodeFailed, "gif: cannot finish the file")
        }
        defer { att_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: size))
    }
}
