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
        let size = Int(ProcessInfo.processInfo.environment["KIT_MEMORY_BYTES"] ?? "") ?? 50_000_000
        var plain = [UInt8](repeating: 0, count: size)
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
        // Ranges answered from the body where it lies: the server adds nothing to the peak.
        host.route("/v.ats") { request, c in
            let range = TestHTTPServer.Connection.range(request, count: sealed.count) ?? 0..<sealed.count
            c.write(
                "HTTP/1.1 206 Partial Content\r\nContent-Length: \(range.count)\r\n"
                    + "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(sealed.count)\r\n\r\n")
            _ = sealed.withUnsafeBytes { c.write(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        let payload: [String: Any] = [
            "aps": ["alert": ["body": "video"], "mutable-content": 1],
            "attachments": [
                [
                    "id": String(repeating: "ab", count: 32), "url": host.url("/v.ats"), "type": "public.mpeg-4",
                    "bytes": size, "key": Data(key.withUnsafeBytes { Array($0) }).base64EncodedString(),
                    "sha256": digest,
                ]
            ],
        ]
        let json = try JSONSerialization.data(withJSONObject: payload)
        let directory = try TemporaryDirectory()
        let kit = AttacheClient(directory: URL(fileURLWithPath: directory.path)) { nil }
        // Measured twice from a reset peak: cold (URLSession's first session, threads, curl),
        // then warm.
        var peaks: [Int] = []
        var prepared: PreparedNotification?
        var elapsed = Duration.zero
        var before = 0
        for _ in 0..<2 {
            try? FileManager.default.removeItem(
                atPath: directory.path + "/" + String(repeating: "ab", count: 32) + ".mp4")
            before = Self.status("VmRSS")
            try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            let start = ContinuousClock.now
            prepared = await kit.prepare(json: json, deadline: .now + .seconds(120))
            elapsed = ContinuousClock.now - start
            peaks.append(Self.status("VmHWM") - before)
        }
        let done = try #require(prepared)
        #expect(done.failures.isEmpty, "\(done.failures)")
        let file = try #require(done.attachments.first?.fileURL)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == size)
        print(
            "kit memory: \(size / 1_000_000) MB sealed video in \(elapsed), peak RSS above the start \(peaks[0] / 1024) KiB cold, "
                + "\(peaks[1] / 1024) KiB warm (RSS before \(before / 1_048_576) MiB)")
        // Warm, what streaming the video takes: within 16 MiB. Cold, with the first use of
        // URLSession on Linux (FoundationNetworking, libcurl and its TLS library loaded and set
        // up) as well: within a service extension's whole 24 MiB.
        #expect(peaks[1] <= 16 << 20, "warm peak \(peaks[1]) bytes above the start")
        #expect(peaks[0] <= 24 << 20, "cold peak \(peaks[0]) bytes above the start")
    }
}
