// The one catalogue of every error code and every limit name Attache reports. Users script
// against these strings (JSON reports, logs, metrics): they are pinned by a test and listed in
// the error-code and limit tables of docs/error-codes.md, which the same test reads.

extension AttacheError.Code {
    // MARK: - Input bytes (validate, transform)

    /// The bytes are not a valid file of their kind (bad header, bad entropy data, bad CRC).
    public static let corruptData = Self(rawValue: "corrupt_data")
    /// The data ends before the image does (or the body ended before its declared length).
    public static let truncated = Self(rawValue: "truncated")
    /// The input holds no bytes at all.
    public static let emptyInput = Self(rawValue: "empty_input")
    /// The bytes are of a type Attache does not accept (named in the message).
    public static let unsupportedType = Self(rawValue: "unsupported_type")
    /// A known type in a variant the codecs do not handle (12-bit or lossless JPEG).
    public static let unsupportedVariant = Self(rawValue: "unsupported_variant")
    /// Width × height, or the pixels of all frames together, exceed a pixel limit.
    public static let tooManyPixels = Self(rawValue: "too_many_pixels")
    /// Width or height exceeds the dimension limit.
    public static let dimensionsTooLarge = Self(rawValue: "dimensions_too_large")
    /// An animated image has more frames than allowed.
    public static let tooManyFrames = Self(rawValue: "too_many_frames")
    /// A progressive JPEG has more scans than allowed.
    public static let tooManyScans = Self(rawValue: "too_many_scans")
    /// Decoding would need more memory than the decoder-memory cap.
    public static let decoderMemoryExceeded = Self(rawValue: "decoder_memory_exceeded")
    /// The body or the output is larger than its byte cap (the `limit` names which).
    public static let tooLarge = Self(rawValue: "too_large")

    // MARK: - Time and internal failures

    /// The work did not finish before its deadline.
    public static let timedOut = Self(rawValue: "timed_out")
    /// The encoder failed to produce output.
    public static let encodeFailed = Self(rawValue: "encode_failed")
    /// A file could not be read or written.
    public static let ioError = Self(rawValue: "io_error")
    /// An invariant inside Attache did not hold.
    public static let internalError = Self(rawValue: "internal_error")

    // MARK: - Fetch

    /// The host name did not resolve.
    public static let dnsFailed = Self(rawValue: "dns_failed")
    /// No connection could be made (refused, reset, unreachable, connect timeout).
    public static let connectFailed = Self(rawValue: "connect_failed")
    /// Every address of the host is denied by the address policy (the rule is the `detail`).
    public static let blockedAddress = Self(rawValue: "blocked_address")
    /// A hop names a host off the configured allowlist.
    public static let hostNotAllowed = Self(rawValue: "host_not_allowed")
    /// A hop names a host the caller's own media hosts do not include, or deny (a tenant's
    /// `sources`; the host is the `detail`).
    public static let sourceNotAllowed = Self(rawValue: "source_not_allowed")
    /// The URL cannot be used: unparseable, userinfo, too long.
    public static let invalidURL = Self(rawValue: "invalid_url")
    /// The URL or a redirect uses a scheme the policy does not allow.
    public static let schemeNotAllowed = Self(rawValue: "scheme_not_allowed")
    /// More redirects than the policy allows (loops included).
    public static let tooManyRedirects = Self(rawValue: "too_many_redirects")
    /// The transfer stayed below the low-speed limit for too long.
    public static let tooSlow = Self(rawValue: "too_slow")
    /// The server answered with an error status (the status is the `detail`).
    public static let httpStatus = Self(rawValue: "http_status")
    /// The TLS handshake or certificate verification failed.
    public static let tlsFailed = Self(rawValue: "tls_failed")
    /// The server's reply is not valid HTTP.
    public static let badResponse = Self(rawValue: "bad_response")
    /// The caller cancelled the fetch.
    public static let cancelled = Self(rawValue: "cancelled")
    /// Any other transfer failure (libcurl's message says which).
    public static let fetchFailed = Self(rawValue: "fetch_failed")

    // MARK: - Store

    /// Storing the object would pass the store's byte or object quota, even after collecting
    /// expired objects.
    public static let storeFull = Self(rawValue: "store_full")
    /// No live attachment (or key) has that id: never stored, expired or collected.
    public static let notFound = Self(rawValue: "not_found")
    /// The access token does not open this attachment. The outward answer for every refusal;
    /// the precise reason is kept for logs.
    public static let accessDenied = Self(rawValue: "access_denied")
    /// An argument the store cannot record as given (a source URL or spec holding NUL).
    public static let invalidInput = Self(rawValue: "invalid_input")
    /// The store's files or catalog are not in a state Attache can work with.
    public static let storeCorrupt = Self(rawValue: "store_corrupt")
    /// The shared store's catalog (PostgreSQL) or object store (S3) did not answer, or refused
    /// (the message says which and why).
    public static let storeUnavailable = Self(rawValue: "store_unavailable")
    /// Storing the object would pass its tenant's own store quota (the `limit` says which):
    /// the payload goes out without it, and no other tenant's objects are touched.
    public static let tenantQuotaExceeded = Self(rawValue: "tenant_quota_exceeded")

