import AttacheBase
import AttacheTestSupport
import AttacheWork
import Foundation
import Testing

@testable import AttacheMedia

/// The pictures for Android, web push and a large icon: the shape, the width, the byte cap, and
/// a crop that keeps the subject.
struct TargetRenditionTests {
    static func web() -> TargetSpec {
        var spec = TargetSpec(.web)
        spec.format = .webp
        return spec
    }

    /// A still, a transparent PNG, an animated GIF and a video: each target's picture is of
    /// its exact shape, at least its minimum width, under its cap, and decodes as its format.
    @Test func everyKindGetsEachTargetsShapeUnderItsCap() throws {
        for name in ["waterfall-rotated.jpg", "palette-transparent.png", "animated-chi.gif", "clip.mp4"] {
            let validated = try MediaValidator.validate(try MediaBytes(contentsOfFile: Paths.samples + "/" + name))
            let out = try MediaTransform.apply(
                validated,
                TransformRequest(
                    smallSide: 320,
                    targets: [TargetSpec(.android), Self.web(), TargetSpec(.icon)]))
            #expect(out.targets.count == 3, "\(name)")
            for outcome in out.targets {
                let picture = try outcome.result.get()
                let info = try ImageProcessor.inspect(MediaBytes(picture.data))
                #expect(info.kind == outcome.spec.format, "\(name) \(outcome.spec.target)")
                #expect(info.width == picture.width && info.height == picture.height && info.frames == 1)
                let exact = Double(picture.width) / outcome.spec.aspect
                #expect(abs(Double(picture.height) - exact) <= 1, "\(name): \(picture.width)x\(picture.height)")
                #expect(picture.width >= outcome.spec.minWidth && picture.width <= outcome.spec.width)
                #expect(picture.data.count <= outcome.spec.maxBytes && picture.encodes <= QualitySearch.mostEncodes)
            }
        }
    }

    /// Caps down to 15 KB on a photo: passed within the search's encodes, the shape kept.
    @Test func aSmallCapIsReachedWithinTheSearchsEncodes() throws {
        let validated = try MediaValidator.validate(
            try MediaBytes(contentsOfFile: Paths.samples + "/waterfall-rotated.jpg"))
        for cap in [200_000, 40_000, 15_000] {
            var spec = TargetSpec(.android)
            spec.maxBytes = cap
            let out = try MediaTransform.apply(validated, TransformRequest(targets: [spec]))
            let outcome = try #require(out.targets.first)
            let picture = try outcome.result.get()
            #expect(picture.data.count <= cap, "\(cap): \(picture.data.count) bytes")
            #expect(picture.encodes <= QualitySearch.mostEncodes + CapSearch.maxEncodes, "\(cap): \(picture.encodes)")
            #expect(abs(Double(picture.height) - Double(picture.width) / 2) <= 1)
            print(
                "target cap \(cap): \(picture.data.count) bytes, q\(picture.quality), \(picture.encodes) encodes, \(picture.width)x\(picture.height)"
            )
        }
    }

    /// Android's and the web's pictures alike but for their receiver share one making; a cap
    /// neither can pass is refused for each in its own name.
    @Test func aSharedPicturesRefusalNamesItsReceiver() throws {
        let validated = try MediaValidator.validate(
            try MediaBytes(contentsOfFile: Paths.samples + "/waterfall-rotated.jpg"))
        var android = TargetSpec(.android)
        android.maxBytes = 2_000
        var web = TargetSpec(.web)
        (web.maxBytes, web.format) = (2_000, android.format)
        let out = try MediaTransform.apply(validated, TransformRequest(targets: [android, web]))
        let errors = out.targets.map { outcome -> String in
            if case .failure(let error) = outcome.result { return error.message }
            return ""
        }
        #expect(errors.count == 2 && errors[0].hasPrefix("the android picture"), "\(errors)")
        #expect(errors.count == 2 && errors[1].hasPrefix("the web picture"), "\(errors)")
    }

