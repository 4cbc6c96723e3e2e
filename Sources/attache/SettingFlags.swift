import ArgumentParser
import AttacheCore
import Foundation

/// Flags read against a table of settings (`--max-side 2048`, `--max-side=2048`, `--faces`,
/// `--no-faces`): `serve` reads its whole table this way, `process`, `batch` and `resize` the
/// rows of ``PipelineSettings/all`` they take, so a setting is declared once, in its row.
enum SettingFlags {
    /// A flag's setting: its key and whether it is a switch.
    struct Named {
        var key: String
        var boolean: Bool
    }

    /// What the arguments gave: values by setting key, and the arguments that are no flag (in order).
    struct Parsed {
        var values: [String: String] = [:]
        var positionals: [String] = []
    }

    /// Reads `arguments`: each flag `lookup` knows takes its value (a switch takes none, or
    /// `=true`/`=false`); `-` and words that are no flag are positionals, as is everything after
    /// `--`. A flag no row names is refused.
    static func parse(
        _ arguments: [String], lookup: (String) -> Named?
    ) throws -> Parsed {
        var parsed = Parsed()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                parsed.positionals += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                parsed.positionals.append(argument)
                continue
            }
            var (name, inline): (String, String?) = (argument, nil)
            if let equals = argument.firstIndex(of: "=") {
                (name, inline) = (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
            }
            let negated = name.hasPrefix("--no-")
            let named =
                lookup(name).map { (setting: $0, negated: false) }
                ?? (negated ? lookup("--" + name.dropFirst(5)).map { (setting: $0, negated: true) } : nil)
            guard let (setting, isNegated) = named, !isNegated || setting.boolean else {
                throw ValidationError("unknown option '\(argument)' (--help lists the settings)")
            }
            if setting.boolean {
                parsed.values[setting.key] = isNegated ? "false" : (inline ?? "true")
            } else if let inline {
                parsed.values[setting.key] = inline
            } else if index < arguments.count {
                parsed.values[setting.key] = arguments[index]
                index += 1
            } else {
                throw ValidationError("\(name) needs a value")
            }
        }
        return parsed
    }

    /// The rows of ``PipelineSettings/all`` named `keys` (nil: every row), looked up by flag.
    static func pipelineLookup(_ keys: Set<String>?) -> (String) -> Named? {
        { flag in
            PipelineSettings.all.first { "--" + $0.flag == flag && keys?.contains($0.key) != false }
                .map { Named(key: $0.key, boolean: $0.boolean) }
        }
    }

    /// What shell completion offers for a word that starts `prefix` where a setting or an input
    /// may stand: the settings' `flags` for a word that starts with `-`, else the files and
    /// folders (with a `/`) whose path starts with it; a dot file only when the word's last
    /// part starts with a dot.
    static func completions(_ prefix: String, flags: [String]) -> [String] {
        if prefix.hasPrefix("-") { return flags.filter { $0.hasPrefix(prefix) } }
        let slash = prefix.lastIndex(of: "/")
        let folder = slash.map { String(prefix[...$0]) } ?? ""
        let start = slash.map { String(prefix[prefix.index(after: $0)...]) } ?? prefix
        var listed = folder.isEmpty ? "." : folder
        if listed.hasPrefix("~/") { listed = NSHomeDirectory() + listed.dropFirst() }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: listed)) ?? []
        return names.filter { $0.hasPrefix(start) && $0.hasPrefix(".") == start.hasPrefix(".") }.sorted().map {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: listed + "/" + $0, isDirectory: &isFolder)
            return folder + $0 + (isFolder.boolValue ? "/" : "")
        }
    }

    /// The words a setting's flag is written as: `--faces` and, for a switch, `--no-faces` (as
    /// ``parse(_:lookup:)`` reads them).
    static func words(flag: String, boolean: Bool) -> [String] {
        boolean ? ["--\(flag)", "--no-\(flag)"] : ["--\(flag)"]
    }

    /// Shell completion that asks `attache` at Tab: ``completions(_:flags:)`` of `flags`.
    static func completion(offering flags: [String]) -> CompletionKind {
        .custom { _, _, prefix in completions(prefix, flags: flags) }
    }

    /// `rows` as `--help` lists them: flag, default (in `base`) and meaning.
    static func help(_ rows: [PipelineSetting], base: PipelineConfiguration) -> String {
        rows.map { row in
            let flag = row.boolean ? "--[no-]\(row.flag)" : "--\(row.flag) <value>"
            return "\(flag) (default \(row.shown(base))): \(row.help)"
        }.joined(separator: "\n\n")
    }
}

/// The rows of ``PipelineSettings/all`` a command takes as flags.
protocol SettingRows {
    /// Their keys; nil: every row.
    static var keys: Set<String>? { get }
    /// The configuration their defaults are shown from and read over.
    static var base: PipelineConfiguration { get }
}

/// A command's settings from ``PipelineSettings/all``, and its positional arguments (which the
/// settings' flags, read by their rows, leave).
struct SettingOptions<Rows: SettingRows>: ParsableArguments {
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The settings listed below, and the inputs.", visibility: .hidden),
        completion: SettingFlags.completion(offering: Self.flags))
    var given: [String] = []

    /// The rows' flags as shell completion offers them (`--faces`, `--no-faces`).
    static var flags: [String] {
        rows.flatMap { SettingFlags.words(flag: $0.flag, boolean: $0.boolean) }
    }

    static var rows: [PipelineSetting] {
        PipelineSettings.all.filter { Rows.keys?.contains($0.key) != false }
    }

    /// The settings as `--help` lists them.
    static var help: String { SettingFlags.help(rows, base: Rows.base) }

    private func parsed() throws -> SettingFlags.Parsed {
        try SettingFlags.parse(given, lookup: SettingFlags.pipelineLookup(Rows.keys))
    }

    func validate() throws { _ = try configuration() }

    /// The arguments that are no setting's flag (the inputs), in order.
    var positionals: [String] { (try? parsed().positionals) ?? [] }

    /// ``SettingRows/base`` with every setting given read over it; a value its row refuses
    /// is a usage error naming the flag.
    func configuration() throws -> PipelineConfiguration {
        let parsed = try parsed()
        var configuration = Rows.base
        let refused = PipelineSettings.read({ parsed.values[$0] }, into: &configuration)
        if let first = refused.first {
            throw ValidationError("--\(first.setting.flag): \(first.refusal.said(first.text))")
        }
        return configuration
    }
}
