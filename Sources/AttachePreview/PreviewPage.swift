import AttacheBase
import AttacheCore
import AttacheMedia
import Crypto
import Foundation

/// The page a ``NotificationPreview`` writes: every platform's view placed at fixed CSS-pixel
/// coordinates (so a picture's place is known without a browser, and said on it as
/// `data-box="x,y,width,height"`), then the notes in the page's flow.
struct PreviewPage {
    static let width = 1240
    /// The three columns: the collapsed view, the expanded view, the notes beside them.
    static let columns = (a: 24, b: 425, c: 829)
    static let cGap = 387

    private var rules: [String] = []
    private var elements: [String] = []
    private var notesHTML = ""
    private var count = 0
    private var y = 24
    var quality = 85

    // MARK: Placing

    /// Places `tag` at (x, y) with size w × h: its position is a rule of the style sheet (the
    /// policy allows no inline style), the element gets the classes and `inner`.
    @discardableResult
    private mutating func place(
        _ tag: String = "div", _ classes: String, _ x: Int, _ y: Int, _ w: Int, _ h: Int, _ inner: String = "",
        attributes: String = ""
    ) -> String {
        count += 1
        let id = "e\(count)"
        rules.append("#\(id){left:\(x)px;top:\(y)px;width:\(w)px;height:\(h)px}")
        let open = "<\(tag) id=\"\(id)\" class=\"\(classes)\"\(attributes)"
        elements.append(tag == "img" ? open + ">" : open + ">" + inner + "</\(tag)>")
        return id
    }

    /// A place in the drawing order for an element whose size is known later (a card drawn
    /// under what is placed on it).
    private mutating func reserve() -> Int {
        elements.append("")
        return elements.count - 1
    }

    /// Fills a reserved place.
    private mutating func fill(_ slot: Int, _ classes: String, _ x: Int, _ y: Int, _ w: Int, _ h: Int) {
        count += 1
        rules.append("#e\(count){left:\(x)px;top:\(y)px;width:\(w)px;height:\(h)px}")
        elements[slot] = "<div id=\"e\(count)\" class=\"\(classes)\"></div>"
    }

    /// A line of text, cut with an ellipsis.
    private mutating func line(_ classes: String, _ x: Int, _ y: Int, _ w: Int, _ text: String, height: Int = 20) {
        place("div", "t " + classes, x, y, w, height, escape(text))
    }

    /// Text over at most `lines` lines of `lineHeight`; returns the height used.
    @discardableResult
    private mutating func lines(
        _ classes: String, _ x: Int, _ y: Int, _ w: Int, _ text: String, max: Int, lineHeight: Int = 20,
        charWidth: Double = 7.4
    ) -> Int {
        let shown = Swift.min(max, Self.estimatedLines(text, width: w, charWidth: charWidth))
        place("div", "m l\(max) " + classes, x, y, w, shown * lineHeight, escape(text))
        return shown * lineHeight
    }

    /// How many lines `text` takes at `width` (a guess from its length; the clamp cuts the rest).
    static func estimatedLines(_ text: String, width: Int, charWidth: Double) -> Int {
        let perLine = Swift.max(1, Int(Double(width) / charWidth))
        return text.split(separator: "\n", omittingEmptySubsequences: false).reduce(0) {
            $0 + Swift.max(1, ($1.count + perLine - 1) / perLine)
        }
    }

    /// A picture drawn from `copy`, said where it is and what it shows.
    private mutating func picture(
        _ copy: DisplayCopy, _ classes: String, _ x: Int, _ y: Int, platform: String, of picture: PreviewPicture,
        crop: String
    ) {
        let alt = "\(platform): \(picture.type) \(picture.image.width)×\(picture.image.height)"
        place(
            "img", "pic " + classes, x, y, copy.image.width, copy.image.height,
            attributes:
                " alt=\"\(escape(alt))\" data-platform=\"\(platform)\" data-object=\"\(escape(picture.id))\""
                + " data-crop=\"\(escape(crop))\" data-box=\"\(x),\(y),\(copy.image.width),\(copy.image.height)\""
                + " src=\"\(copy.dataURI)\"")
    }

