/// What one transform is expected to cost, read from its header before any pixel is decoded:
/// the CPU time of one core and the memory it holds at its peak. The scheduler orders work by
/// the first and admits it by the second (``WorkScheduler``); the same figures are the ones
/// the limits are checked against, so what decides the order is what is checked first.
public struct WorkEstimate: Hashable, Sendable {
    /// Expected CPU time on one core, in seconds.
    public var seconds: Double
    /// Memory held at the job's peak, in bytes (decoded rows, whole-image buffers, frames,
    /// the output and its encoding).
    public var memory: Int

    /// An estimate of `seconds` of CPU holding `memory` bytes.
    public init(seconds: Double, memory: Int) {
        self.seconds = max(0, seconds)
        self.memory = max(0, memory)
    }

    /// Before a header has been read: a megabyte and a few milliseconds (the bytes as fetched
    /// are held whatever the order: they are bounded where they are fetched). A job says what it
    /// really costs as soon as it knows (``WorkDeadline/expect(_:)``).
    public static func unread(bytes: Int) -> WorkEstimate {
        WorkEstimate(seconds: 0.002, memory: 1 << 20)
    }

    /// Both figures added.
    public static func + (a: WorkEstimate, b: WorkEstimate) -> WorkEstimate {
        WorkEstimate(seconds: a.seconds + b.seconds, memory: a.memory + b.memory)
    }
}

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
