internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// A HEIC or AVIF still (the file's primary image) decoded by libheif, one tile at a time.
///
/// libheif reads the boxes with the limits set first (pixels, tiles, allocation sizes), so a
/// file that declares a huge image is refused before any pixel buffer exists. A grid image (an
/// iPhone's 48 MP photo is 192 tiles of 512×512) is decoded a tile at a time, a row of tiles
/// assembled in a strip and streamed into the resampler: memory is a strip, not the photo.
/// Tiles are decoded as stored; cropping (`clap`) is applied as rows stream, rotation and
/// mirroring (`irot`, `imir`) to the downscaled output, as EXIF orientation is for a JPEG.
/// Thumbnails and auxiliary images (depth, gain maps) are not decoded. 10-
/// and 12-bit images come out as 8 bits. The deadline is checked between tiles and polled by
/// libheif's decoders during one.
final class HEIFDecoder: StillDecoder {
    private let handle: OpaquePointer
    /// Kept alive: libheif reads from its memory until closed.
    private let bytes: MediaBytes
    let deadline: WorkDeadline
    private let kind: MediaKind
    private let header: att_heif_header
    /// Width and height as stored (the grid's output size).
    let width: Int
    let height: Int
    /// The stored pixels a `clap` box keeps: columns and rows.
    private let columnsKept: Range<Int>
    private let rowsKept: Range<Int>
    /// The turns of `irot` and `imir`, composed.
    let orientation: Orientation
    let hasAlpha: Bool
    /// The conversion to sRGB from the embedded profile, or from the `nclx` box's primaries.
    let colour: ColourProfile?

    init(bytes: MediaBytes, kind: MediaKind, limits: DecodeLimits, deadline: WorkDeadline) throws(AttacheError) {
        var header = att_heif_header()
        var error = att_error()
        // libheif's own pixel limit is the square of the dimension limit (a backstop that refuses
        // a declared bomb while reading the boxes); the pixel limit proper is checked below,
        // from the same boxes, with its own error.
        let side = UInt64(limits.maxDimension)
        let cLimits = att_heif_limits(
            max_pixels: side * side, max_memory: UInt64(limits.maxDecoderMemory),
            max_tiles: UInt64(max(1, limits.maxTiles)),
            deadline: deadline.pointer, av1: kind == .avif ? 1 : 0)
        guard
            let handle = att_heif_open(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, cLimits, &header, &error)
        else { throw AttacheError(shim: error, format: kind.rawValue) }
        self.handle = handle
        self.bytes = bytes
        self.deadline = deadline
        self.kind = kind
        self.header = header
        width = Int(header.width)
        height = Int(header.height)
        hasAlpha = header.has_alpha != 0
        colour = Self.colour(header, channels: header.has_alpha != 0 ? 4 : 3)
        orientation = withUnsafeBytes(of: header.step) { raw in
            Orientation.composing(raw.bindMemory(to: Int32.self).prefix(Int(header.steps)).map(Int.init))
        }
        // Every stored property is set before the first check that can throw, so a refusal
        // still runs deinit (which closes libheif's handle).
        let (left, top) = (Int(header.crop_left), Int(header.crop_top))
        let (right, bottom) = (width - Int(header.crop_right), height - Int(header.crop_bottom))
        let cropped = left >= 0 && top >= 0 && left < right && top < bottom && right <= width && bottom <= height
        (columnsKept, rowsKept) = cropped ? (left..<right, top..<bottom) : (0..<0, 0..<0)
        try limits.check(width: width, height: height)
        guard header.unknown_step == 0, header.crop_after_turn == 0 else {
            throw AttacheError(.unsupportedVariant, "\(kind.rawValue): a transformation other than crop, turn, mirror")
        }
        guard cropped else { throw AttacheError(.corruptData, "\(kind.rawValue): the crop leaves no pixels") }
        guard header.tile_columns > 0, header.tile_rows > 0, header.tile_width > 0, header.tile_height > 0 else {
            throw AttacheError(.corruptData, "\(kind.rawValue): the image has no tiles")
        }
        try limits.checkDecoderMemory(decoderMemory, what: "\(kind.rawValue) tile and strip")
    }

    deinit { att_heif_close(handle) }

    var channels: Int { hasAlpha ? 4 : 3 }

    /// What one tile's decode holds at once: the codec's pictures (its output and reference
    /// pool: three times the coded planes, measured with libheif 1.19 and dav1d at 7.1 bytes a
    /// pixel for 8-bit 4:2:0 and 12.9 for 4:4:4), the converted RGB, and the strip a row of
    /// tiles is assembled in when there is more than one column.
    func heldBytes(for target: (width: Int, height: Int)) -> Int { decoderMemory }
    static var decodeCost: Double { WorkEstimate.PerPixel.heifDecode }

