internal import AttacheBase
internal import CAttacheCodecs

/// Converts pixels from an image's embedded ICC profile to sRGB (lcms2, perceptual with
/// black-point compensation), in place, one row at a time: no extra buffer.
///
/// It runs on the resampler's output, at the output size, as vipsthumbnail does: converting
/// the decoded rows instead (before the downscale) costs 17% more time on a 9 MP Display P3
/// photo to 1024 px, for differences within rounding (the resampler works on the encoded values
/// either way, not in linear light).
///
/// Only RGB profiles on RGB(A) pixels are used. A profile that cannot be read, is not RGB or
/// is larger than 1 MiB is not used: the pixels are taken as sRGB, as before, and
/// ``ignored`` says why.
final class ColourProfile {
    private let transform: OpaquePointer?
    private let channels: Int
    /// Why the embedded profile was not used (nil when there was none, or it is in use).
    let ignored: String?

    /// A conversion from `profile` for `channels`-channel rows; nil when there is nothing to do.
    static func make(profile: UnsafePointer<UInt8>?, length: Int, channels: Int) -> ColourProfile? {
        guard let profile, length > 0, channels == 3 || channels == 4 else { return nil }
        return ColourProfile(profile: profile, length: length, channels: channels)
    }

    private init(profile: UnsafePointer<UInt8>, length: Int, channels: Int) {
        var error = att_error()
        transform = att_icc_new(profile, length, Int32(channels), 1, &error)
        self.channels = channels
        let reason = withUnsafeBytes(of: error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        ignored = transform == nil ? "ICC profile not used: \(reason.isEmpty ? "unreadable" : reason)" : nil
    }

    deinit { att_icc_free(transform) }

    /// Whether rows are converted (the profile is in use).
    var converts: Bool { transform != nil }

    /// Converts one row of `width` pixels in place.
    func convert(_ row: UnsafeMutablePointer<UInt8>, width: Int) {
        guard let transform else { return }
        att_icc_apply(transform, row, width)
    }

    /// Converts `image` in place, a row at a time (RGB or RGBA images only).
    func convert(_ image: inout PixelImage) {
        guard transform != nil, image.channels == channels else { return }
        let (width, rowBytes, height) = (image.width, image.width * image.channels, image.height)
        image.pixels.withUnsafeMutableBufferPointer { pixels in
            for y in 0..<height { convert(pixels.baseAddress! + y * rowBytes, width: width) }
        }
    }
}
