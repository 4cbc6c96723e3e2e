public import AttacheBase
import AttacheWork

/// What the transform made of validated media: the bytes to store and what they are.
public struct TransformedMedia: Sendable {
    /// The output's kind: the input's for JPEG and PNG, JPEG or PNG for the other stills
    /// (WebP where asked), GIF or MP4 for an animation, the container's own for audio and
    /// video (or MP4/M4A when transcoded).
    public var kind: MediaKind
    /// The bytes to store: a new rendition for images, the validated bytes for audio and video.
    public var bytes: MediaBytes
    /// Pixel width and height, for images.
    public var width: Int?
    public var height: Int?
    /// Frames written, for images.
    public var frames: Int?
    /// Animated GIF: when its poster frame starts, in seconds (the thumbnail time).
    public var posterTime: Double?
    /// What frame and byte budgets made the GIF encoder do.
    public var actions: [String] = []
    /// The source image's stored width and height (before orientation), for images.
    public var sourceWidth: Int? = nil
    public var sourceHeight: Int? = nil
    /// Images: whether the source's own bytes were kept, metadata removed, instead of a
    /// re-encoded rendition (nil for audio and video, which always pass as they came).
    public var keptSource: Bool? = nil
    /// The small rendition, when one was asked for and the image is larger, or a video's
    /// poster (a JPEG): the device's fallback.
    public var small: (bytes: MediaBytes, width: Int, height: Int, kind: MediaKind)? = nil
    /// A JPEG or WebP re-encode: the quality written, the score reached, the encodes spent.
    public var quality: QualityChoice? = nil
    /// The picture's ThumbHash (a still's; an animation's or a video's poster's): the
    /// placeholder a device draws when the picture cannot arrive.
    public var placeholder: [UInt8]? = nil
    /// The square a collapsed notification shows, when not the centre one (``Rendition/clip``).
    public var clip: [Double]? = nil
    /// The source JPEG's quality, when ``pixels`` are at about its size (``QualityHint``).
    var pixelsCeiling: Int? = nil
    /// What the transform noticed and worked around (an embedded ICC profile it could not use).
    public var warnings: [String] = []
    /// Video and audio: what the container holds (codecs, size, duration).
    public var container: ContainerInfo? = nil
    /// The pictures for other receivers that were asked for (Android, web push, a large
    /// icon), each made or failed on its own.
    public var targets: [TargetOutcome] = []
    /// The pixels the rendition (an animation's poster, a video's poster) came from, kept
    /// until the targets are made.
    var pixels: PixelImage? = nil
}

/// One receiver's picture, or why there is none.
public struct TargetOutcome: Sendable {
    public var spec: TargetSpec
    public var result: Result<TargetRendition, AttacheError>
}

/// The transform stage: one entry point for every kind. Images are decoded once (the header
/// opened once, its size deciding the decode scale), downscaled, turned upright and re-encoded
/// without metadata; audio and video pass through as validated, once their container has been
/// checked (``MediaContainer``).
public enum MediaTransform {
    /// Transforms `media` into what the store keeps, as `request` asks (``TransformRequest``).
    public static func apply(
        _ media: ValidatedMedia, _ request: TransformRequest
    ) throws(AttacheError) -> TransformedMedia {
        var transformed = try transform(media, request)
        guard !request.targets.isEmpty else { return transformed }
        defer { transformed.pixels = nil }
        guard let pixels = transformed.pixels else {
            let none = AttacheError(.unsupportedVariant, "\(media.kind.rawValue): no picture to crop (no video frame)")
            transformed.targets = request.targets.map { TargetOutcome(spec: $0, result: .failure(none)) }
            return transformed
        }
        let subject = try TargetRendition.subject(of: pixels, specs: request.targets, focus: request.focus)
        transformed.targets = try TargetRendition.all(
            request.targets, from: pixels, focus: request.focus, deadline: request.deadline,
            hint: QualityHint(
                guess: transformed.quality?.quality, ceiling: transformed.pixelsCeiling,
                tables: request.spec.jpegTables, encoder: request.spec.jpegEncoder),
            subject: subject)
        // With faces asked for, a still's collapsed square is on the face the crops are on.
        if let face = subject.face, media.kind.category == .image, (transformed.frames ?? 1) == 1,
            let width = transformed.width, let height = transformed.height,
            let centre = FocalPoint(
                x: (Double(face.x) + Double(face.width) / 2) / Double(pixels.width),
                y: (Double(face.y) + Double(face.height) / 2) / Double(pixels.height))
        {
            transformed.clip = try ImageProcessor.clip(pixels, focus: centre, size: (width, height))
        }
        return transformed
    }