    private mutating func row(_ label: String) {
        place("h2", "row", Self.columns.a, y, 1192, 24, escape(label))
        y += 32
    }

    private mutating func nothing(_ text: String) {
        line("none", Self.columns.a, y, 1192, text)
        y += 44
    }

    /// The caption under a view.
    private mutating func caption(_ x: Int, _ y: Int, _ w: Int, _ text: String) -> Int {
        let height = lines("cap", x, y, w, text, max: 3, lineHeight: 16, charWidth: 6.2)
        return y + height
    }

    // MARK: Sections

    mutating func header(title: String, result: PipelineResult) {
        place("h1", "title", 24, y, 1192, 32, "Notification preview")
        let state =
            result.payloadError.map { "unreadable (\($0.code.rawValue)), passed through" }
            ?? (result.passedThrough ? "passed through unchanged" : result.bestAttempt ? "best attempt" : "attached")
        let attached = result.outcomes.filter { $0.attachment != nil || $0.targets.contains { $0.id != nil } }.count
        line(
            "sub", 24, y + 36, 1192,
            "\(title) · \(result.shape.rawValue) · \(state) · \(attached) of \(result.outcomes.count) pictures made")
        y += 76
    }

    mutating func ios(_ text: PreviewText?, picture: PreviewPicture?) {
        row("iOS")
        guard text != nil || picture != nil else { return nothing("This payload sends nothing to iOS.") }
        let text = text ?? PreviewText()
        let top = y
        let bottom = Swift.max(
            iosCollapsed(text, picture, top: top), iosExpanded(text, picture, top: top),
            iosPlaceholder(picture, top: top))
        y = bottom + 28
    }

    /// The collapsed banner: the app's icon, the text, the thumbnail at its end; its bottom.
    private mutating func iosCollapsed(_ text: PreviewText, _ picture: PreviewPicture?, top: Int) -> Int {
        let a = Self.columns.a
        let banner = PreviewGeometry.iosBanner
        let thumbSide = PreviewGeometry.iosThumbnail.width
        let thumb = picture.flatMap {
            $0.thumbnailHidden ? nil : $0.drawn(crop: $0.clip, width: thumbSide, height: thumbSide, quality: quality)
        }
        // Collapsed: the banner, the app's icon, the text, the thumbnail at its end.
        place("div", "card ios", a, top, banner.width, banner.height)
        place("div", "app-icon", a + 12, top + 14, 38, 38)
        let textWidth = banner.width - 60 - 12 - (thumb == nil ? 0 : thumbSide + 10)
        var ty = top + 12
        line("ios-title", a + 60, ty, textWidth, text.title ?? "App")
        ty += 20
        if let subtitle = text.subtitle {
            line("ios-sub", a + 60, ty, textWidth, subtitle)
            ty += 20
        }
        lines("ios-body", a + 60, ty, textWidth, text.body ?? "", max: text.subtitle == nil ? 3 : 2)
        if let thumb, let picture {
            let crop = picture.clip.map { $0.map { String($0) }.joined(separator: ",") } ?? "centre"
            self.picture(
                thumb, "ios-thumb", a + banner.width - 12 - thumbSide, top + 14, platform: "ios-collapsed",
                of: picture, crop: crop)
        }
        return caption(
            a, top + banner.height + 8, banner.width,
            "Collapsed: the thumbnail is \(thumbSide) pt of "
                + (picture?.clip == nil ? "the picture's centre square" : "the square Attache chose on the subject")
                + (picture?.error.map { ". No attachment (\($0)): iOS shows the text alone" } ?? ""))
    }

