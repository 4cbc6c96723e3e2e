internal import AttacheBase
internal import Glibc

/// Where the subject of a picture is, for a crop that keeps it: the attention measure libvips'
/// `smartcrop attention` uses — Sobel edges on CIE L*, skin tones (a*, b* in the range libvips
/// trained on the Humanae portraits, L* ≥ 15) and strongly saturated colour (chroma > 60) —
/// made on a copy at most ``mapSide`` on its longer side of the already-downscaled pixels,
/// averaged onto a 32 × 32 grid, blurred in proportion to the crop, and the crop centred on
/// the brightest point.
enum Saliency {
    /// The longer side of the copy the measures are made on.
    static let mapSide = 256
    /// The grid the measures are averaged onto (the precision of the placement).
    static let grid = 32

    /// The origin of a `cropWidth` × `cropHeight` window in `image` (which it fits) centred on
    /// the subject.
    static func bestOrigin(
        in image: PixelImage, cropWidth: Int, cropHeight: Int, map given: Map? = nil
    ) throws(AttacheError) -> (x: Int, y: Int) {
        let slideX = image.width - cropWidth
        let slideY = image.height - cropHeight
        guard slideX > 0 || slideY > 0 else { return (0, 0) }
        let map: Map
        if let given { map = given } else { map = try attention(of: image) }
        let (columns, rows) = (min(grid, map.width), min(grid, map.height))
        let cellWidth = Double(image.width) / Double(columns)
        let cellHeight = Double(image.height) / Double(rows)
        // Blurred by a sixth of the crop's diagonal in grid cells, as libvips does.
        let sigma = (pow(Double(cropWidth) / cellWidth, 2) + pow(Double(cropHeight) / cellHeight, 2)).squareRoot() / 6
        var total = [Double](repeating: 0, count: columns * rows)
        for feature in [map.edges, map.skin, map.saturation] {
            // Onto the grid, blurred.
            let cells = cellMeans(feature, map: map, columns: columns, rows: rows)
            let blurred = gaussianBlur(cells, width: columns, height: rows, sigma: sigma)
            let weight = prominence(blurred, width: columns, height: rows)
            for index in total.indices { total[index] += blurred[index] * weight }
        }
        var best = (index: 0, value: -Double.infinity)
        for (index, value) in total.enumerated() where value > best.value { best = (index, value) }
        let centreX = (Double(best.index % columns) + 0.5) * cellWidth
        let centreY = (Double(best.index / columns) + 0.5) * cellHeight
        func placed(_ centre: Double, _ slide: Int, _ window: Int) -> Int {
            min(slide, max(0, Int((centre - Double(window) / 2).rounded())))
        }
        return (placed(centreX, slideX, cropWidth), placed(centreY, slideY, cropHeight))
    }

    /// The attention measure per pixel of a copy at most ``mapSide`` on its longer side.
    /// The three measures of one picture, each per pixel of the small copy.
    typealias Map = (width: Int, height: Int, edges: [Double], skin: [Double], saturation: [Double])

