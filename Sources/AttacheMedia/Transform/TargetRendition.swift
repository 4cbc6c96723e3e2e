public import AttacheBase
public import AttacheWork
internal import Foundation
internal import Glibc

/// A picture for a receiver that downloads its image as it is — an Android notification's big
/// picture, a web push notification's image, a large icon — made from the pixels the iOS
/// rendition was made from: a crop of a fixed shape around the subject, scaled to a width,
/// encoded under the provider's byte cap.
public struct TargetSpec: Hashable, Sendable {
    /// Who receives it.
    public enum Target: String, Hashable, Sendable, CaseIterable {
        /// Android's big-picture style (FCM, OneSignal `big_picture`): 2:1 JPEG.
        case android
        /// A web push notification's image (Chrome shows JPEG and WebP): 2:1.
        case web
        /// A large icon: 1:1, 256 px.
        case icon
    }

    public var target: Target
    /// Width over height of the crop (2 for 2:1).
    public var aspect: Double
    /// The output's width (never more than the crop has, unless below ``minWidth``).
    public var width: Int
    /// A crop narrower than this is enlarged to it (providers refuse smaller pictures).
    public var minWidth: Int
    /// `.jpeg` or `.webp`.
    public var format: MediaKind
    /// The provider's byte cap (FCM: 1 MB for Android images).
    public var maxBytes: Int
    /// How the picture is encoded (``Quality/auto(target:)`` by default); a lower quality, then
    /// fewer pixels, only to pass under ``maxBytes``.
    public var quality: Quality = .default
    /// Centre the crop on the largest frontal face when one is found (before attention; a
    /// sender's focal point still wins). Off by default: it costs 10 to 50 ms a picture.
    public var faces = false

    /// The byte caps a sender may set (some ask for 40 KB; FCM's is 1 MB): every surface that
    /// takes one (serve's settings, the request's terms, process and batch) checks this range.
    public static let maxBytesRange = 1_000...100_000_000
    /// The widths over heights a sender may ask for (2 for 2:1).
    public static let aspectRange = 0.25...8.0

    /// The defaults for `target`: Android and web 2:1, 1024 wide, JPEG, under 1 MB; the icon
    /// 1:1, 256 px.
    public init(_ target: Target) {
        self.target = target
        switch target {
        case .android, .web:
            (aspect, width, minWidth, format, maxBytes) = (2, 1024, 512, .jpeg, 1_000_000)
        case .icon:
            (aspect, width, minWidth, format, maxBytes) = (1, 256, 192, .jpeg, 1_000_000)
        }
    }

    /// Every field, for the stored rendition's key.
    public var cacheKey: String {
        "target=\(target.rawValue),aspect=\(aspect),w=\(width),min-w=\(minWidth),fmt=\(format.rawValue)"
            + ",cap=\(maxBytes),q=\(quality)" + (faces ? ",faces" : "")
    }

    /// The scale of an upright `width` × `height` source whose decode gives this picture's crop
    /// its full ``width`` (at most 1: never more pixels than the source has).
    public func decodeScale(width: Int, height: Int) -> Double {
        guard width > 0, height > 0 else { return 1 }
        let cropWidth = Double(width) / Double(height) > aspect ? Double(height) * aspect : Double(width)
        return min(1, Double(self.width) / cropWidth)
    }

    /// Whether `other` makes the same picture (everything alike but the receiver).
    func sameOutput(as other: TargetSpec) -> Bool {
        var other = other
        other.target = target
        return other == self
    }

    /// The output's size for a crop `cropWidth` wide: ``width`` at most (the crop's own width
    /// when smaller, ``minWidth`` at least), the height from ``aspect``.
    func outputSize(cropWidth: Int) -> (width: Int, height: Int) {
        let width = max(minWidth, min(self.width, cropWidth))
        return (width, max(1, Int((Double(width) / aspect).rounded())))
    }
}

/// Where the sender says the subject is: `x` and `y` from 0 (left, top) to 1.
public struct FocalPoint: Hashable, Sendable {
    public var x: Double
    public var y: Double

    /// nil unless both are within 0…1.
    public init?(x: Double, y: Double) {
        guard (0...1).contains(x), (0...1).contains(y) else { return nil }
        (self.x, self.y) = (x, y)
    }
}

