internal import AttacheBase

/// Collects rows unchanged into a ``PixelImage`` (used when no resize is needed).
struct RowCollector: RowSink {
    let width: Int
    let channels: Int
    private(set) var pixels: [UInt8]
    private var rows = 0

    init(width: Int, height: Int, channels: Int) {
        self.width = width
        self.channels = channels
        pixels = [UInt8](repeating: 0, count: width * height * channels)
    }

    mutating func push(_ row: UnsafePointer<UInt8>) {
        let bytes = width * channels
        let offset = rows * bytes
        guard offset + bytes <= pixels.count else { return }
        pixels.withUnsafeMutableBufferPointer { dst in
            (dst.baseAddress! + offset).update(from: row, count: bytes)
        }
        rows += 1
    }
}

/// Counts rows and drops them (a full decode that keeps nothing).
struct RowCounter: RowSink {
    private(set) var rows = 0

    mutating func push(_ row: UnsafePointer<UInt8>) { rows += 1 }
}
