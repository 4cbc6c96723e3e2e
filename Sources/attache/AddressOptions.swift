import ArgumentParser
import AttacheCore
import AttacheFetch

/// `--allow-loopback`, `--allow-private` and `--https-only`, shared by the commands that fetch:
/// the rows of ``AddressSettings/all`` (serve's too), their help and where each goes taken from
/// the row.
struct AddressOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(AddressSettings.named("allowLoopback").help))
    var allowLoopback = false

    @Flag(help: ArgumentHelp(AddressSettings.named("allowPrivate").help))
    var allowPrivate = false

    @Flag(help: ArgumentHelp(AddressSettings.named("httpsOnly").help))
    var httpsOnly = false

    /// The switches given, by their rows' keys.
    var given: [String: Bool] {
        ["allowLoopback": allowLoopback, "allowPrivate": allowPrivate, "httpsOnly": httpsOnly]
    }

    func apply(to policy: inout FetchPolicy) {
        for row in AddressSettings.all {
            // A switch's value is true or false: its row cannot refuse it.
            try? row.read(String(given[row.key] ?? false), into: &policy)
        }
    }
}
