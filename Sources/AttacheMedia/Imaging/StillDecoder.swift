internal import AttacheBase
internal import AttacheWork

/// One still-image decoder per format, behind one shape: the header is read and every limit
/// checked when it is made (nothing large allocated before that passes), then rows stream into
/// the resampler, with the deadline checked between row bands or tiles. What every format
/// shares — the output size, the resample, the colour conversion, the orientation — is done
/// once by ``ImageProcessor`` for all of them; each format's file holds only its library calls.
protocol StillDecoder: AnyObject, RowSource {
    /// Reads the header of `bytes` (of `kind`) and checks `limits`.
    init(bytes: MediaBytes, kind: MediaKind, limits: DecodeLimits, deadline: WorkDeadline) throws(AttacheError)
    /// The size of the image the rows make at full resolution (before orientation).
    var size: (width: Int, height: Int) { get }
    /// How the decoded image is turned to be upright (applied after the downscale).
    var orientation: Orientation { get }
    /// The conversion to sRGB, when the file says its colours are not sRGB.
    var colour: ColourProfile? { get }
    /// What the header says.
    var info: ImageInfo { get }
    /// The deadline the decoder checks (and the scheduler's checkpoints with it).
    var deadline: WorkDeadline { get }
    /// Readies the rows for an output of `target`: a codec that can shrink as it decodes (JPEG's
    /// DCT scaling, libwebp's scaler) does so. Returns the factor left to Lanczos after the
    /// resampler's box shrink.
    func prepare(target: (width: Int, height: Int), spec: RenditionSpec) throws(AttacheError) -> Double
    /// Whether an alpha channel that is opaque everywhere is dropped (formats converted to JPEG
    /// when they have no transparency).
    static var dropsOpaqueAlpha: Bool { get }
    /// Whole-image buffers a decode for an output of `target` holds beyond a few rows (bytes),
    /// as checked against ``DecodeLimits/maxDecoderMemory``; known from the header, before
    /// ``prepare(target:spec:)`` allocates anything.
    func heldBytes(for target: (width: Int, height: Int)) -> Int
    /// CPU per decoded pixel, in nanoseconds (``WorkEstimate``).
    static var decodeCost: Double { get }
    /// CPU the decode costs whatever its scale, in nanoseconds: what the file's compressed bytes
    /// cost to read (a JPEG's entropy decoding, which no DCT scale skips). 0 where the per-pixel
    /// cost covers it.
    var streamCost: Double { get }
}

extension StillDecoder {
    static var dropsOpaqueAlpha: Bool { true }
    var streamCost: Double { 0 }
}

extension ImageProcessor {
    /// The decoder for a still image of `kind` (nil for GIF, audio and video; an animated WebP
    /// or JPEG XL is read by ``animation(_:_:)`` before this is asked). Every kind is
    /// named: a kind added to ``MediaKind`` does not compile until it is given a decoder or
    /// said to have none.
    static func stillDecoder(_ kind: MediaKind) -> (any StillDecoder.Type)? {
        switch kind {
        case .jpeg: JPEGDecoder.self
        case .png: PNGDecoder.self
        case .webp: WebPDecoder.self
        case .heic, .avif: HEIFDecoder.self
        case .jxl: JXLDecoder.self
        // GIF is always an animation (``GIFAnimation``); audio and video are checked, not decoded.
        case .gif: nil
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: nil
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: nil
        }
    }

    /// Opens, sizes, streams, resamples, converts and turns: the one decode of a still image.
    static func decodeStill(
        _ type: any StillDecoder.Type, _ bytes: MediaBytes, kind: MediaKind, spec: RenditionSpec,
        limits: DecodeLimits, deadline: WorkDeadline, targets: [TargetSpec] = []
    ) throws(AttacheError) -> (image: PixelImage, info: ImageInfo) {
        let decoder = try type.init(bytes: bytes, kind: kind, limits: limits, deadline: deadline)
        return try decodeStill(decoder, spec: spec, targets: targets)
    }

    /// Decodes at `spec`'s size, or larger where one of `targets` needs more pixels for its
    /// crop (``TargetSpec/decodeScale(width:height:)``): the one decode serves both.
    private static func decodeStill(
        _ decoder: some StillDecoder, spec: RenditionSpec, targets: [TargetSpec]
    ) throws(AttacheError) -> (
        image: PixelImage, info: ImageInfo
    ) {
        var target = spec.outputSize(width: decoder.size.width, height: decoder.size.height)
        let swaps = decoder.orientation.swapsDimensions
        let upright = swaps ? (decoder.size.height, decoder.size.width) : (decoder.size.width, decoder.size.height)
        let scale = targets.map { $0.decodeScale(width: upright.0, height: upright.1) }.max() ?? 0
        if Double(target.width) < scale * Double(decoder.size.width) {
            target = (
                min(decoder.size.width, Int((Double(decoder.size.width) * scale).rounded(.up))),
                min(decoder.size.height, Int((Double(decoder.size.height) * scale).rounded(.up)))
            )
        }
        // What the decode will hold is known from the header: said before `prepare` allocates
        // (a multi-scan JPEG's coefficients are allocated there), at full size as far as the
        // CPU goes; once the decode scale is known, the CPU is said again.
        let source = decoder.size.width * decoder.size.height
        let buffers = decoder.heldBytes(for: target)
        func estimate() -> WorkEstimate {
            .still(
                decodeCost: type(of: decoder).decodeCost, source: source, decoded: decoder.rowWidth * decoder.rowCount,
                output: target.width * target.height, rowBytes: decoder.rowWidth * decoder.channels, buffers: buffers,
                stream: decoder.streamCost)
        }
        try decoder.deadline.expect(estimate())
        let reserve = try decoder.prepare(target: target, spec: spec)
        try decoder.deadline.expect(estimate())
        var image = try resample(decoder, target: target, lanczosReserve: reserve)
        decoder.colour?.convert(&image)
        if type(of: decoder).dropsOpaqueAlpha { image = image.droppingOpaqueAlpha() }
        return (decoder.orientation.apply(to: image), decoder.info)
    }

    /// Every row decoded and counted, nothing kept: a full check of the file.
    static func inspectStill(
        _ type: any StillDecoder.Type, _ bytes: MediaBytes, kind: MediaKind, limits: DecodeLimits,
        deadline: WorkDeadline
    ) throws(AttacheError) -> ImageInfo {
        let decoder = try type.init(bytes: bytes, kind: kind, limits: limits, deadline: deadline)
        return try inspectStill(decoder)
    }

    private static func inspectStill(_ decoder: some StillDecoder) throws(AttacheError) -> ImageInfo {
        _ = try decoder.prepare(target: decoder.size, spec: RenditionSpec())
        var counter = RowCounter()
        try decoder.decodeRows(into: &counter)
        return decoder.info
    }
}
