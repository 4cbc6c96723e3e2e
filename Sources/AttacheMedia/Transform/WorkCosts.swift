import AttacheWork

/// What media work costs, for the scheduler's estimates (``AttacheWork/WorkEstimate``): the
/// figures are the codecs', measured here, so they live beside the codecs.
extension WorkEstimate {
    /// Nanoseconds of one core per pixel for each piece of work, measured on the benchmark
    /// photos (release build, x86_64): a full-size decode of each format, the resampler's box
    /// shrink and Lanczos step, and encoding.
    enum PerPixel {
        static let jpegDecode = 6.0
        static let pngDecode = 9.0
        static let webpDecode = 12.0
        static let heifDecode = 30.0
        static let jxlDecode = 45.0
        static let gifDecode = 3.0
        /// Box shrink of one source pixel, and Lanczos of one pixel of its output.
        static let shrink = 1.5
        static let lanczos = 25.0
        /// Compositing one screen pixel of a GIF frame and pushing it to the resampler.
        static let composite = 2.0
        /// JPEG/PNG/GIF encoding of one output pixel.
        static let encode = 20.0
        /// Decoding one video pixel (H.264 at 1080p), and encoding one with libx264 veryfast.
        static let videoDecode = 4.0
        static let videoEncode = 25.0
        /// A multi-scan JPEG's coefficient store, per source pixel (written whole, read back at
        /// the output's scale).
        static let jpegCoefficient = 6.0
    }

    /// Nanoseconds of one core per compressed byte: a JPEG's entropy decoding, which no DCT
    /// scale skips, for one scan and for several (a progressive file: each coefficient is read
    /// in bits over the scans).
    enum PerByte {
        static let jpeg = 13.0
        static let jpegMultiScan = 53.0
    }

    /// A still of `source` pixels decoded at `decoded` pixels (after shrink-on-load) and written
    /// at `output` pixels; `buffers` are the whole-image buffers the decoder holds, `stream` the
    /// nanoseconds its compressed bytes cost whatever the scale (``StillDecoder/streamCost``).
    static func still(
        decodeCost: Double, source: Int, decoded: Int, output: Int, rowBytes: Int, buffers: Int, stream: Double
    ) -> WorkEstimate {
        let nanoseconds =
            stream + Double(decoded) * decodeCost * max(0.25, Double(decoded) / Double(max(1, source)))
            + Double(source - decoded) * decodeCost * 0.2 + Double(decoded) * PerPixel.shrink
            + Double(output) * (PerPixel.lanczos + PerPixel.encode)
        // Output (RGBA, float accumulators for the resampler's rows), its encoding, the rows.
        let memory = output * 4 * 3 + rowBytes * 64 + buffers + (2 << 20)
        return WorkEstimate(seconds: nanoseconds / 1e9, memory: memory)
    }
}