    /// The expanded view: the picture across the platter at its own shape (at most 5:4 tall), the
    /// text, the category's actions under it; its bottom.
    private mutating func iosExpanded(_ text: PreviewText, _ picture: PreviewPicture?, top: Int) -> Int {
        let b = Self.columns.b
        let tallest = PreviewGeometry.iosExpandedTallest
        var py = top
        let platter = reserve()
        if let picture, picture.error == nil {
            let height = Swift.min(
                tallest.height,
                Swift.max(
                    1,
                    Int((Double(tallest.width) * Double(picture.image.height) / Double(picture.image.width)).rounded()))
            )
            if let animation = picture.animated {
                // Played as iOS plays it, across the platter; its frames are not the still's, so
                // no crop is said.
                let shown = Swift.max(1, tallest.width * animation.height / Swift.max(1, animation.width))
                let box = "\(b),\(py),\(tallest.width),\(shown)"
                place(
                    "img", "pic ios-full", b, py, tallest.width, shown,
                    attributes: " alt=\"ios-expanded: an animation\" data-platform=\"ios-expanded\""
                        + " data-object=\"\(escape(picture.id))\" data-animated=\"true\" data-box=\"\(box)\""
                        + " src=\"data:image/gif;base64,\(Data(animation.data).base64EncodedString())\"")
                py += shown
            } else if let copy = picture.drawn(width: tallest.width, height: height, quality: quality) {
                self.picture(copy, "ios-full", b, py, platform: "ios-expanded", of: picture, crop: "all")
                py += height
            }
        }
        py += 12
        line("ios-title", b + 16, py, tallest.width - 32, text.title ?? "App")
        py += 20
        if let subtitle = text.subtitle {
            line("ios-sub", b + 16, py, tallest.width - 32, subtitle)
            py += 20
        }
        py += lines("ios-body", b + 16, py, tallest.width - 32, text.body ?? "", max: 8) + 12
        fill(platter, "card ios", b, top, tallest.width, py - top)
        if !text.actions.isEmpty {
            py += 8
            place("div", "card ios actions", b, py, tallest.width, text.actions.count * 44)
            for (index, action) in text.actions.enumerated() {
                line("ios-action", b + 16, py + index * 44 + 12, tallest.width - 32, action)
            }
            py += text.actions.count * 44
        }
        return caption(
            b, py + 8, tallest.width,
            "Expanded: the attachment at the platter's width"
                + (text.actions.isEmpty ? "" : ", the category's actions under it"))
    }

    /// The placeholder beside it: what the device kit draws when neither rendition arrives; its bottom.
    private mutating func iosPlaceholder(_ picture: PreviewPicture?, top: Int) -> Int {
        let c = Self.columns.c
        if let placeholder = picture?.placeholderImage {
            let width = 160
            let height = Swift.max(1, width * placeholder.height / Swift.max(1, placeholder.width))
            place("div", "t label", c, top, Self.cGap, 20, "Placeholder")
            place(
                "img", "pic placeholder", c, top + 24, width, height,
                attributes: " alt=\"placeholder\" data-platform=\"ios-placeholder\""
                    + " data-box=\"\(c),\(top + 24),\(width),\(height)\" src=\"\(placeholder.uri)\"")
            return caption(
                c, top + 32 + height, Self.cGap,
                "ThumbHash of \(placeholder.bytes) bytes in the entry, drawn \(placeholder.width)×\(placeholder.height) by the kit: the rung between the small rendition and the text alone"
            )
        } else {
            place("div", "t label", c, top, Self.cGap, 20, "Placeholder")
            return caption(
                c, top + 24, Self.cGap,
                "None in the entry (it was left out to fit the payload, or the attachment is audio)")
        }
    }

