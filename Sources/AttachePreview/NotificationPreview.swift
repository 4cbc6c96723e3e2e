import AttacheBase
import AttacheClient
public import AttacheCore
import AttacheMedia
public import AttacheStore
import Foundation

/// One self-contained HTML page showing a processed payload as each platform draws it: iOS
/// collapsed (the thumbnail as clipped) and expanded, Android collapsed (the large icon) and
/// expanded (the big picture), web push in Chrome on Windows and on macOS — each with the
/// title, body and action buttons that platform reads, the pictures Attache made for it, and
/// the placeholder beside the iOS picture.
///
/// Everything the payload says is text to the page (escaped for where it goes); the pictures
/// are `data:` URIs of copies at the size drawn, never a sender's URL; the page runs no script
/// and its Content-Security-Policy allows none (its one style sheet by hash).
public struct NotificationPreview: Sendable {
    /// The stored objects' bytes by id (the renditions the result names).
    public typealias Objects = @Sendable (String) -> [UInt8]?

    /// What the page is about (a file name, a payload id); text.
    public var title: String
    /// Quality of the drawn copies.
    public var quality = 85

    public init(title: String) { self.title = title }

    /// The objects of `store`.
    public static func objects(in store: AttachmentStore) -> Objects {
        { id in
            guard let id = AttachmentID(hex: id), let object = try? store.attachment(id),
                let bytes = try? store.contents(of: object)
            else { return nil }
            return Array(bytes)
        }
    }

    /// The page for `result` (the processed payload), its pictures read from `objects`.
    public func render(_ result: PipelineResult, objects: @escaping Objects) -> String {
        let payload = (try? JSONParser.parse(result.payload)) ?? .null
        var pictures = Pictures(objects: objects, quality: quality)
        var page = PreviewPage()
        page.header(title: title, result: result)
        for platform in PreviewText.Platform.allCases {
            let text = PreviewText.read(payload, shape: result.shape, platform: platform)
            switch platform {
            case .ios: page.ios(text, picture: pictures.ios(result))
            case .android:
                page.android(
                    text, picture: pictures.target(TargetSpec.Target.android, result),
                    icon: pictures.target(TargetSpec.Target.icon, result))
            case .web:
                page.web(
                    text, picture: pictures.target(TargetSpec.Target.web, result),
                    icon: pictures.target(TargetSpec.Target.icon, result))
            }
        }
        page.notes(result: result)
        return page.html()
    }

    /// The platform policy a page is served with (the same as its own `<meta>`, plus what a
    /// header alone can say).
    public static func contentSecurityPolicy(for page: String) -> String {
        PreviewPage.policy(styleHash: PreviewPage.styleHash(of: page) ?? "") + "; frame-ancestors 'none'"
    }
}

/// A picture one platform shows: the decoded pixels of what Attache made, and what it is.
struct PreviewPicture {
    /// The decoded rendition (a video's frame at its thumbnail time), upright.
    var image: PixelImage
    var id: String
    var type: String
    var bytes: Int64
    /// The iOS clipping rect (x, y, width, height in 0…1), when the entry carries one.
    var clip: [Double]?
    var thumbnailHidden = false
    /// The ThumbHash, when the entry carries one.
    var placeholder: String?
    /// The reason no picture was made, when none was.
    var error: String?
    /// An animation as the expanded view plays it: a GIF at the platter's width, when one fits
    /// the page's budget.
    var animated: (data: [UInt8], width: Int, height: Int)?

    static func missing(_ error: String) -> PreviewPicture {
        PreviewPicture(
            image: PixelImage(width: 1, height: 1, channels: 3, pixels: [0, 0, 0]), id: "", type: "",
            bytes: 0, error: error)
    }

    /// A copy of `crop` at `width` × `height`, as a `data:` URI, and its pixels.
    func drawn(crop: [Double]? = nil, width: Int, height: Int, quality: Int) -> DisplayCopy? {
        guard error == nil else { return nil }
        return try? DisplayCopy(image, crop: crop, width: width, height: height, quality: quality)
    }
}