    private var decoderMemory: Int {
        let tilePixels = Int(header.tile_width) * Int(header.tile_height)
        let sampleBytes = header.bit_depth > 8 ? 2 : 1
        let planes: Int
        switch header.chroma {
        case 420: planes = tilePixels * 3 / 2
        case 422: planes = tilePixels * 2
        case 400: planes = tilePixels
        default: planes = tilePixels * 3
        }
        let alpha = hasAlpha ? tilePixels : 0
        let strip = header.tile_columns > 1 ? width * Int(header.tile_height) * channels : 0
        return (planes + alpha) * sampleBytes * 3 + tilePixels * channels + strip
    }

    /// An sRGB conversion from the file's ICC profile, or a profile made from its `nclx` code
    /// points when they are not sRGB's (Display P3, BT.2020).
    private static func colour(_ header: att_heif_header, channels: Int) -> ColourProfile? {
        if let icc = header.icc, header.icc_length > 0 {
            return ColourProfile.make(profile: icc, length: header.icc_length, channels: channels)
        }
        return ColourProfile.make(
            primaries: Int(header.primaries), transfer: Int(header.transfer),
            xy: withUnsafeBytes(of: header.primaries_xy) { Array($0.bindMemory(to: Double.self)) }, channels: channels)
    }

    /// Decodes every tile, top to bottom, pushing the kept part of each row into `sink`.
    func decodeRows(into sink: inout some RowSink) throws(AttacheError) {
        let (columns, rows) = (Int(header.tile_columns), Int(header.tile_rows))
        let (tileWidth, tileHeight) = (Int(header.tile_width), Int(header.tile_height))
        let rowBytes = width * channels
        let skip = columnsKept.lowerBound * channels
        guard columns * tileWidth >= columnsKept.upperBound, rows * tileHeight >= rowsKept.upperBound else {
            throw AttacheError(
                .corruptData,
                "\(kind.rawValue): the grid's tiles cover \(columns * tileWidth)x\(rows * tileHeight), less than its "
                    + "\(width)x\(height)")
        }
        // One column of tiles (an image coded whole) streams from libheif's own buffer.
        let strip: UnsafeMutablePointer<UInt8>? = columns > 1 ? .allocate(capacity: rowBytes * tileHeight) : nil
        defer { strip?.deallocate() }
        var error = att_error()
        for row in 0..<rows {
            // The kept rows this row of tiles covers.
            let firstY = row * tileHeight
            let from = max(rowsKept.lowerBound, firstY)
            let to = min(rowsKept.upperBound, firstY + tileHeight)
            guard from < to else { continue }
            var lent: (pixels: UnsafePointer<UInt8>, stride: Int)? = nil
            for column in 0..<columns {
                let firstX = column * tileWidth
                let x0 = max(columnsKept.lowerBound, firstX)
                let x1 = min(columnsKept.upperBound, firstX + tileWidth)
                guard x0 < x1 else { continue }
                try deadline.check()
                var pixels: UnsafePointer<UInt8>? = nil
                var stride = 0
                var w: Int32 = 0
                var h: Int32 = 0
                let status = att_heif_decode_tile(
                    handle, UInt32(column), UInt32(row), Int32(channels), &pixels, &stride, &w, &h, &error)
                guard status == 0, let pixels else { throw AttacheError(shim: error, format: kind.rawValue) }
                // Every tile of a grid has the grid's tile size (ISO/IEC 23008-12 6.6.2.3.1).
                guard Int(h) >= to - firstY, Int(w) >= x1 - firstX,
                    columns * rows == 1 || (Int(w), Int(h)) == (tileWidth, tileHeight)
                else {
                    throw AttacheError(
                        .corruptData, "\(kind.rawValue): a tile is \(w)x\(h), not the grid's \(tileWidth)x\(tileHeight)"
                    )
                }
                guard let strip else {
                    lent = (pixels, stride)
                    continue
                }
                for y in from..<to {
                    let source = pixels + (y - firstY) * stride + (x0 - firstX) * channels
                    (strip + (y - from) * rowBytes + x0 * channels).update(from: source, count: (x1 - x0) * channels)
                }
            }
            if let strip {
                for y in 0..<(to - from) { sink.push(strip + y * rowBytes + skip) }
            } else if let lent {
                for y in from..<to { sink.push(lent.pixels + (y - firstY) * lent.stride + skip) }
            }
        }
    }
}

extension HEIFDecoder: RowSource {
    var rowWidth: Int { columnsKept.count }
    var rowCount: Int { rowsKept.count }
    var size: (width: Int, height: Int) { (rowWidth, rowCount) }
    func prepare(target: (width: Int, height: Int), spec: RenditionSpec) throws(AttacheError) -> Double {
        return 1.5
    }
}

extension HEIFDecoder {
    /// What the header says about the file.
    var info: ImageInfo {
        var info = ImageInfo(
            kind: kind, width: columnsKept.count, height: rowsKept.count, frames: 1, orientation: orientation,
            isProgressive: false)
        (info.colourConverted, info.colourWarning) = (colour?.converts ?? false, colour?.ignored)
        return info
    }
}
