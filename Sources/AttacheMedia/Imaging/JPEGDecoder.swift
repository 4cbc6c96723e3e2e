internal import AttacheBase
internal import AttacheWork
internal import CAttacheCodecs

/// A JPEG being decoded through libjpeg-turbo, with limits checked from the header.
final class JPEGDecoder: StillDecoder {
    private let handle: OpaquePointer
    /// Kept alive: the C decoder reads from its memory until closed.
    private let bytes: MediaBytes
    let deadline: WorkDeadline
    /// Stored width (before orientation).
    let width: Int
    /// Stored height (before orientation).
    let height: Int
    /// Whether the file is grayscale (decoded to one channel).
    let isGray: Bool
    /// Whether the file is progressive.
    let isProgressive: Bool
    /// The EXIF orientation, `.up` when absent or unreadable.
    let orientation: Orientation
    /// The IJG quality its tables are nearest (0 when it has none).
    let quality: Int
    private(set) var outputWidth = 0
    private(set) var outputHeight = 0
    /// The conversion from the embedded ICC profile to sRGB, if the file has a usable one.
    let colour: ColourProfile?

    /// Where a multi-scan file's coefficients are kept while its scans are read.
    enum Coefficients: Int32 {
        /// Packed when libjpeg's arrays would take 16 MiB or more (smaller ones are not worth
        /// the CPU) and the packed bound is three quarters of that or less.
        case automatic = 0
        /// libjpeg's own whole-image arrays.
        case libjpeg = 1
        /// Packed whenever the file's coding allows (Huffman).
        case compact = 2

        static let compactFrom = Int(ATT_JPEG_COMPACT_FROM)
    }

    /// Who reads a progressive file's scans.
    enum Scans: Int32 {
        /// The shim (jpeg_scans.c) from the first scan libjpeg can hand over, where the file
        /// allows: the same coefficients, read several times faster.
        case shim = 0
        /// libjpeg, every scan.
        case libjpeg = 1
    }

    /// Reads the header and checks `limits`; nothing large is allocated before this passes.
    convenience init(
        bytes: MediaBytes, kind: MediaKind = .jpeg, limits: DecodeLimits, deadline: WorkDeadline
    )
        throws(AttacheError)
    {
        try self.init(bytes: bytes, limits: limits, deadline: deadline, coefficients: .automatic)
    }

    init(
        bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, coefficients: Coefficients,
        scans: Scans = .shim
    )
        throws(AttacheError)
    {
        var header = att_jpeg_header()
        var error = att_error()
        let cLimits = att_jpeg_limits(
            max_memory: UInt64(limits.maxDecoderMemory), max_scans: Int32(clamping: limits.maxScans),
            deadline: deadline.pointer, checkpoint: WorkDeadline.checkpointFunction,
            checkpoint_context: deadline.checkpointContext, coefficients: coefficients.rawValue,
            scans: scans.rawValue)
        guard
            let handle = att_jpeg_open(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, cLimits, &header, &error)
        else {
            throw AttacheError(shim: error, format: "jpeg")
        }
        self.handle = handle
        self.bytes = bytes
        self.deadline = deadline
        width = Int(header.width)
        height = Int(header.height)
        isGray = header.color_family == 1
        isProgressive = header.progressive != 0
        quality = Int(header.quality)
        if let exif = header.exif, header.exif_length > 0 {
            orientation = Orientation.fromExif(UnsafeBufferPointer(start: exif, count: header.exif_length))
        } else {
            orientation = .up
        }
        colour =
            header.color_family == 3
            ? ColourProfile.make(profile: header.icc, length: header.icc_length, channels: 3) : nil
        coefficientBytes = header.multi_scan != 0 ? Int(header.coefficient_bytes) : 0
        compactCoefficients = header.compact_coefficients != 0
        // Every stored property is set before the first check may throw: the object is then
        // whole, so its deinit closes the C decoder.
        try limits.check(width: width, height: height)
        if header.multi_scan != 0 {
            try limits.checkDecoderMemory(Int(header.coefficient_bytes), what: "multi-scan JPEG coefficients")
        }
    }

