public import AttacheBase
public import AttacheWork
internal import CAttacheAV

/// What a video or audio container holds, read by libavformat from the fetched bytes.
public struct ContainerInfo: Hashable, Sendable {
    /// The demuxer that read it (`mov,mp4,m4a,3gp,3g2,mj2`, `avi`, `mpeg`, `mp3`, `wav`, …).
    public var format: String
    /// Seconds, nil when the container does not say.
    public var duration: Double?
    public var streams: Int
    /// The first video stream: codec (`h264`, `hevc`, `mpeg4`, `vp9`, …), size and frame rate.
    public var videoCodec: String?
    public var width: Int?
    public var height: Int?
    public var frameRate: Double?
    /// The first audio stream: codec (`aac`, `mp3`, `pcm_s16le`, `opus`, …), rate, channels.
    public var audioCodec: String?
    public var sampleRate: Int?
    public var channels: Int?
    /// MP4/MOV: the index comes before the media (plays while it downloads).
    public var indexFirst: Bool
    /// Why an iPhone cannot play it as it is (a codec its container does not carry there, or a
    /// read-only kind: QuickTime, WebM, Ogg, FLAC); nil when it can.
    public var unplayable: String? = nil
    /// What the first video stream's decoder holds at most (its reference frames), in bytes.
    public var decoderBytes: Int = 0
}

/// The container check for video and audio, before anything is stored: libavformat reads the
/// bytes already fetched through a custom AVIO (no FFmpeg protocol, no file, no network: a
/// demuxer that asks for another file is refused), with demuxers and decoders on allow-lists,
/// at most ``DecodeLimits/maxStreams`` streams, and the deadline polled by libavformat.
///
/// Refused with a type: a file libavformat cannot read (`corrupt_data`, `truncated`); one whose
/// index points past its end — an MP4 cut after its `moov`, which a device would download and
/// fail to play (`truncated`); a video or audio stream an iPhone cannot play in the container it
/// came in (VP9 or AV1 in an `.mp4`, Opus in an `.m4a`: `unsupported_variant`); no stream of its
/// category; over ``DecodeLimits/maxMediaSeconds`` or ``DecodeLimits/maxVideoPixels``.
public enum MediaContainer {
    /// Checks `bytes` of `kind` (a video or audio kind) and says what they hold. With
    /// `allowUnplayable`, what an iPhone cannot play is said in ``ContainerInfo/unplayable``
    /// (for a transcode) instead of refused with `unsupported_variant`.
    public static func check(
        _ bytes: MediaBytes, kind: MediaKind, limits: DecodeLimits = .default, deadline: WorkDeadline = .none,
        allowUnplayable: Bool = false
    ) throws(AttacheError) -> ContainerInfo {
        let (handle, info) = try open(bytes, limits: limits, deadline: deadline, scan: true)
        att_av_close(handle)
        var found = info.public
        found.unplayable = try accept(info, kind: kind, size: bytes.count, limits: limits)
        if let reason = found.unplayable, !allowUnplayable {
            throw AttacheError(.unsupportedVariant, "\(kind.rawValue): \(reason)")
        }
        return found
    }

    /// Opens the container: its streams read, nothing decoded but what finding their
    /// parameters takes — and that only once the header's frame size says the decoder's frames
    /// fit ``DecodeLimits/maxDecoderMemory``. With `scan`, every packet is read (not decoded) so
    /// that how long the media run is counted, not taken from the header.
    static func open(
        _ bytes: MediaBytes, limits: DecodeLimits, deadline: WorkDeadline, scan: Bool = false
    ) throws(AttacheError) -> (
        OpaquePointer, att_av_info
    ) {
        var info = att_av_info()
        var error = att_error()
        var bounds = att_av_limits(
            max_streams: Int32(clamping: limits.maxStreams), probe_bytes: 5 << 20,
            max_pixels: Int64(limits.maxVideoPixels), max_decoder_bytes: Int64(limits.maxDecoderMemory),
            scan: scan ? 1 : 0, max_seconds: limits.maxMediaSeconds)
        guard
            let handle = att_av_open(
                bytes.base.assumingMemoryBound(to: UInt8.self), bytes.count, &bounds, deadline.pointer, &info, &error)
        else { throw AttacheError(shim: error, format: "container") }
        return (handle, info)
    }

