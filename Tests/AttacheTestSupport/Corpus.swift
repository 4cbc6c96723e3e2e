import Foundation

/// The shared image corpus beside the checkout (`../shared/corpus`), or `ATTACHE_CORPUS`.
public enum Corpus {
    public struct Row: CustomStringConvertible, Sendable {
        public let file: String
        public let format: String
        public let width: Int?
        public let height: Int?
        public let frames: Int?
        public let expectOK: Bool
        public let note: String

        public var path: String { Corpus.root + "/" + file }
        public var description: String { file }
    }

    public static let root: String = {
        if let env = ProcessInfo.processInfo.environment["ATTACHE_CORPUS"] { return env }
        return URL(fileURLWithPath: Paths.package).deletingLastPathComponent().appendingPathComponent("shared/corpus")
            .path
    }()

    public static let rows: [Row] = {
        guard let text = try? String(contentsOfFile: root + "/manifest.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 7 else { return nil }
            return Row(
                file: f[0], format: f[1], width: Int(f[2]), height: Int(f[3]), frames: Int(f[4]),
                expectOK: f[5] == "ok", note: f[6])
        }
    }()

    /// Manifest rows whose file starts with a JPEG or PNG signature or is named .jpg/.png.
    public static let jpegAndPNG: [Row] = rows.filter { row in
        row.format == "JPEG" || row.format == "PNG" || row.file.hasSuffix(".png") || row.file.hasSuffix(".jpg")
    }

    /// The path of `file` in the corpus.
    public static func path(_ file: String) -> String { root + "/" + file }

    public static func bytes(_ file: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + file)))
    }
}
