// swift-tools-version: 6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// SwiftPM finds the suites of a test target through the index that target's compile writes. The
// two commands build without the index store (scripts/build.sh: it costs 16% of a clean build and
// only editors read it), so the test targets write their own, where SwiftPM reads it.
// The path is the build directory's own, not the `.build/debug` link: SwiftPM makes that link only
// when a build ends, so a first build through it would leave the index where SwiftPM does not look.
#if arch(arm64)
let hostTriple = "aarch64-unknown-linux-gnu"
#else
let hostTriple = "x86_64-unknown-linux-gnu"
#endif
let testSettings: [SwiftSetting] =
    swiftSettings + [
        .unsafeFlags(
            ["-index-store-path", Context.packageDirectory + "/.build/\(hostTriple)/debug/index/store"],
            .when(configuration: .debug))
    ]

// The pixel loops (resampler, GIF compositor and palette mapping) are Swift: unoptimized they
// run a hundred times slower, so a debug build (the tests') optimizes the media target too, and
// the codecs' C shim (the packed JPEG coefficients, the GIF and PNG loops).
let pixelLoops: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

// `ATTACHE_NO_X264=1 swift build`: a build that never encodes H.264 (libx264 is GPL): posters and
// container checks only; GIFs stay GIFs and what would be transcoded is refused as before.
let withoutX264 = Context.environment["ATTACHE_NO_X264"] == "1"

// One target per stage, so the compiler keeps the data flow one-way:
//   AttacheBase  ←  AttacheFetch (CAttacheFetch: libcurl)
//                ←  AttacheWork (the scheduler, deadlines, workers, runtime; knows no media)
//                       ←  AttacheMedia (CAttacheCodecs: libjpeg-turbo, libpng, giflib)
//                ←  AttacheStore (swift-crypto, GRDB)
//   AttacheSeal (seal formats, categories; Foundation + swift-crypto)  ←  AttacheClient (device kit)
//                ←  AttacheCore (content, attach, pipeline: uses all of the above)
//                ←  AttacheServer (HTTP: Hummingbird; the core never sees an HTTP type)  ←  attache (CLI)
//                ←  AttacheBatch (campaigns: manifest, resume, progress, report)  ←  attache (CLI)
//                ←  AttachePreview (each platform's view of a result, HTML)  ←  AttacheServer, AttacheBatch
// No stage target depends on another stage. AttacheCore composes them into the pipeline;
// AttacheServer and AttacheBatch, above it, also name stage types (limits, fetch policy, kinds).
// How the release `attache` is linked, each for a smaller start (docs/benchmarks.md):
// - by lld with packed relative relocations (DT_RELR, glibc 2.36): the relocation table the
//   loader reads and applies at every start is 0.4 MB, not 1.8;
// - with Swift's runtime and Foundation linked in (`-static-stdlib`; the static archives' own
//   libraries named, as the static modules would), so their code is laid out with the rest and
//   no symbol of theirs is looked up at start;
// - with the functions a start runs first and side by side (startup.order, written by
//   scripts/startup-order.sh; scripts/release.sh builds with the function sections it needs).
let releaseLink: [String] = [
    "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-static-stdlib", "-lCoreFoundation", "-l_CFURLSessionInterface", "-l_FoundationICU", "-l_FoundationCShims",
    "-l_FoundationCollections", "-lswiftSynchronization", "-lswift_StringProcessing", "-lswift_RegexParser",
    "-lswift_Concurrency", "-lswiftDispatch", "-lswiftGlibc",
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/attache/startup.order",
    // `-static-stdlib` exports every symbol of the program for Swift plug-ins; Attache loads none
    // (the face detector and FFmpeg are C and C++), and a 5 MB symbol table that every library's
    // symbol lookup at start probes first costs more than the 2 MB it maps.
    "-Xlinker", "--no-export-dynamic",
]

