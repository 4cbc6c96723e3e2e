public import AttacheBase
import AttacheWork
internal import CAttacheCodecs

/// Decodes, downscales and re-encodes still images (JPEG, PNG, WebP, HEIC/AVIF, JPEG XL) in
/// bounded memory.
///
/// Memory for a resize is a few input rows plus the output image: JPEGs are decoded with DCT
/// scaling close to the target size and streamed row by row into the ``Resampler``;
/// non-interlaced PNGs stream row by row too. Only progressive/multi-scan JPEGs and
/// interlaced PNGs hold a whole-image buffer, bounded by ``DecodeLimits/maxDecoderMemory``.
public enum ImageProcessor {
    /// Fully decodes `bytes` (every row), checking every limit, and reports what it found.
    public static func inspect(
        _ bytes: MediaBytes, limits: DecodeLimits = .default, timeBudget: Duration? = nil
    ) throws(AttacheError) -> ImageInfo {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        let deadline = WorkDeadline(budget: timeBudget)
        if let animation = animation(kind, bytes) {
            return try openAnimation(animation, bytes, limits: limits, deadline: deadline).inspect()
        }
        guard let decoder = stillDecoder(kind) else { throw notAnImage(kind) }
        return try inspectStill(decoder, bytes, kind: kind, limits: limits, deadline: deadline)
    }

    /// Reads only the header: kind, stored size and orientation, with every header limit
    /// checked. Nothing is decoded.
    public static func probe(_ bytes: MediaBytes, limits: DecodeLimits = .default) throws(AttacheError) -> ImageInfo {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        if let animation = animation(kind, bytes) {
            return try openAnimation(animation, bytes, limits: limits, deadline: .none).info
        }
        guard let decoder = stillDecoder(kind) else { throw notAnImage(kind) }
        return try decoder.init(bytes: bytes, kind: kind, limits: limits, deadline: .none).info
    }

    static func notAnImage(_ kind: MediaKind) -> AttacheError {
        AttacheError(
            .unsupportedType, "\(kind.rawValue) is \(kind.category.rawValue), not an image", detail: kind.rawValue)
    }

    /// Decodes `bytes` straight to upright pixels that fit `spec`.
    public static func decode(
        _ bytes: MediaBytes, spec: RenditionSpec = .init(), limits: DecodeLimits = .default,
        timeBudget: Duration? = nil
    ) throws(AttacheError) -> (image: PixelImage, info: ImageInfo) {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        return try decode(bytes, kind: kind, spec: spec, limits: limits, deadline: WorkDeadline(budget: timeBudget))
    }

    /// ``decode(_:spec:limits:timeBudget:)`` for bytes whose kind is already known: the header
    /// is opened once, and its size decides the decode scale.
    static func decode(
        _ bytes: MediaBytes, kind: MediaKind, spec: RenditionSpec, limits: DecodeLimits, deadline: WorkDeadline,
        targets: [TargetSpec] = []
    ) throws(AttacheError) -> (image: PixelImage, info: ImageInfo) {
        if let animation = animation(kind, bytes) {
            // An animation's first frame.
            let source = try openAnimation(animation, bytes, spec: spec, limits: limits, deadline: deadline)
            let first = try source.firstFrame()
            let target = spec.outputSize(width: first.width, height: first.height)
            guard target.width != first.width || target.height != first.height else { return (first, source.info) }
            return (try resample(first, target: target, lanczosReserve: 2), source.info)
        }
        guard let decoder = stillDecoder(kind) else { throw notAnImage(kind) }
        return try decodeStill(
            decoder, bytes, kind: kind, spec: spec, limits: limits, deadline: deadline, targets: targets)
    }

