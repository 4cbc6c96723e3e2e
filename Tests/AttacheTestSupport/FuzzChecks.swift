import AttacheBase
import AttacheCore
import AttacheFetch
import AttacheMedia
import AttacheSeal
import AttacheServer
import AttacheStore
import CAttacheCodecs
import Crypto
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The properties the fuzz targets (`Fuzz/`) check on every input, kept here so the test
/// suite replays every saved finding (`Tests/Fixtures/fuzz/<target>/`) through the same code.
/// A check throws a ``FuzzFinding`` when a property fails; any crash is a finding too.
public enum FuzzChecks {
    /// A property that did not hold.
    public struct FuzzFinding: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The targets, by name (`Fuzz/Targets/<Name>`, `Tests/Fixtures/fuzz/<name>`).
    public static let targets: [String: @Sendable ([UInt8]) throws(FuzzFinding) -> Void] = [
        "json": json, "sniffer": sniffer, "exif": exif, "token": token, "url": url, "gif": gif, "image": image,
        "seal": seal, "modern": modern, "av": av, "poster": poster, "head": head, "encode": encode,
    ]

    /// The key the seal target's streams are sealed under: bytes 0…31, the key of the
    /// published vectors (docs/sealed-attachments.md), so they are valid seeds.
    static let sealKey = SymmetricKey(data: (0..<32).map { UInt8($0) })

