import AttacheTestSupport
import Foundation
import Testing

/// The face detector (OpenCV) lives in libAttacheFaces.so, loaded on the first detection: a
/// process that never looks for a face never maps OpenCV, and one asked to look for faces where
/// the detector is missing says so at start instead of cropping by attention without a word.
@Suite struct FacesLoadingTests {
    @Test func aServiceStartsWithoutOpenCVMapped() async throws {
        let serve = try ServeProcess(["--gc-interval", "0s"])
        defer { serve.stop() }
        _ = try await serve.base()
        // Read to its end: a file in /proc says its size is 0.
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(serve.process.processIdentifier)/maps"))
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        #expect(maps.contains("libcurl"), "the map is the service's")
        #expect(!maps.contains("libopencv"), "OpenCV is mapped at start")
        #expect(!maps.contains("libAttacheFaces"))
    }

    @Test func facesAskedForWithoutTheDetectorStopTheStart() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["ATTACHE_FACES_LIBRARY"] = "/nonexistent/libAttacheFaces.so"
        let folder = try TemporaryDirectory()
        let process = await runProcess(
            try attacheExecutable(), ["process", "--faces", "--store", folder.path + "/store", "-"],
            environment: environment)
        #expect(process.status != 0)
        #expect(process.output.contains("--faces") && process.output.contains("/nonexistent/libAttacheFaces.so"))
        let serve = await runProcess(
            try attacheExecutable(),
            [
                "serve", "--faces", "--port", "0", "--store", folder.path + "/serve", "--api-keys",
                RunningService.apiKey,
            ],
            environment: environment)
        #expect(serve.status == 2, "\(serve.output)")
        #expect(serve.output.contains("faces") && serve.output.contains("/nonexistent/libAttacheFaces.so"))
        // Without --faces, the same process starts: only a request's faces=true is left, and
        // it is said why it will not be honoured.
        let plain = try ServeProcess(["--gc-interval", "0s"], environment: environment)
        defer { plain.stop() }
        _ = try await plain.base()
        #expect(plain.logged.contains("faces not looked for"), "\(plain.logged)")
    }
}