/// A target rendition as made.
public struct TargetRendition: Sendable {
    public var spec: TargetSpec
    public var data: [UInt8]
    public var kind: MediaKind
    public var width: Int
    public var height: Int
    /// The crop (x, y, width, height) in the pixels it was cut from: the iOS rendition's.
    public var crop: (x: Int, y: Int, width: Int, height: Int)
    /// How the crop was placed: `focus` (the sender's point) or `attention`.
    public var placement: String
    /// Encodes it took to reach the quality target and pass under the cap.
    public var encodes: Int
    /// The quality of the encode kept.
    public var quality: Int
    /// The SSIMULACRA2 score it reached against the crop it was encoded from (scaled to the
    /// picture's size), when the quality was `auto` or the cap made it lower.
    public var score: Double? = nil
    /// Why `auto` did not reach its target (``QualityChoice/missed``).
    public var missed: String? = nil
    /// The picture's ThumbHash (made from the pixels encoded, as the iOS rendition's is); none
    /// for a large icon, which no app draws a placeholder for.
    public var placeholder: [UInt8]? = nil
}

extension TargetRendition {
    /// Makes `spec`'s picture from `image` (upright). The crop is centred on `focus` when
    /// given, else on the largest frontal `face`, else placed where the attention map (`map`,
    /// made here when not given) says the subject is.
    static func make(
        from image: PixelImage, spec: TargetSpec, focus: FocalPoint?, deadline: WorkDeadline,
        map: Saliency.Map? = nil, face: Faces.Box? = nil, hint: QualityHint = .init()
    ) throws(AttacheError) -> TargetRendition {
        // The largest window of the spec's shape that fits.
        let imageAspect = Double(image.width) / Double(image.height)
        let (cropWidth, cropHeight) =
            imageAspect > spec.aspect
            ? (max(1, Int((Double(image.height) * spec.aspect).rounded())), image.height)
            : (image.width, max(1, Int((Double(image.width) / spec.aspect).rounded())))
        let origin: (x: Int, y: Int)
        let placement: String
        func centred(_ at: Double, _ length: Int, _ window: Int) -> Int {
            min(length - window, max(0, Int((at * Double(length) - Double(window) / 2).rounded())))
        }
        if let focus {
            origin = (centred(focus.x, image.width, cropWidth), centred(focus.y, image.height, cropHeight))
            placement = "focus"
        } else if let face {
            let x = (Double(face.x) + Double(face.width) / 2) / Double(image.width)
            let y = (Double(face.y) + Double(face.height) / 2) / Double(image.height)
            origin = (centred(x, image.width, cropWidth), centred(y, image.height, cropHeight))
            placement = "face"
        } else {
            origin = try Saliency.bestOrigin(in: image, cropWidth: cropWidth, cropHeight: cropHeight, map: map)
            placement = "attention"
        }
        try deadline.check()
        let cut = image.cropped(x: origin.x, y: origin.y, width: cropWidth, height: cropHeight).flattened()
        let size = spec.outputSize(cropWidth: cropWidth)
        let picture =
            size == (cut.width, cut.height) ? cut : try ImageProcessor.resampleImage(cut, target: size)
        let fitted = try CapSearch.fit(picture, from: cut, spec: spec, deadline: deadline, hint: hint)
        return TargetRendition(
            spec: spec, data: fitted.data, kind: spec.format, width: fitted.width, height: fitted.height,
            crop: (origin.x, origin.y, cropWidth, cropHeight), placement: placement, encodes: fitted.choice.encodes,
            quality: fitted.choice.quality, score: fitted.choice.score, missed: fitted.choice.missed,
            placeholder: spec.target == .icon ? nil : ThumbHash.make(picture))
    }
}

extension PixelImage {
    /// The `width` × `height` window at (`x`, `y`).
    func cropped(x: Int, y: Int, width: Int, height: Int) -> PixelImage {
        guard x != 0 || y != 0 || width != self.width || height != self.height else { return self }
        let row = width * channels
        let out = [UInt8](unsafeUninitializedCapacity: height * row) { dst, count in
            pixels.withUnsafeBufferPointer { src in
                for line in 0..<height {
                    let from = ((y + line) * self.width + x) * channels
                    (dst.baseAddress! + line * row).initialize(from: src.baseAddress! + from, count: row)
                }
            }
            count = height * row
        }
        return PixelImage(width: width, height: height, channels: channels, pixels: out)
    }