    static func attention(of image: PixelImage) throws(AttacheError) -> Map {
        let fitted = RenditionSpec.fit(width: image.width, height: image.height, into: mapSide)
        let small =
            fitted == (image.width, image.height)
            ? image.flattened() : try ImageProcessor.resampleImage(image.flattened(), target: fitted)
        let (width, height, channels) = (small.width, small.height, small.channels)
        var lightness = [Double](repeating: 0, count: width * height)
        var skin = [Double](repeating: 0, count: width * height)
        var saturation = [Double](repeating: 0, count: width * height)
        let linear = (0..<256).map { value -> Double in
            let v = Double(value) / 255
            return v <= 0.040_45 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
        }
        func f(_ t: Double) -> Double { t > 0.008_856 ? cbrt(t) : 7.787 * t + 16 / 116 }
        small.pixels.withUnsafeBufferPointer { p in
            for index in 0..<(width * height) {
                let base = index * channels
                let (r, g, b) =
                    channels >= 3
                    ? (linear[Int(p[base])], linear[Int(p[base + 1])], linear[Int(p[base + 2])])
                    : (linear[Int(p[base])], linear[Int(p[base])], linear[Int(p[base])])
                // sRGB (D65) to CIE L*a*b*.
                let x = (0.412_4 * r + 0.357_6 * g + 0.180_5 * b) / 0.950_47
                let y = 0.212_6 * r + 0.715_2 * g + 0.072_2 * b
                let z = (0.019_3 * r + 0.119_2 * g + 0.950_5 * b) / 1.088_83
                let l = 116 * f(y) - 16
                let a = 500 * (f(x) - f(y))
                let bb = 200 * (f(y) - f(z))
                lightness[index] = l
                if (3...22).contains(a), (4...31).contains(bb), l >= 15 { skin[index] = 255 }
                if (a * a + bb * bb).squareRoot() > 60 { saturation[index] = 255 }
            }
        }
        // Sobel edges on L*: |Gx| + |Gy|.
        var values = [Double](repeating: 0, count: width * height)
        func at(_ x: Int, _ y: Int) -> Double {
            lightness[min(height - 1, max(0, y)) * width + min(width - 1, max(0, x))]
        }
        for y in 0..<height {
            for x in 0..<width {
                let gx =
                    at(x + 1, y - 1) + 2 * at(x + 1, y) + at(x + 1, y + 1) - at(x - 1, y - 1) - 2 * at(x - 1, y)
                    - at(x - 1, y + 1)
                let gy =
                    at(x - 1, y + 1) + 2 * at(x, y + 1) + at(x + 1, y + 1) - at(x - 1, y - 1) - 2 * at(x, y - 1)
                    - at(x + 1, y - 1)
                values[y * width + x] = abs(gx) + abs(gy)
            }
        }
        return (width, height, values, skin, saturation)
    }

    /// `feature` (one value a pixel of `map`) onto a `columns` × `rows` grid: each cell the mean
    /// of the map's pixels in it.
    static func cellMeans(_ feature: [Double], map: Map, columns: Int, rows: Int) -> [Double] {
        var cells = [Double](repeating: 0, count: columns * rows)
        var counts = [Double](repeating: 0, count: columns * rows)
        for y in 0..<map.height {
            let row = y * rows / map.height
            for x in 0..<map.width {
                let cell = row * columns + x * columns / map.width
                cells[cell] += feature[y * map.width + x]
                counts[cell] += 1
            }
        }
        for index in cells.indices where counts[index] > 0 { cells[index] /= counts[index] }
        return cells
    }

    /// How much a blurred feature map stands out (Itti and Koch's map normalisation): one
    /// blob far above the rest weighs 1 divided by its peak; a feature spread evenly (a whole
    /// band of skin-coloured background, texture everywhere), whose local peaks are all about
    /// as high as the highest, weighs about nothing.
    static func prominence(_ values: [Double], width: Int, height: Int) -> Double {
        guard let peak = values.max(), peak > 0 else { return 0 }
        var peaks: [Double] = []
        for y in 0..<height {
            for x in 0..<width {
                let value = values[y * width + x]
                var highest = true
                for dy in -1...1 {
                    for dx in -1...1 where dx != 0 || dy != 0 {
                        let (nx, ny) = (x + dx, y + dy)
                        if nx >= 0, ny >= 0, nx < width, ny < height, values[ny * width + nx] > value {
                            highest = false
                        }
                    }
                }
                if highest { peaks.append(value / peak) }
            }
        }
        // The mean of the local peaks other than the highest one.
        guard peaks.count > 1 else { return 1 / peak }
        let others = (peaks.reduce(0, +) - 1) / Double(peaks.count - 1)
        return (1 - others) * (1 - others) / peak
    }

    /// A Gaussian blur of `sigma` across and down (edges clamped).
    static func gaussianBlur(_ values: [Double], width: Int, height: Int, sigma: Double) -> [Double] {
        guard sigma > 0.1 else { return values }
        let radius = max(1, Int((3 * sigma).rounded(.up)))
        let kernel = (-radius...radius).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = kernel.reduce(0, +)
        var across = [Double](repeating: 0, count: values.count)
        for y in 0..<height {
            for x in 0..<width {
                var sum = 0.0
                for (offset, weight) in kernel.enumerated() {
                    sum += weight * values[y * width + min(width - 1, max(0, x + offset - radius))]
                }
                across[y * width + x] = sum / total
            }
        }
        var down = [Double](repeating: 0, count: values.count)
        for y in 0..<height {
            for x in 0..<width {
                var sum = 0.0
                for (offset, weight) in kernel.enumerated() {
                    sum += weight * across[min(height - 1, max(0, y + offset - radius)) * width + x]
                }
                down[y * width + x] = sum / total
            }
        }
        return down
    }
}