    /// Decodes, downscales to fit `spec`, applies orientation, strips all metadata and
    /// re-encodes: a JPEG or PNG as it came (``outputKind(source:image:format:)``), an animation as a
    /// GIF within its budgets (``renderAnimation(_:_:spec:smallSide:)``).
    public static func render(
        _ bytes: MediaBytes, spec: RenditionSpec = .init(), limits: DecodeLimits = .default,
        timeBudget: Duration? = nil
    ) throws(AttacheError) -> Rendition {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        return try render(bytes, kind: kind, spec: spec, limits: limits, deadline: WorkDeadline(budget: timeBudget))
    }

    /// The square the collapsed notification shows of a picture that is not square (iOS cuts
    /// the centre square unless told): centred on the sender's focus, else on the subject (the
    /// attention measure the receivers' crops use) — x, y, width and height in 0…1, to four
    /// places; nil for a square picture, or when the subject's square is within a twentieth of
    /// its slide from the centre one.
    /// `size` is the picture's own when `image` is a smaller copy of it.
    public static func clip(
        _ image: PixelImage, focus: FocalPoint?, size: (width: Int, height: Int)? = nil
    ) throws(AttacheError) -> [Double]? {
        let side = min(image.width, image.height)
        let slide = max(image.width, image.height) - side
        let full = size ?? (image.width, image.height)
        guard side > 0, slide > 0, full.width != full.height else { return nil }
        let origin: (x: Int, y: Int)
        if let focus {
            func centred(_ f: Double, _ length: Int) -> Int {
                min(length - side, max(0, Int((f * Double(length) - Double(side) / 2).rounded())))
            }
            origin = (centred(focus.x, image.width), centred(focus.y, image.height))
        } else {
            origin = try Saliency.bestOrigin(in: image, cropWidth: side, cropHeight: side)
        }
        let off = abs(origin.x - (image.width - side) / 2) + abs(origin.y - (image.height - side) / 2)
        guard off * 20 > slide else { return nil }
        func part(_ value: Double) -> Double { (value * 10_000).rounded() / 10_000 }
        // The square in the picture's own pixels: its side the shorter one, its place the copy's.
        let fullSide = Double(min(full.width, full.height))
        let (width, height) = (fullSide / Double(full.width), fullSide / Double(full.height))
        let x = min(1 - width, Double(origin.x) / Double(image.width))
        let y = min(1 - height, Double(origin.y) / Double(image.height))
        return [part(x), part(y), part(width), part(height)]
    }

    /// The rendition `request` asks for (its spec, limits, deadline; a measured score).
    public static func render(_ bytes: MediaBytes, request: TransformRequest) throws(AttacheError) -> Rendition {
        let kind = try Sniffer.kind(of: bytes.prefix(Sniffer.prefixLength))
        return try render(bytes, kind: kind, request: request)
    }

    /// ``render(_:spec:limits:timeBudget:)`` for bytes whose kind is already known.
    static func render(
        _ bytes: MediaBytes, kind: MediaKind, spec: RenditionSpec, limits: DecodeLimits, deadline: WorkDeadline
    ) throws(AttacheError) -> Rendition {
        try render(bytes, kind: kind, request: TransformRequest(spec: spec, limits: limits, deadline: deadline))
    }