    /// A smooth portrait with a textured subject near its top and a skin-toned band along its
    /// bottom: the attention crop keeps the subject (a feature spread across the picture
    /// weighs little), a centre crop would cut it, and the sender's focal point wins over both.
    @Test func theCropFollowsTheSubjectOrTheSendersPoint() throws {
        let (width, height) = (600, 1200)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        var random = SplitMix(seed: 7)
        for y in 0..<height {
            for x in 0..<width {
                let base = (y * width + x) * 3
                // A soft sky, darker downwards.
                var value = (UInt8(200 - y / 10), UInt8(210 - y / 10), UInt8(230 - y / 12))
                // A skin-toned band along the bottom: a colour, not a subject.
                if y >= 1080 { value = (106, 91, 86) }
                if (220..<420).contains(y), (150..<450).contains(x) {
                    let noise = UInt8(truncatingIfNeeded: random.next())
                    value = (noise, noise / 2, 255 - noise)
                }
                (pixels[base], pixels[base + 1], pixels[base + 2]) = value
            }
        }
        let image = PixelImage(width: width, height: height, channels: 3, pixels: pixels)
        let android = TargetSpec(.android)
        let found = try TargetRendition.make(from: image, spec: android, focus: nil, deadline: .none)
        #expect(found.placement == "attention")
        #expect(found.crop.width == 600 && found.crop.height == 300)
        #expect(found.crop.y <= 220 && found.crop.y + found.crop.height >= 420, "crop \(found.crop)")
        let centre = (height - 300) / 2
        #expect(!(centre <= 220 && centre + 300 >= 420), "a centre crop would keep it too: the test proves nothing")
        let told = try TargetRendition.make(
            from: image, spec: android, focus: FocalPoint(x: 0.5, y: 0.9), deadline: .none)
        #expect(told.placement == "focus" && told.crop.y == height - 300, "crop \(told.crop)")
    }

