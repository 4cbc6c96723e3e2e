import AttacheSeal
import AttacheTestSupport
import Crypto
import Foundation
import Testing

/// The sealed-attachment format: round trips at every boundary, every kind of damage refused,
/// ranges, and the published test vectors.
struct SegmentedCipherTests {
    let key = SymmetricKey(data: (0..<32).map { UInt8($0) })

    func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [0, 1, 15, 16, 17, 31, 32, 33, 64, 100])
    func roundTripsAtEverySegmentBoundaryFedInAnyChunks(length: Int) throws {
        let plain = randomBytes(length, seed: UInt64(length))
        let sealed = try SegmentEncryptor.seal(plain, key: key, segmentSize: 16)
        #expect(Int64(sealed.count) == SegmentedCipher.sealedSize(plaintext: Int64(length), segmentSize: 16))
        #expect(try SegmentDecryptor.open(sealed, key: key) == plain)
        // Fed a byte at a time, and in odd chunks, to both sides.
        var encryptor = SegmentEncryptor(key: key, segmentSize: 16)
        var streamed: [UInt8] = []
        for chunk in stride(from: 0, to: plain.count, by: 7) {
            streamed += try encryptor.append(plain[chunk..<min(plain.count, chunk + 7)])
        }
        streamed += try encryptor.finish()
        var decryptor = SegmentDecryptor(key: key)
        var opened: [UInt8] = []
        for byte in streamed { opened += try decryptor.append([byte]) }
        opened += try decryptor.finish()
        #expect(opened == plain)
    }

    @Test func everyKindOfDamageIsRefusedAndNothingOfTheDamagedSegmentIsReturned() throws {
        let plain = randomBytes(100, seed: 7)
        let sealed = try SegmentEncryptor.seal(plain, key: key, segmentSize: 32)
        let segment = 32 + 16
        func refusal(_ bytes: [UInt8], key: SymmetricKey? = nil) -> SealError? {
            do {
                _ = try SegmentDecryptor.open(bytes, key: key ?? self.key)
                return nil
            } catch {
                return error
            }
        }
        // A flipped byte in the second segment.
        var flipped = sealed
        flipped[16 + segment + 3] ^= 1
        #expect(refusal(flipped) == .segmentRejected(index: 1))
        // Segments swapped.
        var swapped = sealed
        swapped.replaceSubrange(16..<16 + segment, with: sealed[16 + segment..<16 + 2 * segment])
        swapped.replaceSubrange(16 + segment..<16 + 2 * segment, with: sealed[16..<16 + segment])
        #expect(refusal(swapped) == .segmentRejected(index: 0))
        // Truncated at a segment boundary: the last whole segment was not sealed as the last.
        #expect(refusal(Array(sealed[..<(16 + 2 * segment)])) == .segmentRejected(index: 1))
        // Truncated inside the header, and with no segment at all.
        #expect(refusal(Array(sealed[..<10])) == .truncated)
        #expect(refusal(Array(sealed[..<16])) == .truncated)
        // A dropped last segment.
        #expect(refusal(Array(sealed[..<(16 + 3 * segment)])) == .segmentRejected(index: 2))
        // Bytes after the end.
        var decryptor = SegmentDecryptor(key: key)
        _ = try decryptor.append(sealed)
        _ = try decryptor.finish()
        #expect(throws: SealError.trailingData) { try decryptor.append([0]) }
        // The wrong key, a changed header (segment size or prefix), another format.
        #expect(refusal(sealed, key: SymmetricKey(size: .bits256)) == .segmentRejected(index: 0))
        var prefix = sealed
        prefix[9] ^= 0x80
        #expect(refusal(prefix) == .segmentRejected(index: 0))
        var magic = sealed
        magic[0] = UInt8(ascii: "X")
        #expect(refusal(magic) == .badHeader)
        var size = sealed
        size[4] = 0xFF
        #expect(refusal(size) == .badHeader)
        // A segment's plaintext is returned only once it authenticates.
        var first = sealed
        first[20] ^= 1
        var partial = SegmentDecryptor(key: key)
        #expect(try partial.append(first[..<(16 + segment)]).isEmpty, "held until the segment is known whole")
        #expect(throws: SealError.segmentRejected(index: 0)) { try partial.append(first[(16 + segment)...]) }
    }

    @Test func aRangeMapsToWholeSegmentsThatOpenOnTheirOwn() throws {
        let plain = randomBytes(1_000, seed: 9)
        let sealed = try SegmentEncryptor.seal(plain, key: key, segmentSize: 64)
        let (first, last, bytes) = SegmentedCipher.segments(covering: 300..<700, segmentSize: 64)
        #expect(first == 4 && last == 10)
        #expect(bytes == Int64(16 + 4 * 80)..<Int64(16 + 11 * 80))
        // A reader that fetched the header, then only those segments (the last one included).
        var decryptor = SegmentDecryptor(key: key, firstSegment: first)
        var opened = try decryptor.append(sealed[..<16])
        opened += try decryptor.append(sealed[Int(bytes.lowerBound)..<Int(bytes.upperBound)])
        // Segment 10 is not the last of the stream: it opens as not-last only with more bytes,
        // so a range reader stops after it instead of finishing.
        #expect(opened == Array(plain[256..<640]))
        let tail = SegmentedCipher.segments(covering: 990..<1_000, segmentSize: 64)
        var end = SegmentDecryptor(key: key, firstSegment: tail.first)
        _ = try end.append(sealed[..<16])
        var ending = try end.append(sealed[Int(tail.ciphertext.lowerBound)...])
        ending += try end.finish()
        #expect(ending == Array(plain[960...]))
    }

    /// Published in docs/sealed-attachments.md; checked there against Python's `cryptography`
    /// (AESGCM) as an independent implementation.
    @Test func theTestVectorsHold() throws {
        let prefix: [UInt8] = [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6]
        let empty = try SegmentEncryptor.seal([UInt8](), key: key, segmentSize: 16, noncePrefix: prefix)
        #expect(hex(empty) == Self.vectorEmpty)
        let plain = Array("Attache sealed attachment, 3 segments.".utf8)
        let sealed = try SegmentEncryptor.seal(plain, key: key, segmentSize: 16, noncePrefix: prefix)
        #expect(hex(sealed) == Self.vectorThreeSegments)
        #expect(try SegmentDecryptor.open(sealed, key: key) == plain)
    }

    static let vectorEmpty = "4154533100000010a0a1a2a3a4a5a60099b824fe1840f35102ae14bfc4e7ae1f"
    static let vectorThreeSegments =
        "4154533100000010a0a1a2a3a4a5a6004ba568c8f53c201d1f46a5ecfc64760a7c880bcf2dcd61fa8e1e08c2d9"
        + "1b6d19259676a4e55193e194a19e47ed51cb57f91be8ae5c43bbbc44b1aeb3e2e44d848cc8ef9a85c0ac70c99"
        + "56270611dba65af940c79f110"

    @Test func aLargeStreamOpensInChunksAndSaysHowFast() throws {
        let plain = randomBytes(16 << 20, seed: 3)
        let sealed = try SegmentEncryptor.seal(plain, key: key)
        var best = Duration.seconds(1_000)
        for _ in 0..<3 {
            let start = threadCPUTime()
            var decryptor = SegmentDecryptor(key: key)
            var total = 0
            var offset = 0
            while offset < sealed.count {
                let end = min(sealed.count, offset + 256 * 1024)
                total += try decryptor.append(sealed[offset..<end]).count
                offset = end
            }
            total += try decryptor.finish().count
            #expect(total == plain.count)
            best = min(best, threadCPUTime() - start)
        }
        let seconds = Double(best.components.seconds) + Double(best.components.attoseconds) / 1e18
        print("segment decryption: \(String(format: "%.2f", Double(plain.count) / seconds / 1e9)) GB/s of CPU time")
    }
}
