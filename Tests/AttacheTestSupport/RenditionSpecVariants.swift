import AttacheMedia

/// One change to each field of ``RenditionSpec``, named by the field: the cache tests apply
/// each and expect a different key (and a cache miss). A test checks that every stored field
/// of the spec has its entry here, so a new field cannot be left out of the key unnoticed.
public let renditionSpecVariants: [(field: String, change: @Sendable (inout RenditionSpec) -> Void)] = [
    ("maxSide", { $0.maxSide = 512 }),
    ("video", { $0.video.preset = "medium" }),
    ("quality", { $0.quality = .fixed(70) }),
    ("pngCompressionLevel", { $0.pngCompressionLevel = 6 }),
    ("jpegShrinkHeadroom", { $0.jpegShrinkHeadroom = 1.5 }),
    ("jpegFancyUpsampling", { $0.jpegFancyUpsampling = false }),
    ("decodedMemoryBudget", { $0.decodedMemoryBudget = 300 * 300 * 4 }),
    ("gifMaxFrames", { $0.gifMaxFrames = 50 }),
    ("gifMaxBytes", { $0.gifMaxBytes = 5_000_000 }),
    ("gifDither", { $0.gifDither = true }),
    ("gifAllowPartial", { $0.gifAllowPartial = true }),
    ("outputFormat", { $0.outputFormat = .webp }),
    ("jpegTables", { $0.jpegTables = .ijg }),
    ("jpegEncoder", { $0.jpegEncoder = .thorough }),
]
