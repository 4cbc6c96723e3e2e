internal import AttacheBase
internal import CAttacheFetch
internal import CAttacheShim

#if canImport(Glibc)
import Glibc
#endif

/// Builds one libcurl transfer from a policy and turns its outcome into media or a typed error.
enum Transfer {
    /// The early type check, called by the shim with the body's first bytes: the kind found
    /// here travels back with the body (``FetchedMedia/kind``), so it is sniffed once.
    static let sniff: att_sniff_fn = { bytes, count, kind, animated, name, capacity in
        let prefix = UnsafeBufferPointer(start: bytes, count: count)
        let verdict = Sniffer.sniff(prefix)
        let refused: String
        switch verdict {
        case .accepted(let found):
            kind?.pointee = tag(of: found)
            animated?.pointee = Sniffer.isAnimation(prefix, kind: found) ? 1 : 0
            switch found.category {
            case .image: return ATT_CATEGORY_IMAGE
            case .audio: return ATT_CATEGORY_AUDIO
            case .video: return ATT_CATEGORY_VIDEO
            }
        case .refused(let type): refused = type
        case .needMoreBytes, .unknown: refused = count == 0 ? "empty" : "unrecognised data"
        }
        if let name, capacity > 0 {
            let utf8 = Array(refused.utf8.prefix(capacity - 1))
            for (i, byte) in utf8.enumerated() { name[i] = CChar(bitPattern: byte) }
            name[utf8.count] = 0
        }
        return ATT_CATEGORY_NONE
    }

    /// The tag the shim carries for a kind (its position among every kind).
    static func tag(of kind: MediaKind) -> Int32 { Int32(MediaKind.allCases.firstIndex(of: kind)!) }

    /// The kind a tag stands for; nil for -1 (no early check ran).
    static func kind(ofTag tag: Int32) -> MediaKind? {
        MediaKind.allCases.indices.contains(Int(tag)) ? MediaKind.allCases[Int(tag)] : nil
    }

    /// Creates the transfer; every string is copied by libcurl or the shim.
    static func make(
        url: String, policy: FetchPolicy, limits: MediaLimits?, budget: ByteBudget?, timeout: Duration,
        headers: [String], sources: SourceRules? = nil
    ) throws(AttacheError)
        -> TransferHandle
    {
        let strings = CStrings()
        var options = att_transfer_options()
        options.url = strings.add(url)
        options.user_agent = strings.add(policy.userAgent)
        options.protocols = strings.add(policy.protocols)
        options.proxy = policy.proxy.map { strings.add($0) }
        options.ca_file = policy.caFile.map { strings.add($0) }
        options.max_bytes = min(policy.maxBytes, limits?.largest ?? policy.maxBytes)
        if let limits {
            options.max_image_bytes = limits.imageBytes
            options.max_audio_bytes = limits.audioBytes
            options.max_video_bytes = limits.videoBytes
            options.animation_cap_bytes = limits.animationBytes ?? 0
        }
        options.max_redirects = Int32(clamping: policy.maxRedirects)
        options.connect_timeout_ms = max(1, min(policy.connectTimeout.wholeMilliseconds, timeout.wholeMilliseconds))
        options.total_timeout_ms = max(1, timeout.wholeMilliseconds)
        options.low_speed_bytes = Int32(clamping: policy.lowSpeedBytes)
        options.low_speed_seconds = Int32(clamping: policy.lowSpeedSeconds)
        options.address_flags =
            (policy.allowLoopback ? Int32(ATT_ADDR_ALLOW_LOOPBACK) : 0)
            | (policy.allowPrivate ? Int32(ATT_ADDR_ALLOW_PRIVATE) : 0)
        options.sniff_bytes = policy.earlyTypeCheck ? Int32(Sniffer.prefixLength) : 0
        options.sniff = policy.earlyTypeCheck ? sniff : nil
        options.budget = budget?.pointer
        let resolve = strings.list(policy.resolve)
        let extra = strings.list(headers)
        let hosts = policy.allowedHosts.map { strings.list($0) }
        let rules = sources.flatMap { $0.isEmpty ? nil : strings.list($0.transferRules) }
        var error = att_error()
        let pointer = resolve.withUnsafeBufferPointer { resolve in
            extra.withUnsafeBufferPointer { extra in
                withOptionalBuffer(hosts) { hosts in
                    withOptionalBuffer(rules) { rules in
                        options.resolve = resolve.baseAddress
                        options.headers = extra.baseAddress
                        options.allowed_hosts = hosts
                        options.source_rules = rules
                        return att_transfer_new(&options, &error)
                    }
                }
            }
        }
        guard let pointer else {
            throw AttacheError(.internalError, "curl: " + AttacheError.line(error.message))
        }
        return TransferHandle(pointer)
    }

