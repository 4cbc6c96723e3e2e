/// A media type Attache accepts — Apple's notification attachment types — decided from the
/// bytes, never from a URL or header.
public enum MediaKind: String, Hashable, Sendable, CaseIterable {
    case jpeg
    case png
    case gif
    case aiff
    case aifc
    case wav
    case mp3
    case m4a
    case mpeg
    case mpeg2
    case mp4
    case m4v
    case avi
    /// A WebP is converted to JPEG (PNG with alpha), never stored as it came; renditions are
    /// written as WebP only when asked (`--format webp`, for receivers other than iOS).
    case webp
    /// Read only: HEIF with HEVC (an iPhone's photos), converted like a WebP.
    case heic
    /// Read only: HEIF with AV1, converted like a WebP.
    case avif
    /// Read only: JPEG XL, converted like a WebP.
    case jxl
    /// Read only: QuickTime movies, WebM/Matroska clips, Ogg (Opus, Vorbis) and FLAC audio are
    /// transcoded to H.264/AAC MP4 or AAC M4A, never stored as they came.
    case mov
    case webm
    case ogg
    case flac

    /// Image, audio or video: decides the byte cap and what the pipeline does with it.
    public enum Category: String, Hashable, Sendable {
        case image
        case audio
        case video
    }

    /// The kind's category.
    public var category: Category {
        switch self {
        case .jpeg, .png, .gif, .webp, .heic, .avif, .jxl: .image
        case .aiff, .aifc, .wav, .mp3, .m4a, .ogg, .flac: .audio
        case .mpeg, .mpeg2, .mp4, .m4v, .avi, .mov, .webm: .video
        }
    }

    /// Apple's uniform type identifier for the kind (the attachment's type hint).
    public var uti: String {
        switch self {
        case .jpeg: "public.jpeg"
        case .png: "public.png"
        case .gif: "com.compuserve.gif"
        case .aiff: "public.aiff-audio"
        case .aifc: "public.aifc-audio"
        case .wav: "com.microsoft.waveform-audio"
        case .mp3: "public.mp3"
        case .m4a: "public.mpeg-4-audio"
        case .mpeg: "public.mpeg"
        case .mpeg2: "public.mpeg-2-video"
        case .mp4: "public.mpeg-4"
        case .m4v: "com.apple.m4v-video"
        case .avi: "public.avi"
        case .webp: "org.webmproject.webp"
        case .heic: "public.heic"
        case .avif: "public.avif"
        case .jxl: "public.jpeg-xl"
        case .mov: "com.apple.quicktime-movie"
        case .webm: "org.webmproject.webm"
        case .ogg: "org.xiph.ogg"
        case .flac: "org.xiph.flac"
        }
    }

    /// The file extension written for the kind.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .aiff: "aiff"
        case .aifc: "aifc"
        case .wav: "wav"
        case .mp3: "mp3"
        case .m4a: "m4a"
        case .mpeg: "mpg"
        case .mpeg2: "m2v"
        case .mp4: "mp4"
        case .m4v: "m4v"
        case .avi: "avi"
        case .webp: "webp"
        case .heic: "heic"
        case .avif: "avif"
        case .jxl: "jxl"
        case .mov: "mov"
        case .webm: "webm"
        case .ogg: "ogg"
        case .flac: "flac"
        }
    }

    /// The MIME type served for the kind.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .aiff, .aifc: "audio/aiff"
        case .wav: "audio/wav"
        case .mp3: "audio/mpeg"
        case .m4a: "audio/mp4"
        case .mpeg, .mpeg2: "video/mpeg"
        case .mp4: "video/mp4"
        case .m4v: "video/x-m4v"
        case .avi: "video/x-msvideo"
        case .webp: "image/webp"
        case .heic: "image/heic"
        case .avif: "image/avif"
        case .jxl: "image/jxl"
        case .mov: "video/quicktime"
        case .webm: "video/webm"
        case .ogg: "audio/ogg"
        case .flac: "audio/flac"
        }
    }
}
