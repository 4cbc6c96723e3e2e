import AttacheBase
import AttacheClient
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheMedia

/// The placeholder: Attache's ThumbHash encoder against the public Python implementation on the
/// corpus's opaque pictures, the device kit's decoder against the pictures' own colours, and the
/// PNG it writes read back by libpng.
@Suite struct ThumbHashTests {
    /// Opaque corpus stills (the PyPI encoder mishandles alpha: it is checked by our decoder).
    static let files: [Corpus.Row] = Corpus.jpegAndPNG.filter {
        $0.expectOK && ($0.frames ?? 1) == 1 && ($0.width ?? 0) >= 8 && ($0.height ?? 0) >= 8
    }

    @Test("the hash is the public implementation's for the same pixels, to its rounding")
    func theHashIsTheReferences() throws {
        guard ChildProcess.pythonHas("thumbhash"), ChildProcess.pythonHas("PIL") else {
            Issue.record("PyPI thumbhash is missing (scripts/media-tools.sh installs it)")
            return
        }
        let directory = try TemporaryDirectory()
        let list = directory.path + "/files"
        try Self.files.map(\.path).joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        // The reference's own pixels: Pillow's 100 px thumbnail, as RGBA, each written beside its hash.
        let script = """
            import sys, thumbhash
            from PIL import Image
            out = sys.argv[2]
            for n, path in enumerate(open(sys.argv[1]).read().split("\\n")):
                try:
                    image = Image.open(path).convert("RGBA")
                except Exception:
                    continue
                image.thumbnail((100, 100))
                data = image.tobytes()
                if any(data[i] != 255 for i in range(3, len(data), 4)):
                    continue
                open(f"{out}/{n}.rgba", "wb").write(data)
                print(n, image.width, image.height, bytes(thumbhash.rgba_to_thumb_hash(image.width, image.height, list(data))).hex())
            """
        let run = try runChild("/usr/bin/env", ["python3", "-c", script, list, directory.path])
        #expect(run.status == 0, "\(run.errorText)")
        var (same, near, checked) = (0, 0, 0)
        for line in run.text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 4, let w = Int(parts[1]), let h = Int(parts[2]) else { continue }
            let rgba = try Array(Data(contentsOf: URL(fileURLWithPath: directory.path + "/\(parts[0]).rgba")))
            let ours = ThumbHash.encode(width: w, height: h, rgba: rgba)
            let theirs = stride(from: 0, to: parts[3].count, by: 2).map {
                UInt8(parts[3].dropFirst($0).prefix(2), radix: 16)!
            }
            checked += 1
            if ours == theirs {
                same += 1
                continue
            }
            // Python rounds halves to even, JavaScript (the format's reference) up: a quantised
            // value may differ by one step, nothing more.
            let close =
                ours.count == theirs.count && Self.withinAStep(Array(ours.dropFirst(5)), Array(theirs.dropFirst(5)))
            if close { near += 1 }
            #expect(close, "\(Self.files[Int(parts[0])!].file): \(ours) against \(theirs)")
        }
        #expect(checked >= 100, "\(checked) pictures checked")
        #expect(Double(same) >= 0.9 * Double(checked), "\(same) the same, \(near) within a step, of \(checked)")
        print("thumbhash: \(same) of \(checked) the same bytes as PyPI thumbhash, \(near) within a step")
    }

    @Test("an animation's and a video's placeholder is their poster's")
    func animationsAndVideosGetTheirPostersPlaceholder() throws {
        let request = TransformRequest(smallSide: 320, targets: [TargetSpec(.android)])
        for name in ["animated-chi.gif", "clip.mp4"] {
            let bytes = MediaBytes(Array(FileManager.default.contents(atPath: Paths.samples + "/" + name)!))
            let media = try MediaValidator.validate(bytes, limits: MediaLimits().forSources)
            let out = try MediaTransform.apply(media, request)
            let poster = try #require(out.pixels, "\(name): the poster the pictures are cut from")
            #expect(out.placeholder == ThumbHash.make(poster), "\(name)")
            // The hash draws the poster's shape.
            let hash = try #require(out.placeholder)
            let ratio = Placeholder.aspectRatio(hash)
            let shape = Double(poster.width) / Double(poster.height)
            #expect(abs(ratio - shape) / shape < 0.15, "\(name): \(ratio) against \(shape)")
        }
    }

    @Test("decoded on the device, a photo's placeholder keeps its mean colour within ΔE 5")
    func thePlaceholderKeepsThePicturesColour() throws {
        // Photos: the corpus's JPEGs. The PNG suites' 8-32 px saturated test patterns are told
        // apart: the format clamps what its few coefficients overshoot there (up to ΔE 10).
        var worst = (0.0, "")
        var patterns = (0.0, "")
        var sizes: [Int] = []
        var checked = 0
        for row in Self.files {
            guard let image = try? ImageProcessor.decode(MediaBytes(Corpus.bytes(row.file))).image else { continue }
            let hash = ThumbHash.make(image)
            sizes.append(hash.count)
            let (w, h, rgba) = ThumbHash.small(image)
            guard (0..<(w * h)).allSatisfy({ rgba[$0 * 4 + 3] == 255 }) else { continue }
            let placeholder = try #require(Placeholder.decode(hash))
            #expect(abs(Double(placeholder.width) / Double(placeholder.height) - Double(w) / Double(h)) < 0.5)
            let difference = Self.deltaE(Self.mean(rgba), Self.mean(placeholder.rgba))
            guard row.format == "JPEG" else {
                if difference > patterns.0 { patterns = (difference, row.file) }
                continue
            }
            checked += 1
            if difference > worst.0 { worst = (difference, row.file) }
        }
        #expect(checked >= 20)
        #expect(worst.0 <= 5, "worst \(worst)")
        let mean = Double(sizes.reduce(0, +)) / Double(sizes.count)
        #expect(sizes.allSatisfy { $0 <= 25 }, "\(sizes.max() ?? 0) bytes")
        print(
            "placeholder: \(checked) photos, worst mean-colour ΔE \(String(format: "%.2f", worst.0)) (\(worst.1)); "
                + "PNG test patterns worst \(String(format: "%.2f", patterns.0)) (\(patterns.1)); "
                + "hash \(sizes.min() ?? 0)-\(sizes.max() ?? 0) bytes, mean \(String(format: "%.1f", mean))")
    }

    @Test("the device kit's PNG of a placeholder reads back as its pixels, alpha included")
    func thePlaceholderPNGReadsBack() throws {
        for file in ["rgba-interlaced.png", "waterfall-rotated.jpg", "palette-transparent.png"] {
            let bytes = try #require(FileManager.default.contents(atPath: Paths.samples + "/" + file)).map { $0 }
            let image = try ImageProcessor.decode(MediaBytes(bytes)).image
            let hash = ThumbHash.make(image)
            let encoded = Data(hash).base64EncodedString().replacingOccurrences(of: "=", with: "")
            #expect(Placeholder.hash(base64: encoded) == hash)
            let placeholder = try #require(Placeholder.decode(hash))
            let png = Array(Placeholder.png(placeholder))
            let read = try ImageProcessor.decode(MediaBytes(png)).image
            #expect(read.width == placeholder.width && read.height == placeholder.height, "\(file)")
            let rgba = read.channels == 4 ? read.pixels : Self.rgba(read)
            #expect(
                rgba == placeholder.rgba || read.channels != 4 && Self.rgba(read) == Self.opaque(placeholder.rgba),
                "\(file)")
        }
        #expect(Placeholder.decode([1, 2, 3]) == nil && Placeholder.hash(base64: "!!") == nil)
        // A hash cut short says so, never reads past its end.
        #expect(
            Placeholder.decode(
                Array(
                    ThumbHash.make(
                        PixelImage(width: 40, height: 30, channels: 3, pixels: [UInt8](repeating: 90, count: 3600))
                    ).prefix(7))) == nil)
    }

    /// Every 4-bit value of `a` within one of `b`'s.
    static func withinAStep(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        for (x, y) in zip(a, b) {
            let low = abs(Int(x & 15) - Int(y & 15))
            let high = abs(Int(x >> 4) - Int(y >> 4))
            if low > 1 || high > 1 { return false }
        }
        return true
    }

    static func rgba(_ image: PixelImage) -> [UInt8] {
        (0..<(image.width * image.height)).flatMap { i -> [UInt8] in
            let p = Array(image.pixels[(i * image.channels)..<((i + 1) * image.channels)])
            switch image.channels {
            case 1: return [p[0], p[0], p[0], 255]
            case 2: return [p[0], p[0], p[0], p[1]]
            case 3: return p + [255]
            default: return p
            }
        }
    }

    static func opaque(_ rgba: [UInt8]) -> [UInt8] {
        rgba.enumerated().map { $0.offset % 4 == 3 ? 255 : $0.element }
    }

    static func mean(_ rgba: [UInt8]) -> (Double, Double, Double) {
        let n = Double(rgba.count / 4)
        var sum = (0.0, 0.0, 0.0)
        for i in stride(from: 0, to: rgba.count, by: 4) {
            sum = (sum.0 + Double(rgba[i]), sum.1 + Double(rgba[i + 1]), sum.2 + Double(rgba[i + 2]))
        }
        return (sum.0 / n, sum.1 / n, sum.2 / n)
    }

    /// CIE76 ΔE between two sRGB colours (0-255), through CIELAB (D65).
    static func deltaE(_ a: (Double, Double, Double), _ b: (Double, Double, Double)) -> Double {
        func lab(_ c: (Double, Double, Double)) -> (Double, Double, Double) {
            func linear(_ v: Double) -> Double {
                let v = v / 255
                return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
            }
            let (r, g, b) = (linear(c.0), linear(c.1), linear(c.2))
            let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
            let y = 0.2126 * r + 0.7152 * g + 0.0722 * b
            let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
            func f(_ t: Double) -> Double { t > 0.008856 ? cbrt(t) : 7.787 * t + 16.0 / 116 }
            return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
        }
        let (p, q) = (lab(a), lab(b))
        return sqrt(pow(p.0 - q.0, 2) + pow(p.1 - q.1, 2) + pow(p.2 - q.2, 2))
    }
}