    /// ``apply(_:_:)`` without the targets; the pixels they are made from are kept when asked.
    private static func transform(
        _ media: ValidatedMedia, _ request: TransformRequest
    ) throws(AttacheError) -> TransformedMedia {
        try request.deadline.check()
        switch media.kind.category {
        case .image:
            let rendition = try ImageProcessor.render(media.bytes, kind: media.kind, request: request)
            // An animation the GIF budgets clipped (frames dropped, shrunk, cut to a still, or
            // over the image cap) plays whole as an MP4, a fraction of the bytes: one rule for
            // every animation (GIF, animated WebP, JPEG XL). FFmpeg is loaded only then: an
            // animation that fits never pays for it.
            guard request.spec.video.enabled, rendition.source.frames > 1, !rendition.actions.isEmpty,
                MediaEncoder.isAvailable
            else { return image(rendition) }
            do {
                return try animationVideo(media, request, clipped: rendition.actions.joined(separator: "; "))
            } catch  where error.code == .tooLarge || error.code == .decoderMemoryExceeded {
                // Too much work or memory as video: the animation, cut to fit, is attached.
                var kept = image(rendition)
                kept.warnings.append("not made a video: \(error.message)")
                return kept
            }
        case .audio, .video:
            return try audioVisual(media, request)
        }
    }

    private static func image(_ rendition: Rendition) -> TransformedMedia {
        let animated = rendition.frames > 1
        var transformed = TransformedMedia(
            kind: rendition.kind, bytes: MediaBytes(rendition.data), width: rendition.width,
            height: rendition.height, frames: rendition.frames,
            posterTime: animated ? rendition.posterTime : nil, actions: rendition.actions,
            sourceWidth: rendition.source.width, sourceHeight: rendition.source.height)
        transformed.keptSource = rendition.keptSource
        transformed.quality = rendition.keptSource ? nil : rendition.quality
        transformed.pixels = rendition.pixels
        transformed.placeholder = rendition.placeholder
        transformed.clip = rendition.clip
        transformed.pixelsCeiling = rendition.pixelsCeiling
        if let warning = rendition.source.colourWarning { transformed.warnings.append(warning) }
        if let small = rendition.small {
            transformed.small = (MediaBytes(small.data), small.width, small.height, rendition.kind)
        }
        return transformed
    }

    /// An animation (GIF, animated WebP) made MP4, with its poster from the video.
    private static func animationVideo(
        _ media: ValidatedMedia, _ request: TransformRequest, clipped: String
    ) throws(AttacheError) -> TransformedMedia {
        let video = try MediaEncoder.video(
            fromAnimation: media.bytes, kind: media.kind, spec: request.spec, limits: request.limits,
            cap: request.caps.videoBytes, deadline: request.deadline)
        var transformed = TransformedMedia(
            kind: .mp4, bytes: MediaBytes(video.bytes), width: video.width, height: video.height, frames: video.frames)
        transformed.actions.append(
            "made an H.264 MP4 of \(video.frames ?? 0) frames, \(video.bytes.count) bytes (as a GIF: \(clipped))")
        try poster(of: transformed.bytes, into: &transformed, at: nil, request)
        return transformed
    }

