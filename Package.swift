// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Attache",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "AttacheCore", targets: ["AttacheCore"]),
        .executable(name: "attache", targets: ["attache"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
    ],
    targets: [
        // Thin C shims over libjpeg-turbo, libpng and libcurl: every setjmp/longjmp and variadic call stays in C.
        .target(
            name: "CAttache",
            linkerSettings: [
                .linkedLibrary("jpeg"),
                .linkedLibrary("png16"),
                .linkedLibrary("z"),
                .linkedLibrary("curl"),
                .linkedLibrary("gif"),
            ]
        ),
        .target(
            name: "AttacheCore",
            dependencies: [
                "CAttache",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "attache",
            dependencies: [
                "AttacheCore",
                "CAttache",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AttacheCoreTests",
            dependencies: ["AttacheCore", "CAttache"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ]
)
