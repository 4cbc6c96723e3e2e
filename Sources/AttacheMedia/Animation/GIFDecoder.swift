internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// One source frame as stored: its rectangle, palette indices and control data.
struct GIFSourceFrame {
    var left: Int
    var top: Int
    var width: Int
    var height: Int
    /// RGB triples.
    var palette: [UInt8]
    var transparent: Int?
    var disposal: Int
    /// Delay as browsers play it, in centiseconds (0 and 1 become 10).
    var delay: Int
    var indices: [UInt8]
}

/// Reads a GIF frame by frame through giflib's record API, checking every descriptor against
/// the limits before its pixels are allocated.
final class GIFDecoder {
    private let decoder: OpaquePointer
    private let bytes: MediaBytes
    let width: Int
    let height: Int
    /// NETSCAPE2.0 loop count (0 = forever); nil when absent (play once).
    private(set) var loopCount: Int?
    let globalPalette: [UInt8]
    private let limits: DecodeLimits
    private let allowPartial: Bool
    private(set) var framesRead = 0
    private var totalPixels = 0
    /// Set when a truncation ended the file early and partial results were allowed.
    private(set) var truncated = false

    /// Checked every 64 rows while a frame's pixels are decoded (a frame may hold 50 MP).
    private let deadline: WorkDeadline

    /// Opens a GIF and checks its screen against `limits`; with `allowPartial` a file cut
    /// after its first frame ends early instead of failing with `truncated`. `deadline` is
    /// checked every 64 rows of a frame.
    init(
        bytes: MediaBytes, limits: DecodeLimits, allowPartial: Bool = false, deadline: WorkDeadline = .none
    ) throws(AttacheError) {
        var screen = att_gif_screen()
        var error = att_error()
        guard let decoder = att_gif_open(bytes.buffer.baseAddress, bytes.count, &screen, &error) else {
            throw AttacheError(shim: error, format: "gif")
        }
        self.decoder = decoder
        self.bytes = bytes
        width = Int(screen.width)
        height = Int(screen.height)
        self.limits = limits
        self.allowPartial = allowPartial
        self.deadline = deadline
        globalPalette = withUnsafeBytes(of: screen.palette) { Array($0.prefix(Int(screen.colors) * 3)) }
        // Once every property is set a throwing init still runs deinit, which closes the file.
        try limits.check(width: width, height: height)
    }

    deinit { att_gif_close(decoder) }

    /// The next frame, or nil after the last one. With `pixels` false the frame's data is
    /// skipped undecoded (its `indices` are empty): a scan for counts and budgets.
    func next(pixels: Bool = true) throws(AttacheError) -> GIFSourceFrame? {
        var frame = att_gif_frame()
        var error = att_error()
        var loop = Int32(-1)
        let status = att_gif_next_frame(decoder, &frame, &loop, &error)
        if loop >= 0 { loopCount = Int(loop) }
        if status == 0 { return nil }
        if status < 0 {
            let failure = AttacheError(shim: error, format: "gif")
            if failure.code == .truncated && allowPartial && framesRead > 0 {
                truncated = true
                return nil
            }
            throw failure
        }
        let w = Int(frame.width)
        let h = Int(frame.height)
        guard w > 0, h > 0 else { throw AttacheError(.corruptData, "gif: frame \(framesRead + 1) is \(w)x\(h)") }
        guard framesRead < limits.maxFrames else {
            throw AttacheError(.tooManyFrames, "gif: more than \(limits.maxFrames) frames", limit: .maxFrames)
        }
        // One frame is held as indices while it is decoded: as large as a still may be, at most.
        guard w * h <= limits.maxPixels else {
            throw AttacheError(
                .tooManyPixels,
                "gif: frame \(framesRead + 1) is \(w)x\(h), over the pixel limit of \(limits.maxPixels)",
                limit: .maxPixels)
        }
        totalPixels += w * h
        guard w <= 65_535, h <= 65_535, totalPixels <= limits.maxTotalFramePixels else {
            throw AttacheError(
                .tooManyPixels, "gif: frames add up to more than \(limits.maxTotalFramePixels) pixels",
                limit: .maxTotalFramePixels)
        }
        var indices = [UInt8](repeating: 0, count: pixels ? w * h : 0)
        let read =
            pixels
            ? indices.withUnsafeMutableBufferPointer { buffer in
                att_gif_read_pixels(
                    decoder, buffer.baseAddress,
                    { context in
                        let deadline = Unmanaged<WorkDeadline>.fromOpaque(context!).takeUnretainedValue()
                        return (try? deadline.check()) == nil ? 1 : 0
                    }, Unmanaged.passUnretained(deadline).toOpaque(), &error)
            }
            : att_gif_skip_pixels(decoder, &error)
        if read != 0 {
            let failure = AttacheError(shim: error, format: "gif")
            if failure.code == .truncated && allowPartial && framesRead > 0 {
                truncated = true
                return nil
            }
            throw failure
        }
        framesRead += 1
        let local = withUnsafeBytes(of: frame.palette) { Array($0.prefix(Int(frame.colors) * 3)) }
        let delay = Int(frame.delay_cs)
        return GIFSourceFrame(
            left: Int(frame.left), top: Int(frame.top), width: w, height: h,
            palette: !local.isEmpty ? local : !globalPalette.isEmpty ? globalPalette : Self.grayRamp,
            transparent: frame.transparent >= 0 ? Int(frame.transparent) : nil, disposal: Int(frame.disposal),
            delay: delay <= 1 ? 10 : delay, indices: indices)
    }

