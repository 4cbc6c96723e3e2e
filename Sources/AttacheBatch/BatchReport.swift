public import AttacheBase
import AttacheCore
public import AttacheFetch
import AttacheMedia
import AttachePreview
public import AttacheStore
import ExtrasBase64
import Foundation

/// `--report report.html`: one self-contained page about a batch — totals, bytes before and
/// after by kind and time per stage (inline SVG), the failures grouped by error code with
/// their inputs, and before/after thumbnails of a sample of images (data URIs). No external
/// resource: it opens from a mail attachment or a CI artifact as it is.
public struct BatchReport {
    /// What the page is about (the input's name).
    public var title: String
    /// Images shown before and after.
    public var sampleSize = 12
    /// Inputs listed per error code (the count covers all).
    public var failuresPerCode = 50
    /// The items' preview pages (`--previews`), as a link from the report's directory.
    public var previews: String?

    public init(title: String) { self.title = title }

    /// Per kind: bytes fetched and stored, and attachments.
    struct KindTotals {
        var bytesIn: Int64 = 0
        var bytesOut: Int64 = 0
        var count = 0
    }

    struct Failure {
        var reference: String
        var url: String
        var message: String
    }

    struct Sample {
        var reference: String
        var url: String
        var id: String
        var type: String
        var bytesIn: Int64
        var bytesOut: Int64
        var sourceSize: String
        var size: String
        /// The source's own bytes were stored, metadata removed (a rendition would not be smaller).
        var keptSource = false
        /// Other receivers' pictures (a send body's): target, object id, size, bytes.
        var targets: [(target: String, id: String, size: String, bytes: Int64)] = []
    }

    /// Builds the page from the manifest at `manifest` (read once). `store` gives the stored renditions;
    /// `fetcher`, when given, fetches the sample's sources again for their "before" pictures.
    public func render(manifest: String, store: AttachmentStore, fetcher: Fetcher?) async throws(AttacheError) -> String
    {
        var summary = BatchSummary()
        var kinds: [String: KindTotals] = [:]
        var failures: [String: (count: Int, items: [Failure])] = [:]
        var samples: [Sample] = []
        var attachments = 0
        let perCode = failuresPerCode
        let sampleSize = self.sampleSize
        func fail(_ code: String, _ reference: String, url: String, error: JSONValue?) {
            var group = failures[code] ?? (0, [])
            group.count += 1
            if group.items.count < perCode {
                group.items.append(
                    Failure(reference: reference, url: url, message: error?["message"]?.stringValue ?? ""))
            }
            failures[code] = group
        }
        try BatchManifest.scan(manifest) { record, _ in
            guard let record else { return }
            summary.add(record)
            if record.outcome == "unreadable" || record.outcome == "withheld", let code = record.code {
                fail(code, record.reference, url: "", error: record.value["error"])
            }
            guard case .array(let entries)? = record.value["items"] else { return }
            for entry in entries {
                let url = entry["url"]?.stringValue ?? ""
                if let code = entry["error"]?["code"]?.stringValue {
                    fail(code, record.reference, url: url, error: entry["error"])
                }
                guard let id = entry["id"]?.stringValue else { continue }
                attachments += 1
                let kind = entry["source_type"]?.stringValue ?? Self.kindName(entry["type"]?.stringValue)
                let bytesIn = Int64(entry["fetched_bytes"]?.doubleValue ?? 0)
                let bytesOut = Int64(entry["bytes"]?.doubleValue ?? 0)
                var totals = kinds[kind] ?? KindTotals()
                totals.bytesIn += bytesIn
                totals.bytesOut += bytesOut
                totals.count += 1
                kinds[kind] = totals
                // Images by their rendition; videos by their poster (the small rendition).
                let video =
                    entry["small_type"]?.stringValue == MediaKind.jpeg.uti && entry["type"] != entry["small_type"]
                if samples.count < sampleSize, ["jpeg", "png", "gif"].contains(kind) || video {
                    samples.append(
                        Sample(
                            reference: record.reference, url: url,
                            id: video ? entry["small_id"]?.stringValue ?? id : id, type: kind, bytesIn: bytesIn,
                            bytesOut: bytesOut, sourceSize: Self.size(entry["source_width"], entry["source_height"]),
                            size: Self.size(entry["width"], entry["height"]),
                            keptSource: entry["kept_source"] == .bool(true),
                            targets: Self.targets(entry["targets"])))
                }
            }
        }
        var pictures: [(before: String?, after: String?)] = []
        var targetPictures: [[String?]] = []
        for sample in samples {
            pictures.append(await thumbnails(sample, store: store, fetcher: fetcher))
            var made: [String?] = []
            for target in sample.targets { made.append(await stored(target.id, in: store)) }
            targetPictures.append(made)
        }

        var page = Self.head(title: title)
        page += "<header><h1>Attache batch report</h1><p class=\"sub\">\(Self.escape(title))</p></header>\n"
        page += totalsSection(summary, attachments: attachments)
        page += bytesChart(kinds)
        page += stageChart(summary.stages, attachments: attachments)
        page += failuresSection(failures)
        page += samplesSection(samples, pictures, targets: targetPictures)
        page += "</main></body></html>\n"
        return page
    }