    /// Video and audio: checked by libavformat before anything is stored (a cut file, or one
    /// over the limits, is refused), passed as they came when an iPhone plays them and they fit
    /// the cap, else re-encoded; a video's poster is its small rendition.
    private static func audioVisual(
        _ media: ValidatedMedia, _ request: TransformRequest
    ) throws(AttacheError) -> TransformedMedia {
        let (spec, limits, deadline, caps) = (request.spec, request.limits, request.deadline, request.caps)
        let encode = spec.video.enabled && MediaEncoder.isAvailable
        let container = try MediaContainer.check(
            media.bytes, kind: media.kind, limits: limits, deadline: deadline, allowUnplayable: encode)
        let isVideo = media.kind.category == .video
        let cap = caps.maxBytes(for: media.kind)
        let transcodes = encode && (container.unplayable != nil || media.bytes.count > cap)
        try deadline.expect(
            MediaEncoder.workEstimate(
                container, video: isVideo, poster: isVideo && request.smallSide != nil, transcode: transcodes,
                spec: spec,
                cap: cap))
        // The poster first: a transcode that cannot finish in time leaves it as the best attempt.
        var posterOf = TransformedMedia(kind: media.kind, bytes: media.bytes)
        if isVideo {
            try poster(of: media.bytes, into: &posterOf, at: request.posterTime, request)
        }
        var transformed: TransformedMedia
        if container.unplayable != nil || media.bytes.count > cap {
            guard encode else {
                try caps.check(media.kind, bytes: Int64(media.bytes.count))
                throw AttacheError(
                    .unsupportedVariant, "\(media.kind.rawValue): \(container.unplayable ?? "unplayable")")
            }
            let why = container.unplayable ?? "\(media.bytes.count) bytes, over the cap of \(cap)"
            // A tenth of the time left stays for storing the poster should the encode run out.
            let work = isVideo && posterOf.small != nil ? deadline.leaving(share: spec.video.encodeShare) : deadline
            let encoded = Result { () throws(AttacheError) in
                try MediaEncoder.transcode(
                    media.bytes, info: container, video: isVideo, spec: spec, limits: limits, cap: cap, deadline: work)
            }
            switch encoded {
            case .success(let output):
                transformed = TransformedMedia(
                    kind: output.kind, bytes: MediaBytes(output.bytes), width: output.width, height: output.height)
                transformed.actions.append(
                    "transcoded to \(isVideo ? "H.264/AAC MP4" : "AAC M4A"), \(output.bytes.count) bytes (\(why))")
            case .failure(let error) where error.code == .timedOut && !deadline.hasExpired && posterOf.small != nil:
                let still = posterOf.small!
                var best = TransformedMedia(
                    kind: still.kind, bytes: still.bytes, width: still.width, height: still.height, frames: 1)
                best.warnings.append(
                    "the transcode (\(why)) did not finish before the deadline: the poster is attached instead")
                best.container = container
                best.pixels = posterOf.pixels
                best.placeholder = posterOf.placeholder
                return best
            case .failure(let error):
                throw error
            }
        } else {
            transformed = TransformedMedia(kind: media.kind, bytes: media.bytes)
            if [.mp4, .m4v, .m4a].contains(media.kind) && !container.indexFirst {
                transformed.warnings.append(
                    "the index (moov) is at the end of the file: a device downloads all of it before playing")
            }
        }
        transformed.container = container
        transformed.small = posterOf.small
        transformed.pixels = posterOf.pixels
        transformed.placeholder = posterOf.placeholder
        transformed.posterTime = posterOf.posterTime
        transformed.warnings += posterOf.warnings
        return transformed
    }

    /// A video's poster as its small rendition, and with targets the frame at the rendition's
    /// size they are cut from (one decode for both): a poster that cannot be made is a warning,
    /// never the video's failure (but the deadline is).
    private static func poster(
        of bytes: MediaBytes, into transformed: inout TransformedMedia, at time: Double?, _ request: TransformRequest
    ) throws(AttacheError) {
        let (spec, limits, deadline, smallSide) = (request.spec, request.limits, request.deadline, request.smallSide)
        let pictures = request.keepsPixels
        guard smallSide != nil || pictures else { return }
        do throws(AttacheError) {
            let side = pictures ? max(spec.maxSide, smallSide ?? 0) : smallSide!
            let (frame, shown) = try MediaPoster.frame(
                bytes, at: time, maxSide: side, limits: limits, deadline: deadline)
            try deadline.check()
            transformed.posterTime = shown
            if pictures { transformed.pixels = frame }
            // The placeholder is the poster's, the frame the device shows before it plays.
            transformed.placeholder = ThumbHash.make(frame)
            if let smallSide {
                let fitted = RenditionSpec.fit(width: frame.width, height: frame.height, into: smallSide)
                let small =
                    fitted == (frame.width, frame.height)
                    ? frame : try ImageProcessor.resampleImage(frame, target: fitted)
                transformed.small = (
                    MediaBytes(
                        try QualitySearch.encode(
                            small, as: .jpeg, quality: spec.quality,
                            hint: QualityHint(tables: spec.jpegTables, encoder: spec.jpegEncoder)
                        ).data), small.width,
                    small.height, .jpeg
                )
            }
        } catch {
            if error.code == .timedOut { throw error }
            transformed.warnings.append("no poster: \(error.message)")
        }
    }
}
