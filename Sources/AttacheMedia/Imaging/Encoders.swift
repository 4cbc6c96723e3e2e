internal import AttacheBase
internal import CAttacheCodecs

/// JPEG, PNG and WebP encoders over libjpeg-turbo, libpng and libwebp.
enum Encoders {
    /// An animation's still (its first frame, or its poster), the one rule for every
    /// animated kind: PNG when it has transparency, else JPEG (an alpha channel that is opaque
    /// everywhere dropped first). The image it encoded comes back with its bytes.
    static func still(
        _ image: PixelImage, spec: RenditionSpec
    ) throws(AttacheError) -> (kind: MediaKind, data: [UInt8], image: PixelImage) {
        let image = image.droppingOpaqueAlpha()
        if image.channels == 4 { return (.png, try png(image, level: spec.pngCompressionLevel), image) }
        let hint = QualityHint(tables: spec.jpegTables, encoder: spec.jpegEncoder)
        return (.jpeg, try QualitySearch.encode(image, as: .jpeg, quality: spec.quality, hint: hint).data, image)
    }

    /// Baseline JPEG, optimised Huffman tables, 4:2:0 chroma (4:4:4 with `fullChroma`); gray
    /// stays one channel. `quality` scales `tables` (the IJG's unless told), whose chroma at
    /// 4:2:0 is sharpened or libjpeg's own (``JPEGTables/sharpensChroma``);
    /// `trellis` chooses each block's coefficients for bits and distortion together (the
    /// thorough encoder, which writes progressive scans where they are smaller);
    /// `progressive` writes the fast encoder's coefficients as progressive scans.
    static func jpeg(
        _ image: PixelImage, quality: Int, tables: JPEGTables = .ijg, fullChroma: Bool = false, trellis: Bool = false,
        progressive: Bool = false
    ) throws(AttacheError) -> [UInt8] {
        try jpeg(image, quality, tables, fullChroma, trellis, progressive, holding: false).data
    }

    /// ``jpeg(_:quality:tables:fullChroma:trellis:progressive:)`` with the coefficients its
    /// progressive scans were written from, when the fast encoder wrote them (its read-back).
    static func jpegHeld(
        _ image: PixelImage, quality: Int, tables: JPEGTables, fullChroma: Bool, trellis: Bool, progressive: Bool
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?) {
        try jpeg(image, quality, tables, fullChroma, trellis, progressive, holding: true)
    }

    private static func jpeg(
        _ image: PixelImage, _ quality: Int, _ tables: JPEGTables, _ fullChroma: Bool, _ trellis: Bool,
        _ progressive: Bool, holding: Bool
    ) throws(AttacheError) -> (data: [UInt8], held: HeldCoefficients?) {
        precondition(image.channels == 1 || image.channels == 3)
        let chroma = Int32(
            fullChroma ? ATT_JPEG_CHROMA_FULL : tables.sharpensChroma ? ATT_JPEG_CHROMA_SHARP : ATT_JPEG_CHROMA_HALF)
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        var held: OpaquePointer?
        let flags = Int32((trellis ? ATT_JPEG_TRELLIS : 0) | (progressive ? ATT_JPEG_PROGRESSIVE : 0))
        let status = image.pixels.withUnsafeBufferPointer { p in
            withUnsafeMutablePointer(to: &held) { keep in
                att_jpeg_encode_held(
                    p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * image.channels,
                    Int32(image.channels), Int32(quality), tables.shim, chroma, flags, &output, &length,
                    holding ? keep : nil, &error)
            }
        }
        let kept = held.map(HeldCoefficients.init)
        return (try take(status: status, output: output, length: length, error: error, format: "jpeg"), kept)
    }

    /// PNG with libpng's adaptive filters at zlib `level`.
    static func png(_ image: PixelImage, level: Int) throws(AttacheError) -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = image.pixels.withUnsafeBufferPointer { p in
            att_png_encode(
                p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * image.channels,
                Int32(image.channels), Int32(level), &output, &length, &error)
        }
        return try take(status: status, output: output, length: length, error: error, format: "png")
    }

    /// Lossy WebP at `quality` (libwebp's default method 4), alpha kept.
    static func webp(_ image: PixelImage, quality: Int) throws(AttacheError) -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        var error = att_error()
        let status = image.pixels.withUnsafeBufferPointer { p in
            att_webp_encode(
                p.baseAddress, UInt32(image.width), UInt32(image.height), image.width * image.channels,
                Int32(image.channels), Int32(quality), &output, &length, &error)
        }
        return try take(status: status, output: output, length: length, error: error, format: "webp")
    }

    private static func take(
        status: Int32, output: UnsafeMutablePointer<UInt8>?, length: Int, error: att_error, format: String
    ) throws(AttacheError) -> [UInt8] {
        defer { att_free(output) }
        guard status == 0, let output else {
            let cause = AttacheError(shim: error, format: format)
            throw AttacheError(.encodeFailed, cause.message)
        }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }
}
