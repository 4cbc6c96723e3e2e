import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheStore
import Foundation

/// The rows of ``PipelineSettings/all`` `process` and `preview` take: all of them, over the
/// pipeline's own defaults (the service's).
enum PipelineRows: SettingRows {
    static let keys: Set<String>? = nil
    static var base: PipelineConfiguration { PipelineConfiguration() }
}

/// The rows `batch` takes: all of them, over the batch's defaults (``PipelineConfiguration/batch``:
/// the thorough JPEG encoder).
enum BatchRows: SettingRows {
    static let keys: Set<String>? = nil
    static var base: PipelineConfiguration { .batch }
}

/// How payloads go through the pipeline: `attache process`, `attache preview` and `attache
/// batch`, each over its own defaults (`Rows`). The settings `serve` shares are read by their
/// rows (``SettingOptions``); what is here is the commands' own.
struct PipelineOptions<Rows: SettingRows>: ParsableArguments {
    @OptionGroup var settings: SettingOptions<Rows>

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var address: AddressOptions

    @Option(name: .customLong("source"), help: "Extra source rule name=key/key/... (repeatable; * = every member).")
    var extraSources: [String] = []

    @Option(
        help:
            "Seal every payload to this device public key (PEM, DER, X9.63 or raw P-256; raw or DER X25519; or their base64)."
    )
    var sealKey: String?

    @Option(help: "The key id written beside the seal (with --seal-key).")
    var sealKid: String?

    @Option(name: .customLong("seal-member"), help: "A top-level member a seal also takes (repeatable).")
    var sealMembers: [String] = []

    /// The settings shared with `serve`, as `--help` lists them after the command's own.
    static var settingsHelp: String {
        "\nSettings shared with attache serve (flag, default):\n\n" + SettingOptions<Rows>.help
    }

    /// The payloads or the input named after the flags.
    var inputs: [String] { settings.positionals }

    func validate() throws {
        if (sealKey == nil) != (sealKid == nil) { throw ValidationError("--seal-key and --seal-kid go together") }
        for member in sealMembers where member.isEmpty || member == "aps" {
            throw ValidationError(
                "--seal-member '\(member)' is not a member a seal can take: name a top-level member other than aps")
        }
    }

    /// The pipeline these options describe, over `store` (default: the store they name).
    func pipeline(store: AttachmentStore? = nil) throws -> Pipeline {
        var configuration = try settings.configuration()
        configuration.sealMembers = sealMembers
        if let sealKey, let sealKid {
            let bytes = try BoundedInput.read(sealKey, limit: 64 * 1024)
            do {
                configuration.sealTo = try SealRecipient(encoded: bytes, keyID: sealKid)
            } catch SealError.badKey(let why) where why.hasPrefix("a key id") {
                throw ValidationError("--seal-kid '\(sealKid)': \(why)")
            } catch {
                throw ValidationError("--seal-key \(sealKey): \(error)")
            }
        }
        for text in extraSources {
            guard let rule = SourceRule(argument: text) else {
                throw ValidationError(
                    "--source '\(text)' is not a rule: name=key/key (the keys to a URL, * for every member), "
                        + "e.g. cdn=data/media/url")
            }
            configuration.sources.append(rule)
        }
        return Pipeline(configuration: configuration, fetcher: fetcher(), store: try store ?? storeOptions.open())
    }

    /// A fetcher with the address policy these options describe.
    func fetcher() -> Fetcher {
        var policy = FetchPolicy()
        address.apply(to: &policy)
        return Fetcher(policy: policy)

    }
}
