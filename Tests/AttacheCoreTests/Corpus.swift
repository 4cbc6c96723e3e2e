import Foundation

/// The shared image corpus beside the checkout (`../shared/corpus`), or `ATTACHE_CORPUS`.
enum Corpus {
    struct Row: CustomStringConvertible, Sendable {
        let file: String
        let format: String
        let width: Int?
        let height: Int?
        let frames: Int?
        let expectOK: Bool
        let note: String

        var path: String { Corpus.root + "/" + file }
        var description: String { file }
    }

    static let root: String = {
        if let env = ProcessInfo.processInfo.environment["ATTACHE_CORPUS"] { return env }
        let here = URL(fileURLWithPath: #filePath)
        let package = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return package.deletingLastPathComponent().appendingPathComponent("shared/corpus").path
    }()

    static let rows: [Row] = {
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
    static let jpegAndPNG: [Row] = rows.filter { row in
        row.format == "JPEG" || row.format == "PNG" || row.file.hasSuffix(".png") || row.file.hasSuffix(".jpg")
    }

    static func bytes(_ file: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + file)))
    }
}
