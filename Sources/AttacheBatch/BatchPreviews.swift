import AttacheBase
import AttacheCore
import AttachePreview
import Crypto
import Foundation

/// `--previews DIR`: one preview page per item (``NotificationPreview``), written before the
/// item's manifest line, so a recorded item's page is there; the report links its samples to
/// theirs.
public struct BatchPreviews: Sendable {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// The page's file name for an item: the first 16 hex digits of the SHA-256 of its reference
    /// (a reference is a path or a URL: no file name can hold every one of them).
    public static func fileName(reference: String) -> String {
        SHA256.hash(data: Data(reference.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined() + ".html"
    }

    /// Writes the page of `result` (the item `reference`), its pictures from `pipeline`'s store.
    func write(_ result: PipelineResult, reference: String, pipeline: Pipeline) throws(AttacheError) {
        let page = NotificationPreview(title: reference).render(
            result, objects: NotificationPreview.objects(in: pipeline.store))
        try AtomicFile.write(Array(page.utf8), to: directory + "/" + Self.fileName(reference: reference))
    }

    /// `directory` as a link from a page in `from` (both made absolute; `..` where they part).
    public static func link(to directory: String, from: String) -> String {
        func parts(_ path: String) -> [String] {
            let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            return URL(fileURLWithPath: absolute).standardizedFileURL.pathComponents.filter { $0 != "/" }
        }
        let target = parts(directory)
        let base = parts(from)
        let common = zip(target, base).prefix { $0 == $1 }.count
        let up = Array(repeating: "..", count: base.count - common)
        let path = (up + target[common...]).joined(separator: "/")
        return path.isEmpty ? "." : path
    }
}