    mutating func android(_ text: PreviewText?, picture: PreviewPicture?, icon: PreviewPicture?) {
        row("Android")
        guard text != nil || picture != nil else { return nothing("This payload sends nothing to Android.") }
        let text = text ?? PreviewText()
        let top = y
        let (a, b, c) = Self.columns
        let card = PreviewGeometry.androidCard
        let side = PreviewGeometry.androidIcon.width
        // FCM draws the picture as the large icon of the collapsed view when no icon is given.
        let large = icon.map { $0.error == nil ? $0 : picture } ?? picture
        func header(_ x: Int) {
            place("div", "a-small", x + 16, top + 14, 16, 16)
            line("a-app", x + 38, top + 12, 200, "App · now")
        }
        place("div", "card android", a, top, card.width, card.height)
        header(a)
        let hasIcon = large != nil && large?.error == nil
        let textWidth = card.width - 32 - (hasIcon ? side + 16 : 0)
        line("a-title", a + 16, top + 34, textWidth, text.title ?? "")
        line("a-body", a + 16, top + 54, textWidth, text.body ?? "")
        if let large, let copy = large.drawn(width: side, height: side, quality: quality) {
            self.picture(
                copy, "a-icon", a + card.width - 16 - side, top + 32, platform: "android-collapsed", of: large,
                crop: "centre")
        }
        var bottom = caption(
            a, top + card.height + 8, card.width,
            "Collapsed: the large icon, \(side) dp"
                + (icon == nil && picture != nil ? " (no icon given: FCM draws the picture there)" : ""))

        let big = PreviewGeometry.androidBigPicture
        let expanded = reserve()
        header(b)
        var py = top + 34
        line("a-title", b + 16, py, big.width, text.title ?? "")
        py += 20 + lines("a-body", b + 16, py + 20, big.width, text.body ?? "", max: 2, charWidth: 7) + 10
        if let picture, let copy = picture.drawn(width: big.width, height: big.height, quality: quality) {
            self.picture(copy, "a-big", b + 16, py, platform: "android-expanded", of: picture, crop: "all")
            py += big.height + 12
        } else if let error = picture?.error {
            line("none", b + 16, py, big.width, "No picture made (\(error)): the device fetches the original URL")
            py += 28
        }
        for (index, action) in text.actions.prefix(3).enumerated() {
            line("a-action", b + 16 + index * 110, py, 100, action, height: 36)
        }
        if !text.actions.isEmpty { py += 40 }
        fill(expanded, "card android", b, top, card.width, py - top + 4)
        bottom = Swift.max(
            bottom, caption(b, py + 12, card.width, "Expanded: the big picture, \(big.width) × \(big.height) dp (2:1)"))
        place("div", "t label", c, top, Self.cGap, 20, "Placeholder")
        bottom = Swift.max(bottom, caption(c, top + 24, Self.cGap, "None: Android draws no placeholder"))
        y = bottom + 28
    }

