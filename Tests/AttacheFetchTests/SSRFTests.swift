import AttacheBase
import AttacheTestSupport
import CAttacheFetch
import Foundation
import Testing

@testable import AttacheFetch

/// Runs ``NamespaceSSRFTests`` in a child of this test binary inside a new network namespace
/// that has only loopback (`unshare -n`, then `ip link set lo up`). Every test that names a
/// non-loopback address lives there, so a broken address policy fails a test instead of sending
/// a packet anywhere.
@Suite struct SSRFNamespaceRunner {
    @Test(.enabled(if: !inNetworkNamespaceChild))
    func ssrfMatrixRunsInsideALoopbackOnlyNetworkNamespace() throws {
        let (status, output) = try runTestsInChild(
            filter: ["AttacheFetchTests.NamespaceSSRFTests"], variable: "ATTACHE_NETNS_CHILD",
            wrapper: ["/usr/bin/unshare", "--net", "--", "/bin/sh", "-c", "ip link set lo up && exec \"$@\"", "sh"])
        #expect(status == 0, "\(childIssues(output))\n\(output.suffix(2000))")
        #expect(output.contains("Suite NamespaceSSRFTests passed"), "\(output.suffix(2000))")
        print(
            output.split(separator: "\n").filter { $0.contains("NamespaceSSRFTests") || $0.contains("Test run") }
                .joined(separator: "\n"))
    }
}

/// The SSRF matrix. Only runs as the namespace child started above, and refuses to run at all
/// when the process can see any interface besides `lo`.
@Suite(.enabled(if: inNetworkNamespaceChild))
struct NamespaceSSRFTests {
    init() throws {
        // /proc/self/net/dev lists the interfaces of this process's network namespace.
        let table = try String(contentsOfFile: "/proc/self/net/dev", encoding: .utf8)
        let interfaces = table.split(separator: "\n").dropFirst(2).compactMap {
            $0.split(separator: ":").first?.trimmingCharacters(in: .whitespaces)
        }
        try #require(interfaces == ["lo"], "not in a loopback-only namespace: \(interfaces)")
    }