    /// What a device reads: any bytes as a recipient key (read or refused, typed); as a sealed
    /// stream under a fixed key, opened only if it is a real seal — it re-seals to the same
    /// bytes — with the same answer whole and in pieces (the split from the first byte); as an
    /// `encrypted-content` member, refused unless it opens with the vectors' P-256 key.
    public static func seal(_ bytes: [UInt8]) throws(FuzzFinding) {
        _ = try? SealRecipient(encoded: bytes, keyID: "fuzz")
        let whole = Result { () throws(SealError) in try SegmentDecryptor.open(bytes, key: sealKey) }
        let step = 1 + Int(bytes.first ?? 0) * 7
        let split = Result { () throws(SealError) -> [UInt8] in
            var pieces = SegmentDecryptor(key: sealKey)
            var out: [UInt8] = []
            var offset = 0
            while offset < bytes.count {
                out += try pieces.append(bytes[offset..<min(bytes.count, offset + step)])
                offset += step
            }
            return out + (try pieces.finish())
        }
        switch (whole, split) {
        case (.success(let a), .success(let b)):
            guard a == b else { throw FuzzFinding("a stream opened whole and in pieces gives different plaintext") }
            let size = bytes[4..<8].reduce(0) { $0 << 8 | Int($1) }
            guard
                let again = try? SegmentEncryptor.seal(
                    a, key: sealKey, segmentSize: size, noncePrefix: Array(bytes[8..<15])), again == bytes
            else { throw FuzzFinding("an opened stream does not re-seal to its own bytes") }
        case (.failure, .failure): break
        default: throw FuzzFinding("a stream opens whole but not in pieces, or the other way")
        }
        if let member = try? JSONSerialization.jsonObject(with: Data(bytes)),
            let envelope = try? SealedEnvelope(member: member),
            let p256 = try? P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))
        {
            _ = try? PayloadSeal.open(envelope, p256: p256)
        }
    }

    /// The payload parser and the mutation that writes the attachment block: an accepted
    /// document's compact text parses back to it; setting a member keeps every byte outside
    /// it; setting a compactly written member to its own value gives the input back.
    public static func json(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let value = try? JSONParser.parse(bytes) else { return }
        guard let again = try? JSONParser.parse(Array(value.text.utf8)), again.text == value.text else {
            throw FuzzFinding("the compact text of an accepted document does not parse back to it")
        }
        guard let content = try? NotificationContent(bytes: bytes), case .object(let members) = content.root else {
            return
        }
        let added = content.setting("attachments-fuzz", to: .array([.string("x")]))
        guard let reparsed = try? JSONParser.parse(added), reparsed["attachments-fuzz"] == .array([.string("x")])
        else { throw FuzzFinding("a new member does not parse back") }
        for member in members {
            guard let range = member.sourceRange else { throw FuzzFinding("a parsed member has no source range") }
            let rewritten = content.setting(member.key, to: member.value)
            let after = bytes.count - range.upperBound
            guard rewritten.prefix(range.lowerBound).elementsEqual(bytes.prefix(range.lowerBound)),
                rewritten.suffix(after).elementsEqual(bytes.suffix(after))
            else { throw FuzzFinding("setting \(member.key) changed bytes outside it") }
            let text = Array((JSONValue.quote(member.key) + ":" + member.value.text).utf8)
            if Array(bytes[range]) == text && rewritten != bytes {
                throw FuzzFinding("an unchanged compact member did not round-trip byte for byte")
            }
        }
    }

    /// The type sniffer decides from its prefix only, and `kind(of:)` agrees with it.
    public static func sniffer(_ bytes: [UInt8]) throws(FuzzFinding) {
        let verdict = Sniffer.sniff(bytes)
        if Sniffer.sniff(Array(bytes.prefix(Sniffer.prefixLength))) != verdict {
            throw FuzzFinding("the verdict depends on bytes past the prefix")
        }
        switch (verdict, Result { () throws(AttacheError) in try Sniffer.kind(of: bytes) }) {
        case (.accepted(let kind), .success(let found)) where kind == found: break
        case (.accepted, _): throw FuzzFinding("kind(of:) disagrees with an accepted verdict")
        case (_, .success): throw FuzzFinding("kind(of:) accepted what sniff did not")
        case (_, .failure(let error)):
            if ![.emptyInput, .unsupportedType, .truncated].contains(error.code) {
                throw FuzzFinding("untyped refusal \(error)")
            }
        }
    }

    /// The EXIF orientation reader, on the bytes as they are and behind `Exif\0\0`.
    public static func exif(_ bytes: [UInt8]) throws(FuzzFinding) {
        _ = bytes.withUnsafeBufferPointer { Orientation.fromExif($0) }
        let framed = Array("Exif".utf8) + [0, 0] + bytes
        let orientation = framed.withUnsafeBufferPointer { Orientation.fromExif($0) }
        if !(1...8).contains(orientation.rawValue) { throw FuzzFinding("orientation out of range") }
    }

    /// Key 1 retired, key 2 current.
    static let ring = try! KeyRing.generate().rotated().retiring(1)

    /// The token decoder: any string is refused or verified; a verified token is the one
    /// spelling of its claims.
    public static func token(_ bytes: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: bytes, as: UTF8.self)
        let valid = ring.issue(for: AttachmentID(bytes: [UInt8](repeating: 7, count: 32))!, ttl: 60, now: 0).token
        for token in [text, valid + text, String(valid.prefix(bytes.count % (valid.count + 1))) + text] {
            if case .success(let claims) = ring.verify(token, now: 1), ring.sign(claims) != token {
                throw FuzzFinding("a verified token is not the one spelling of its claims")
            }
        }
    }

    /// The download path beneath the HTTP/1 codec: a head it takes as a plain download `GET`
    /// is one SwiftNIO's decoder reads as that `GET` of that path, version 1.1, keep-alive,
    /// without a body, ending where it said; and it reads the same from the head alone.
    public static func head(_ bytes: [UInt8]) throws(FuzzFinding) {
        let prefix = Array("/attachments/".utf8)
        let parsed = bytes.withUnsafeBytes { DownloadHead.parse($0, prefix: prefix) }
        guard case .get(let path, let length) = parsed else { return }
        guard length <= bytes.count, length <= DownloadHead.maxHead else {
            throw FuzzFinding("a head of \(length) bytes in \(bytes.count)")
        }
        let alone = Array(bytes[0..<length]).withUnsafeBytes { DownloadHead.parse($0, prefix: prefix) }
        guard alone == parsed else { throw FuzzFinding("the head alone reads \(alone), not \(parsed)") }
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(HTTPRequestDecoder()))
        defer { _ = try? channel.finish() }
        var buffer = channel.allocator.buffer(capacity: length)
        buffer.writeBytes(bytes[0..<length])
        do {
            try channel.writeInbound(buffer)
        } catch {
            throw FuzzFinding("taken as a download, refused by the decoder: \(error)")
        }
        let first = try? channel.readInbound(as: HTTPServerRequestPart.self)
        let second = try? channel.readInbound(as: HTTPServerRequestPart.self)
        guard case .head(let request)? = first, case .end(nil)? = second,
            (try? channel.readInbound(as: HTTPServerRequestPart.self)) == nil
        else { throw FuzzFinding("the decoder read \(String(describing: first)), \(String(describing: second))") }
        let target = "/attachments/" + path
        let uri = request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard request.method == .GET, request.version == .http1_1, uri == target, request.isKeepAlive,
            !request.headers.contains(name: "content-length"), !request.headers.contains(name: "transfer-encoding")
        else { throw FuzzFinding("the decoder read \(request), not a plain GET of \(target)") }
        // One set of framing rules: what is taken as a download is what the decoder's path takes.
        if let (status, detail) = FramingRules.check(request) {
            throw FuzzFinding("taken as a download, refused by the framing rules (\(status.code): \(detail))")
        }
    }

    static let fetcher = Fetcher()

    /// URL checks before any connection (libcurl's parser through the shim) and the address
    /// policy on raw IPv4 and IPv6 addresses.
    public static func url(_ bytes: [UInt8]) throws(FuzzFinding) {
        let url = String(decoding: bytes, as: UTF8.self)
        if let refusal = fetcher.refusal(for: url), ![.invalidURL, .schemeNotAllowed].contains(refusal.code) {
            throw FuzzFinding("unexpected refusal \(refusal)")
        }
        if bytes.count >= 4 {
            _ = AddressPolicy.rule(denying: Array(bytes.prefix(4)), allowLoopback: bytes[0] & 1 == 1)
        }
        if bytes.count >= 16 {
            let address = Array(bytes.prefix(16))
            if let rule = AddressPolicy.rule(denying: address),
                AddressPolicy.rule(denying: address, allowLoopback: true, allowPrivate: true) == nil,
                rule.contains("metadata") || rule.contains("link-local")
            {
                throw FuzzFinding("the allowances opened \(rule)")
            }
        }
    }

    /// The GIF path end to end (decoder, compositor, palette, resampler, frame writer) on any
    /// bytes behind a GIF signature; what it writes decodes again with the frames it reports.
    public static func gif(_ bytes: [UInt8]) throws(FuzzFinding) {
        let input = MediaBytes(Array("GIF89a".utf8) + bytes)
        let limits = DecodeLimits(maxPixels: 1 << 20, maxDimension: 2048, maxFrames: 64, maxTotalFramePixels: 1 << 22)
        for side in [16, 4096] {
            var spec = RenditionSpec(maxSide: side)
            spec.gifMaxFrames = 8
            spec.gifDither = side == 16
            spec.gifAllowPartial = side == 16
            // Rendered as production renders it: the animation that fits, else a still.
            guard let out = try? ImageProcessor.render(input, spec: spec, limits: limits), out.kind == .gif else {
                continue
            }
            guard let again = try? ImageProcessor.scanGIF(MediaBytes(out.data)), again.frames == out.frames else {
                throw FuzzFinding("a written GIF does not decode with its \(out.frames) frames")
            }
        }
    }

    /// The ICC reader on any bytes as a profile: refused, or a transform (both paths) that
    /// converts a row of every kind of pixel without reading or writing past it.
    public static func icc(_ bytes: [UInt8]) throws(FuzzFinding) {
        var row = [UInt8](repeating: 255, count: 1024)
        for value in 0..<256 {
            row[value * 4] = UInt8(value)
            row[value * 4 + 1] = UInt8(255 - value)
            row[value * 4 + 2] = UInt8((value * 7) & 255)
        }
        for fast in [Int32(1), 0] {
            for channels in [Int32(3), 4] {
                var error = att_error()
                guard let transform = att_icc_new(bytes, bytes.count, channels, fast, &error) else { continue }
                att_icc_apply(transform, &row, row.count / Int(channels))
                att_icc_free(transform)
            }
        }
        // As a CMYK JPEG's profile: 256 CMYK pixels to 256 RGB ones.
        var rgb = [UInt8](repeating: 0, count: 768)
        for inverted in [Int32(0), 1] {
            var error = att_error()
            guard let transform = att_icc_new_cmyk(bytes, bytes.count, inverted, &error) else { continue }
            att_icc_convert(transform, row, &rgb, 256)
            att_icc_free(transform)
        }
    }

    /// The JPEG, PNG and WebP glue on any bytes behind a signature (the first byte picks which:
    /// 2 a RIFF WEBP header, else even JPEG, odd PNG):
    /// every failure typed, a rendition decoding again at the size it reports; a JPEG decodes
    /// to the same pixels (or fails alike) with its coefficients packed as in libjpeg's arrays,
    /// and with its scans read by the shim as by libjpeg.
    public static func image(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let first = bytes.first else { return }
        let riff = Array("RIFF".utf8) + [UInt8(truncatingIfNeeded: bytes.count + 3), 0, 0, 0] + Array("WEBP".utf8)
        let signature: [UInt8] =
            first == 2 ? riff : first & 1 == 0 ? [0xFF, 0xD8, 0xFF] : [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let input = MediaBytes(signature + bytes.dropFirst())
        let limits = DecodeLimits(maxPixels: 1 << 22, maxDimension: 4096, maxScans: 50, maxDecoderMemory: 64 << 20)
        try renderAndDecodeAgain(input, limits: limits)
        if first != 2 && first & 1 == 0 {
            let numerator = Int32(first >> 1 & 7) + 1
            let dense = decodeJPEG(input, numerator: numerator, coefficients: Int32(ATT_JPEG_COEFFICIENTS_LIBJPEG))
            let packed = decodeJPEG(input, numerator: numerator, coefficients: Int32(ATT_JPEG_COEFFICIENTS_COMPACT))
            guard dense.status == packed.status, dense.pixels == packed.pixels else {
                throw FuzzFinding("packed coefficients: status \(packed.status) against \(dense.status)")
            }
            let libjpeg = decodeJPEG(
                input, numerator: numerator, coefficients: Int32(ATT_JPEG_COEFFICIENTS_LIBJPEG),
                scans: Int32(ATT_JPEG_SCANS_LIBJPEG))
            guard dense.status == libjpeg.status, dense.pixels == libjpeg.pixels else {
                throw FuzzFinding("scans read by the shim: status \(dense.status) against \(libjpeg.status)")
            }
        }
    }

    /// Every row of a JPEG (at most 4 MP) through the C shim at `numerator`/8, its coefficients
    /// kept as `coefficients` says and its scans read as `scans` says; the first failing status,
    /// and the rows read until then.
    static func decodeJPEG(
        _ input: MediaBytes, numerator: Int32, coefficients: Int32, scans: Int32 = Int32(ATT_JPEG_SCANS_SHIM)
    ) -> (
        status: Int32, pixels: [UInt8]
    ) {
        var header = att_jpeg_header()
        var error = att_error()
        let limits = att_jpeg_limits(
            max_memory: 64 << 20, max_scans: 50, deadline: nil, checkpoint: nil, checkpoint_context: nil,
            coefficients: coefficients, scans: scans)
        guard
            let decoder = att_jpeg_open(
                input.base.assumingMemoryBound(to: UInt8.self), input.count, limits, &header, &error)
        else { return (error.status, []) }
        defer { att_jpeg_close(decoder) }
        guard UInt64(header.width) * UInt64(header.height) <= 1 << 22 else { return (-1, []) }
        var width: UInt32 = 0
        var height: UInt32 = 0
        let channels: Int32 = header.color_family == 1 ? 1 : 3
        let started = att_jpeg_start(decoder, numerator, channels, 1, &width, &height, &error)
        guard started == 0 else { return (started, []) }
        let stride = Int(width) * Int(channels)
        var pixels = [UInt8](repeating: 0, count: stride * Int(height))
        var done = 0
        while done < Int(height) {
            var got: Int32 = 0
            let status = pixels.withUnsafeMutableBufferPointer { p in
                att_jpeg_read_rows(decoder, p.baseAddress! + done * stride, stride, 16, &got, &error)
            }
            guard status == 0 else { return (status, Array(pixels.prefix(done * stride))) }
            guard got > 0 else { break }
            done += Int(got)
        }
        return (att_jpeg_finish(decoder, &error), pixels)
    }

    /// Renders `input` to 64 px: any outcome but an internal error is fine, and a rendition
    /// must decode again at its size.
    static func renderAndDecodeAgain(_ input: MediaBytes, limits: DecodeLimits) throws(FuzzFinding) {
        let rendition: Rendition
        do throws(AttacheError) {
            rendition = try ImageProcessor.render(input, spec: RenditionSpec(maxSide: 64), limits: limits)
        } catch {
            if error.code == .internalError { throw FuzzFinding("\(error)") }
            return
        }
        guard let again = try? ImageProcessor.inspect(MediaBytes(rendition.data)),
            again.width == rendition.width, again.height == rendition.height
        else { throw FuzzFinding("a rendition does not decode again at its size") }
    }

    /// HEIC, AVIF and JPEG XL through their decoders (libheif, libjxl) and the conversion: any
    /// bytes after the first are the file; the first picks the check's limits (small, so a
    /// declared bomb is refused, or a decoder-memory cap that lets a tile through). Any outcome
    /// but an internal error is fine; a rendition must decode again at its size.
    public static func modern(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let first = bytes.first else { return }
        let input = MediaBytes(bytes.dropFirst())
        let limits = DecodeLimits(
            maxPixels: 1 << 22, maxDimension: 4096, maxScans: 50, maxDecoderMemory: first & 1 == 0 ? 64 << 20 : 8 << 20)
        guard let kind = try? Sniffer.kind(of: input.prefix(Sniffer.prefixLength)),
            [.heic, .avif, .jxl, .webp].contains(kind)
        else { return }
        try renderAndDecodeAgain(input, limits: limits)
    }

    /// The container check (libavformat through the shim) on any bytes after the first, which
    /// picks the kind it is checked as: every outcome is a typed error or a check that holds
    /// (its streams within the limit, its sizes within theirs).
    public static func av(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let first = bytes.first else { return }
        let kinds: [MediaKind] = [.mp4, .m4v, .m4a, .mp3, .wav, .aiff, .avi, .mpeg, .mov, .webm, .ogg, .flac]
        let kind = kinds[Int(first) % kinds.count]
        var limits = DecodeLimits.default
        limits.maxStreams = 8
        let info: ContainerInfo
        do throws(AttacheError) {
            info = try MediaContainer.check(MediaBytes(bytes.dropFirst()), kind: kind, limits: limits)
        } catch {
            if error.code == .internalError { throw FuzzFinding("\(error)") }
            return
        }
        guard info.streams <= limits.maxStreams else { throw FuzzFinding("\(info.streams) streams passed") }
        if let w = info.width, let h = info.height, w * h > limits.maxVideoPixels {
            throw FuzzFinding("\(w)x\(h) frames passed")
        }
    }

    /// The poster path: any bytes as a video, the time from the first byte; a poster is made
    /// or refused with a type (never an internal error), at most 64 px a side, its pixels
    /// exactly its size, within a 1080p frame limit (memory stays bounded).
    public static func poster(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let first = bytes.first else { return }
        var limits = DecodeLimits.default
        limits.maxStreams = 8
        limits.maxVideoPixels = 1920 * 1088
        let time = Double(first) / 32
        let made: (image: PixelImage, shown: Double)
        do throws(AttacheError) {
            made = try MediaPoster.frame(MediaBytes(bytes.dropFirst()), at: time, maxSide: 64, limits: limits)
        } catch {
            if error.code == .internalError { throw FuzzFinding("\(error)") }
            return
        }
        let image = made.image
        guard image.width >= 1, image.height >= 1, max(image.width, image.height) <= 64 else {
            throw FuzzFinding("a poster of \(image.width)x\(image.height)")
        }
        guard image.pixels.count == image.width * image.height * 3 else { throw FuzzFinding("poster pixels") }
        guard made.shown.isFinite else { throw FuzzFinding("shown at \(made.shown)") }
    }
}
