import AttacheBase
import Foundation

/// One setting of any surface, read into a `Configuration`: its key (the flag is its kebab case,
/// the `ATTACHE_` variable its upper snake case, the settings file's key the key itself), its
/// help, its request term, whether it is a switch or a secret, how it reads a value and how it
/// shows the configuration's. Every surface takes these from the row and from nowhere else:
/// serve's own rows (``ServerSettings``) and the pipeline's (``PipelineSettings``), which
/// `process`, `batch`, a tenant's settings and a request's terms read, and which serve reads
/// lifted into its configuration (``lifted(_:)``). One set of parsers (``Reader``) judges every
/// value, so a refusal reads the same wherever it is given.
public struct SettingRow<Configuration>: Sendable {
    /// The key in camelCase.
    public let key: String
    public let help: String
    /// The query term a request asks for it with (snake case); nil: not per request.
    public let term: String?
    /// A switch: `--name` / `--no-name`, `true` or `false` elsewhere.
    public let boolean: Bool
    /// A secret: never logged, never echoed in a message.
    public let secret: Bool
    /// Reads a value into a configuration; `given` answers the other settings' values (by key),
    /// for the settings read together. Nil for a row its surface reads with others (serve's
    /// address, keys, store, log and traces: ServerSettings+Load.swift).
    let reader: (@Sendable (String, inout Configuration, _ given: (String) -> String?) throws -> Void)?
    /// The setting's value in a configuration, as text: the default `--help` and the docs show.
    public let shown: @Sendable (Configuration) -> String
    /// The default as shown where the configuration's own value would mislead (one that
    /// follows the machine's cores or the listening address); nil: ``shown`` of the defaults.
    public let shownDefault: String?

    public init(
        key: String, help: String, term: String? = nil, reader: Reader, secret: Bool = false,
        default shownDefault: String? = nil
    ) {
        self.key = key
        self.help = help
        self.term = term
        self.boolean = reader.boolean
        self.secret = secret
        self.reader = reader.read
        self.shown = reader.shown
        self.shownDefault = shownDefault
    }

    /// A row its surface reads with the settings beside it: its default as text.
    public init(key: String, help: String, defaultText: String, secret: Bool = false) {
        self.key = key
        self.help = help
        self.term = nil
        self.boolean = false
        self.secret = secret
        self.reader = nil
        self.shown = { _ in defaultText }
        self.shownDefault = defaultText
    }

    private init(
        key: String, help: String, term: String?, boolean: Bool, secret: Bool,
        reader: (@Sendable (String, inout Configuration, (String) -> String?) throws -> Void)?,
        shown: @escaping @Sendable (Configuration) -> String, shownDefault: String?
    ) {
        (self.key, self.help, self.term, self.boolean, self.secret) = (key, help, term, boolean, secret)
        (self.reader, self.shown, self.shownDefault) = (reader, shown, shownDefault)
    }

    /// `--kebab-case` flag name (without the dashes).
    public var flag: String { Self.kebab(key) }

    /// `ATTACHE_SNAKE_CASE` environment name.
    public var environment: String { "ATTACHE_" + flag.replacingOccurrences(of: "-", with: "_").uppercased() }

    /// Whether the row reads its own value (false: its surface reads it with others).
    public var readsItself: Bool { reader != nil }

    /// Reads `text` into `configuration` (nothing for a row its surface reads itself).
    public func read(
        _ text: String, into configuration: inout Configuration, given: (String) -> String? = { _ in nil }
    ) throws(SettingRefusal) {
        guard let reader else { return }
        do {
            try reader(text, &configuration, given)
        } catch let refusal as SettingRefusal {
            throw refusal
        } catch {
            throw SettingRefusal(message: "\(error)")
        }
    }

    /// The same row for a configuration that holds this one at `path` (serve's holds the
    /// pipeline's).
    public func lifted<Outer>(
        _ path: any WritableKeyPath<Outer, Configuration> & Sendable, default shownDefault: String? = nil
    ) -> SettingRow<Outer> {
        let (reader, shown) = (self.reader, self.shown)
        return SettingRow<Outer>(
            key: key, help: help, term: term, boolean: boolean, secret: secret,
            reader: reader.map { read in
                { @Sendable text, outer, given in try read(text, &outer[keyPath: path], given) }
            },
            shown: { shown($0[keyPath: path]) }, shownDefault: shownDefault ?? self.shownDefault)
    }