    /// Codecs an iPhone plays from an MP4/M4V/MOV and an M4A.
    static let playableVideo: Set = ["h264", "hevc", "mpeg4"]
    static let playableAudio: Set = ["aac", "mp3", "alac", "ac3", "eac3", "pcm_s16le", "pcm_s16be", "pcm_s24le"]

    /// Kinds read only to be transcoded.
    static let readOnly: [MediaKind: String] = [
        .mov: "a QuickTime movie is not an attachment type", .webm: "WebM/Matroska is not an attachment type",
        .ogg: "Ogg is not an attachment type", .flac: "FLAC is not an attachment type",
    ]

    /// Refuses what no transcode may take (too many streams, cut short, too long, too many
    /// pixels, no stream of its category) and says why an iPhone cannot play the rest, if so.
    static func accept(
        _ info: att_av_info, kind: MediaKind, size: Int, limits: DecodeLimits
    ) throws(AttacheError) -> String? {
        let found = info.public
        let name = kind.rawValue
        if found.streams > limits.maxStreams {
            throw AttacheError(
                .tooLarge, "\(name): \(found.streams) streams, over the limit of \(limits.maxStreams)",
                limit: .maxStreams)
        }
        if info.indexed_end > Int64(size) {
            throw AttacheError(
                .truncated, "\(name): the index points \(info.indexed_end - Int64(size)) bytes past the end (cut short)"
            )
        }
        // The longer of what the header says and what the packets span (negative: not read).
        let duration = max(found.duration ?? 0, info.demuxed_duration)
        if duration > limits.maxMediaSeconds {
            throw AttacheError(
                .tooLarge, "\(name): \(Int(duration)) s, over the limit of \(Int(limits.maxMediaSeconds)) s",
                limit: .maxMediaSeconds)
        }
        switch kind.category {
        case .video:
            guard info.video_streams > 0, let codec = found.videoCodec else {
                throw AttacheError(.unsupportedVariant, "\(name): no video stream (a video kind with none)")
            }
            let (w, h) = (found.width ?? 0, found.height ?? 0)
            if w * h > limits.maxVideoPixels {
                throw AttacheError(
                    .tooManyPixels, "\(name): \(w)x\(h) frames, over the limit of \(limits.maxVideoPixels) pixels",
                    limit: .maxVideoPixels)
            }
            if let reason = readOnly[kind] { return reason }
            if [.mp4, .m4v].contains(kind) {
                guard playableVideo.contains(codec) else { return "an iPhone does not play \(codec) video in MP4" }
                if let audio = found.audioCodec, !playableAudio.contains(audio) {
                    return "an iPhone does not play \(audio) audio in MP4"
                }
            }
        case .audio:
            guard info.audio_streams > 0, let codec = found.audioCodec else {
                throw AttacheError(.unsupportedVariant, "\(name): no audio stream (an audio kind with none)")
            }
            if let reason = readOnly[kind] { return reason }
            if kind == .m4a && !playableAudio.contains(codec) { return "an iPhone does not play \(codec) audio in M4A" }
        case .image:
            break
        }
        return nil
    }
}

extension att_av_info {
    var `public`: ContainerInfo {
        func text<T>(_ tuple: T) -> String {
            withUnsafeBytes(of: tuple) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        }
        let video = text(video_codec)
        let audio = text(audio_codec)
        return ContainerInfo(
            format: text(format), duration: duration >= 0 ? duration : nil, streams: Int(streams),
            videoCodec: video_streams > 0 && !video.isEmpty ? video : nil,
            width: video_streams > 0 ? Int(width) : nil, height: video_streams > 0 ? Int(height) : nil,
            frameRate: frame_rate > 0 ? frame_rate : nil, audioCodec: audio_streams > 0 && !audio.isEmpty ? audio : nil,
            sampleRate: audio_streams > 0 ? Int(sample_rate) : nil, channels: audio_streams > 0 ? Int(channels) : nil,
            indexFirst: index_first != 0, decoderBytes: Int(decoder_bytes))
    }
}
