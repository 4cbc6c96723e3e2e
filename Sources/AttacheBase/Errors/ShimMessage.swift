internal import Foundation

extension AttacheError {
    /// A C shim's NUL-terminated message buffer (`att_error`'s, libcurl's) as one line: a
    /// library's message may end in a newline or hold control characters.
    public static func line<Buffer>(_ buffer: Buffer) -> String {
        withUnsafeBytes(of: buffer) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }).map { $0 < 0x20 ? 0x20 : $0 }, as: UTF8.self)
        }.trimmingCharacters(in: .whitespaces)
    }
}