    /// The rendition `request` asks for, of bytes whose kind is already known. With
    /// ``TransformRequest/smallSide``, a JPEG or PNG also gets a small rendition resampled
    /// from the decoded pixels (``Rendition/small``).
    static func render(
        _ bytes: MediaBytes, kind: MediaKind, request: TransformRequest
    ) throws(AttacheError) -> Rendition {
        let (spec, limits, deadline, smallSide) = (request.spec, request.limits, request.deadline, request.smallSide)
        if let animation = animation(kind, bytes) {
            let source = try openAnimation(animation, bytes, spec: spec, limits: limits, deadline: deadline)
            return try renderAnimation(source, bytes, spec: spec, smallSide: smallSide)
        }
        // One decode for the rendition and the other receivers' pictures: at the size the
        // largest of them needs, the rendition resampled from it when that is larger.
        let (decoded, info) = try decode(
            bytes, kind: kind, spec: spec, limits: limits, deadline: deadline, targets: request.targets)
        let size = spec.outputSize(width: decoded.width, height: decoded.height)
        let image = size == (decoded.width, decoded.height) ? decoded : try resample(decoded, target: size)
        let output = outputKind(source: info.kind, image: image, format: spec.outputFormat)
        // Never larger than it came: at about the source's size, `auto` goes no higher than the
        // source JPEG's own quality, whatever the target.
        let width = info.displayWidth
        func encode(_ image: PixelImage) throws(AttacheError) -> (data: [UInt8], choice: QualityChoice?) {
            guard StillEncoders.lossy(output) != nil else {
                // ``outputKind(source:image:format:)`` answers JPEG, WebP or PNG only.
                let encoder = StillEncoders.of(output) ?? PNGOutput.self
                let options = EncodeOptions(pngLevel: spec.pngCompressionLevel)
                return (try encoder.encode(image.droppingOpaqueAlpha(), quality: 0, options: options), nil)
            }
            let ceiling = QualityHint.ceiling(jpegQuality: info.jpegQuality, width: image.width, sourceWidth: width)
            return try QualitySearch.encode(
                image.droppingOpaqueAlpha(), as: output, quality: spec.quality, score: request.measuresScore,
                deadline: deadline,
                hint: QualityHint(ceiling: ceiling, tables: spec.jpegTables, encoder: spec.jpegEncoder))
        }
        let (data, choice) = try encode(image)
        var rendition = Rendition(kind: output, width: image.width, height: image.height, data: data, source: info)
        rendition.quality = choice
        // The placeholder and the collapsed square from one copy of at most 100 px (the subject's
        // place needs no more: the attention grid is 32 cells).
        let (smallWidth, smallHeight, smallRGBA) = ThumbHash.small(image)
        rendition.placeholder = ThumbHash.encode(width: smallWidth, height: smallHeight, rgba: smallRGBA)
        rendition.clip = try clip(
            PixelImage(width: smallWidth, height: smallHeight, channels: 4, pixels: smallRGBA), focus: request.focus,
            size: (image.width, image.height))
        rendition.pixels = decoded
        rendition.pixelsTables = spec.jpegTables
        rendition.pixelsEncoder = spec.jpegEncoder
        rendition.pixelsCeiling = QualityHint.ceiling(
            jpegQuality: info.jpegQuality, width: decoded.width, sourceWidth: info.displayWidth)
        // Never larger than it came: a source already within every limit (not downscaled,
        // upright as stored) whose rendition is not smaller is stored as it was, its metadata
        // removed without re-encoding.
        if output == info.kind, image.width == info.width, image.height == info.height, info.orientation == .up,
            let stripped = MetadataStripper.strip(bytes, kind: info.kind), stripped.count <= rendition.data.count
        {
            rendition.data = stripped
            rendition.keptSource = true
        }
        // The small rendition comes from the pixels already decoded, upright and downscaled.
        if let smallSide, max(image.width, image.height) > smallSide {
            try deadline.check()
            let target = RenditionSpec.fit(width: image.width, height: image.height, into: smallSide)
            // A thumbnail-sized fallback: box pre-shrink as far as it goes, then one short Lanczos step.
            let small = try resample(image, target: target, lanczosReserve: 1)
            // With `auto`, one encode without a score: the rendition's quality and 8 more (at
            // 320 px the same quality scores about 8 points lower; docs/quality.md), as
            // progressive scans where the search would write them.
            let data: [UInt8]
            if case .auto = spec.quality, let chosen = rendition.quality?.quality, StillEncoders.lossy(output) != nil {
                let tables = spec.jpegTables.resolved(for: spec.quality)
                let (trellis, opaque) = (spec.jpegEncoder.trellis, small.droppingOpaqueAlpha())
                data = try QualitySearch.encode(
                    opaque, output, min(QualitySearch.highest, chosen + smallQualityAbove), tables: tables,
                    trellis: trellis, progressive: QualitySearch.progressive(opaque, output, trellis: trellis))
            } else {
                data = try encode(small).data
            }
            rendition.small = SmallRendition(width: small.width, height: small.height, data: data)
        }
        return rendition
    }

