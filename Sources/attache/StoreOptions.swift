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

    @Option(
        name: [.customLong("store-max-bytes"), .customLong("max-store-bytes")],
        help: "Byte quota of the store (serve's --store-max-bytes; --max-store-bytes is the same).")
    var maxStoreBytes: Int64 = StoreConfiguration(root: "").maxBytes

    @Option(
        name: [.customLong("store-max-objects"), .customLong("max-objects")],
        help: "Object quota of the store (serve's --store-max-objects; --max-objects is the same).")
    var maxObjects: Int = StoreConfiguration(root: "").maxObjects

    @Flag(help: "Print one JSON object per line.")
    var json = false

    func validate() throws {
        try Ranges.check(maxStoreBytes, StoreConfiguration.maxBytesRange, "--store-max-bytes")
        try Ranges.check(maxObjects, StoreConfiguration.maxObjectsRange, "--store-max-objects")
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
        var configuration = StoreConfiguration(root: root, maxBytes: maxStoreBytes, maxObjects: maxObjects)
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

/// A duration written `90`, `90s`, `10m`, `2h` or `7d`, in seconds.
struct Seconds: ExpressibleByArgument, Sendable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    var defaultValueDescription: String {
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where value % size == 0 {
            return "\(value / size)\(unit)"
        }
        return "\(value)s"
    }

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var text = Substring(argument)
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            text = text.dropLast()
        }
        guard let number = Int64(text), number > 0 else { return nil }
        // Saturates, so a huge value reaches the range check and its message.
        let (product, overflow) = number.multipliedReportingOverflow(by: unit)
        value = overflow ? .max : product
    }
}

/// An age written like ``Seconds``, where 0 is allowed.
struct Age: ExpressibleByArgument, Sendable {
    let value: Int64

    init(_ value: Int64) { self.value = value }

    var defaultValueDescription: String { Seconds(value).defaultValueDescription }

    init?(argument: String) {
        if argument == "0" || argument == "0s" {
            value = 0
        } else if let seconds = Seconds(argument: argument) {
            value = seconds.value
        } else {
            return nil
        }
    }
}

/// Parses an attachment id argument.
func attachmentID(_ text: String) throws -> AttachmentID {
    guard let id = AttachmentID(hex: text) else {
        throw ValidationError("'\(text)' is not an attachment id (64 hex digits)")
    }
    return id
}