/// The pictures of a result, each decoded once.
struct Pictures {
    let objects: NotificationPreview.Objects
    let quality: Int
    var decoded: [String: PixelImage] = [:]

    init(objects: @escaping NotificationPreview.Objects, quality: Int) {
        self.objects = objects
        self.quality = quality
    }

    /// The object `id` decoded (a video's frame at `time`); nil when it is gone or no picture.
    mutating func image(_ id: String, time: Double? = nil) -> PixelImage? {
        if let image = decoded[id] { return image }
        guard let bytes = objects(id), let image = try? DisplayCopy.picture(MediaBytes(bytes), time: time) else {
            return nil
        }
        decoded[id] = image
        return image
    }

    /// The iOS attachment: the first entry attached (nil: the payload sends iOS nothing).
    mutating func ios(_ result: PipelineResult) -> PreviewPicture? {
        // A send body's pictures say their receivers (`fcm:ios+android`); an APNs payload's are all iOS's.
        let outcomes = result.outcomes.filter { outcome in
            result.shape == .apns
                || outcome.convention.split(separator: ":").last?.split(separator: "+").contains("ios") == true
        }
        guard let outcome = outcomes.first(where: { $0.attachment != nil }) ?? outcomes.first else { return nil }
        guard let entry = outcome.attachment else { return .missing(outcome.reason) }
        guard entry.kind.category != .audio else { return .missing("audio: iOS draws its player, no picture") }
        guard let image = image(entry.id, time: entry.thumbnail.time) else { return .missing("not_found") }
        var picture = PreviewPicture(
            image: image, id: entry.id, type: entry.type, bytes: entry.bytes, clip: entry.thumbnail.clippingRect,
            thumbnailHidden: entry.thumbnail.hidden == true, placeholder: entry.placeholder)
        if entry.kind == .gif, (entry.frames ?? 1) > 1, let bytes = objects(entry.id) {
            picture.animated = Self.animation(bytes, width: PreviewGeometry.iosExpandedTallest.width)
        }
        return picture
    }

    /// An animated GIF `width` wide, at most 150 KB (the page's budget) and no taller than the
    /// expanded view; nil when it does not fit (the first frame is drawn instead).
    static func animation(_ bytes: [UInt8], width: Int) -> (data: [UInt8], width: Int, height: Int)? {
        guard let info = try? ImageProcessor.probe(MediaBytes(bytes)), info.width > 0, info.height > 0 else {
            return nil
        }
        var spec = RenditionSpec()
        spec.maxSide = max(1, width * max(info.width, info.height) / info.width)
        spec.gifMaxBytes = 150_000
        guard let copy = try? ImageProcessor.render(MediaBytes(bytes), spec: spec, timeBudget: .seconds(10)),
            copy.kind == .gif, copy.frames > 1,
            width * copy.height <= PreviewGeometry.iosExpandedTallest.height * copy.width
        else { return nil }
        return (copy.data, copy.width, copy.height)
    }

    /// The picture made for `target` (nil: the payload names none). Of several, the last: a
    /// body names its common picture first and a platform's own after it (FCM's
    /// `notification.image`, then `android.notification.image`), and the platform's own wins.
    mutating func target(_ target: TargetSpec.Target, _ result: PipelineResult) -> PreviewPicture? {
        let entries = result.outcomes.flatMap(\.targets).filter { $0.target == target }
        guard let first = entries.last else { return nil }
        guard let id = first.id else { return .missing(first.error?.code.rawValue ?? "not_made") }
        guard let image = image(id) else { return .missing("not_found") }
        return PreviewPicture(image: image, id: id, type: first.type ?? "", bytes: first.bytes)
    }
}

extension PreviewPicture {
    /// The placeholder decoded to a PNG `data:` URI with its size, when there is one.
    var placeholderImage: (uri: String, width: Int, height: Int, bytes: Int)? {
        guard let text = placeholder, let hash = Placeholder.hash(base64: text),
            let image = Placeholder.decode(hash)
        else { return nil }
        let png = Placeholder.png(image)
        return ("data:image/png;base64," + png.base64EncodedString(), image.width, image.height, hash.count)
    }
}