    /// How much higher than the rendition's own quality `auto` writes its small rendition.
    static let smallQualityAbove = 8

    /// What a still is written as: see ``RenditionSpec/OutputFormat``.
    static func outputKind(source: MediaKind, image: PixelImage, format: RenditionSpec.OutputFormat) -> MediaKind {
        let transparent = image.hasAlpha && image.droppingOpaqueAlpha().hasAlpha
        switch format {
        case .auto: return [.jpeg, .png].contains(source) ? source : (transparent ? .png : .jpeg)
        case .jpeg: return transparent ? .png : .jpeg
        case .webp: return .webp
        }
    }

    /// The smallest libjpeg scale `n`/8 (n = 1, 2, 4 or 8) whose output still covers `target` × `headroom`.
    static func jpegScaleNumerator(
        width: Int, height: Int, target: (width: Int, height: Int), headroom: Double
    ) -> Int {
        if target.width >= width && target.height >= height { return 8 }
        let needW = min(Double(width), Double(target.width) * headroom)
        let needH = min(Double(height), Double(target.height) * headroom)
        // Powers of two only: libjpeg-turbo's 1/2, 1/4 and 1/8 IDCTs are much faster than 3/8 etc.
        for n in [1, 2, 4, 8] {
            let w = (width * n + 7) / 8
            let h = (height * n + 7) / 8
            if Double(w) >= needW && Double(h) >= needH { return n }
        }
        return 8
    }

    /// `image` downscaled to `target` (box as far as it goes, then one short Lanczos step).
    static func resampleImage(
        _ image: PixelImage, target: (width: Int, height: Int)
    ) throws(AttacheError)
        -> PixelImage
    {
        try resample(image, target: target, lanczosReserve: 1)
    }

    static func resample(
        _ source: some RowSource, target: (width: Int, height: Int), lanczosReserve: Double = 2
    ) throws(AttacheError) -> PixelImage {
        let (width, height, channels) = (source.rowWidth, source.rowCount, source.channels)
        if target.width == width && target.height == height {
            var collector = RowCollector(width: width, height: height, channels: channels)
            try source.decodeRows(into: &collector)
            return PixelImage(width: width, height: height, channels: channels, pixels: collector.pixels)
        }
        var resampler = Resampler(
            inWidth: width, inHeight: height, outWidth: target.width, outHeight: target.height, channels: channels,
            lanczosReserve: lanczosReserve)
        try source.decodeRows(into: &resampler)
        guard resampler.isComplete else {
            // A decoder that ends without an error but short of its rows read a file that says
            // more than it holds.
            throw AttacheError(.corruptData, "the image ends before every row it declares was decoded")
        }
        return PixelImage(width: target.width, height: target.height, channels: channels, pixels: resampler.output)
    }
}

extension ImageProcessor {
    /// Where the lines the C libraries write to `stderr` go.
    public enum LibraryOutput: Int32, Sendable {
        /// Unchanged to standard error (the argument parser's messages).
        case unchanged = 0
        /// As `attache.library` log lines at level debug, not shown (a fatal error is).
        case hidden = 1
        /// As `attache.library` log lines at level debug, shown.
        case logged = 2
    }

    public static func routeLibraryOutput(_ output: LibraryOutput) {
        att_route_library_output(output.rawValue)
    }
}

/// A decoded image read back row by row (for a second, smaller rendition).
extension PixelImage: RowSource {
    var rowWidth: Int { width }
    var rowCount: Int { height }

    func decodeRows(into sink: inout some RowSink) throws(AttacheError) {
        let stride = width * channels
        pixels.withUnsafeBufferPointer { buffer in
            for row in 0..<height { sink.push(buffer.baseAddress! + row * stride) }
        }
    }
}
