import Foundation

/// Reads a payload (or a list) from a file or standard input without ever holding more than
/// it accepts.
package enum BoundedInput {
    /// The bytes of `name` (`-` for standard input), at most `limit` of them.
    /// - Throws: `invalid_payload` (limit `max_input_bytes`) when there are more, `io_error`
    ///   when the file cannot be read. Reading stops at `limit + 1` bytes either way.
    package static func read(_ name: String, limit: Int) throws(AttacheError) -> [UInt8] {
        let handle: FileHandle
        if name == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let file = FileHandle(forReadingAtPath: name) else {
                throw AttacheError(.ioError, "cannot read \(name)")
            }
            handle = file
        }
        defer { if name != "-" { try? handle.close() } }
        var bytes: [UInt8] = []
        while bytes.count <= limit {
            let chunk: Data?
            do {
                chunk = try handle.read(upToCount: min(64 * 1024, limit + 1 - bytes.count))
            } catch {
                throw AttacheError(.ioError, "cannot read \(name): \(error.localizedDescription)")
            }
            guard let chunk, !chunk.isEmpty else { return bytes }
            bytes += chunk
        }
        throw AttacheError(
            .invalidPayload, "the input is larger than \(limit) bytes; it was not read", limit: .maxInputBytes)
    }
}