let package = Package(
    name: "Attache",
    // iOS for the device-side kit (AttacheClient, AttacheSeal): HPKE needs iOS 17.
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .library(name: "AttacheCore", targets: ["AttacheCore"]),
        .library(name: "AttacheBase", targets: ["AttacheBase"]),
        .library(name: "AttacheFetch", targets: ["AttacheFetch"]),
        .library(name: "AttacheMedia", targets: ["AttacheMedia"]),
        .library(name: "AttacheWork", targets: ["AttacheWork"]),
        .library(name: "AttacheStore", targets: ["AttacheStore"]),
        .library(name: "AttacheStoreShared", targets: ["AttacheStoreShared"]),
        .library(name: "AttacheServer", targets: ["AttacheServer"]),
        .library(name: "AttacheSeal", targets: ["AttacheSeal"]),
        .library(name: "AttacheClient", targets: ["AttacheClient"]),
        .executable(name: "attache", targets: ["attache"]),
        // The face detector, loaded by AttacheMedia on first use from beside the executable
        // (or from ATTACHE_FACES_LIBRARY): `swift build` makes it with the rest.
        .library(name: "AttacheFaces", type: .dynamic, targets: ["CAttacheFacesOpenCV"]),
        // For the fuzz package (Fuzz/): the checks its targets run live with the test helpers.
        .library(name: "AttacheTestSupport", targets: ["AttacheTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Traces leave the process over OTLP/HTTP only (no gRPC stack in the build).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // C shims: every variadic libcurl call and every libjpeg/libpng setjmp stays in C.
        // What every C shim shares: att_error (a code and a message), the deadline cells.
        .target(name: "CAttacheShim"),
        .target(
            name: "CAttacheFetch",
            dependencies: ["CAttacheShim"],
            linkerSettings: [.linkedLibrary("curl")]
        ),
        // The shared store's object bytes: S3 requests through libcurl (SigV4 signing by libcurl).
        .target(
            name: "CAttacheObjects",
            dependencies: ["CAttacheShim"],
            linkerSettings: [.linkedLibrary("curl")]
        ),
        // The shared store's catalog: libpq, PostgreSQL's own client library.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(
            name: "CAttacheCodecs",
            dependencies: ["CAttacheShim"],
            cSettings: [.unsafeFlags(["-O2"], .when(configuration: .debug))],
            linkerSettings: [
                .linkedLibrary("jpeg"),
                .linkedLibrary("png16"),
                .linkedLibrary("z"),
                .linkedLibrary("gif"),
                .linkedLibrary("lcms2"),
                .linkedLibrary("webp"),
                .linkedLibrary("webpdemux"),
                .linkedLibrary("heif"),
                .linkedLibrary("jxl"),
            ]
        ),
        // Faces for the crop of Android and web pictures: OpenCV's cascade detector
        // (objdetect), the cascade file from Debian's opencv-data. The detector is a library of
        // its own (the AttacheFaces product, libAttacheFaces.so beside the executable) that
        // CAttacheFaces loads with dlopen on the first detection: OpenCV and what it maps
        // (protobuf, BLAS, GL dispatch) cost a process nothing until a face is looked for.
        .target(
            name: "CAttacheFaces",
            dependencies: ["CAttacheShim"],
            linkerSettings: [.linkedLibrary("dl")]
        ),
        .target(
            name: "CAttacheFacesOpenCV",
            dependencies: ["CAttacheFaces"],
            cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4"])],
            linkerSettings: [
                .linkedLibrary("opencv_objdetect"),
                .linkedLibrary("opencv_imgproc"),
                .linkedLibrary("opencv_core"),
            ]
        ),
        // Video and audio: container checks, posters and encodes (FFmpeg's libavformat,
        // libavcodec, libswscale, libswresample; H.264 by libx264 through libavcodec), loaded with
        // dlopen on first use so that a process never pays for them at start-up.
        .target(
            name: "CAttacheAV",
            dependencies: ["CAttacheShim"],
            cSettings: withoutX264 ? [.define("ATT_AV_NO_X264")] : [],
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // Shared vocabulary: errors and the one catalogue of codes and limits, media bytes,
        // kinds and the sniffer, byte caps per kind, atomic file writes.
        .target(
            name: "AttacheBase",
            swiftSettings: swiftSettings
        ),
        // Stage 1: libcurl transfers under a policy (address checks, caps, early type check).
        .target(
            name: "AttacheFetch",
            dependencies: ["AttacheBase", "CAttacheFetch"],
            swiftSettings: swiftSettings
        ),
        // How the process runs its CPU work: the fair scheduler and its estimates, the deadlines
        // work checks, the worker threads and the runtime (workers, memory, nice, allocator) the
        // executable sets once. Knows nothing of media; -O in debug builds too, as the codecs
        // it schedules, so that debug runs see the same slices.
        .target(
            name: "AttacheWork",
            dependencies: ["AttacheBase", "CAttacheShim"],
            swiftSettings: swiftSettings + pixelLoops
        ),
        // Stages 2 and 3: validation and the transform (codecs, resampler, GIF).
        .target(
            name: "AttacheMedia",
            dependencies: ["AttacheBase", "AttacheWork", "CAttacheShim", "CAttacheCodecs", "CAttacheAV", "CAttacheFaces"],
            swiftSettings: swiftSettings + pixelLoops
        ),
        // Stage 4: content-addressed objects, catalog, key ring and scoped tokens, and the backend on
        // a local directory (SQLite). Links neither libpq nor the S3 shim.
        .target(
            name: "AttacheStore",
            dependencies: [
                "AttacheBase",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ],
            swiftSettings: swiftSettings
        ),
        // The shared backend of stage 4 (PostgreSQL catalog, S3 object bytes) and campaign jobs.
        .target(
            name: "AttacheStoreShared",
            dependencies: [
                "AttacheBase", "AttacheStore", "CAttacheObjects", "CLibPQ",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ],
            swiftSettings: swiftSettings
        ),
        // Stage 5 and the pipeline: payload content, the attachment block, deadline and budgets.
        .target(
            name: "AttacheCore",
            dependencies: [
                "AttacheBase", "AttacheFetch", "AttacheMedia", "AttacheWork", "AttacheStore", "AttacheSeal",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the server and the device share: the HPKE payload seal, the segmented attachment
        // cipher, the category set. Foundation and swift-crypto only, so the kit can use it.
        .target(
            name: "AttacheSeal",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // The device-side kit: opens seals, downloads and decrypts attachments, the fallback
        // ladder. Foundation and swift-crypto only (it builds for Apple platforms too).
        .target(
            name: "AttacheClient",
            dependencies: ["AttacheSeal", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // What each platform shows of a processed payload: one self-contained HTML page.
        .target(
            name: "AttachePreview",
            dependencies: [
                "AttacheBase", "AttacheCore", "AttacheMedia", "AttacheStore", "AttacheClient",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Campaigns: many payloads or URLs through the pipeline, manifest, resume, report.
        .target(
            name: "AttacheBatch",
            dependencies: [
                "AttacheBase", "AttacheCore", "AttacheFetch", "AttacheMedia", "AttacheWork", "AttacheStore",
                "AttacheStoreShared", "AttachePreview",
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // The service: routes, admission, problems, metrics and logs over the core.
        .target(
            name: "AttacheServer",
            dependencies: [
                "AttacheBase", "AttacheCore", "AttacheFetch", "AttacheMedia", "AttacheWork", "AttacheStore",
                "AttacheStoreShared", "AttacheSeal", "AttachePreview", "CAttacheShim",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("openapi.yaml")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "attache",
            dependencies: [
                "AttacheBatch", "AttacheCore", "AttacheServer", "AttacheSeal", "AttacheClient", "AttacheStoreShared",
                "AttachePreview", "AttacheWork",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            exclude: ["startup.order"],
            swiftSettings: swiftSettings,
            linkerSettings: [.unsafeFlags(releaseLink, .when(configuration: .release))]
        ),
        // Helpers shared by the test targets: a real HTTP server, temporary directories,
        // child-process runners, seeded generators, the corpus and fixtures.
        .target(
            name: "AttacheTestSupport",
            dependencies: [
                "AttacheBase", "AttacheFetch", "AttacheMedia", "AttacheStore", "AttacheStoreShared", "AttacheCore",
                "CAttacheCodecs", "AttacheServer", "AttacheWork",
                "CAttacheTestSupport", "AttacheSeal", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/AttacheTestSupport"
        ),
        .target(name: "CAttacheTestSupport", path: "Tests/CAttacheTestSupport"),
        .testTarget(
            name: "AttacheBaseTests",
            dependencies: ["AttacheBase", "AttacheTestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheFetchTests",
            dependencies: ["AttacheFetch", "CAttacheFetch", "AttacheTestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheMediaTests",
            dependencies: ["AttacheMedia", "AttacheWork", "CAttacheCodecs", "AttacheTestSupport", "AttacheClient"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheStoreTests",
            dependencies: ["AttacheStore", "AttacheStoreShared", "AttacheTestSupport"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheServerTests",
            dependencies: [
                "AttacheServer", "AttacheCore", "AttacheFetch", "AttacheStore", "AttacheStoreShared",
                "AttacheTestSupport", "AttacheSeal",
                "AttacheClient", "AttachePreview",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                "AttacheMedia", "AttacheWork",
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheSealTests",
            dependencies: [
                "AttacheSeal", "AttacheClient", "AttacheCore", "AttacheFetch", "AttacheStore", "AttacheStoreShared",
                "AttacheTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheBatchTests",
            dependencies: [
                "AttacheBatch", "AttacheCore", "AttacheFetch", "AttacheMedia", "AttacheStore", "AttacheStoreShared",
                "AttacheTestSupport", "AttachePreview", "AttacheClient", "AttacheSeal", "AttacheWork",
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "AttacheCoreTests",
            dependencies: [
                "AttacheCore", "AttacheFetch", "AttacheMedia", "AttacheWork", "AttacheStore", "AttacheStoreShared",
                "AttacheSeal",
                "AttacheTestSupport", "AttacheClient",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: testSettings
        ),
    ]
)
