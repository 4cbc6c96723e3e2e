import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

/// The strings users script against: every error code and limit name, pinned here and listed
/// in docs/error-codes.md.
@Suite struct ErrorCatalogueTests {
    static let codes: [(AttacheError.Code, String)] = [
        (.corruptData, "corrupt_data"), (.truncated, "truncated"), (.emptyInput, "empty_input"),
        (.unsupportedType, "unsupported_type"), (.unsupportedVariant, "unsupported_variant"),
        (.tooManyPixels, "too_many_pixels"), (.dimensionsTooLarge, "dimensions_too_large"),
        (.tooManyFrames, "too_many_frames"), (.tooManyScans, "too_many_scans"),
        (.decoderMemoryExceeded, "decoder_memory_exceeded"), (.tooLarge, "too_large"), (.timedOut, "timed_out"),
        (.encodeFailed, "encode_failed"), (.ioError, "io_error"), (.internalError, "internal_error"),
        (.dnsFailed, "dns_failed"), (.connectFailed, "connect_failed"), (.blockedAddress, "blocked_address"),
        (.hostNotAllowed, "host_not_allowed"), (.sourceNotAllowed, "source_not_allowed"),
        (.invalidURL, "invalid_url"), (.schemeNotAllowed, "scheme_not_allowed"),
        (.tooManyRedirects, "too_many_redirects"), (.tooSlow, "too_slow"), (.httpStatus, "http_status"),
        (.tlsFailed, "tls_failed"), (.badResponse, "bad_response"), (.cancelled, "cancelled"),
        (.fetchFailed, "fetch_failed"), (.storeFull, "store_full"), (.notFound, "not_found"),
        (.accessDenied, "access_denied"), (.invalidInput, "invalid_input"), (.storeCorrupt, "store_corrupt"),
        (.storeUnavailable, "store_unavailable"),
        (.tenantQuotaExceeded, "tenant_quota_exceeded"),
        (.invalidPayload, "invalid_payload"), (.payloadTooLarge, "payload_too_large"),
        (.tooManySources, "too_many_sources"), (.budgetExceeded, "budget_exceeded"), (.sealFailed, "seal_failed"),
        (.unauthorized, "unauthorized"), (.requestTooLarge, "request_too_large"),
        (.invalidRequest, "invalid_request"), (.overloaded, "overloaded"), (.rateLimited, "rate_limited"),
    ]

    static let limits: [(AttacheError.Limit, String)] = [
        (.maxPixels, "max_pixels"), (.maxDimension, "max_dimension"), (.maxScans, "max_scans"),
        (.maxDecoderMemory, "max_decoder_memory"), (.maxFrames, "max_frames"),
        (.maxTotalFramePixels, "max_total_frame_pixels"), (.maxMediaSeconds, "max_media_seconds"),
        (.maxVideoPixels, "max_video_pixels"), (.maxStreams, "max_streams"), (.maxItems, "max_items"),
        (.maxImageBytes, "max_image_bytes"),
        (.maxAudioBytes, "max_audio_bytes"), (.maxVideoBytes, "max_video_bytes"), (.maxFetchBytes, "max_fetch_bytes"),
        (.gifMaxBytes, "gif_max_bytes"), (.maxRedirects, "max_redirects"), (.lowSpeed, "low_speed"),
        (.maxStoreBytes, "max_store_bytes"), (.maxStoreObjects, "max_store_objects"),
        (.tenantStoreBytes, "tenant_store_bytes"), (.tenantStoreObjects, "tenant_store_objects"),
        (.maxInputBytes, "max_input_bytes"), (.maxJSONDepth, "max_json_depth"),
        (.maxPayloadBytes, "max_payload_bytes"), (.maxSources, "max_sources"),
        (.maxPayloadFetchBytes, "max_payload_fetch_bytes"), (.maxPayloadStoreBytes, "max_payload_store_bytes"),
        (.maxRequestBytes, "max_request_bytes"), (.maxQueued, "max_queued"), (.maxConnections, "max_connections"),
        (.tenantRate, "tenant_rate"),
    ]

    @Test func everyCodeKeepsItsString() {
        for (code, text) in Self.codes { #expect(code.rawValue == text) }
        #expect(AttacheError.Code.all.map(\.rawValue) == Self.codes.map(\.1), "the catalogue lists every code once")
        #expect(Set(AttacheError.Code.all).count == AttacheError.Code.all.count)
    }

    @Test func everyLimitKeepsItsName() {
        for (limit, text) in Self.limits { #expect(limit.rawValue == text) }
        #expect(AttacheError.Limit.all.map(\.rawValue) == Self.limits.map(\.1), "the catalogue lists every limit once")
        #expect(Set(AttacheError.Limit.all).count == AttacheError.Limit.all.count)
        #expect(AttacheError.Limit.maxBytes(of: .image) == .maxImageBytes)
        #expect(AttacheError.Limit.maxBytes(of: .audio) == .maxAudioBytes)
        #expect(AttacheError.Limit.maxBytes(of: .video) == .maxVideoBytes)
    }

    @Test func theReadmeDocumentsEveryCodeAndNoOther() throws {
        let documented = try Self.firstColumn(ofTableUnder: "## Error codes")
        #expect(
            documented == AttacheError.Code.all.map(\.rawValue),
            "the error-code table of docs/error-codes.md, in catalogue order")
    }

    @Test func theReadmeDocumentsEveryLimitAndNoOther() throws {
        let documented = try Self.firstColumn(ofTableUnder: "## Limit names")
        #expect(
            documented == AttacheError.Limit.all.map(\.rawValue),
            "the limit-name table of docs/error-codes.md, in catalogue order")
    }

    @Test func aCategoryCapNamesItsCategory() {
        let limits = MediaLimits()
        for kind in MediaKind.allCases {
            let error = failure { try limits.check(kind, bytes: limits.maxBytes(for: kind) + 1) }
            #expect(error?.code == .tooLarge && error?.limit == .maxBytes(of: kind.category))
            #expect(failure { try limits.check(kind, bytes: limits.maxBytes(for: kind)) } == nil)
        }
    }

    /// The backticked names in the first column of the table that follows `heading`.
    static func firstColumn(ofTableUnder heading: String) throws -> [String] {
        let readme = try String(contentsOfFile: Paths.package + "/docs/error-codes.md", encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0 == heading }, "docs/error-codes.md has no \(heading)")
        var names: [String] = []
        var inTable = false
        for line in lines[(start + 1)...] {
            if line.hasPrefix("|") {
                inTable = true
                let cell = line.split(separator: "|").first.map(String.init) ?? ""
                if let open = cell.firstIndex(of: "`"), let close = cell[cell.index(after: open)...].firstIndex(of: "`")
                {
                    names.append(String(cell[cell.index(after: open)..<close]))
                }
            } else if inTable {
                break
            }
        }
        return names
    }
}
