import AttacheBase
import AttacheMedia
import Benchmark
import Foundation

/// Per-format resize benchmarks over the shared corpus (run from Benchmarks/:
/// `swift package benchmark`). Photos: ATTACHE_BENCH_PHOTOS, a folder of large JPEGs.
let corpus = ProcessInfo.processInfo.environment["ATTACHE_CORPUS"] ?? "../../shared/corpus"
let photos = ProcessInfo.processInfo.environment["ATTACHE_BENCH_PHOTOS"] ?? "work/jpeg"

func load(_ path: String) -> MediaBytes? { try? MediaBytes(contentsOfFile: path) }

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .peakMemoryResident, .mallocCountTotal],
        maxDuration: .seconds(5))

    let cases: [(String, String, Int)] = [
        ("JPEG 1800x1200 baseline -> 1024", corpus + "/exif-orientation/Landscape_1.jpg", 1024),
        ("JPEG 1800x1200 orientation 6 -> 320", corpus + "/exif-orientation/Landscape_6.jpg", 320),
        ("PNG 512x512 RGB -> 256", corpus + "/png-extras/pillow__exif_imagemagick_orientation.png", 256),
        ("PNG 128x128 RGBA palette -> 64", corpus + "/png-extras/pillow__p_16.png", 64),
    ]
    for (name, path, side) in cases {
        guard let bytes = load(path) else { continue }
        Benchmark(name) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: side)))
            }
        }
    }
    // The placeholder of a 1024 px rendition (docs/sealed-notifications.md): its ThumbHash from
    // the rendition's pixels, as the transform makes it beside the encode.
    if let bytes = load(corpus + "/exif-orientation/Landscape_1.jpg"),
        let image = try? ImageProcessor.decode(bytes, spec: RenditionSpec(maxSide: 1024)).image
    {
        Benchmark("ThumbHash of a \(image.width)x\(image.height) picture") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(ThumbHash.make(image)) }
        }
        // The collapsed thumbnail's square on the subject, as the transform makes it: on the
        // placeholder's copy of at most 100 px.
        Benchmark("thumbnail square of a \(image.width)x\(image.height) picture") { benchmark in
            for _ in benchmark.scaledIterations {
                let (w, h, rgba) = ThumbHash.small(image)
                blackHole(
                    try ImageProcessor.clip(
                        PixelImage(width: w, height: h, channels: 4, pixels: rgba), focus: nil,
                        size: (image.width, image.height)))
            }
        }
    }
    let files = (try? FileManager.default.contentsOfDirectory(atPath: photos))?.sorted().filter { $0.hasSuffix(".jpg") } ?? []
    for file in files.prefix(4) {
        guard let bytes = load(photos + "/" + file) else { continue }
        Benchmark("photo \(file) -> 1024") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try ImageProcessor.render(bytes, spec: RenditionSpec(maxSide: 1024)))
            }
        }
    }
}
