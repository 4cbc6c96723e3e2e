import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheMedia

/// The pictures for Android, web push and a large icon (a send body's other receivers): their
/// caps, shape and format.
struct TargetOptions: ParsableArguments {
    @Option(help: "Largest Android picture in bytes (FCM's cap is 1 MB; some senders ask for 40 KB).")
    var androidMaxBytes = TargetSpec(.android).maxBytes

    @Option(help: "Width over height of the Android and web pictures (2 for 2:1).")
    var androidAspect = TargetSpec(.android).aspect

    @Option(help: "Largest web push picture in bytes.")
    var webMaxBytes = TargetSpec(.web).maxBytes

    @Option(help: "The web push picture as jpeg or webp (Chrome shows both).")
    var webFormat = "jpeg"

    @Option(help: "Width of the Android and web pictures (a narrower crop is not enlarged past it).")
    var targetWidth = TargetSpec(.android).width

    @Flag(help: "Centre the crops on the largest frontal face found (OpenCV's LBP cascade; 10-50 ms a picture).")
    var faces = false

    func validate() throws {
        try Ranges.check(androidMaxBytes, TargetSpec.maxBytesRange, "--android-max-bytes")
        try Ranges.check(webMaxBytes, TargetSpec.maxBytesRange, "--web-max-bytes")
        try Ranges.check(androidAspect, TargetSpec.aspectRange, "--android-aspect")
        try Ranges.check(targetWidth, 64...8192, "--target-width")
        guard ["jpeg", "webp"].contains(webFormat) else {
            throw ValidationError("--web-format '\(webFormat)' is not jpeg or webp")
        }
        if faces, let why = ImageProcessor.facesUnavailable { throw ValidationError("--faces: \(why)") }
    }

    /// Each receiver's spec, its pictures encoded at `quality`.
    func specs(quality: Quality) -> [TargetSpec.Target: TargetSpec] {
        var android = TargetSpec(.android)
        (android.maxBytes, android.aspect, android.width) = (androidMaxBytes, androidAspect, targetWidth)
        android.minWidth = min(android.minWidth, targetWidth)
        var web = TargetSpec(.web)
        (web.maxBytes, web.aspect, web.width) = (webMaxBytes, androidAspect, targetWidth)
        web.minWidth = min(web.minWidth, targetWidth)
        web.format = webFormat == "webp" ? .webp : .jpeg
        var icon = TargetSpec(.icon)
        (android.faces, web.faces, icon.faces) = (faces, faces, faces)
        (android.quality, web.quality, icon.quality) = (quality, quality, quality)
        return [.android: android, .web: web, .icon: icon]
    }
}