    // MARK: Sections

    func totalsSection(_ summary: BatchSummary, attachments: Int) -> String {
        let saved =
            summary.bytesIn > 0
            ? String(format: "%.0f%%", 100 * (1 - Double(summary.bytesOut) / Double(summary.bytesIn))) : "–"
        var cards: [(String, String, String)] = [
            ("items", "\(summary.items)", ""), ("attached", "\(summary.outcomes["attached"] ?? 0)", "ok"),
            ("partly", "\(summary.outcomes["partial"] ?? 0)", "warn"),
            (
                "failed",
                "\((summary.outcomes["failed"] ?? 0) + (summary.outcomes["unreadable"] ?? 0) + (summary.outcomes["withheld"] ?? 0))",
                "bad"
            ),
            ("unchanged", "\(summary.outcomes["unchanged"] ?? 0)", ""),
            ("fetched", BatchSummary.bytes(summary.bytesIn), ""), ("stored", BatchSummary.bytes(summary.bytesOut), ""),
            ("saved", saved, "ok"),
        ]
        if attachments > 0 { cards.insert(("attachments", "\(attachments)", ""), at: 2) }
        var html = "<section id=\"totals\"><h2>Totals</h2><div class=\"cards\">"
        for (label, value, tone) in cards {
            html +=
                "<div class=\"card \(tone)\"><div class=\"value\">\(value)</div><div class=\"label\">\(label)</div></div>"
        }
        return html + "</div></section>\n"
    }

    func bytesChart(_ kinds: [String: KindTotals]) -> String {
        var html = "<section id=\"bytes\"><h2>Bytes before and after, by kind</h2>"
        guard !kinds.isEmpty else { return html + "<p class=\"empty\">Nothing was attached.</p></section>\n" }
        let order = kinds.keys.sorted { kinds[$0]!.bytesIn > kinds[$1]!.bytesIn }
        let largest = max(1, kinds.values.map { max($0.bytesIn, $0.bytesOut) }.max() ?? 1)
        html += "<div class=\"chart\" role=\"img\" aria-label=\"bytes fetched and stored by kind\">"
        for kind in order {
            let totals = kinds[kind]!
            html += "<div class=\"label\">\(Self.escape(kind)) <span>(\(totals.count))</span></div>"
            html += Self.bar(totals.bytesIn, of: largest, class: "before")
            html += "<div class=\"num\">\(BatchSummary.bytes(totals.bytesIn))</div>"
            html += "<div></div>" + Self.bar(totals.bytesOut, of: largest, class: "after")
            html += "<div class=\"num\">\(BatchSummary.bytes(totals.bytesOut))</div>"
        }
        html += "</div><p class=\"legend\"><i class=\"before\"></i>fetched <i class=\"after\"></i>stored</p>"
        return html + "</section>\n"
    }

    func stageChart(_ stages: StageTimings, attachments: Int) -> String {
        var html = "<section id=\"stages\"><h2>Time per stage</h2>"
        let rows: [(String, Double)] = [
            ("fetch", stages.fetch), ("validate", stages.validate), ("transform", stages.transform),
            ("store", stages.store),
        ]
        let total = rows.reduce(0) { $0 + $1.1 }
        guard total > 0 else { return html + "<p class=\"empty\">No stage ran.</p></section>\n" }
        let largest = Int64((rows.map(\.1).max() ?? 1) * 1000)
        html += "<div class=\"chart\" role=\"img\" aria-label=\"time per stage\">"
        for (name, ms) in rows {
            let mean = ms / Double(max(1, attachments))
            html +=
                "<div class=\"label\">\(name)</div>" + Self.bar(Int64(ms * 1000), of: largest, class: "stage-\(name)")
            html +=
                "<div class=\"num\">"
                + String(format: "%.1f s · %.0f%% · %.1f ms each", ms / 1000, 100 * ms / total, mean)
            html += "</div>"
        }
        html += "</div><p class=\"note\">Summed over attachments (\(attachments)); "
        html += "the stages of different items overlap in time.</p>"
        return html + "</section>\n"
    }