    /// The palette of a frame that has neither a local nor a global one.
    static let grayRamp: [UInt8] = (0..<256).flatMap { [UInt8($0), UInt8($0), UInt8($0)] }
}

/// Draws frames onto the logical screen as a browser does: transparent pixels leave what is
/// below, disposal 2 clears the frame's rectangle to transparent, disposal 3 restores the
/// screen as it was before the frame; parts of a frame outside the screen are clipped.
///
/// When every frame uses one palette the screen is kept as palette indices (one byte a
/// pixel, `blank` standing for transparent), which is a quarter of the memory traffic of RGBA;
/// otherwise as RGBA.
struct GIFCompositor {
    let width: Int
    let height: Int
    /// The index that stands for a transparent pixel on an indexed screen; nil for RGBA.
    let blank: UInt8?
    /// The palette of an indexed screen (RGB triples).
    let palette: [UInt8]
    /// RGBA (alpha 0 or 255), or palette indices when `blank` is set.
    private(set) var canvas: [UInt8]
    private var saved: [UInt8] = []
    private var pending: (disposal: Int, left: Int, top: Int, right: Int, bottom: Int)?

    /// An RGBA screen.
    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        blank = nil
        palette = []
        canvas = [UInt8](repeating: 0, count: width * height * 4)
    }

    /// An indexed screen for frames that all use `palette`; `blank` must be an index no frame
    /// draws (their common transparent index, or one past the palette's colours).
    init(width: Int, height: Int, palette: [UInt8], blank: UInt8) {
        self.width = width
        self.height = height
        self.blank = blank
        self.palette = palette
        canvas = [UInt8](repeating: blank, count: width * height)
    }

    /// Bytes per screen pixel.
    var pixelBytes: Int { blank == nil ? 4 : 1 }

    /// The screen as RGBA.
    var rgba: [UInt8] {
        guard let blank else { return canvas }
        let table = Self.words(palette, transparent: Int(blank))
        var out = [UInt8](repeating: 0, count: width * height * 4)
        out.withUnsafeMutableBytes { raw in
            let dst = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
            canvas.withUnsafeBufferPointer { src in
                for i in 0..<src.count { dst[i] = table[Int(src[i])] }
            }
        }
        return out
    }

    /// A palette (RGB triples) as 256 little-endian RGBA words; the transparent index and
    /// indices past the palette are 0 (alpha 0).
    static func words(_ palette: [UInt8], transparent: Int?) -> [UInt32] {
        var table = [UInt32](repeating: 0, count: 256)
        for i in 0..<min(palette.count / 3, 256) where i != transparent {
            table[i] =
                UInt32(palette[i * 3]) | UInt32(palette[i * 3 + 1]) << 8 | UInt32(palette[i * 3 + 2]) << 16
                | 0xFF00_0000
        }
        return table
    }

    /// Applies the previous frame's disposal, then draws `frame`.
    mutating func draw(_ frame: GIFSourceFrame) {
        draw(frame, rows: nil)
    }

    /// Applies the previous frame's disposal, draws `frame`, and hands every row of the
    /// screen, top to bottom, to `rows` as soon as it is final (while it is still in cache).
    mutating func draw(_ frame: GIFSourceFrame, rows: ((UnsafePointer<UInt8>) -> Void)?) {
        let bytes = pixelBytes
        if let pending {
            switch pending.disposal {
            case 2:
                let fill = blank ?? 0
                canvas.withUnsafeMutableBufferPointer { canvas in
                    for y in pending.top..<pending.bottom {
                        let start = (y * width + pending.left) * bytes
                        (canvas.baseAddress! + start).update(
                            repeating: fill, count: (pending.right - pending.left) * bytes)
                    }
                }
            case 3:
                let rowBytes = (pending.right - pending.left) * bytes
                if rowBytes > 0, saved.count == rowBytes * (pending.bottom - pending.top) {
                    canvas.withUnsafeMutableBufferPointer { canvas in
                        saved.withUnsafeBufferPointer { saved in
                            for y in pending.top..<pending.bottom {
                                (canvas.baseAddress! + (y * width + pending.left) * bytes).update(
                                    from: saved.baseAddress! + (y - pending.top) * rowBytes, count: rowBytes)
                            }
                        }
                    }
                }
            default:
                break
            }
        }
        let left = max(0, frame.left)
        let top = max(0, frame.top)
        let right = min(width, frame.left + frame.width)
        let bottom = min(height, frame.top + frame.height)
        pending = (frame.disposal, left, top, max(left, right), max(top, bottom))
        if frame.disposal == 3 {
            // Only the frame's rectangle is restored, so only it is kept: a whole screen copied
            // for each frame would make a many-frame GIF on a large screen cost screen × frames.
            saved.removeAll(keepingCapacity: true)
            canvas.withUnsafeBufferPointer { canvas in
                for y in top..<max(top, bottom) {
                    let start = (y * width + left) * bytes
                    saved.append(
                        contentsOf: UnsafeBufferPointer(
                            start: canvas.baseAddress! + start, count: max(0, right - left) * bytes))
                }
            }
        }
        let drawn = right > left && bottom > top
        let rowRange = rows == nil ? top..<max(top, bottom) : 0..<height
        if blank != nil {
            drawIndexed(frame, drawn: drawn, rect: (left, top, right, bottom), rowRange: rowRange, rows: rows)
            return
        }
        // Out-of-range and transparent indices are marked (alpha 0) and skipped, leaving what
        // is below.
        let table = Self.words(frame.palette, transparent: frame.transparent)
        let screenWidth = width
        frame.indices.withUnsafeBufferPointer { indices in
            table.withUnsafeBufferPointer { table in
                canvas.withUnsafeMutableBytes { raw in
                    let canvas = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
                    let table = table.baseAddress!
                    for y in rowRange {
                        let dst = canvas + y * screenWidth
                        if drawn && y >= top && y < bottom {
                            let src = indices.baseAddress! + (y - frame.top) * frame.width - frame.left
                            // Branch-free: dithered frames flip between drawn and transparent
                            // pixels too often for a branch to be predicted.
                            for x in left..<right {
                                let color = table[Int(src[x])]
                                let keep = UInt32(0) &- (color >> 31 ^ 1)
                                dst[x] = color | (dst[x] & keep)
                            }
                        }
                        rows?(UnsafeRawPointer(dst).assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
    }

    /// Draws on an indexed screen: a pixel is kept from below when its index is the frame's
    /// transparent one or past the palette's colours, sixteen pixels at a time.
    private mutating func drawIndexed(
        _ frame: GIFSourceFrame, drawn: Bool, rect: (left: Int, top: Int, right: Int, bottom: Int),
        rowRange: Range<Int>, rows: ((UnsafePointer<UInt8>) -> Void)?
    ) {
        let colors = min(frame.palette.count / 3, 256)
        let limit = SIMD16<UInt8>(repeating: UInt8(truncatingIfNeeded: colors))
        let transparentIndex = UInt8(truncatingIfNeeded: frame.transparent ?? 0)
        let transparent = SIMD16<UInt8>(repeating: transparentIndex)
        let hasTransparent = frame.transparent != nil
        let screenWidth = width
        frame.indices.withUnsafeBufferPointer { indices in
            canvas.withUnsafeMutableBufferPointer { canvas in
                for y in rowRange {
                    let dst = canvas.baseAddress! + y * screenWidth
                    if drawn && y >= rect.top && y < rect.bottom {
                        let src = indices.baseAddress! + (y - frame.top) * frame.width - frame.left
                        var x = rect.left
                        while x + 16 <= rect.right {
                            let s = UnsafeRawPointer(src + x).loadUnaligned(as: SIMD16<UInt8>.self)
                            let d = UnsafeRawPointer(dst + x).loadUnaligned(as: SIMD16<UInt8>.self)
                            var keep = colors < 256 ? s .>= limit : SIMDMask<SIMD16<Int8>>(repeating: false)
                            if hasTransparent {
                                keep .|= s .== transparent
                            }
                            UnsafeMutableRawPointer(dst + x).storeBytes(
                                of: s.replacing(with: d, where: keep), as: SIMD16<UInt8>.self)
                            x += 16
                        }
                        while x < rect.right {
                            let i = src[x]
                            if Int(i) < colors && !(hasTransparent && i == transparentIndex) { dst[x] = i }
                            x += 1
                        }
                    }
                    rows?(UnsafePointer(dst))
                }
            }
        }
    }
}
