internal import AttacheBase

/// Where the subject of a picture is, for a crop that keeps it: an attention map (edges,
/// saturated colour and skin tones, as libvips' `smartcrop attention` weighs them) on a small
/// copy of the already-downscaled pixels, and the window of the crop's shape that holds the
/// most of it.
enum Saliency {
    /// The side of the small copy the map is made on (its longer side).
    static let mapSide = 96

    /// The best origin of a `cropWidth` × `cropHeight` window in `image` (which it fits): the
    /// window slides along the one axis where the crop is shorter than the image.
    static func bestOrigin(
        in image: PixelImage, cropWidth: Int, cropHeight: Int
    ) throws(AttacheError) -> (x: Int, y: Int) {
        let slideX = image.width - cropWidth
        let slideY = image.height - cropHeight
        guard slideX > 0 || slideY > 0 else { return (0, 0) }
        let map = try attention(of: image)
        // Per column (sliding across) or per row (sliding down): the sum of attention.
        let alongX = slideX > 0
        let length = alongX ? map.width : map.height
        var line = [Double](repeating: 0, count: length)
        for y in 0..<map.height {
            for x in 0..<map.width { line[alongX ? x : y] += map.values[y * map.width + x] }
        }
        // The window in map units, and every placement of it (prefix sums).
        let scale = Double(length) / Double(alongX ? image.width : image.height)
        let window = max(1, min(length, Int((Double(alongX ? cropWidth : cropHeight) * scale).rounded())))
        var prefix = [0.0]
        prefix.reserveCapacity(length + 1)
        for value in line { prefix.append(prefix.last! + value) }
        // The best sum; among equal sums the placement nearest the centre.
        var best = (start: (length - window) / 2, sum: -1.0)
        let centre = Double(length - window) / 2
        for start in 0...(length - window) {
            let sum = prefix[start + window] - prefix[start]
            if sum > best.sum + 1e-9
                || (abs(sum - best.sum) <= 1e-9 && abs(Double(start) - centre) < abs(Double(best.start) - centre))
            {
                best = (start, sum)
            }
        }
        let offset = Int((Double(best.start) / scale).rounded())
        return alongX ? (min(slideX, max(0, offset)), 0) : (0, min(slideY, max(0, offset)))
    }

    /// The attention map: one value per pixel of a copy at most ``mapSide`` on its longer side.
    static func attention(of image: PixelImage) throws(AttacheError) -> (width: Int, height: Int, values: [Double]) {
        let fitted = RenditionSpec.fit(width: image.width, height: image.height, into: mapSide)
        let small =
            fitted == (image.width, image.height)
            ? image : try ImageProcessor.resampleImage(image, target: (fitted.width, fitted.height))
        let (width, height, channels) = (small.width, small.height, small.channels)
        var luma = [Double](repeating: 0, count: width * height)
        var colour = [Double](repeating: 0, count: width * height)
        small.pixels.withUnsafeBufferPointer { p in
            for index in 0..<(width * height) {
                let base = index * channels
                let alpha = small.hasAlpha ? Double(p[base + channels - 1]) / 255 : 1
                guard channels >= 3 else {
                    luma[index] = Double(p[base]) * alpha
                    continue
                }
                let (r, g, b) = (Double(p[base]), Double(p[base + 1]), Double(p[base + 2]))
                luma[index] = (0.299 * r + 0.587 * g + 0.114 * b) * alpha
                // Saturation (HSV), counted when strong, as vips does.
                let high = max(r, g, b)
                let low = min(r, g, b)
                let saturation = high > 0 ? (high - low) / high : 0
                var score = saturation > 0.4 ? saturation * 0.5 : 0
                // Skin tones (the YCbCr box of Chai & Ngan), weighted above saturation.
                let cb = 128 - 0.168_736 * r - 0.331_264 * g + 0.5 * b
                let cr = 128 + 0.5 * r - 0.418_688 * g - 0.081_312 * b
                if (77...127).contains(cb), (133...173).contains(cr), high > 40 { score += 1 }
                colour[index] = score * alpha
            }
        }
        // Edges: the Laplacian of luma, scaled to about 0…1.
        var values = [Double](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let index = y * width + x
                let centre = luma[index]
                let left = luma[y * width + max(0, x - 1)]
                let right = luma[y * width + min(width - 1, x + 1)]
                let up = luma[max(0, y - 1) * width + x]
                let down = luma[min(height - 1, y + 1) * width + x]
                let edge = min(1, abs(4 * centre - left - right - up - down) / 128)
                values[index] = edge + colour[index]
            }
        }
        return (width, height, values)
    }
}