    func failuresSection(_ failures: [String: (count: Int, items: [Failure])]) -> String {
        var html = "<section id=\"failures\"><h2>Failures by error code</h2>"
        guard !failures.isEmpty else { return html + "<p class=\"empty\">No failures.</p></section>\n" }
        for (code, group) in failures.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }) {
            html +=
                "<details open><summary><code>\(Self.escape(code))</code> <span class=\"count\">\(group.count)</span>"
            html += "</summary><div class=\"scroll\"><table><thead><tr><th>input</th><th>URL</th><th>message</th></tr>"
            html += "</thead><tbody>"
            for item in group.items {
                html += "<tr><td>\(Self.escape(item.reference))</td><td class=\"url\">\(Self.escape(item.url))</td>"
                html += "<td>\(Self.escape(item.message))</td></tr>"
            }
            html += "</tbody></table></div>"
            if group.count > group.items.count {
                html += "<p class=\"note\">and \(group.count - group.items.count) more (see the manifest)</p>"
            }
            html += "</details>"
        }
        return html + "</section>\n"
    }

    func samplesSection(
        _ samples: [Sample], _ pictures: [(before: String?, after: String?)], targets: [[String?]] = []
    ) -> String {
        var html = "<section id=\"samples\"><h2>Before and after</h2>"
        guard !samples.isEmpty else { return html + "<p class=\"empty\">No image was attached.</p></section>\n" }
        html += "<div class=\"samples\">"
        for (index, (sample, picture)) in zip(samples, pictures).enumerated() {
            html += "<figure><div class=\"pair\">"
            html += Self.picture(picture.before, label: "before")
            html += Self.picture(picture.after, label: "after")
            // Each other receiver's picture beside them (Android, web, icon).
            let made = index < targets.count ? targets[index] : []
            for (target, uri) in zip(sample.targets, made) {
                let label = "\(Self.escape(target.target)) \(target.size) · \(BatchSummary.bytes(target.bytes))"
                html += Self.picture(uri, label: label)
            }
            html += "</div><figcaption><div class=\"ref\">\(Self.escape(sample.reference))</div>"
            if let previews {
                let href = previews + "/" + BatchPreviews.fileName(reference: sample.reference)
                html += "<div><a href=\"\(Self.escape(href))\">each platform's view</a></div>"
            }
            html += "<div>\(sample.type.uppercased()) \(sample.sourceSize) · \(BatchSummary.bytes(sample.bytesIn))"
            html += " → \(sample.size) · \(BatchSummary.bytes(sample.bytesOut))</div>"
            if sample.keptSource { html += "<div class=\"note\">source kept, metadata removed</div>" }
            html += "</figcaption></figure>"
        }
        return html + "</div></section>\n"
    }

    // MARK: Pictures

    /// Data URIs of small renditions of the source (fetched again) and of the stored object.
    func thumbnails(_ sample: Sample, store: AttachmentStore, fetcher: Fetcher?) async -> (String?, String?) {
        var after: String?
        if let id = AttachmentID(hex: sample.id), let stored = try? store.attachment(id),
            let bytes = try? store.contents(of: stored)
        {
            after = await Self.thumbnail(MediaBytes(Array(bytes)))
        }
        var before: String?
        if let fetcher, !sample.url.isEmpty,
            let media = try? await fetcher.fetch(sample.url, deadline: .now + .seconds(30))
        {
            before = await Self.thumbnail(media.bytes)
        }
        return (before, after)
    }

    /// A data URI of a stored object, made small.
    func stored(_ id: String, in store: AttachmentStore) async -> String? {
        guard let id = AttachmentID(hex: id), let object = try? store.attachment(id),
            let bytes = try? store.contents(of: object)
        else { return nil }
        return await Self.thumbnail(MediaBytes(Array(bytes)))
    }

    /// The report entries' `targets` that were made: target, id, size, bytes.
    static func targets(_ value: JSONValue?) -> [(target: String, id: String, size: String, bytes: Int64)] {
        guard case .array(let list)? = value else { return [] }
        return list.compactMap { entry in
            guard let target = entry["target"]?.stringValue, let id = entry["id"]?.stringValue else { return nil }
            return (target, id, size(entry["width"], entry["height"]), Int64(entry["bytes"]?.doubleValue ?? 0))
        }
    }

    static func thumbnail(_ bytes: MediaBytes) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var spec = RenditionSpec()
                spec.maxSide = 200
                spec.quality = .fixed(70)
                spec.gifMaxFrames = 24
                guard let rendition = try? ImageProcessor.render(bytes, spec: spec, timeBudget: .seconds(60)) else {
                    // A video (the source of a poster): its first frame.
                    let poster = try? MediaPoster.jpeg(bytes, maxSide: 200, quality: 70)
                    return continuation.resume(
                        returning: poster.map { "data:image/jpeg;base64," + Base64.encodeToString(bytes: $0.bytes) })
                }
                let mime = rendition.kind.mimeType
                continuation.resume(returning: "data:\(mime);base64," + Base64.encodeToString(bytes: rendition.data))
            }
        }
    }

    static func picture(_ uri: String?, label: String) -> String {
        guard let uri else { return "<div class=\"thumb missing\"><span>\(label): not available</span></div>" }
        return "<div class=\"thumb\"><img alt=\"\(label)\" src=\"\(uri)\"><span>\(label)</span></div>"
    }

    // MARK: Helpers

    /// One bar: an inline SVG as wide as its grid cell, filled in proportion.
    static func bar(_ value: Int64, of largest: Int64, class name: String) -> String {
        let width = value <= 0 ? 0 : max(0.5, (Double(value) / Double(max(1, largest)) * 1000).rounded() / 10)
        return "<svg class=\"bar\" viewBox=\"0 0 100 10\" preserveAspectRatio=\"none\" aria-hidden=\"true\">"
            + "<rect width=\"\(width)\" height=\"10\" class=\"\(name)\"/></svg>"
    }

    static func size(_ width: JSONValue?, _ height: JSONValue?) -> String {
        guard let w = width?.doubleValue, let h = height?.doubleValue else { return "" }
        return "\(Int(w))×\(Int(h))"
    }

    static func kindName(_ uti: String?) -> String {
        guard let uti else { return "other" }
        return uti.split(separator: ".").last.map(String.init) ?? uti
    }

    static func escape(_ text: String) -> String { AttachePreview.escape(text) }

    static func head(title: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
        <title>Attache batch report · \(escape(title))</title>
        <style>
        :root { --ink: #1d2330; --muted: #5b6475; --line: #dfe3ea; --before: #4c78a8; --after: #f58518;
                --ok: #2e8540; --bad: #c62828; --warn: #b7791f; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
               background: #f6f7f9; }
        header { background: #1d2330; color: #fff; padding: 20px 24px; }
        header h1 { margin: 0; font-size: 22px; }
        header .sub { margin: 4px 0 0; color: #c9d1de; word-break: break-all; }
        main { max-width: 1100px; margin: 0 auto; padding: 16px; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin: 16px 0; }
        h2 { margin: 0 0 12px; font-size: 17px; }
        .cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 10px; }
        .card { border: 1px solid var(--line); border-radius: 6px; padding: 10px; border-top: 4px solid #9aa5b8; }
        .card.ok { border-top-color: var(--ok); } .card.bad { border-top-color: var(--bad); }
        .card.warn { border-top-color: var(--warn); }
        .card .value { font-size: 22px; font-weight: 600; } .card .label { color: var(--muted); font-size: 13px; }
        .chart { display: grid; grid-template-columns: minmax(70px, max-content) 1fr minmax(70px, max-content);
                 gap: 4px 10px; align-items: center; }
        .chart .label { font-size: 14px; } .chart .label span, .chart .num { color: var(--muted); font-size: 13px; }
        svg.bar { width: 100%; height: 16px; display: block; background: #f0f2f5; border-radius: 2px; }
        .before { fill: var(--before); background: var(--before); } .after { fill: var(--after); background: var(--after); }
        .stage-fetch { fill: #4c78a8; } .stage-validate { fill: #72b7b2; }
        .stage-transform { fill: #e45756; } .stage-store { fill: #54a24b; }
        .legend { font-size: 13px; color: var(--muted); }
        .legend i { display: inline-block; width: 12px; height: 12px; margin: 0 6px 0 12px; vertical-align: -1px; }
        .legend i:first-child { margin-left: 0; }
        details { margin: 8px 0; } summary { cursor: pointer; padding: 4px 0; }
        summary code { background: #fdecea; color: var(--bad); padding: 2px 6px; border-radius: 4px; }
        .count { color: var(--muted); }
        .scroll { overflow-x: auto; max-width: 100%; }
        table { border-collapse: collapse; width: 100%; font-size: 13px; table-layout: fixed; }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top;
                 overflow-wrap: anywhere; word-break: break-word; }
        th { background: #f0f2f5; }
        th:first-child { width: 22%; } th:nth-child(2) { width: 38%; }
        .samples { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 12px; }
        figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; }
        .pair { display: grid; grid-template-columns: 1fr 1fr; gap: 6px; }
        .thumb { background: #eef0f3 repeating-conic-gradient(#e2e5ea 0% 25%, transparent 0% 50%) 50% / 16px 16px;
                 min-height: 90px; display: flex; flex-direction: column; align-items: center; justify-content: center;
                 border-radius: 4px; overflow: hidden; }
        .thumb img { max-width: 100%; max-height: 160px; display: block; }
        .thumb span { font-size: 11px; color: var(--muted); padding: 2px; }
        figcaption { font-size: 12px; color: var(--muted); margin-top: 6px; overflow-wrap: anywhere; }
        figcaption .ref { color: var(--ink); font-weight: 600; }
        .note, .empty { color: var(--muted); font-size: 13px; }
        </style></head><body>
        <main>

        """
    }
}
