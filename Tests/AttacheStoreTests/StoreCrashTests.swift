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
        var generator = SystemRandomNumberGenerator()
        var reported = 0
        for _ in 0..<100 {
            reported += try killStormWriter(
                ["--store", root, "--count", "100000", "--max-size", "262144"], pause: 0...2_000, using: &generator)
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
