internal import AttacheBase
internal import CAttacheShim
internal import Foundation

extension AttacheError {
    /// Maps a C shim's failure (every shim reports one `att_error`: attache_shim.h) to a typed
    /// error; `format` names the codec or the container in the message.
    init(shim error: att_error, format: String) {
        let message = Self.line(error.message)
        let text = "\(format): \(message.isEmpty ? "decoder failed" : message)"
        switch error.status {
        case Int32(ATT_ERR_TRUNCATED.rawValue):
            self.init(.truncated, text)
        case Int32(ATT_ERR_UNSUPPORTED.rawValue):
            self.init(.unsupportedVariant, text)
        case Int32(ATT_ERR_MEMORY_LIMIT.rawValue):
            self.init(.decoderMemoryExceeded, text, limit: .maxDecoderMemory)
        case Int32(ATT_ERR_SCAN_LIMIT.rawValue):
            self.init(.tooManyScans, text, limit: .maxScans)
        case Int32(ATT_ERR_DIMENSIONS.rawValue):
            self.init(.dimensionsTooLarge, text, limit: .maxDimension)
        case Int32(ATT_ERR_PIXELS.rawValue):
            self.init(.tooManyPixels, text, limit: .maxPixels)
        case Int32(ATT_ERR_STRUCTURE.rawValue):
            self.init(.tooLarge, text, limit: .maxItems)
        case Int32(ATT_ERR_STREAMS.rawValue):
            self.init(.tooLarge, text, limit: .maxStreams)
        case Int32(ATT_ERR_DURATION.rawValue):
            self.init(.tooLarge, text, limit: .maxMediaSeconds)
        case Int32(ATT_ERR_TIMEOUT.rawValue):
            self.init(.timedOut, text)
        case Int32(ATT_ERR_CORRUPT.rawValue):
            self.init(.corruptData, text)
        default:
            self.init(.internalError, text)
        }
    }
}
