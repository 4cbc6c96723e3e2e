/// Byte caps per category, Apple's limits for notification attachments by default.
public struct MediaLimits: Hashable, Sendable {
    /// Largest image (default 10,000,000 bytes).
    public var imageBytes: Int64 = 10_000_000
    /// Largest audio file (default 5,000,000 bytes).
    public var audioBytes: Int64 = 5_000_000
    /// Largest video file (default 50,000,000 bytes).
    public var videoBytes: Int64 = 50_000_000

    /// The defaults.
    public init() {}

    /// The cap for a kind.
    public func maxBytes(for kind: MediaKind) -> Int64 {
        switch kind.category {
        case .image: imageBytes
        case .audio: audioBytes
        case .video: videoBytes
        }
    }

    /// The largest cap of all (what a fetch may read before it knows the kind).
    public var largest: Int64 { max(imageBytes, audioBytes, videoBytes) }

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