    // MARK: - Payload

    /// The payload is not a JSON object Attache can read (it is passed through unchanged).
    public static let invalidPayload = Self(rawValue: "invalid_payload")
    /// The mutated payload would not fit the push size limit with this attachment.
    public static let payloadTooLarge = Self(rawValue: "payload_too_large")
    /// The payload names more media than are considered: this one was not fetched.
    public static let tooManySources = Self(rawValue: "too_many_sources")
    /// The payload's fetched-bytes or stored-bytes budget is spent (the `limit` says which).
    public static let budgetExceeded = Self(rawValue: "budget_exceeded")
    /// A seal was asked for and cannot be made (a bad key or key id): the payload goes out with
    /// its placeholder alert and without what the seal would have held.
    public static let sealFailed = Self(rawValue: "seal_failed")

    // MARK: - Service (attache serve)

    /// The request carries no API key, or one the service does not accept (HTTP 401).
    public static let unauthorized = Self(rawValue: "unauthorized")
    /// The request body is over the service's cap (HTTP 413).
    public static let requestTooLarge = Self(rawValue: "request_too_large")
    /// A header or query parameter the service cannot use as given (HTTP 400).
    public static let invalidRequest = Self(rawValue: "invalid_request")
    /// Every pipeline slot and queue place is taken: try again after `Retry-After` (HTTP 503).
    public static let overloaded = Self(rawValue: "overloaded")
    /// The caller's tenant is over its request rate: try again after `Retry-After` (HTTP 429).
    public static let rateLimited = Self(rawValue: "rate_limited")

    /// Every code, in catalogue order.
    public static let all: [Self] = [
        .corruptData, .truncated, .emptyInput, .unsupportedType, .unsupportedVariant, .tooManyPixels,
        .dimensionsTooLarge, .tooManyFrames, .tooManyScans, .decoderMemoryExceeded, .tooLarge, .timedOut,
        .encodeFailed, .ioError, .internalError, .dnsFailed, .connectFailed, .blockedAddress, .hostNotAllowed,
        .sourceNotAllowed, .invalidURL, .schemeNotAllowed, .tooManyRedirects, .tooSlow, .httpStatus, .tlsFailed,
        .badResponse,
        .cancelled, .fetchFailed, .storeFull, .notFound, .accessDenied, .invalidInput, .storeCorrupt,
        .storeUnavailable, .tenantQuotaExceeded, .invalidPayload, .payloadTooLarge, .tooManySources, .budgetExceeded,
        .sealFailed,
        .unauthorized,
        .requestTooLarge,
        .invalidRequest, .overloaded, .rateLimited,
    ]
}

extension AttacheError.Limit {
    // MARK: - Images (checked from the header before pixels are allocated)

    /// Largest width × height of an image or GIF screen (`DecodeLimits.maxPixels`).
    public static let maxPixels = Self(rawValue: "max_pixels")
    /// Largest width or height (`DecodeLimits.maxDimension`).
    public static let maxDimension = Self(rawValue: "max_dimension")
    /// Most progressive JPEG scans (`DecodeLimits.maxScans`).
    public static let maxScans = Self(rawValue: "max_scans")
    /// Cap on whole-image decoder buffers and on a video job's decoded frames (`DecodeLimits.maxDecoderMemory`).
    public static let maxDecoderMemory = Self(rawValue: "max_decoder_memory")
    /// Most frames a GIF may hold (`DecodeLimits.maxFrames`).
    public static let maxFrames = Self(rawValue: "max_frames")
    /// Most pixels summed over a GIF's frame rectangles (`DecodeLimits.maxTotalFramePixels`).
    public static let maxTotalFramePixels = Self(rawValue: "max_total_frame_pixels")

    // MARK: - Video and audio (checked from the container before anything is stored)

    /// Longest video or audio accepted, in seconds (`DecodeLimits.maxMediaSeconds`).
    public static let maxMediaSeconds = Self(rawValue: "max_media_seconds")
    /// Largest video frame, width × height (`DecodeLimits.maxVideoPixels`).
    public static let maxVideoPixels = Self(rawValue: "max_video_pixels")
    /// Most streams a container may hold (`DecodeLimits.maxStreams`).
    public static let maxStreams = Self(rawValue: "max_streams")
    /// Most tiles, items, properties or child boxes a HEIF/AVIF file may hold (libheif's
    /// security limits: tiles `DecodeLimits.maxTiles`, items twice that and 64 more).
    public static let maxItems = Self(rawValue: "max_items")

