import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheStore

@Suite struct StoreCrashTests {
    /// A writer process killed with SIGKILL at random moments, 100 times, leaves only whole
    /// objects: every file under objects/ hashes to its name, every catalog row has its file,
    /// and the store opens and collects cleanly afterwards.
    ///
    /// Each kill waits for an event, not a guessed time: the writer reports every object it
    /// has stored, and is killed after a random number of reports (1–3) plus a random sliver
    /// of a write, so a loaded machine changes where kills land but not what is tested.
    @Test func killedWritersLeaveOnlyWholeObjects() throws {
        let directory = try TemporaryDirectory()
        let root = directory.path + "/store"
        let executable = try attacheExecutable()
        var generator = SystemRandomNumberGenerator()
        var reported = 0
        for _ in 0..<100 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["store", "storm", "--store", root, "--count", "100000", "--max-size", "262144"]
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let wanted = Int.random(in: 1...3, using: &generator)
            var lines = 0
            while lines < wanted {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { break }
                lines += chunk.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
            }
            try #require(
                lines >= wanted,
                "the writer stopped before reporting: \(String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self))"
            )
            reported += lines
            usleep(UInt32.random(in: 0...2_000, using: &generator))
            try #require(process.isRunning, "the writer was still writing when it was killed")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        let store = try AttachmentStore(StoreConfiguration(root: root))
        let report = try store.verify()
        #expect(report.corrupt.isEmpty, "\(report.corrupt.prefix(5))")
        #expect(report.missing.isEmpty, "\(report.missing.prefix(5))")
        #expect(report.objects >= reported, "every reported object is whole (\(report.objects) of \(reported))")
        print(
            "after 100 SIGKILLs: \(report.objects) whole objects, \(report.orphans.count) orphans, \(report.temps) temps"
        )

        // Leftover temps are swept once they are old; the store then verifies with nothing stray.
        let later = try AttachmentStore(
            StoreConfiguration(root: root, clock: { StoreConfiguration.unixNow() + 120 }))
        let collected = try later.collect()
        #expect(collected.temps == report.temps)
        let after = try later.verify()
        #expect(after.isClean && after.orphans.isEmpty && after.temps == 0)
        #expect(after.objects == report.objects + report.orphans.count - collected.orphans)
    }
}
