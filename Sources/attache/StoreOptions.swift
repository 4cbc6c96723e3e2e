import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore
import AttacheStoreShared
import Foundation

/// `--store DIR` (or `--store postgres://… --blobs s3://…`) and the quotas, shared by every
/// store command.
struct StoreOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Store directory, or postgres://… for a shared store.",
            discussion: "Default: $ATTACHE_STORE, else $XDG_DATA_HOME/attache/store, else ~/.local/share/attache/store."
        ))
    var store: String?

    @Option(
        help: ArgumentHelp(
            "Bucket of a shared store's object bytes: s3://bucket[/prefix].",
            discussion:
                "Default: $ATTACHE_BLOBS. Endpoint from $ATTACHE_S3_ENDPOINT, region from $AWS_REGION, keys from"
                + " $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY; the key ring key from $ATTACHE_KEYRING_KEY."
        ))
    var blobs: String?

    // The quotas are StoreSettings' rows (serve's too): their help, range and refusal.
    @Option(
        name: [.customLong("store-max-bytes"), .customLong("max-store-bytes")],
        help: Self.help("storeMaxBytes", alias: "--max-store-bytes"))
    var maxStoreBytes: String?

    @Option(
        name: [.customLong("store-max-objects"), .customLong("max-objects")],
        help: Self.help("storeMaxObjects", alias: "--max-objects"))
    var maxObjects: String?

    static func help(_ key: String, alias: String) -> ArgumentHelp {
        let row = StoreSettings.named(key)
        return ArgumentHelp(
            "\(row.help.dropLast()) (default \(row.shown(StoreConfiguration(root: "")))); \(alias) is the same.",
            valueName: "n")
    }

    @Flag(help: "Print one JSON object per line.")
    var json = false

    func validate() throws { _ = try quotas(StoreConfiguration(root: "")) }

    /// `configuration` with the quotas given read over it by their rows; a value a row refuses
    /// is a usage error naming the option.
    func quotas(_ configuration: StoreConfiguration) throws -> StoreConfiguration {
        var configuration = configuration
        for (key, text) in [("storeMaxBytes", maxStoreBytes), ("storeMaxObjects", maxObjects)] {
            guard let text else { continue }
            let row = StoreSettings.named(key)
            do throws(SettingRefusal) {
                try row.read(text, into: &configuration)
            } catch {
                throw ValidationError("--\(row.flag): \(error.said(text))")
            }
        }
        return configuration
    }

    var root: String {
        if let store { return store }
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["ATTACHE_STORE"], !path.isEmpty { return path }
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/attache/store" }
        return (environment["HOME"] ?? ".") + "/.local/share/attache/store"
    }

    /// The store's configuration: a directory, or a shared store checked as a whole (every
    /// missing or malformed part named in one message).
    func configuration() throws -> StoreConfiguration {
        var configuration = try quotas(StoreConfiguration(root: root))
        let environment = ProcessInfo.processInfo.environment
        let blobs = self.blobs ?? environment["ATTACHE_BLOBS"].flatMap { $0.isEmpty ? nil : $0 }
        if SharedStoreConfiguration.names(root) {
            configuration.shared = try SharedStoreConfiguration.parse(
                store: root, blobs: blobs, environment: environment)
        } else if self.blobs != nil {
            throw ValidationError("--blobs needs a shared store: --store postgres://…")
        }
        return configuration
    }

    /// Opens the store; a store that cannot be opened is named by the option (or variable) that chose it.
    func open() throws -> AttachmentStore {
        let configuration = try configuration()
        do throws(AttacheError) {
            return try AttachmentStore.open(configuration)
        } catch {
            guard error.code == .ioError else { throw error }
            let named: String = store != nil ? "--store" : "the store (ATTACHE_STORE or the default)"
            throw AttacheError(.ioError, named + " " + configuration.root + ": " + error.message)
        }
    }
}

/// A duration option, written as every setting writes one (``DurationText``: `800ms`, `90`,
/// `90s`, `10m`, `2h`, `7d`).
struct DurationArgument: ExpressibleByArgument, Sendable {
    let value: Duration

    init(_ value: Duration) { self.value = value }

    init?(argument: String) {
        guard let value = DurationText.parse(argument) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String { DurationText.format(value) }

    /// In seconds, for what counts in them.
    var seconds: Double { Double(value.components.seconds) + Double(value.components.attoseconds) * 1e-18 }
}

/// A duration option of whole seconds, more than none (``DurationArgument``'s syntax; a part of a
/// second is refused, not cut).
struct Seconds: ExpressibleByArgument, Sendable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    var defaultValueDescription: String { DurationText.format(.seconds(value)) }

    init?(argument: String) {
        guard let age = Age(argument: argument), age.value > 0 else { return nil }
        value = age.value
    }
}

/// An age of whole seconds, where 0 is allowed.
struct Age: ExpressibleByArgument, Sendable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    var defaultValueDescription: String { DurationText.format(.seconds(value)) }

    init?(argument: String) {
        if let duration = DurationText.parse(argument) {
            guard duration.components.attoseconds == 0 else { return nil }
            value = duration.components.seconds
        } else if Self.overflows(argument) {
            // Saturates, so a huge value reaches the range check and its message.
            value = .max
        } else {
            return nil
        }
    }

    /// Digits (and a unit) that name more seconds than a number holds.
    private static func overflows(_ text: String) -> Bool {
        let digits = text.last.map { "smhd".contains($0) } == true ? text.dropLast() : Substring(text)
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}

/// Parses an attachment id argument.
func attachmentID(_ text: String) throws -> AttachmentID {
    guard let id = AttachmentID(hex: text) else {
        throw ValidationError("'\(text)' is not an attachment id (64 hex digits)")
    }
    return id
}
