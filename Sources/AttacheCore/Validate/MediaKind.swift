/// A media type Attache accepts, decided from the bytes, never from a URL or header.
public enum MediaKind: String, Hashable, Sendable, CaseIterable {
    case jpeg
    case png
    case gif

    /// Apple's uniform type identifier for the kind.
    public var uti: String {
        switch self {
        case .jpeg: "public.jpeg"
        case .png: "public.png"
        case .gif: "com.compuserve.gif"
        }
    }

    /// The file extension written for the kind.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        }
    }

    /// The MIME type served for the kind.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        }
    }
}