    private static func withOptionalBuffer<R>(
        _ list: [UnsafePointer<CChar>?]?, _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) -> R {
        guard let list else { return body(nil) }
        return list.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    /// The outcome of a finished transfer.
    static func outcome(
        _ transfer: TransferHandle, code: Int32, url: String, timeout: Duration, budget: ByteBudget?
    )
        -> Result<FetchedMedia, AttacheError>
    {
        var result = att_transfer_result()
        att_transfer_result_fill(transfer.pointer, code, &result)
        let status = Int(result.http_status)
        if result.abort_reason == ATT_ABORT_BUDGET, var exceeded = budget?.exceeded {
            exceeded.fetchedBytes = result.body_bytes
            return .failure(exceeded)
        }
        if var error = error(result, status: status, timeout: timeout) {
            error.fetchedBytes = result.body_bytes
            return .failure(error)
        }
        var count = 0
        let body = att_transfer_take_body(transfer.pointer, &count)
        let bytes = MediaBytes(adoptingMalloc: UnsafeMutableRawPointer(body), count: count)
        guard (200..<300).contains(status) else {
            return .failure(
                AttacheError(.httpStatus, "the server answered HTTP \(status)", detail: String(status)))
        }
        guard count > 0 else { return .failure(AttacheError(.emptyInput, "the body is empty")) }
        // A header value longer than its buffer is left out, never cut: a validator that is not
        // whole is not kept (the next fetch is a full one), a type that is not whole is not compared.
        let kind = kind(ofTag: result.kind)
        var media = FetchedMedia(
            url: url, finalURL: String(cString: result.effective_url), status: status, bytes: bytes, kind: kind,
            contentType: optionalText(result.content_type), etag: optionalText(result.etag),
            lastModified: optionalText(result.last_modified), redirects: Int(result.redirects), attempts: 1,
            elapsed: .zero, remoteAddress: text(result.primary_ip), remotePort: Int(result.primary_port))
        media.phases.nameLookup = result.name_lookup_seconds
        media.phases.connect = result.connect_seconds
        media.phases.tls = result.tls_seconds
        media.phases.firstByte = result.first_byte_seconds
        media.phases.total = result.total_seconds
        return .success(media)
    }

    private static func error(_ r: att_transfer_result, status: Int, timeout: Duration) -> AttacheError? {
        let message = text(r.error)
        let detail = text(r.detail)
        if r.failure == ATT_FAILURE_NONE { return nil }
        switch r.abort_reason {
        case ATT_ABORT_BLOCKED_ADDRESS where r.failure == ATT_FAILURE_CONNECT:
            return AttacheError(.blockedAddress, "the address is denied by policy: \(detail)", detail: detail)
        case ATT_ABORT_TOO_LARGE:
            return AttacheError(.tooLarge, "the body passes the byte cap for its kind", limit: capLimit(r))
        case ATT_ABORT_UNSUPPORTED_TYPE:
            return AttacheError(.unsupportedType, "\(detail) is not an accepted type", detail: detail)
        case ATT_ABORT_CANCELLED:
            return AttacheError(.cancelled, "the fetch was cancelled")
        case ATT_ABORT_HOST_NOT_ALLOWED:
            return AttacheError(.hostNotAllowed, "\(detail) is not on the host allowlist", detail: detail)
        case ATT_ABORT_SOURCE_NOT_ALLOWED:
            return AttacheError(.sourceNotAllowed, "\(detail) is not one of this caller's media hosts", detail: detail)
        case ATT_ABORT_USERINFO:
            return AttacheError(.invalidURL, "a redirect carries userinfo", detail: detail)
        case ATT_ABORT_HEADER_TOO_LARGE:
            return AttacheError(.tooLarge, "the response header is over \(ATT_MAX_HEADER_BYTES / 1024) KiB")
        case ATT_ABORT_BAD_RESPONSE:
            return AttacheError(.badResponse, "the response is not valid HTTP: \(detail)", detail: detail)
        default:
            break
        }
        switch r.failure {
        case ATT_FAILURE_SCHEME:
            return AttacheError(.schemeNotAllowed, message)
        case ATT_FAILURE_URL:
            return AttacheError(.invalidURL, message)
        case ATT_FAILURE_DNS:
            return AttacheError(.dnsFailed, message)
        case ATT_FAILURE_CONNECT:
            return AttacheError(.connectFailed, message)
        case ATT_FAILURE_RECEIVE:
            return r.content_length > 0 || status > 0
                ? AttacheError(.truncated, "the connection broke during the body: \(message)")
                : AttacheError(.connectFailed, message)
        case ATT_FAILURE_PARTIAL:
            return AttacheError(.truncated, "the body ended early: \(message)")
        case ATT_FAILURE_HTTP_STATUS:
            return AttacheError(.httpStatus, "the server answered HTTP \(status)", detail: String(status))
        case ATT_FAILURE_TIMEOUT:
            if message.contains("too slow") {
                return AttacheError(.tooSlow, message, limit: .lowSpeed)
            }
            if message.hasPrefix("Connection timed out") || message.hasPrefix("Failed to connect") {
                return AttacheError(.connectFailed, message)
            }
            // Ended well before the total timeout: only the low-speed check does that.
            if r.total_seconds * 1000 < timeout.milliseconds - 250 {
                return AttacheError(.tooSlow, message, limit: .lowSpeed)
            }
            return AttacheError(.timedOut, message)
        case ATT_FAILURE_TOO_MANY_REDIRECTS:
            return AttacheError(.tooManyRedirects, message, limit: .maxRedirects)
        case ATT_FAILURE_FILE_SIZE:
            return AttacheError(.tooLarge, "the declared length passes the byte cap", limit: capLimit(r))
        case ATT_FAILURE_TLS:
            return AttacheError(.tlsFailed, message)
        case ATT_FAILURE_BAD_RESPONSE:
            return AttacheError(.badResponse, "the response is not valid HTTP: \(message)")
        case ATT_FAILURE_HEADER_TOO_LARGE:
            return AttacheError(.tooLarge, "a response header line is longer than libcurl accepts (100 KiB)")
        case ATT_FAILURE_ABORTED:
            return AttacheError(.cancelled, "the fetch was cancelled")
        default:
            return AttacheError(.fetchFailed, "curl error \(r.curl_code): \(message)")
        }
    }

    /// The cap that stopped a transfer: its kind's, once the early check knew the kind.
    private static func capLimit(_ r: att_transfer_result) -> AttacheError.Limit {
        switch r.cap_category {
        case ATT_CATEGORY_IMAGE: .maxImageBytes
        case ATT_CATEGORY_AUDIO: .maxAudioBytes
        case ATT_CATEGORY_VIDEO: .maxVideoBytes
        default: .maxFetchBytes
        }
    }

    static func text<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// A NUL-terminated C string held in an array.
    private static func optionalText<T>(_ tuple: T) -> String? {
        let value = text(tuple)
        return value.isEmpty ? nil : value
    }
}

/// C strings that live until this value goes away.
final class CStrings {
    private var pointers: [UnsafeMutablePointer<CChar>] = []

    func add(_ string: String) -> UnsafePointer<CChar> {
        let pointer = strdup(string)!
        pointers.append(pointer)
        return UnsafePointer(pointer)
    }

    /// A NULL-terminated list.
    func list(_ strings: [String]) -> [UnsafePointer<CChar>?] {
        strings.map { add($0) } + [nil]
    }

    deinit { for pointer in pointers { free(pointer) } }
}