    // MARK: - Bytes

    /// Largest image (`MediaLimits.imageBytes`), on the fetched body and on a GIF rendition.
    public static let maxImageBytes = Self(rawValue: "max_image_bytes")
    /// Largest audio file (`MediaLimits.audioBytes`).
    public static let maxAudioBytes = Self(rawValue: "max_audio_bytes")
    /// Largest video file (`MediaLimits.videoBytes`).
    public static let maxVideoBytes = Self(rawValue: "max_video_bytes")
    /// Largest body a fetch reads whatever its kind (`FetchPolicy.maxBytes`).
    public static let maxFetchBytes = Self(rawValue: "max_fetch_bytes")
    /// Largest animated GIF rendition (`RenditionSpec.gifMaxBytes`).
    public static let gifMaxBytes = Self(rawValue: "gif_max_bytes")

    // MARK: - Fetch

    /// Redirects followed (`FetchPolicy.maxRedirects`).
    public static let maxRedirects = Self(rawValue: "max_redirects")
    /// Slowest transfer tolerated (`FetchPolicy.lowSpeedBytes` for `lowSpeedSeconds`).
    public static let lowSpeed = Self(rawValue: "low_speed")

    // MARK: - Store

    /// The store's byte quota (`StoreConfiguration.maxBytes`).
    public static let maxStoreBytes = Self(rawValue: "max_store_bytes")
    /// The store's object quota (`StoreConfiguration.maxObjects`).
    public static let maxStoreObjects = Self(rawValue: "max_store_objects")
    /// A tenant's byte quota in the store (`storeMaxBytes` in the tenants file).
    public static let tenantStoreBytes = Self(rawValue: "tenant_store_bytes")
    /// A tenant's object quota in the store (`storeMaxObjects` in the tenants file).
    public static let tenantStoreObjects = Self(rawValue: "tenant_store_objects")

    // MARK: - Payload

    /// Largest payload read (`JSONParser.maxBytes`, 1 MiB).
    public static let maxInputBytes = Self(rawValue: "max_input_bytes")
    /// Deepest JSON nesting read (`JSONParser.maxDepth`).
    public static let maxJSONDepth = Self(rawValue: "max_json_depth")
    /// Largest mutated payload written (`PipelineConfiguration.maxPayloadBytes`, APNs' 4096).
    public static let maxPayloadBytes = Self(rawValue: "max_payload_bytes")
    /// Media sources considered per payload (`PipelineConfiguration.maxSources`).
    public static let maxSources = Self(rawValue: "max_sources")
    /// Bytes all of a payload's fetches may read together (`maxPayloadFetchBytes`).
    public static let maxPayloadFetchBytes = Self(rawValue: "max_payload_fetch_bytes")
    /// Bytes a payload may add to the store (`maxPayloadStoreBytes`).
    public static let maxPayloadStoreBytes = Self(rawValue: "max_payload_store_bytes")

    // MARK: - Service

    /// Largest request body `POST /v1/notifications` reads (`--max-request-bytes`, 64 KiB).
    public static let maxRequestBytes = Self(rawValue: "max_request_bytes")
    /// Payloads in the pipeline at once plus those waiting (`--max-concurrent`, `--max-queued`).
    public static let maxQueued = Self(rawValue: "max_queued")
    /// Connections open at once (`--max-connections`, from the descriptor limit).
    public static let maxConnections = Self(rawValue: "max_connections")
    /// A tenant's requests a second and burst (its `rate` and `burst` in the tenants file).
    public static let tenantRate = Self(rawValue: "tenant_rate")

    /// Every limit name, in catalogue order.
    public static let all: [Self] = [
        .maxPixels, .maxDimension, .maxScans, .maxDecoderMemory, .maxFrames, .maxTotalFramePixels,
        .maxMediaSeconds, .maxVideoPixels, .maxStreams, .maxItems, .maxImageBytes,
        .maxAudioBytes, .maxVideoBytes, .maxFetchBytes, .gifMaxBytes, .maxRedirects, .lowSpeed, .maxStoreBytes,
        .maxStoreObjects, .tenantStoreBytes, .tenantStoreObjects, .maxInputBytes, .maxJSONDepth, .maxPayloadBytes,
        .maxSources, .maxPayloadFetchBytes,
        .maxPayloadStoreBytes, .maxRequestBytes, .maxQueued, .maxConnections, .tenantRate,
    ]

    /// The byte cap of a media category.
    public static func maxBytes(of category: MediaKind.Category) -> Self {
        switch category {
        case .image: .maxImageBytes
        case .audio: .maxAudioBytes
        case .video: .maxVideoBytes
        }
    }
}
