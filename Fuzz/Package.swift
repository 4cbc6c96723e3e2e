// swift-tools-version: 6.1
import Foundation
import PackageDescription

// libFuzzer targets for Attache's own parsers and glue, built with the address sanitizer by
// `bash Fuzz/run.sh` (see the README there). A separate package, so the main build never
// compiles them; it depends on the root package by path.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

/// One fuzz target: a `main.swift` handing one of FuzzChecks' checks to libFuzzer.
func fuzzer(_ name: String, _ path: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["CFuzzerDriver", .product(name: "AttacheTestSupport", package: root)],
        path: "Targets/" + path
    )
}

let package = Package(
    name: "AttacheFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "CFuzzerDriver"),
        fuzzer("fuzz-json", "JSON"),
        fuzzer("fuzz-sniffer", "Sniffer"),
        fuzzer("fuzz-exif", "Exif"),
        fuzzer("fuzz-token", "Token"),
        fuzzer("fuzz-head", "Head"),
        fuzzer("fuzz-url", "URL"),
        fuzzer("fuzz-gif", "GIF"),
        fuzzer("fuzz-image", "Image"),
        fuzzer("fuzz-seal", "Seal"),
        fuzzer("fuzz-icc", "ICC"),
        fuzzer("fuzz-modern", "Modern"),
        fuzzer("fuzz-av", "AV"),
        fuzzer("fuzz-poster", "Poster"),
        fuzzer("fuzz-encode", "Encode"),
    ]
)