    mutating func web(_ text: PreviewText?, picture: PreviewPicture?, icon: PreviewPicture?) {
        row("Web push (Chrome)")
        guard text != nil || picture != nil else { return nothing("This payload sends nothing to web push.") }
        let text = text ?? PreviewText()
        let top = y
        let (a, b, c) = Self.columns
        let toast = PreviewGeometry.windowsToast
        let logo = PreviewGeometry.windowsLogo.width
        let background = reserve()
        var py = top
        if let picture, let copy = picture.drawn(width: toast.width, height: toast.height, quality: quality) {
            self.picture(copy, "w-hero", a, py, platform: "web-windows", of: picture, crop: "all")
            py += toast.height
        }
        py += 12
        if let icon, let copy = icon.drawn(width: logo, height: logo, quality: quality) {
            self.picture(copy, "w-logo", a + 12, py, platform: "web-windows-icon", of: icon, crop: "centre")
        } else {
            place("div", "w-logo none-icon", a + 12, py, logo, logo)
        }
        line("w-title", a + 72, py, toast.width - 84, text.title ?? "")
        let bodyHeight = lines("w-body", a + 72, py + 20, toast.width - 84, text.body ?? "", max: 3, charWidth: 7)
        py += Swift.max(logo, 20 + bodyHeight) + 6
        line("w-site", a + 72, py, toast.width - 84, "Google Chrome · the sending site", height: 16)
        py += 24
        if !text.actions.isEmpty {
            let shown = Array(text.actions.prefix(2))
            let width = (toast.width - 12 * (shown.count + 1)) / shown.count
            for (index, action) in shown.enumerated() {
                line("w-action", a + 12 + index * (width + 12), py, width, action, height: 32)
            }
            py += 44
        }
        fill(background, "card windows", a, top, toast.width, py - top)
        var bottom = caption(
            a, py + 8, toast.width,
            (picture == nil
                ? "Chrome on Windows: this body names no web picture"
                : "Chrome on Windows: the image as the toast's hero, \(toast.width) × \(toast.height); the icon as its logo")
                + (picture?.error.map { ". No picture made (\($0)): the browser fetches the original URL" } ?? ""))

        let mac = PreviewGeometry.macBanner
        let side = PreviewGeometry.macIcon.width
        let macCard = reserve()
        place("div", "chrome", b + 12, top + 14, 32, 32)
        let textWidth = mac.width - 56 - (icon == nil ? 12 : side + 24)
        line("m-title", b + 56, top + 12, textWidth, text.title ?? "", height: 18)
        let macBody = lines(
            "m-body", b + 56, top + 30, textWidth, text.body ?? "", max: 2, lineHeight: 16, charWidth: 6.4)
        if let icon, let copy = icon.drawn(width: side, height: side, quality: quality) {
            self.picture(
                copy, "m-icon", b + mac.width - 12 - side, top + 12, platform: "web-macos-icon", of: icon,
                crop: "centre")
        }
        let macHeight = Swift.max(mac.height, 30 + macBody + 14)
        fill(macCard, "card mac", b, top, mac.width, macHeight)
        bottom = Swift.max(
            bottom,
            caption(
                b, top + macHeight + 8, mac.width,
                "Chrome on macOS: no image (macOS shows a web notification's icon only)"
                    + (text.actions.isEmpty ? "" : "; the actions are under Options")))
        place("div", "t label", c, top, Self.cGap, 20, "Placeholder")
        bottom = Swift.max(bottom, caption(c, top + 24, Self.cGap, "None: browsers draw no placeholder"))
        y = bottom + 28
    }

    mutating func notes(result: PipelineResult) {
        var html = "<section class=\"notes\"><h2>What was made</h2><ul>"
        for outcome in result.outcomes {
            var item =
                "<li><code>\(escape(outcome.convention))</code> \(escape(outcome.shownURL)) → \(escape(outcome.reason))"
            if let attachment = outcome.attachment {
                item +=
                    " · \(escape(attachment.type)) \(attachment.width ?? 0)×\(attachment.height ?? 0), \(attachment.bytes) bytes"
            }
            for target in outcome.targets {
                item += " · \(escape(target.target.rawValue)): "
                item +=
                    target.id == nil
                    ? escape(target.error?.code.rawValue ?? "not made")
                    : "\(target.width ?? 0)×\(target.height ?? 0), \(target.bytes) bytes"
            }
            for warning in outcome.warnings { item += " · warning: \(escape(warning))" }
            html += item + "</li>"
        }
        for cut in result.trimmed { html += "<li>trimmed to fit the payload: \(escape(cut))</li>" }
        for note in result.notes { html += "<li>note: \(escape(note))</li>" }
        html += "</ul><h2>Where the sizes come from</h2><table><tr><th>view</th><th>size</th><th>source</th></tr>"
        for (name, size) in PreviewGeometry.all {
            html +=
                "<tr><td>\(escape(name))</td><td>\(size.width) × \(size.height)</td><td>\(escape(size.source))</td></tr>"
        }
        notesHTML = html + "</table></section>"
    }

    // MARK: The page

