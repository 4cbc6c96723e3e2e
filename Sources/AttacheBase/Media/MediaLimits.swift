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
    /// Largest animated GIF that may be read to become an MP4 (default 50,000,000 bytes).
    public var gifSourceBytes: Int64 = 50_000_000
    /// When set, the cap for GIFs instead of ``imageBytes`` (see ``forSources``).
    public var gifBytes: Int64? = nil

    /// The defaults.
    public init() {}

    /// The caps for what may be read when video, audio and GIFs over their caps are re-encoded
    /// to fit: each category's source cap (never below its attachment cap).
    public var forSources: MediaLimits {
        var limits = self
        limits.videoBytes = max(videoBytes, videoSourceBytes)
        limits.audioBytes = max(audioBytes, audioSourceBytes)
        limits.gifBytes = max(imageBytes, gifSourceBytes)
        return limits
    }

    /// The cap for a kind.
    public func maxBytes(for kind: MediaKind) -> Int64 {
        if kind == .gif, let gifBytes { return gifBytes }
        return switch kind.category {
        case .image: imageBytes
        case .audio: audioBytes
        case .video: videoBytes
        }
    }

    /// The largest cap of all (what a fetch may read before it knows the kind).
    public var largest: Int64 { max(imageBytes, audioBytes, videoBytes, gifBytes ?? 0) }

    /// Fails with `too_large` naming the category's limit when `count` passes its cap.
    public func check(_ kind: MediaKind, bytes count: Int64) throws(AttacheError) {
        let cap = maxBytes(for: kind)
        guard count <= cap else {
            throw AttacheError(
                .tooLarge, "\(count) bytes of \(kind.rawValue) pass the \(kind.category.rawValue) cap of \(cap)",
                limit: .maxBytes(of: kind.category))
        }
    }
}
