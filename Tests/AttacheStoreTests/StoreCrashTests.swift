import AttacheBase
import AttacheTestSupport
import Foundation
import Testing

@testable import AttacheStore

@Suite struct StoreCrashTests {
    /// A writer process killed with SIGKILL at random moments, 100 times, leaves only whole
    /// objects: every file under objects/ hashes to its name, every catalog row has its file,
    /// and the store opens and collects cleanly afterwards.
    @Test func killedWritersLeaveOnlyWholeObjects() throws {
        let directory = try TemporaryDirectory()
        let root = directory.path + "/store"
        let executable = try attacheExecutable()
        var generator = SystemRandomNumberGenerator()
        var killedMidRun = 0
        for _ in 0..<100 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["store", "storm", "--store", root, "--count", "100000", "--max-size", "262144"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 5_000...120_000, using: &generator))
            if process.isRunning { killedMidRun += 1 }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        #expect(killedMidRun == 100, "every writer was still writing when it was killed")

        let store = try AttachmentStore(StoreConfiguration(root: root))
        let report = try store.verify()
        #expect(report.corrupt.isEmpty, "\(report.corrupt.prefix(5))")
        #expect(report.missing.isEmpty, "\(report.missing.prefix(5))")
        #expect(report.objects >= 10, "the storm wrote objects between kills (\(report.objects))")
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