    func html() -> String {
        let style = Self.style + "#stage{height:\(y)px}\n" + rules.joined(separator: "\n") + "\n"
        let hash = Self.hash(style)
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="\(Self.policy(styleHash: hash))">
            <meta name="attache-preview" content="width=\(Self.width),stage=\(y)">
            <title>Attache preview</title>
            <style>\(style)</style></head><body>
            <main id="stage">
            \(elements.joined(separator: "\n"))
            </main>
            \(notesHTML)
            </body></html>

            """
    }

    /// The page's policy: nothing but its own style sheet (by hash) and `data:` pictures.
    static func policy(styleHash: String) -> String {
        "default-src 'none'; img-src data:; style-src 'sha256-\(styleHash)'; base-uri 'none'; form-action 'none'"
    }

    static func hash(_ style: String) -> String {
        Data(SHA256.hash(data: Data(style.utf8))).base64EncodedString()
    }

    /// The hash a written page's policy names (for the header a service sends with it).
    static func styleHash(of page: String) -> String? {
        guard let open = page.range(of: "<style>"), let close = page.range(of: "</style>") else { return nil }
        return hash(String(page[open.upperBound..<close.lowerBound]))
    }

    static let style = """
        *{box-sizing:border-box}
        body{margin:0;background:#f4f5f7;color:#1d2330;font:15px/20px system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
        #stage{position:relative;width:1240px}
        #stage>*{position:absolute;margin:0}
        .t{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
        .m{display:-webkit-box;-webkit-box-orient:vertical;overflow:hidden;overflow-wrap:anywhere;white-space:pre-line}
        .l2{-webkit-line-clamp:2}.l3{-webkit-line-clamp:3}.l8{-webkit-line-clamp:8}
        h1.title{font-size:24px;line-height:32px}
        .sub,.cap,.none{color:#5b6475}
        .cap{font-size:12px;line-height:16px}
        h2.row{font-size:17px;line-height:24px;border-bottom:1px solid #dfe3ea}
        .label{font-weight:600}
        .card{border-radius:18px}
        .card.ios{background:#e9e9ef}
        .card.ios.actions{border-radius:14px}
        .ios-title{font-weight:600}
        .ios-action{color:#0a64d8}
        .app-icon{border-radius:9px;background:linear-gradient(#5aa0ff,#2f6fe0)}
        .ios-thumb{border-radius:6px}
        .ios-full{border-radius:18px 18px 0 0}
        .card.android{background:#fff;border-radius:16px;border:1px solid #dde1e7}
        .a-small{border-radius:8px;background:#3b7d4f}
        .a-app{font-size:12px;color:#5b6475}
        .a-title{font-weight:600;font-size:14px}
        .a-body{font-size:14px;color:#3c4250}
        .a-icon{border-radius:6px}
        .a-big{border-radius:8px}
        .a-action{font-size:14px;font-weight:600;color:#3b7d4f;line-height:36px}
        .card.windows{background:#202020;border-radius:8px}
        .w-title{color:#fff;font-weight:600;font-size:14px}
        .w-body{color:#d0d0d0;font-size:14px}
        .w-site{color:#a0a0a0;font-size:12px;line-height:16px}
        .w-action{background:#3a3a3a;color:#fff;font-size:13px;line-height:32px;text-align:center;border-radius:4px}
        .none-icon{background:#444;border-radius:4px}
        .card.mac{background:#ececec;border-radius:14px;border:1px solid #d6d6d6}
        .chrome{border-radius:16px;background:conic-gradient(#db4437 0 33%,#f4b400 0 66%,#0f9d58 0)}
        .m-title{font-weight:600;font-size:13px;line-height:18px}
        .m-body{font-size:13px;line-height:16px}
        .m-icon{border-radius:6px}
        .notes{max-width:1192px;margin:0 24px 24px;font-size:13px;line-height:18px}
        .notes h2{font-size:16px}
        .notes table{border-collapse:collapse;width:100%}
        .notes td,.notes th{border-bottom:1px solid #dfe3ea;text-align:left;padding:4px 6px;vertical-align:top}
        code{background:#e8ebf0;padding:0 4px;border-radius:3px}

        """
}

/// Text for an HTML text node or a quoted attribute value: the five characters that could end
/// either written as references (the batch report's pages too).
public func escape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count)
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.append(character)
        }
    }
    return out
}
