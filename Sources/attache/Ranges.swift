import ArgumentParser
import AttacheCore
import Foundation

/// Range checks for numeric options, each refusal naming the option and its range.
enum Ranges {
    /// The longest time-to-live accepted for objects and tokens: the settings' (100 years).
    static let maxTTL: Int64 = PipelineSettings.maxTTL.components.seconds

    /// Throws a ValidationError unless `value` is in `range`.
    static func check<T: Comparable>(_ value: T, _ range: ClosedRange<T>, _ option: String) throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
        }
    }

    /// Throws unless `ttl` is at least a second and at most ``maxTTL``.
    static func check(ttl: Seconds, _ option: String) throws {
        try check(ttl.value, 1...maxTTL, option + " (seconds)")
    }
}

/// Checks of option values that are not numbers, each refusal naming the option and saying what
/// is accepted.
enum OptionChecks {
    /// Creates `path` (and its parents) as the directory an option names.
    static func directory(_ path: String, _ option: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("\(option) \(path): cannot create a directory there (\(whyNoDirectory(path)))")
        }
    }

    /// Checks that a file could be written at `path` (its directory exists and is a directory).
    static func writableFile(_ path: String, _ option: String) throws {
        let parent = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.isEmpty ? "." : parent, isDirectory: &isDirectory),
            isDirectory.boolValue
        else {
            throw ValidationError("\(option) \(path): \(parent) is not a directory to write the file in")
        }
    }

    /// Why a directory cannot be made at `path`, in words: the first part of it that exists and
    /// is not a directory, or the directory it would go in that cannot be written.
    static func whyNoDirectory(_ path: String) -> String {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            let next = prefix + "/" + part
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: next, isDirectory: &isDirectory) {
                if !isDirectory.boolValue { return "\(next) is not a directory" }
            } else {
                return FileManager.default.isWritableFile(atPath: prefix.isEmpty ? "/" : prefix)
                    ? "it could not be made" : "\(prefix.isEmpty ? "/" : prefix) cannot be written"
            }
            prefix = next
        }
        return "it could not be made"
    }
}
