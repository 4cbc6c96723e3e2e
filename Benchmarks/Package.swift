// swift-tools-version: 6.1
import Foundation
import PackageDescription

// A path dependency's identity is its folder name, whatever the checkout is called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "AttacheBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Resize",
            dependencies: [
                .product(name: "AttacheBase", package: root),
                .product(name: "AttacheMedia", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Resize",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Tokens",
            dependencies: [
                .product(name: "AttacheStore", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Tokens",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "Seal",
            dependencies: [
                .product(name: "AttacheCore", package: root),
                .product(name: "AttacheFetch", package: root),
                .product(name: "AttacheSeal", package: root),
                .product(name: "AttacheStore", package: root),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Seal",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
