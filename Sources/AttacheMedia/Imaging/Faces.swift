internal import AttacheBase
internal import CAttacheFaces
internal import Foundation

/// Frontal faces, for the crop of a receiver's picture: a portrait cropped to 2:1 should keep
/// the face, and an attention map is drawn to whatever is busiest (fruit, text, a patterned
/// shirt). OpenCV's cascade detector (objdetect) with the frontal-face LBP cascade Debian
/// packages in opencv-data, run on a small grey copy of the skin-toned part of the picture.
/// Asked for per receiver (``TargetSpec/faces``). Measured on portraits with a busy half
/// (`Benchmarks/faces.sh`): the face kept 88% on average against attention's 50%, at 10 to 50
/// ms a picture; OpenCV's Haar cascade found every face but cost five times as much.
enum Faces {
    /// A face's box in the picture's pixels.
    typealias Box = (x: Int, y: Int, width: Int, height: Int)

    /// The long side of the grey copy searched: the cascade's window is 24 px, so a face must
    /// be at least 1/16 of the picture's long side.
    static let searchSide = 384

    /// The cascade: `ATTACHE_FACE_CASCADE`, else Debian's opencv-data (its 24 px LBP frontal
    /// face). None found: no faces (the crop follows attention alone).
    static let cascadePath: String? = {
        let candidates = [
            ProcessInfo.processInfo.environment["ATTACHE_FACE_CASCADE"],
            "/usr/share/opencv4/lbpcascades/lbpcascade_frontalface.xml",
            "/usr/share/opencv/lbpcascades/lbpcascade_frontalface.xml",
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isReadableFile(atPath: $0) }
    }()

    /// Why faces are not looked for, or nil when they are: no cascade, or no detector library
    /// (libAttacheFaces.so beside the executable, or `ATTACHE_FACES_LIBRARY`). Only the files
    /// are looked at: the detector itself is loaded on the first detection.
    static var unavailable: String? {
        guard cascadePath != nil else {
            return "no face cascade (opencv-data's lbpcascade_frontalface.xml, or ATTACHE_FACE_CASCADE)"
        }
        // The file the loader will open, as it finds it.
        let library = String(cString: att_faces_library())
        guard FileManager.default.isReadableFile(atPath: library) else {
            return "no face detector at \(library) (swift build makes it beside the executable)"
        }
        return nil
    }

    /// The largest frontal face in `image`, or nil when there is none (or no cascade, or the
    /// detector failed or cannot be loaded: attention then places the crop, as without it).
    ///
    /// The cascade costs up to 100 ms on a textured photo, so it runs only where a face can be:
    /// around the skin-toned parts of the attention map (`map`), which a landscape, a product
    /// shot or a grey picture mostly lack. A face in a grey picture is left to attention.
    static func largest(in image: PixelImage, map: Saliency.Map) -> Box? {
        guard let cascadePath, image.width >= 24, image.height >= 24,
            let region = skinRegion(map, width: image.width, height: image.height)
        else { return nil }
        let fitted = RenditionSpec.fit(width: image.width, height: image.height, into: searchSide)
        let scaleX = Double(image.width) / Double(fitted.width)
        let scaleY = Double(image.height) / Double(fitted.height)
        // The region on the search copy, made from the region of the picture only.
        let cut = image.cropped(x: region.x, y: region.y, width: region.width, height: region.height).flattened()
        let target = (
            max(1, Int((Double(region.width) / scaleX).rounded())),
            max(1, Int((Double(region.height) / scaleY).rounded()))
        )
        guard target.0 >= 24, target.1 >= 24,
            let small = target == (cut.width, cut.height)
                ? cut : try? ImageProcessor.resampleImage(cut, target: target)
        else { return nil }
        let gray = grey(small)
        var box = att_face_box()
        var error = att_error()
        let found = gray.withUnsafeBufferPointer { pixels in
            att_faces_detect(
                pixels.baseAddress, Int32(small.width), Int32(small.height), cascadePath, 24, &box, 1, &error)
        }
        guard found > 0 else { return nil }
        let across = Double(region.width) / Double(small.width)
        let down = Double(region.height) / Double(small.height)
        return (
            region.x + Int(Double(box.x) * across), region.y + Int(Double(box.y) * down),
            Int(Double(box.width) * across), Int(Double(box.height) * down)
        )
    }

    /// The part of a `width` × `height` picture around its skin-toned cells (a 32-cell grid on
    /// the map, a cell counting when a fifth of it is skin), widened by half its size each way
    /// for the hair and the chin a face's window takes in; nil when no cell is.
    static func skinRegion(_ map: Saliency.Map, width: Int, height: Int) -> Box? {
        let (columns, rows) = (min(Saliency.grid, map.width), min(Saliency.grid, map.height))
        // The skin measure is 255 or 0 a pixel: a mean of 51 is a fifth of the cell.
        let skin = Saliency.cellMeans(map.skin, map: map, columns: columns, rows: rows)
        var (left, top, right, bottom) = (columns, rows, -1, -1)
        for cell in skin.indices where skin[cell] >= 255.0 / 5 {
            let (column, row) = (cell % columns, cell / columns)
            (left, top, right, bottom) = (min(left, column), min(top, row), max(right, column), max(bottom, row))
        }
        guard right >= 0 else { return nil }
        let cellWidth = Double(width) / Double(columns)
        let cellHeight = Double(height) / Double(rows)
        let (x0, y0) = (Double(left) * cellWidth, Double(top) * cellHeight)
        let (x1, y1) = (Double(right + 1) * cellWidth, Double(bottom + 1) * cellHeight)
        let (padX, padY) = ((x1 - x0) / 2, (y1 - y0) / 2)
        let x = max(0, Int(x0 - padX))
        let y = max(0, Int(y0 - padY))
        return (x, y, min(width, Int((x1 + padX).rounded(.up))) - x, min(height, Int((y1 + padY).rounded(.up))) - y)
    }

    /// Rec. 601 luma of an 8-bit picture (one channel: itself).
    static func grey(_ image: PixelImage) -> [UInt8] {
        let channels = image.channels
        guard channels >= 3 else {
            return stride(from: 0, to: image.pixels.count, by: channels).map { image.pixels[$0] }
        }
        var out = [UInt8](repeating: 0, count: image.width * image.height)
        image.pixels.withUnsafeBufferPointer { pixels in
            for index in 0..<out.count {
                let base = index * channels
                let luma = 77 * Int(pixels[base]) + 150 * Int(pixels[base + 1]) + 29 * Int(pixels[base + 2])
                out[index] = UInt8(luma >> 8)
            }
        }
        return out
    }
}

extension ImageProcessor {
    /// Why the crops of receivers' pictures cannot look for faces (they follow attention), or
    /// nil when they can: see ``Faces/unavailable``.
    public static var facesUnavailable: String? { Faces.unavailable }
}
