import AttacheBase
import AttacheFetch
import AttacheMedia
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheCore
@testable import AttacheMedia

/// The collapsed notification's square: iOS cuts the centre of the attachment unless its entry
/// names a clipping rect; Attache names the square on the subject the receivers' crops find.
@Suite struct ThumbnailClipTests {
    /// A flat grey picture with a busy, saturated block (the subject) at `subject` (x, y, w, h).
    static func picture(width: Int, height: Int, subject: (Int, Int, Int, Int)) -> PixelImage {
        var pixels = [UInt8](repeating: 120, count: width * height * 3)
        var seed: UInt32 = 7
        for y in subject.1..<(subject.1 + subject.3) {
            for x in subject.0..<(subject.0 + subject.2) {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let at = (y * width + x) * 3
                (pixels[at], pixels[at + 1], pixels[at + 2]) = (UInt8(truncatingIfNeeded: seed >> 24), 40, 200)
            }
        }
        return PixelImage(width: width, height: height, channels: 3, pixels: pixels)
    }

    /// The share of `box` inside the square `clip` names, in pixels of a `width` × `height` picture.
    static func kept(_ box: (Int, Int, Int, Int), _ clip: [Double], width: Int, height: Int) -> Double {
        let square = (
            clip[0] * Double(width), clip[1] * Double(height), clip[2] * Double(width), clip[3] * Double(height)
        )
        let x0 = max(Double(box.0), square.0)
        let y0 = max(Double(box.1), square.1)
        let x1 = min(Double(box.0 + box.2), square.0 + square.2)
        let y1 = min(Double(box.1 + box.3), square.1 + square.3)
        return max(0, x1 - x0) * max(0, y1 - y0) / Double(box.2 * box.3)
    }

    @Test(
        "a portrait's square is on its subject near the top; a landscape's on its left; a square or a centred subject names none"
    )
    func theSquareIsOnTheSubject() throws {
        let box = (150, 60, 300, 300)
        let portrait = Self.picture(width: 600, height: 1200, subject: box)
        let clip = try #require(try ImageProcessor.clip(portrait, focus: nil))
        #expect(clip[2] == 1 && clip[3] == 0.5, "\(clip)")
        #expect(Self.kept(box, clip, width: 600, height: 1200) >= 0.95, "\(clip)")
        // The centre square would keep a fifth of it.
        #expect(Self.kept(box, [0, 0.25, 1, 0.5], width: 600, height: 1200) <= 0.2)

        let landscape = Self.picture(width: 1200, height: 600, subject: (40, 150, 300, 300))
        let left = try #require(try ImageProcessor.clip(landscape, focus: nil))
        #expect(left[0] < 0.1 && left[1] == 0 && left[2] == 0.5 && left[3] == 1, "\(left)")

        #expect(
            try ImageProcessor.clip(Self.picture(width: 500, height: 500, subject: (0, 0, 100, 100)), focus: nil) == nil
        )
        let centred = Self.picture(width: 600, height: 1200, subject: (150, 450, 300, 300))
        #expect(try ImageProcessor.clip(centred, focus: nil) == nil, "the centre square already keeps it")
        // The sender's focus wins over the subject.
        let low = try #require(try ImageProcessor.clip(portrait, focus: FocalPoint(x: 0.5, y: 0.9)))
        #expect(low[1] == 0.5, "\(low)")
    }

    @Test("the entry's options name the square, and a sender's own rect is kept")
    func theEntryCarriesTheSquare() async throws {
        let directory = try TemporaryDirectory()
        let server = try TestHTTPServer()
        let portrait = try Encoders.jpeg(
            Self.picture(width: 600, height: 1200, subject: (150, 60, 300, 300)), quality: 90)
        server.route("/portrait.jpg") { _, c in c.respond(headers: ["Content-Type": "image/jpeg"], body: portrait) }
        let pipeline = try makePipeline(directory)
        // The entry's options, and what the pipeline said of the payload (shown when there are none).
        func options(_ payload: String) async throws -> (JSONValue?, String) {
            let result = await pipeline.process(Array(payload.utf8))
            let said = "\(result.outcomes); best attempt \(result.bestAttempt), \(result.elapsed)"
            guard case .array(let entries)? = try JSONParser.parse(result.payload)["attachments"] else {
                return (nil, said)
            }
            return (entries.first?["options"], said)
        }
        let url = server.url("/portrait.jpg")
        let (first, said) = try await options(#"{"aps":{"mutable-content":1},"image":"\#(url)"}"#)
        let ours = try #require(first?["thumbnailClippingRect"], "\(said)")
        #expect(ours["Y"]?.doubleValue ?? 1 < 0.2 && ours["Height"]?.doubleValue == 0.5, "\(ours)")
        // Airship's options.crop: the sender's rect, as it gave it.
        let sender =
            #"{"aps":{"mutable-content":1},"com.urbanairship.media_attachment":{"url":["\#(url)?a"],"options":{"crop":{"x":0.1,"y":0.2,"width":0.5,"height":0.25}}}}"#
        let (second, saidOfSecond) = try await options(sender)
        let theirs = second?["thumbnailClippingRect"]
        #expect(
            theirs?["X"]?.doubleValue == 0.1 && theirs?["Y"]?.doubleValue == 0.2,
            "\(String(describing: theirs)): \(saidOfSecond)")
    }
}
