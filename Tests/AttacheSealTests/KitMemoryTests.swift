import AttacheClient
import AttacheSeal
import AttacheTestSupport
import Crypto
import Foundation
import Testing

/// A sealed 50 MB video through the kit: decrypted while it downloads, in little memory. Alone
/// in its child process, so the peak it reads is the kit's own.
@Suite(.enabled(if: inIsolatedChild)) struct KitMemoryTests {
    static func status(_ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test func aSealedFiftyMegabyteVideoDecryptsWhileDownloadingInLittleMemory() async throws {
        var random = SplitMix(seed: 50)
        var plain = [UInt8](repeating: 0, count: 50_000_000)
        for index in stride(from: 0, to: plain.count, by: 8) {
            withUnsafeBytes(of: random.next()) { word in
                for offset in 0..<min(8, plain.count - index) { plain[index + offset] = word[offset] }
            }
        }
        let key = SymmetricKey(size: .bits256)
        let sealed = try SegmentEncryptor.seal(plain, key: key)
        let digest = SHA256.hash(data: plain).map { String(format: "%02x", $0) }.joined()
        plain = []
        let host = try TestHTTPServer()
        host.route("/v.ats") { _, c in
            c.write("HTTP/1.1 200 OK\r\nContent-Length: \(sealed.count)\r\n\r\n")
            c.write(sealed)
        }
        let payload: [String: Any] = [
            "aps": ["alert": ["body": "video"], "mutable-content": 1],
            "attachments": [
                [
                    "id": String(repeating: "ab", count: 32), "url": host.url("/v.ats"), "type": "public.mpeg-4",
                    "bytes": 50_000_000, "key": Data(key.withUnsafeBytes { Array($0) }).base64EncodedString(),
                    "sha256": digest,
                ]
            ],
        ]
        let json = try JSONSerialization.data(withJSONObject: payload)
        let directory = try TemporaryDirectory()
        let kit = AttacheClient(directory: URL(fileURLWithPath: directory.path)) { nil }
        // Once to warm URLSession up, then measured from a reset peak.
        _ = await kit.prepare(json: json, deadline: .now + .seconds(120))
        let before = Self.status("VmRSS")
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let start = ContinuousClock.now
        let prepared = await kit.prepare(json: json, deadline: .now + .seconds(120))
        let elapsed = ContinuousClock.now - start
        let peak = Self.status("VmHWM") - before
        #expect(prepared.failures.isEmpty, "\(prepared.failures)")
        let file = try #require(prepared.attachments.first?.fileURL)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == 50_000_000)
        print(
            "kit memory: 50 MB sealed video in \(elapsed), peak RSS above the start \(peak / 1024) KiB "
                + "(RSS before \(before / 1_048_576) MiB)")
        #expect(peak <= 16 << 20, "peak \(peak) bytes above the start")
    }
}
