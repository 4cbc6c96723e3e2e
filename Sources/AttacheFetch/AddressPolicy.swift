import AttacheBase
internal import CAttacheFetch
import Glibc

/// The deny list every connection passes before its socket is opened (see docs/fetching.md's
/// address policy), for callers that want to check an address themselves.
public enum AddressPolicy {
    /// The rule that denies `address` (4 bytes: IPv4, 16: IPv6, network order), or nil when it
    /// may be connected to. Metadata, link-local and `0.0.0.0/8` stay denied whatever is allowed.
    public static func rule(
        denying address: [UInt8], allowLoopback: Bool = false, allowPrivate: Bool = false
    )
        -> String?
    {
        guard address.count == 4 || address.count == 16 else { return "not an IP address" }
        let flags =
            (allowLoopback ? Int32(ATT_ADDR_ALLOW_LOOPBACK) : 0) | (allowPrivate ? Int32(ATT_ADDR_ALLOW_PRIVATE) : 0)
        let rule = address.withUnsafeBufferPointer {
            att_address_denied(address.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, flags)
        }
        return rule.map { String(cString: $0) }
    }
}
