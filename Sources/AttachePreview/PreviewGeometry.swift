/// The sizes a preview draws each platform at, in CSS pixels (one point or dp at 1×), and
/// where each number comes from. Apple and Google publish no pixel geometry for their
/// notification views; where a number is not published it says so, and it is one a person can
/// hold against a device.
public enum PreviewGeometry {
    /// One size and its source.
    public struct Size: Sendable {
        public let width: Int
        public let height: Int
        public let source: String
    }

    /// iOS: a banner on an iPhone 15 (393 pt wide), 16 pt from each edge.
    public static let iosBanner = Size(
        width: 361, height: 104,
        source: "iPhone 15's 393 pt screen less the 16 pt side margins of its notification list; not published")
    /// The collapsed banner's thumbnail: the attachment's square (its clipping rect, else its centre).
    public static let iosThumbnail = Size(
        width: 40, height: 40,
        source: "the thumbnail at the banner's trailing edge, 40 pt; approximate, not published")
    /// The expanded notification's picture: the banner's width, the picture's own shape, at most 5:4 tall.
    public static let iosExpandedTallest = Size(
        width: 361, height: 451,
        source: "the platter's width; a picture taller than 5:4 is cut to its centre; not published")
    /// Android: a notification card in the shade of a 392 dp phone, 16 dp padding inside.
    public static let androidCard = Size(
        width: 360, height: 84,
        source:
            "a collapsed notification is 64 dp tall in Android's classic template, here with the header row of the newer ones; approximate"
    )
    /// The large icon at the collapsed card's end (FCM puts the picture there when no icon is given).
    public static let androidIcon = Size(
        width: 40, height: 40,
        source: "the collapsed template's right icon, 40 dp; approximate, not published in Android's docs")
    /// The big picture, 2:1 across the card inside its padding.
    public static let androidBigPicture = Size(
        width: 328, height: 164,
        source:
            "Android's guidance for BigPictureStyle: about 2:1, at most 450 dp wide; the card's width less 16 dp a side"
    )
    /// Chrome on Windows: a toast, its hero image and app logo at 100% scale.
    public static let windowsToast = Size(
        width: 364, height: 180,
        source: "Microsoft's toast content docs: a toast 364 px wide, its hero image 364 × 180 at 100% scale")
    public static let windowsLogo = Size(
        width: 48, height: 48, source: "Microsoft's toast app logo: 48 × 48 at 100% scale (Chrome puts the icon there)")
    /// Chrome on macOS: a banner; macOS shows a notification's icon at its trailing edge, never its image.
    public static let macBanner = Size(
        width: 344, height: 72,
        source:
            "macOS's notification banner, 344 pt wide; Chrome's image is not shown there, its icon is; not published")
    public static let macIcon = Size(
        width: 40, height: 40, source: "the banner's content image, 40 pt; not published")

    /// Every size with its name, for the page's notes.
    public static let all: [(String, Size)] = [
        ("iOS banner", iosBanner), ("iOS thumbnail", iosThumbnail), ("iOS expanded picture", iosExpandedTallest),
        ("Android card", androidCard), ("Android large icon", androidIcon), ("Android big picture", androidBigPicture),
        ("Windows hero image", windowsToast), ("Windows app logo", windowsLogo), ("macOS banner", macBanner),
        ("macOS icon", macIcon),
    ]
}
