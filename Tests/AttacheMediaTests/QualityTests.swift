import AttacheBase
import AttacheTestSupport
import CAttacheCodecs
import Foundation
import Testing

@testable import AttacheMedia

/// `--quality auto`: each picture at the quality a typical photo needs for its target, kept when
/// its score is in the band around it and moved into the band when not, the score checked
/// against the public SSIMULACRA2 where it is installed, and the byte caps of the other
/// receivers' pictures searched in size and quality together.
struct QualityTests {
    /// A picture of `width` × `height`: a smooth sky when `busy` is false (with soft clouds of
    /// ±`clouds` levels about 200 px across), else leaves and grass (fine texture at every scale).
    static func picture(width: Int, height: Int, busy: Bool, seed: UInt64 = 7, clouds: Double = 0) -> PixelImage {
        var state = seed
        func noise() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 40) / Double(1 << 24)
        }
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let fy = Double(y) / Double(height)
                var (r, g, b) = (90 + 60 * fy, 140 + 50 * fy, 220 - 20 * fy)
                if busy {
                    let leaf = sin(Double(x) * 0.9 + sin(Double(y) * 0.37) * 3) * cos(Double(y) * 0.71)
                    let grain = noise() * 80 - 40
                    (r, g, b) = (60 + 50 * leaf + grain, 120 + 60 * leaf + grain, 40 + 30 * leaf + grain * 0.5)
                } else {
                    let (cx, cy) = (Double(x) / 200, Double(y) / 200)
                    let cloud = clouds * sin(cx * 2 * .pi + sin(cy * 3)) * cos(cy * 2.3)
                    let grain = noise() * 2 - 1
                    (r, g, b) = (r + cloud + grain, g + cloud + grain, b + cloud / 2 + grain)
                }
                pixels[i] = UInt8(max(0, min(255, r)))
                pixels[i + 1] = UInt8(max(0, min(255, g)))
                pixels[i + 2] = UInt8(max(0, min(255, b)))
            }
        }
        return PixelImage(width: width, height: height, channels: 3, pixels: pixels)
    }

    /// The first component's sampling factors in a JPEG's frame header (0x22: 4:2:0, 0x11:
    /// 4:4:4), nil when there is none.
    static func lumaSampling(_ data: [UInt8]) -> UInt8? {
        var at = 2
        while at + 4 <= data.count, data[at] == 0xFF {
            let marker = data[at + 1]
            let length = Int(data[at + 2]) << 8 | Int(data[at + 3])
            if (0xC0...0xC2).contains(marker) { return at + 11 < data.count ? data[at + 11] : nil }
            at += 2 + length
        }
        return nil
    }

    /// The public SSIMULACRA2 of `encoded` against `reference` (nil when the PyPI package is
    /// not installed).
    static func publicScore(reference: PixelImage, encoded: [UInt8], kind: MediaKind) throws -> Double? {
        guard ChildProcess.pythonHas("ssimulacra2") else { return nil }
        let directory = try TemporaryDirectory()
        let original = directory.path + "/reference.png"
        let candidate = directory.path + "/candidate." + kind.fileExtension
        try Data(try Encoders.png(reference, level: 1)).write(to: URL(fileURLWithPath: original))
        try Data(encoded).write(to: URL(fileURLWithPath: candidate))
        let run = try runChild(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sys, ssimulacra2; print(ssimulacra2.compute_ssimulacra2(sys.argv[1], sys.argv[2]))",
                original, candidate,
            ])
        #expect(run.status == 0, "\(run.errorText)")
        return Double(run.text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Each quality names its renditions apart: a stored rendition is reused only for the same.
    @Test func eachQualityHasItsOwnCacheKey() {
        let keys = [Quality.fixed(75), .auto(target: Quality.defaultTarget), .auto(target: 70), .default].map {
            RenditionSpec(quality: $0).cacheKey
        }
        #expect(Set(keys).count == 3 && keys[1] == keys[3], "\(keys)")
        #expect(Quality("auto", target: 80) == .auto(target: 80) && Quality("85") == .fixed(85))
        #expect(Quality("0") == nil && Quality("auto", target: 99) == nil && Quality("best") == nil)
        // The targets the search can reach: its floor and its top are not asked for.
        #expect(Quality("auto", target: 60) != nil && Quality("auto", target: 90) != nil)
        #expect(Quality("auto", target: 59) == nil && Quality("auto", target: 91) == nil)
    }

    /// A smooth sky (a gradient with a little grain): at the default target its encode shows no
    /// blocking in its flat parts above the gate, and coarser it would (the gate binds: what the
    /// pooled score lets through, the blocking measure does not).
    @Test func aSmoothGradientGetsNoBlockingAboveTheGate() throws {
        let sky = Self.picture(width: 1024, height: 683, busy: false)
        let (_, choice) = try QualitySearch.encode(sky, as: .jpeg, quality: .default)
        let blocking = try #require(choice.blocking)
        #expect(blocking <= QualitySearch.maxBlocking, "\(choice)")
        #expect((choice.score ?? 0) >= QualitySearch.band(target: Quality.defaultTarget).lowerBound, "\(choice)")
        let judge = try #require(try QualitySearch.Judge(sky))
        let coarse = try QualitySearch.encode(sky, .jpeg, 40, tables: JPEGTables.automatic.resolved(for: .default))
        _ = try judge.score(coarse, .jpeg)
        #expect(judge.lastBlocking > QualitySearch.maxBlocking, "quality 40: \(judge.lastBlocking)")
    }

    /// The gate reads luma, and the statistics chroma, sixteen pixels at a time where the CPU can:
    /// the same integers as the formulas, on every byte value in every channel, at the extremes
    /// of the 16-bit sums, and on rows that do not end on sixteen.
    @Test func theGatesLumaAndChromaAreTheFormulasOnEveryValue() {
        var random = SplitMix(seed: 0x1A7A)
        for count in [0, 1, 15, 16, 17, 255, 1024, 1031] {
            var rgb = (0..<(3 * count)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if count >= 256 {
                for x in 0..<256 { (rgb[3 * x], rgb[3 * x + 1], rgb[3 * x + 2]) = (UInt8(x), UInt8(255 - x), 255) }
            }
            if count >= 1024 {
                // Each primary and its complement, side by side: Cb and Cr at ±32640.
                let extremes: [[UInt8]] = [[255, 255, 0], [0, 0, 255], [255, 0, 0], [0, 255, 255], [0, 0, 0]]
                for x in 256..<512 { rgb.replaceSubrange((3 * x)..<(3 * x + 3), with: extremes[x % extremes.count]) }
            }
            #expect(att_blocking_rows_agree(rgb, count) == 1, "\(count) pixels")
        }
    }

    /// A target missed says why: the highest quality tried did not reach it, or the picture
    /// was too small to score.
    @Test func aMissedTargetSaysWhy() throws {
        // Saturated red and blue stripes a pixel wide: 4:2:0 chroma cannot carry them.
        var pixels = [UInt8](repeating: 0, count: 256 * 256 * 3)
        for y in 0..<256 {
            for x in 0..<256 { pixels[(y * 256 + x) * 3 + (x % 2 == 0 ? 0 : 2)] = 255 }
        }
        let stripes = PixelImage(width: 256, height: 256, channels: 3, pixels: pixels)
        // 4:2:0 cannot reach it at its highest quality: 4:4:4 chroma is tried, and written when it
        // does better; what it still misses says why.
        let (data, stripesChoice) = try QualitySearch.encode(stripes, as: .jpeg, quality: .auto(target: 90))
        #expect(stripesChoice.fullChroma, "\(stripesChoice)")
        #expect(Self.lumaSampling(data) == 0x11, "written 4:4:4: luma not subsampled against chroma")
        let reached = try #require(stripesChoice.score) >= QualitySearch.band(target: 90).lowerBound
        #expect(reached == (stripesChoice.missed == nil), "\(stripesChoice)")
        #expect(reached || stripesChoice.missed == "highest_quality", "\(stripesChoice)")
        let tiny = PixelImage(width: 6, height: 6, channels: 3, pixels: [UInt8](repeating: 128, count: 108))
        let (_, small) = try QualitySearch.encode(tiny, as: .jpeg, quality: .auto(target: 75))
        #expect(small.missed == "too_small" && small.score == nil && small.quality == 85)
        let (_, met) = try QualitySearch.encode(
            Self.picture(width: 512, height: 384, busy: false), as: .jpeg, quality: .auto(target: 75))
        #expect(met.missed == nil && (met.score ?? 0) >= QualitySearch.band(target: 75).lowerBound)
    }

    /// A fixed quality is today's encode, byte for byte: the search is not in its path.
    @Test func aFixedQualityStillGivesTodaysBytesExactly() throws {
        let image = Self.picture(width: 640, height: 480, busy: true)
        for quality in [40, 85, 95] {
            let (data, choice) = try QualitySearch.encode(image, as: .jpeg, quality: .fixed(quality))
            #expect(data == (try Encoders.jpeg(image, quality: quality)), "quality \(quality)")
            #expect(choice.quality == quality && choice.encodes == 1 && choice.score == nil)
        }
        let source = MediaBytes(try Encoders.jpeg(Self.picture(width: 2000, height: 1500, busy: true), quality: 92))
        let rendition = try ImageProcessor.render(source, spec: RenditionSpec(quality: .fixed(85)))
        let decoded = try ImageProcessor.decode(source, spec: RenditionSpec(quality: .fixed(85))).image
        #expect(rendition.data == (try Encoders.jpeg(decoded, quality: 85)))
    }

    /// `auto` writes the fast encoder's picture of 256 × 256 px and up as progressive scans
    /// (SOF2): the coefficients of one baseline scan at the quality it chose, so the same pixels,
    /// in fewer bytes; a smaller picture stays one baseline scan (SOF0), as a fixed quality does.
    @Test func autoWritesProgressiveScansWithTheBaselinesPixels() throws {
        let colour = Self.picture(width: 640, height: 480, busy: true)
        let grey = PixelImage(
            width: colour.width, height: colour.height, channels: 1,
            pixels: stride(from: 0, to: colour.pixels.count, by: 3).map { colour.pixels[$0 + 1] })
        let small = Self.picture(width: 240, height: 180, busy: true)
        let tables = JPEGTables.automatic.resolved(for: .default)
        for (name, image, progressive) in [("colour", colour, true), ("grey", grey, true), ("small", small, false)] {
            let (data, choice) = try QualitySearch.encode(image, as: .jpeg, quality: .default)
            #expect((jpegMarkerOffset(data, 0xC2) != nil) == progressive, "\(name): SOF2")
            #expect((jpegMarkerOffset(data, 0xC0) != nil) == !progressive, "\(name): SOF0")
            let baseline = try QualitySearch.encode(
                image, .jpeg, choice.quality, tables: tables, fullChroma: choice.fullChroma)
            #expect(jpegMarkerOffset(baseline, 0xC0) != nil, "\(name): the fixed quality's file is baseline")
            let shown = try ImageProcessor.decode(MediaBytes(data), spec: RenditionSpec(maxSide: 4000)).image
            let expected = try ImageProcessor.decode(MediaBytes(baseline), spec: RenditionSpec(maxSide: 4000)).image
            #expect(shown.pixels == expected.pixels, "\(name): the same pixels")
            if progressive {
                #expect(data.count < baseline.count, "\(name): \(data.count) bytes against \(baseline.count)")
            } else {
                #expect(data == baseline, "\(name)")
            }
            print("quality: \(name) auto \(data.count) bytes, one baseline scan \(baseline.count)")
        }
        // The small rendition of 320 px takes the same rule (320 × 240 here).
        let source = try MediaValidator.validate(
            MediaBytes(try Encoders.jpeg(Self.picture(width: 1280, height: 960, busy: true), quality: 95)))
        let out = try MediaTransform.apply(source, TransformRequest(spec: RenditionSpec(maxSide: 1024), smallSide: 320))
        let fallback = Array(try #require(out.small).bytes.buffer)
        #expect(jpegMarkerOffset(fallback, 0xC2) != nil && jpegMarkerOffset(fallback, 0xC0) == nil)
    }

    /// At the same target the flat picture takes fewer bytes than the busy one, and fewer than
    /// fixed 85 gives it; both land in the band, each in at most three encodes at 4:2:0 (a
    /// floor met there is never tried at 4:4:4). A picture whose score at the typical quality
    /// is over the band is brought down into it, one under it up.
    @Test func eachPictureLandsInTheBandAroundItsTarget() throws {
        let flat = Self.picture(width: 1024, height: 768, busy: false)
        let busy = Self.picture(width: 1024, height: 768, busy: true)
        let target = 75.0
        let band = QualitySearch.band(target: target)
        let typical = QualitySearch.guess(target: target)
        let (flatData, flatChoice) = try QualitySearch.encode(flat, as: .jpeg, quality: .auto(target: target))
        let (busyData, busyChoice) = try QualitySearch.encode(busy, as: .jpeg, quality: .auto(target: target))
        for (name, image, choice) in [("flat", flat, flatChoice), ("busy", busy, busyChoice)] {
            #expect(band.contains(try #require(choice.score)), "\(name): \(choice)")
            #expect(choice.encodes <= QualitySearch.maxEncodes && !choice.fullChroma, "\(name): \(choice)")
            // Where the typical quality's own encode was out of the band, the quality moved the
            // way the band lies; where it was in, it was kept in one encode.
            let judge = try #require(try QualitySearch.Judge(image))
            let tables = JPEGTables.automatic.resolved(for: .auto(target: target))
            let first = try judge.score(try QualitySearch.encode(image, .jpeg, typical, tables: tables), .jpeg)
            if first > band.upperBound { #expect(choice.quality < typical, "\(name): \(first) at \(typical)") }
            if first < band.lowerBound { #expect(choice.quality > typical, "\(name): \(first) at \(typical)") }
            print("quality: \(name) scores \(first) at the typical \(typical); chose \(choice)")
        }
        #expect(Self.lumaSampling(flatData) == 0x22 && Self.lumaSampling(busyData) == 0x22)
        #expect(flatData.count < busyData.count)
        let flatAt85 = try Encoders.jpeg(flat, quality: 85)
        #expect(flatData.count < flatAt85.count, "flat: \(flatData.count) bytes at auto, \(flatAt85.count) at 85")
        print("quality: flat \(flatData.count) bytes; busy \(busyData.count) bytes")
    }

    /// Every JPEG and PNG sample and a run of corpus photos, at three targets: each rendition
    /// reaches its band's floor in-process, and within a point of it by the public SSIMULACRA2
    /// where that is installed (the in-process score tracks it to within 0.8 on the photo
    /// benchmark).
    @Test func theTargetIsMetOnEveryTestPicture() throws {
        var names = ["gray.jpg", "cmyk-adobe.jpg", "waterfall-rotated.jpg", "portrait-progressive.jpg"].map {
            Paths.samples + "/" + $0
        }
        names += ["jpeg-variants/pillow__hopper.jpg", "jpeg-variants/pillow__flower.jpg"].map(Corpus.path)
        var judged = 0
        for file in names where FileManager.default.fileExists(atPath: file) {
            for target in [65.0, 75.0, 85.0] {
                var spec = RenditionSpec(maxSide: 640, quality: .auto(target: target))
                spec.outputFormat = .jpeg
                let rendition = try ImageProcessor.render(try MediaBytes(contentsOfFile: file), spec: spec)
                guard !rendition.keptSource, let choice = rendition.quality else { continue }
                let score = try #require(choice.score)
                // Met, or (a saturated red that 4:2:0 chroma cannot carry) the best the search can
                // write: its highest quality, or the source JPEG's own at about its size.
                let floor = QualitySearch.band(target: target).lowerBound
                let met = score >= floor && (choice.blocking ?? 0) <= QualitySearch.maxBlocking(target: target)
                #expect(
                    met || choice.quality == QualitySearch.highest || choice.missed == "source_quality",
                    "\(file) at \(target): \(choice)")
                #expect(met == (choice.missed == nil), "\(file) at \(target): \(choice)")
                #expect(choice.encodes <= QualitySearch.mostEncodes)
                let reference = try #require(rendition.pixels)
                if let judge = try Self.publicScore(reference: reference, encoded: rendition.data, kind: .jpeg) {
                    judged += 1
                    #expect(!met || judge >= floor - 1, "\(file) at \(target): public \(judge), in-process \(score)")
                    #expect(abs(judge - score) <= 1.5, "\(file) at \(target): public \(judge), in-process \(score)")
                }
            }
        }
        print("quality: targets met on \(names.count) pictures, \(judged) checked with the public SSIMULACRA2")
    }

    /// Photos neither the band nor the prediction were fitted on (the samples' and the corpus's
    /// photos, at the service's default size): at the default the first encode lands in the band
    /// for at least four in five, and none is written under the floor.
    @Test func theFirstEncodeLandsInTheBandOnPhotosItWasNotFittedOn() throws {
        var names = ["waterfall-rotated.jpg", "portrait-progressive.jpg"].map { Paths.samples + "/" + $0 }
        names += [
            "jpeg-variants/pillow__flower.jpg", "jpeg-variants/pillow__flower2.jpg", "exif-orientation/Portrait_3.jpg",
        ]
        .map(Corpus.path)
        let band = QualitySearch.band(target: Quality.defaultTarget)
        var (photos, inOne) = (0, 0)
        for file in names where FileManager.default.fileExists(atPath: file) {
            var spec = RenditionSpec(quality: .default)
            spec.outputFormat = .jpeg
            let rendition = try ImageProcessor.render(try MediaBytes(contentsOfFile: file), spec: spec)
            let choice = try #require(rendition.quality, "\(file)")
            photos += 1
            if choice.encodes == 1 { inOne += 1 }
            #expect(try #require(choice.score) >= band.lowerBound || choice.missed != nil, "\(file): \(choice)")
            print("quality: \(file) \(rendition.width)x\(rendition.height): \(choice)")
        }
        #expect(photos >= 3 && inOne * 5 >= photos * 4, "\(inOne) of \(photos) in one encode")
    }

    /// The in-process score against the public one over a range of qualities, JPEG and WebP.
    @Test(.enabled(if: ChildProcess.pythonHas("ssimulacra2"), "needs PyPI ssimulacra2"))
    func theScoreTracksThePublicSSIMULACRA2() throws {
        let image = Self.picture(width: 512, height: 384, busy: true)
        var worst = 0.0
        for kind in [MediaKind.jpeg, .webp] {
            for quality in [30, 60, 80, 95] {
                let (data, choice) = try QualitySearch.encode(image, as: kind, quality: .fixed(quality), score: true)
                let inside = try #require(choice.score)
                let outside = try #require(try Self.publicScore(reference: image, encoded: data, kind: kind))
                worst = max(worst, abs(inside - outside))
                #expect(abs(inside - outside) <= 1.5, "\(kind) q\(quality): in-process \(inside), public \(outside)")
            }
        }
        // Pictures with fewer than six scales (a short side under 256 px: the small rendition,
        // icons), whose weights shift: their negligible pairs are left out as well. (This busy
        // picture at 320 × 180 and quality 60 scores 36, where the in-process score reads 2.1
        // above the public one whether those pairs are computed or not; from quality 75 on,
        // within 0.7.)
        for (width, height) in [(320, 180), (120, 90)] {
            let small = Self.picture(width: width, height: height, busy: true)
            for quality in [75, 95] {
                let (data, choice) = try QualitySearch.encode(small, as: .jpeg, quality: .fixed(quality), score: true)
                let inside = try #require(choice.score)
                let outside = try #require(try Self.publicScore(reference: small, encoded: data, kind: .jpeg))
                worst = max(worst, abs(inside - outside))
                #expect(
                    abs(inside - outside) <= 1.5,
                    "\(width)x\(height) q\(quality): in-process \(inside), public \(outside)")
            }
        }
        print("quality: in-process score within \(worst) of the public SSIMULACRA2")
    }

    /// A portrait and a panorama: the Android picture is cut from the decode at the size it
    /// needs, not from the iOS rendition: 1024×512 from the portrait, and the panorama's own
    /// 1000×500 window, sharp (as the source has it).
    @Test func theReceiversPicturesComeFromTheBestPixelsTheDecodeHas() throws {
        let portrait = MediaBytes(try Encoders.jpeg(Self.picture(width: 3000, height: 4000, busy: true), quality: 90))
        let made = try MediaTransform.apply(
            try MediaValidator.validate(portrait), TransformRequest(targets: [TargetSpec(.android)]))
        #expect((made.width, made.height) == (768, 1024))
        let picture = try #require(try made.targets.first?.result.get())
        #expect((picture.width, picture.height) == (1024, 512))

        let wide = Self.picture(width: 8000, height: 500, busy: true)
        let panorama = MediaBytes(try Encoders.jpeg(wide, quality: 95))
        let cut = try MediaTransform.apply(
            try MediaValidator.validate(panorama),
            TransformRequest(targets: [TargetSpec(.android)], focus: FocalPoint(x: 0.5, y: 0.5)))
        let crop = try #require(try cut.targets.first?.result.get())
        #expect((crop.width, crop.height) == (1000, 500))
        #expect(crop.crop.width == 1000 && crop.crop.height == 500)
        // Sharp: the picture is the source's window (JPEG's loss only), not a blown-up blur.
        let shown = try ImageProcessor.decode(MediaBytes(crop.data), spec: RenditionSpec(maxSide: 4000)).image
        let window = wide.cropped(x: crop.crop.x, y: crop.crop.y, width: 1000, height: 500)
        let difference = meanAbsoluteDifference(shown, window)
        #expect(difference < 12, "mean difference \(difference) from the source's window")
    }

    /// Caps from roomy to impossible on a busy photo: under the cap every time it can be met,
    /// never under the documented floor (quality 30, and below 50 only at the narrowest width),
    /// never narrower than the spec allows; where it cannot be met, a too_large that says so.
    @Test func aCapSearchNeverGoesUnderTheFloorItDocuments() throws {
        let validated = try MediaValidator.validate(
            MediaBytes(try Encoders.jpeg(Self.picture(width: 2400, height: 1600, busy: true), quality: 95)))
        for format in [MediaKind.jpeg, .webp] {
            for cap in [400_000, 100_000, 40_000, 20_000, 5_000, 1_000] {
                var spec = TargetSpec(.android)
                (spec.maxBytes, spec.format) = (cap, format)
                let out = try MediaTransform.apply(validated, TransformRequest(targets: [spec]))
                let outcome = try #require(out.targets.first)
                switch outcome.result {
                case .success(let picture):
                    #expect(picture.data.count <= cap, "\(format) \(cap): \(picture.data.count) bytes")
                    #expect(picture.quality >= CapSearch.floor, "\(format) \(cap): q\(picture.quality)")
                    #expect(picture.width >= spec.minWidth, "\(format) \(cap): \(picture.width) wide")
                    if picture.quality < CapSearch.softFloor { #expect(picture.width == spec.minWidth) }
                    #expect(picture.encodes <= QualitySearch.mostEncodes + CapSearch.maxEncodes)
                    #expect(picture.score != nil)
                    print(
                        "cap \(format) \(cap): \(picture.data.count) bytes, q\(picture.quality), "
                            + "\(picture.width)x\(picture.height), score \(picture.score ?? 0), \(picture.encodes) encodes"
                    )
                case .failure(let error):
                    #expect(
                        error.code == .tooLarge && error.message.contains("cannot fit"), "\(format) \(cap): \(error)")
                    #expect(cap <= 20_000, "\(format) \(cap): \(error)")
                }
            }
        }
    }

    /// A target of 90 with a 40 KB cap: the cap wins, and the report says what score the
    /// picture reached.
    @Test func theCapWinsOverTheTarget() throws {
        let validated = try MediaValidator.validate(
            MediaBytes(try Encoders.jpeg(Self.picture(width: 2400, height: 1600, busy: true), quality: 95)))
        var spec = TargetSpec(.android)
        (spec.maxBytes, spec.quality) = (40_000, .auto(target: 90))
        let out = try MediaTransform.apply(validated, TransformRequest(targets: [spec]))
        let picture = try #require(try out.targets.first?.result.get())
        #expect(picture.data.count <= 40_000)
        let score = try #require(picture.score)
        #expect(score < 90, "a busy 2:1 picture under 40 KB cannot score 90; this one says \(score)")
    }
}