    /// The most a multi-scan file's coefficients can take: libjpeg's whole-image arrays, or the
    /// bound of the compact store (from the file's length).
    let coefficientBytes: Int
    /// Whether the coefficients go to the compact store.
    let compactCoefficients: Bool
    /// The most the compact store has held so far.
    var coefficientPeak: Int { Int(att_jpeg_coefficient_peak(handle)) }
    /// Once decoding has started: 1 when the shim read the scans (Scans.shim), 2 when it began
    /// to and the data ended the decode, 0 when libjpeg read them all.
    var shimScans: Int32 { att_jpeg_shim_read_scans(handle) }
    func heldBytes(for target: (width: Int, height: Int)) -> Int { coefficientBytes }
    static var decodeCost: Double { WorkEstimate.PerPixel.jpegDecode }
    /// Entropy decoding, by the compressed bytes (a progressive file costs about four times a
    /// baseline one per byte), and a multi-scan file's coefficient store by the source pixels:
    /// measured on the benchmark photos, where a 16.8 MP progressive file costs 3.3 times its
    /// baseline copy at the same output.
    var streamCost: Double {
        guard coefficientBytes > 0 else { return Double(bytes.count) * WorkEstimate.PerByte.jpeg }
        return Double(bytes.count) * WorkEstimate.PerByte.jpegMultiScan
            + Double(width * height) * WorkEstimate.PerPixel.jpegCoefficient
    }

    deinit { att_jpeg_close(handle) }

    /// Output channels: 1 for grayscale files, otherwise 3 (RGB; CMYK and YCCK are converted).
    var channels: Int { isGray ? 1 : 3 }

    /// Starts decompression at `scaleNumerator`/8 of the stored size.
    func start(scaleNumerator: Int, fancyUpsampling: Bool = true) throws(AttacheError) {
        var error = att_error()
        var w: UInt32 = 0
        var h: UInt32 = 0
        let status = att_jpeg_start(
            handle, Int32(scaleNumerator), Int32(channels), fancyUpsampling ? 1 : 0, &w, &h, &error)
        guard status == 0 else { throw AttacheError(shim: error, format: "jpeg") }
        outputWidth = Int(w)
        outputHeight = Int(h)
        // A CMYK file's profile is taken up when decoding starts (rows are converted in C).
        var message = [CChar](repeating: 0, count: 160)
        switch att_jpeg_colour(handle, &message, message.count) {
        case 1: cmykColour = (true, nil)
        case 2:
            let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            cmykColour = (false, "ICC profile not used: \(reason.isEmpty ? "unreadable" : reason)")
        default: break
        }
    }

    /// What became of a CMYK file's profile once decoding started.
    private(set) var cmykColour: (converted: Bool, warning: String?) = (false, nil)

    /// Decodes every row into `sink`, then reads to the end of the image.
    func decodeRows(into sink: inout some RowSink) throws(AttacheError) {
        let rowBytes = outputWidth * channels
        let batch = 16
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: rowBytes * batch)
        defer { buffer.deallocate() }
        var done = 0
        var error = att_error()
        while done < outputHeight {
            try deadline.check()
            var got: Int32 = 0
            let status = att_jpeg_read_rows(handle, buffer, rowBytes, Int32(batch), &got, &error)
            guard status == 0 else { throw AttacheError(shim: error, format: "jpeg") }
            guard got > 0 else { throw AttacheError(.truncated, "jpeg: image data ended early") }
            for r in 0..<Int(got) { sink.push(buffer + r * rowBytes) }
            done += Int(got)
        }
        let status = att_jpeg_finish(handle, &error)
        // Every row is decoded; only a missing EOI marker is forgiven here.
        if status != 0 && status != Int32(ATT_ERR_TRUNCATED.rawValue) {
            throw AttacheError(shim: error, format: "jpeg")
        }
    }
}

extension JPEGDecoder: RowSource {
    var rowWidth: Int { outputWidth }
    var rowCount: Int { outputHeight }
    var size: (width: Int, height: Int) { (width, height) }

    /// Starts decompression with libjpeg's DCT scaling: the smallest of 1/8, 1/4, 1/2 or 1 that
    /// still covers `target` with the spec's headroom; Lanczos takes the last factor of 2.
    func prepare(target: (width: Int, height: Int), spec: RenditionSpec) throws(AttacheError) -> Double {
        let numerator = ImageProcessor.jpegScaleNumerator(
            width: width, height: height, target: target, headroom: spec.jpegShrinkHeadroom)
        try start(scaleNumerator: numerator, fancyUpsampling: spec.jpegFancyUpsampling)
        return 2
    }
}

extension JPEGDecoder {
    /// What the header says about the file.
    var info: ImageInfo {
        var info = ImageInfo(
            kind: .jpeg, width: width, height: height, frames: 1, orientation: orientation,
            isProgressive: isProgressive)
        info.jpegQuality = quality > 0 ? quality : nil
        (info.colourConverted, info.colourWarning) = (colour?.converts ?? false, colour?.ignored)
        if colour == nil { (info.colourConverted, info.colourWarning) = cmykColour }
        return info
    }
}