    /// Without alpha: transparent pixels over white (what a JPEG, or a receiver without
    /// transparency, shows).
    func flattened() -> PixelImage {
        let image = droppingOpaqueAlpha()
        guard image.hasAlpha else { return image }
        let colours = image.channels - 1
        var out = [UInt8](repeating: 0, count: image.width * image.height * colours)
        out.withUnsafeMutableBufferPointer { dst in
            image.pixels.withUnsafeBufferPointer { src in
                for i in 0..<(image.width * image.height) {
                    let alpha = Int(src[i * image.channels + colours])
                    for c in 0..<colours {
                        let value = Int(src[i * image.channels + c])
                        dst[i * colours + c] = UInt8((value * alpha + 255 * (255 - alpha) + 127) / 255)
                    }
                }
            }
        }
        return PixelImage(width: image.width, height: image.height, channels: colours, pixels: out)
    }
}

extension Rendition {
    /// The pictures for `specs`, made from the pixels this rendition was encoded from (an
    /// animation's poster frame), around `focus` when given.
    public func targets(
        _ specs: [TargetSpec], focus: FocalPoint? = nil, deadline: WorkDeadline = .none
    ) throws(AttacheError) -> [TargetOutcome] {
        guard !specs.isEmpty else { return [] }
        let image: PixelImage
        if let pixels {
            image = pixels
        } else {
            // Made without its pixels at hand (a still cut from an animation): its own bytes.
            let again = try ImageProcessor.render(
                MediaBytes(data), spec: RenditionSpec(maxSide: max(width, height)), limits: .default)
            guard let pixels = again.pixels else {
                throw AttacheError(.internalError, "the rendition's pixels could not be read back")
            }
            image = pixels
        }
        return try TargetRendition.all(
            specs, from: image, focus: focus, deadline: deadline,
            hint: QualityHint(
                guess: quality?.quality, ceiling: pixelsCeiling, tables: pixelsTables, encoder: pixelsEncoder))
    }
}

extension TargetRendition {
    /// What the crops are placed by when the sender names no focus: the attention map, and the
    /// largest face when a spec asks for faces.
    struct Subject {
        var map: Saliency.Map?
        var face: Faces.Box?
    }

    static func subject(of image: PixelImage, specs: [TargetSpec], focus: FocalPoint?) throws(AttacheError) -> Subject {
        let map = focus == nil ? try Saliency.attention(of: image) : nil
        let face = specs.contains(where: \.faces) ? map.flatMap { Faces.largest(in: image, map: $0) } : nil
        return Subject(map: map, face: face)
    }

    /// Each spec's picture from `image`, made or failed on its own (the deadline fails them all).
    /// `guess`: the quality `auto` chose for the rendition from the same pixels, where its
    /// search starts.
    static func all(
        _ specs: [TargetSpec], from image: PixelImage, focus: FocalPoint?, deadline: WorkDeadline,
        hint: QualityHint = .init(), subject: Subject? = nil
    ) throws(AttacheError) -> [TargetOutcome] {
        // The face, else the attention map, once for all of them, and one picture for specs
        // alike but for their receiver (Android's and the web's, by default).
        let found: Subject
        if let subject { found = subject } else { found = try Self.subject(of: image, specs: specs, focus: focus) }
        let (map, face) = (found.map, found.face)
        var outcomes: [TargetOutcome] = []
        for spec in specs {
            var made: Result<TargetRendition, AttacheError>
            if let same = outcomes.first(where: { $0.spec.sameOutput(as: spec) }) {
                made = same.result.map { picture in
                    var copy = picture
                    copy.spec = spec
                    return copy
                }.mapError { error in
                    // The same picture's refusal, told of this receiver's picture.
                    let own = error.message.replacingOccurrences(
                        of: "the \(same.spec.target.rawValue) picture", with: "the \(spec.target.rawValue) picture")
                    return AttacheError(error.code, own, limit: error.limit, detail: error.detail)
                }
            } else {
                made = Result { () throws(AttacheError) in
                    try make(
                        from: image, spec: spec, focus: focus, deadline: deadline, map: map,
                        face: spec.faces ? face : nil, hint: hint)
                }
            }
            if case .failure(let error) = made, error.code == .timedOut { throw error }
            outcomes.append(TargetOutcome(spec: spec, result: made))
        }
        return outcomes
    }
}