    /// `maxSide` → `max-side`.
    public static func kebab(_ key: String) -> String {
        var out = ""
        for character in key {
            if character.isUppercase {
                out += "-" + character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }

    // MARK: - Readers

    /// How a row reads and shows its value.
    public struct Reader: Sendable {
        let read: @Sendable (String, inout Configuration, (String) -> String?) throws -> Void
        let shown: @Sendable (Configuration) -> String
        var boolean = false

        public init(
            read: @escaping @Sendable (String, inout Configuration, (String) -> String?) throws -> Void,
            shown: @escaping @Sendable (Configuration) -> String, boolean: Bool = false
        ) {
            (self.read, self.shown, self.boolean) = (read, shown, boolean)
        }

        public typealias Path<T> = any WritableKeyPath<Configuration, T> & Sendable

        /// A whole number within `range`.
        public static func integer<T: FixedWidthInteger & Sendable>(_ path: Path<T>, _ range: ClosedRange<T>) -> Self {
            Self(
                read: { text, configuration, _ in
                    configuration[keyPath: path] = try SettingValue.wholeNumber(text, range)
                },
                shown: { "\($0[keyPath: path])" })
        }

        /// A whole number within `range`, or `none`.
        public static func optionalInteger(_ path: Path<Int?>, _ range: ClosedRange<Int>) -> Self {
            Self(
                read: { text, configuration, _ in
                    configuration[keyPath: path] = text == "none" ? nil : try SettingValue.wholeNumber(text, range)
                }, shown: { $0[keyPath: path].map { "\($0)" } ?? "none" })
        }

        /// A duration (`800ms`, `30s`, `5m`, `2h`, `7d`) within `range`.
        public static func duration(_ path: Path<Duration>, _ range: ClosedRange<Duration>) -> Self {
            Self(
                read: { text, configuration, _ in
                    configuration[keyPath: path] = try SettingValue.duration(text, range)
                }, shown: { DurationText.format($0[keyPath: path]) })
        }

        /// A duration of whole seconds within `range` (a part of a second is refused, not cut).
        public static func wholeSeconds(_ path: Path<Duration>, _ range: ClosedRange<Duration>) -> Self {
            Self(
                read: { text, configuration, _ in
                    configuration[keyPath: path] = try SettingValue.wholeSeconds(text, range)
                }, shown: { DurationText.format($0[keyPath: path]) })
        }

        /// A duration of whole seconds within `range`, kept as seconds.
        public static func seconds(_ path: Path<Int64>, _ range: ClosedRange<Duration>) -> Self {
            Self(
                read: { text, configuration, _ in
                    configuration[keyPath: path] = try SettingValue.wholeSeconds(text, range).components.seconds
                }, shown: { DurationText.format(.seconds($0[keyPath: path])) })
        }

        /// A switch.
        public static func flag(_ path: Path<Bool>) -> Self {
            Self(
                read: { text, configuration, _ in configuration[keyPath: path] = try SettingValue.switchValue(text) },
                shown: { "\($0[keyPath: path])" }, boolean: true)
        }

        /// One of the words in `choices`.
        public static func choice<T: Equatable & Sendable>(_ path: Path<T>, _ choices: [(String, T)]) -> Self {
            let words = choices.map(\.0)
            let accepted =
                words.count == 2
                ? "\(words[0]) or \(words[1])" : words.dropLast().joined(separator: ", ") + " or " + words.last!
            let table = choices
            return Self(
                read: { text, configuration, _ in
                    guard let found = table.first(where: { $0.0 == text.lowercased() }) else {
                        throw SettingRefusal(accepted: accepted)
                    }
                    configuration[keyPath: path] = found.1
                }, shown: { configuration in table.first { $0.1 == configuration[keyPath: path] }?.0 ?? "?" })
        }

        /// Text `check` takes (and may rewrite), else refused as not `accepted`.
        public static func text(
            _ path: Path<String>, accepted: String, _ check: @escaping @Sendable (String) -> String?
        ) -> Self {
            Self(
                read: { text, configuration, _ in
                    guard let taken = check(text) else { throw SettingRefusal(accepted: accepted) }
                    configuration[keyPath: path] = taken
                }, shown: { $0[keyPath: path] })
        }
    }
}

/// The one set of parsers every setting's value is judged by, with the words of its refusal.
package enum SettingValue {
    package static func wholeNumber<T: FixedWidthInteger>(
        _ text: String, _ range: ClosedRange<T>
    ) throws(SettingRefusal) -> T {
        guard let number = DecimalText.integer(text, as: T.self), range.contains(number) else {
            throw SettingRefusal(accepted: "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    package static func duration(_ text: String, _ range: ClosedRange<Duration>) throws(SettingRefusal) -> Duration {
        guard let duration = DurationText.parse(text), range.contains(duration) else {
            throw SettingRefusal(
                accepted: "a duration (800ms, 30s, 5m, 2h, 7d) from \(DurationText.format(range.lowerBound)) to "
                    + DurationText.format(range.upperBound))
        }
        return duration
    }

    /// A duration of whole seconds within `range`: a part of a second is refused, not rounded
    /// (a setting that counts in seconds cannot keep it).
    package static func wholeSeconds(
        _ text: String, _ range: ClosedRange<Duration>
    ) throws(SettingRefusal) -> Duration {
        if let duration = DurationText.parse(text), duration.components.attoseconds != 0 {
            throw SettingRefusal(accepted: "a whole number of seconds (0s, 30s, 5m, 1h)")
        }
        return try self.duration(text, range)
    }

    package static func switchValue(_ text: String) throws(SettingRefusal) -> Bool {
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw SettingRefusal(accepted: "true or false")
        }
    }
}

/// Why a setting's value was not taken: what a value must be, or what went wrong with what it
/// names (a file).
public struct SettingRefusal: Error, Sendable {
    /// What a value must be, in words (`a whole number from 1 to 32767`); nil when the value's
    /// form was right and what it names was not.
    public let accepted: String?
    /// The refusal as a whole, after the setting's name.
    public let message: String

    public init(accepted: String) {
        self.accepted = accepted
        self.message = accepted
    }

    init(message: String) {
        self.accepted = nil
        self.message = message
    }

    /// The refusal of `text`, as a setting's problem says it: `'0' is not a whole number from 1 to 32767`.
    public func said(_ text: String) -> String {
        let shown = text.count > 60 ? String(text.prefix(40)) + "…" : text
        return accepted.map { "'\(shown)' is not \($0)" } ?? message
    }
}