    static func v4(_ text: String) -> [UInt8] {
        var address = in_addr()
        precondition(inet_pton(AF_INET, text, &address) == 1, text)
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    static func v6(_ text: String) -> [UInt8] {
        var address = in6_addr()
        precondition(inet_pton(AF_INET6, text, &address) == 1, text)
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    static func rule(_ text: String, flags: Int32 = 0) -> String? {
        let v6 = text.contains(":")
        let bytes = v6 ? Self.v6(text) : Self.v4(text)
        guard let rule = att_address_denied(v6 ? AF_INET6 : AF_INET, bytes, flags) else { return nil }
        return String(cString: rule)
    }

    static let denied = [
        "0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255", "172.16.0.1",
        "172.31.255.255", "192.168.0.1", "192.168.255.255", "100.64.0.1", "100.127.255.255", "169.254.169.254",
        "169.254.0.1", "192.0.0.1", "192.0.0.170", "192.0.2.1", "198.18.0.1", "198.19.255.255", "198.51.100.1",
        "203.0.113.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255", "100.100.100.200",
        "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:192.168.1.1",
        "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1", "2002:7f00:1::", "2002::1",
        "2001::1", "2001:0:4136:e378::1", "2001:db8::1", "fc00::1", "fd00::1", "fd00:ec2::254",
        "fe80::1", "febf::1", "fec0::1", "ff02::1", "ff05::1:3", "100::1",
    ]

    static let allowed = [
        "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.63.255.255", "100.128.0.0", "192.167.255.255",
        "198.17.255.255", "198.20.0.0", "223.255.255.255", "2606:4700:4700::1111", "2a00:1450:4001::1",
        "::ffff:8.8.8.8", "2001:4860:4860::8888",
    ]

    @Test(arguments: denied)
    func deniedRanges(address: String) {
        #expect(Self.rule(address) != nil, "\(address) must be denied")
    }

    @Test(arguments: allowed)
    func globalAddressesAreAllowed(address: String) {
        #expect(Self.rule(address) == nil, "\(address) is global unicast: \(Self.rule(address) ?? "")")
    }

    @Test func switchesLiftOnlyTheirRanges() {
        let loopback = Int32(ATT_ADDR_ALLOW_LOOPBACK)
        let both = Int32(ATT_ADDR_ALLOW_LOOPBACK | ATT_ADDR_ALLOW_PRIVATE)
        #expect(Self.rule("127.0.0.1", flags: loopback) == nil)
        #expect(Self.rule("::1", flags: loopback) == nil)
        #expect(Self.rule("::ffff:127.0.0.1", flags: loopback) == nil)
        #expect(Self.rule("10.0.0.1", flags: loopback) != nil)
        #expect(Self.rule("10.0.0.1", flags: both) == nil)
        #expect(Self.rule("fd12::1", flags: both) == nil)
        for metadata in ["169.254.169.254", "100.100.100.200", "fd00:ec2::254", "0.0.0.0", "::ffff:169.254.169.254"] {
            #expect(Self.rule(metadata, flags: both) != nil, "\(metadata) stays denied with every switch on")
        }
    }

    /// Real fetches under the default policy: refused at connect time, before a connection
    /// reaches the server listening on that address.
    @Test func defaultPolicyRefusesEverySpellingOfLoopback() async throws {
        let server = try TestHTTPServer(host: "127.0.0.1")
        let server6 = try TestHTTPServer(host: "::1")
        server.route("/a.jpg") { _, c in c.respond(body: sampleJPEG) }
        let p = server.port
        var policy = FetchPolicy()
        policy.maxRetries = 0
        policy.resolve = ["pinned.example:\(p):127.0.0.1", "meta.example:80:169.254.169.254"]
        let fetcher = Fetcher(policy: policy)
        let urls = [
            "http://127.0.0.1:\(p)/a.jpg", "http://2130706433:\(p)/a.jpg", "http://0177.0.0.1:\(p)/a.jpg",
            "http://0x7f000001:\(p)/a.jpg", "http://0x7f.0.0.1:\(p)/a.jpg", "http://127.1:\(p)/a.jpg",
            "http://017700000001:\(p)/a.jpg", "http://[::ffff:127.0.0.1]:\(p)/a.jpg",
            "http://[::ffff:7f00:1]:\(p)/a.jpg", "http://localhost:\(p)/a.jpg", "http://pinned.example:\(p)/a.jpg",
            "http://[::1]:\(server6.port)/a.jpg", "http://0.0.0.0:\(p)/a.jpg", "http://0:\(p)/a.jpg",
            "http://meta.example/latest/meta-data/",
        ]
        for url in urls {
            let error = await fetchFailure(fetcher, url)
            #expect(error?.code == .blockedAddress, "\(url): \(String(describing: error))")
        }
        #expect(server.accepted == 0 && server6.accepted == 0, "a refused fetch reached a server")
        // The same server is reachable when loopback is allowed, so the refusals above are the policy's.
        var open = policy
        open.allowLoopback = true
        let media = try await Fetcher(policy: open).fetch("http://pinned.example:\(p)/a.jpg")
        #expect(media.bytes.count == sampleJPEG.count && server.accepted == 1)
    }

    @Test(arguments: [
        "http://10.0.0.1/a.jpg", "http://172.16.5.4/a.jpg", "http://192.168.1.1/a.jpg", "http://100.64.1.1/a.jpg",
        "http://169.254.169.254/latest/meta-data/", "http://100.100.100.200/", "http://192.0.2.10/",
        "http://198.18.0.1/", "http://198.51.100.7/", "http://203.0.113.9/", "http://224.0.0.251/",
        "http://240.1.2.3/", "http://255.255.255.255/", "http://[fd00:ec2::254]/", "http://[fc00::1]/",
        "http://[fe80::1]/", "http://[ff02::1]/", "http://[64:ff9b::a00:1]/", "http://[2002:a00:1::1]/",
        "http://[2001:db8::1]/", "http://[2001::1]/", "http://[::ffff:10.0.0.1]/", "http://[::]/",
        "http://0xa000001/", "http://167772161/", "http://012.0.0.1/",
    ])
    func defaultPolicyRefusesPrivateAndSpecialRanges(url: String) async throws {
        var policy = FetchPolicy()
        policy.maxRetries = 0
        let error = await fetchFailure(Fetcher(policy: policy), url)
        // connect_failed here would mean a connection was attempted: the namespace stopped it, not us.
        #expect(error?.code == .blockedAddress, "\(url): \(String(describing: error))")
    }

    @Test func redirectsToDeniedAddressesAreRefused() async throws {
        let server = try TestHTTPServer()
        server.route("/to-metadata") { _, c in c.redirect(to: "http://169.254.169.254/latest/meta-data/iam/") }
        server.route("/to-private") { _, c in c.redirect(to: "http://10.1.2.3/a.jpg") }
        server.route("/to-mapped") { _, c in c.redirect(to: "http://[::ffff:169.254.169.254]/") }
        server.route("/to-decimal") { _, c in c.redirect(to: "http://2852039166/") }
        var policy = loopbackPolicy()
        policy.maxRetries = 0
        let fetcher = Fetcher(policy: policy)
        for path in ["/to-metadata", "/to-private", "/to-mapped", "/to-decimal"] {
            let error = await fetchFailure(fetcher, server.url(path))
            #expect(error?.code == .blockedAddress, "\(path): \(String(describing: error))")
        }
        // Even with private ranges allowed, metadata stays denied.
        var privatePolicy = policy
        privatePolicy.allowPrivate = true
        let error = await fetchFailure(Fetcher(policy: privatePolicy), server.url("/to-metadata"))
        #expect(error?.code == .blockedAddress && error?.detail?.contains("169.254") == true)
    }
}
