import ArgumentParser
import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheStore

/// `--allow-loopback`, `--allow-private` and `--https-only`, shared by the commands that fetch.
struct AddressOptions: ParsableArguments {
    @Flag(help: "Allow 127.0.0.0/8 and ::1 (tests and demos).")
    var allowLoopback = false

    @Flag(help: "Allow private ranges (RFC 1918, 100.64/10, fc00::/7); metadata addresses stay denied.")
    var allowPrivate = false

    @Flag(help: "Only https, on the first request and on every redirect.")
    var httpsOnly = false

    func apply(to policy: inout FetchPolicy) {
        policy.allowLoopback = allowLoopback
        policy.allowPrivate = allowPrivate
        policy.httpsOnly = httpsOnly
    }
}