    /// A portrait with a face at its top and something much busier below (a patch of saturated
    /// noise on grey):
    /// attention alone is drawn to the noise; the crop is placed on the face instead.
    @Test(.enabled(if: Faces.cascadePath != nil, "needs opencv-data's cascade"))
    func aFaceAtTheTopWinsOverABusierHalfBelow() throws {
        let face = try ImageProcessor.render(
            MediaBytes(try #require(FileManager.default.contents(atPath: Paths.fixtures + "/faces/astronaut.jpg"))),
            spec: RenditionSpec(maxSide: 512), limits: .default)
        let top = try #require(face.pixels?.flattened())
        let (width, height) = (512, 880)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        var random = SplitMix(seed: 3)
        for y in 0..<height {
            for x in 0..<width {
                let base = (y * width + x) * 3
                if y < top.height {
                    let from = (y * top.width + x) * top.channels
                    (pixels[base], pixels[base + 1], pixels[base + 2]) =
                        (top.pixels[from], top.pixels[from + 1], top.pixels[from + 2])
                } else if (620..<820).contains(y), (100..<420).contains(x) {
                    let noise = UInt8(truncatingIfNeeded: random.next())
                    (pixels[base], pixels[base + 1], pixels[base + 2]) = (noise, 255 - noise, noise / 3)
                } else {
                    (pixels[base], pixels[base + 1], pixels[base + 2]) = (120, 120, 125)
                }
            }
        }
        let image = PixelImage(width: width, height: height, channels: 3, pixels: pixels)
        // The face the cascade finds is the astronaut's (about x 177, y 67, 95x95 in the photo).
        let found = try #require(Faces.largest(in: image, map: try Saliency.attention(of: image)))
        #expect(abs(found.x - 177) < 20 && abs(found.y - 67) < 20 && abs(found.width - 95) < 25, "\(found)")
        let placed = try TargetRendition.make(
            from: image, spec: TargetSpec(.android), focus: nil, deadline: .none, face: found)
        #expect(placed.placement == "face")
        #expect(placed.crop.y <= 67 && placed.crop.y + placed.crop.height >= 162, "crop \(placed.crop)")
        // Attention alone goes for the noise: the face is what moved the crop.
        let attention = try TargetRendition.make(from: image, spec: TargetSpec(.android), focus: nil, deadline: .none)
        #expect(
            !(attention.crop.y <= 67 && attention.crop.y + attention.crop.height >= 162),
            "attention alone keeps the face too: the test proves nothing (\(attention.crop))")
        // Through the whole path (one detection for every target asking for faces); off by
        // default.
        var (android, icon) = (TargetSpec(.android), TargetSpec(.icon))
        let plain = try TargetRendition.all([android, icon], from: image, focus: nil, deadline: .none)
        for outcome in plain { #expect(try outcome.result.get().placement == "attention") }
        (android.faces, icon.faces) = (true, true)
        let all = try TargetRendition.all([android, icon], from: image, focus: nil, deadline: .none)
        for outcome in all { #expect(try outcome.result.get().placement == "face") }
    }

    /// Through the whole transform: with faces asked for, a still's collapsed square
    /// (`thumbnailClippingRect`) is centred on the face the crops are placed on.
    @Test(.enabled(if: Faces.cascadePath != nil, "needs opencv-data's cascade"))
    func theCollapsedSquareIsOnTheFaceWhenFacesAreAskedFor() throws {
        let face = try ImageProcessor.render(
            MediaBytes(try #require(FileManager.default.contents(atPath: Paths.fixtures + "/faces/astronaut.jpg"))),
            spec: RenditionSpec(maxSide: 512), limits: .default)
        let photo = try #require(face.pixels?.flattened())
        // A tall portrait: the photo in its middle on grey, so the square can slide either way.
        let (width, height, offset) = (512, 900, 150)
        var pixels = [UInt8](repeating: 120, count: width * height * 3)
        for y in 0..<photo.height {
            for x in 0..<min(width, photo.width) {
                let (to, from) = (((y + offset) * width + x) * 3, (y * photo.width + x) * photo.channels)
                (pixels[to], pixels[to + 1], pixels[to + 2]) =
                    (photo.pixels[from], photo.pixels[from + 1], photo.pixels[from + 2])
            }
        }
        let jpeg = try Encoders.jpeg(PixelImage(width: width, height: height, channels: 3, pixels: pixels), quality: 92)
        let media = try MediaValidator.validate(MediaBytes(jpeg), limits: MediaLimits().forSources)
        func square(faces: Bool) throws -> Double {
            var android = TargetSpec(.android)
            android.faces = faces
            let out = try MediaTransform.apply(media, TransformRequest(targets: [android]))
            // A portrait's square: the whole width, a slide of its height; its middle (none: the
            // centre square's, 0.5).
            guard let clip = out.clip else { return 0.5 }
            return clip[1] + clip[3] / 2
        }
        // The cascade's face in the photo is about y 67–162: its middle at 150 + 115 of 900 (the
        // square's middle can come no higher than 256 / 900).
        let faceMiddle = Double(offset + 115) / Double(height)
        let onFace = try square(faces: true)
        #expect(abs(onFace - faceMiddle) < 0.02, "the square's middle \(onFace), the face's \(faceMiddle)")
        let byAttention = try square(faces: false)
        #expect(
            abs(byAttention - faceMiddle) > 0.03,
            "attention alone is on the face: the test proves nothing (\(byAttention))")
    }

    @Test func aPictureWithoutAFaceKeepsAttention() throws {
        let flat = PixelImage(
            width: 300, height: 600, channels: 3, pixels: [UInt8](repeating: 90, count: 300 * 600 * 3))
        #expect(Faces.largest(in: flat, map: try Saliency.attention(of: flat)) == nil)
    }
}
