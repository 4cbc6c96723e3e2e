/// Byte caps per category, Apple's limits for notification attachments by default.
public struct MediaLimits: Hashable, Sendable {
    /// Largest image (default 10,000,000 bytes).
    public var imageBytes: Int64 = 10_000_000
    /// Largest audio file (default 5,000,000 bytes).
    public var audioBytes: Int64 = 5_000_000
    /// Largest video file (default 50,000,000 bytes).
    public var videoBytes: Int64 = 50_000_000

    /// Largest video a transcode may read (default 200,000,000 bytes): a video over
    /// ``videoBytes`` is fetched up to this and re-encoded under the cap.
    public var videoSourceBytes: Int64 = 200_000_000
    /// Largest audio file a transcode may read (default 50,000,000 bytes).
    public var audioSourceBytes: Int64 = 50_000_000
    /// Largest animation (a GIF, an animated WebP) that may be read to become an MP4 (default
    /// 50,000,000 bytes).
    public var animationSourceBytes: Int64 = 50_000_000
    /// When set, the cap for animations instead of ``imageBytes`` (see ``forSources``).
    public var animationBytes: Int64? = nil

    /// The defaults.
    public init() {}

    /// The caps for what may be read when video, audio and GIFs over their caps are re-encoded
    /// to fit: each category's source cap (never below its attachment cap).
    public var forSources: MediaLimits {
        var limits = self
        limits.videoBytes = max(videoBytes, videoSourceBytes)
        limits.audioBytes = max(audioBytes, audioSourceBytes)
        limits.animationBytes = max(imageBytes, animationSourceBytes)
        return limits
    }

    /// The cap for a kind; `animated`: the file is an animation (``Sniffer/isAnimation(_:kind:)``).
    public func maxBytes(for kind: MediaKind, animated: Bool = false) -> Int64 {
        if animated, kind == .gif || kind == .webp, let animationBytes { return animationBytes }
        return switch kind.category {
        case .image: imageBytes
        case .audio: audioBytes
        case .video: videoBytes
        }
    }

    /// The largest cap of all (what a fetch may read before it knows the kind).
    public var largest: Int64 { max(imageBytes, audioBytes, videoBytes, animationBytes ?? 0) }

    /// Fails with `too_large` naming the category's limit when `count` passes its cap.
    public func check(_ kind: MediaKind, bytes count: Int64, animated: Bool = false) throws(AttacheError) {
        let cap = maxBytes(for: kind, animated: animated)
        guard count <= cap else {
            throw AttacheError(
                .tooLarge, "\(count) bytes of \(kind.rawValue) pass the \(kind.category.rawValue) cap of \(cap)",
                limit: .maxBytes(of: kind.category))
        }
    }
}
