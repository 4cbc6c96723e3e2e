import AttacheTestSupport
import CFuzzerDriver
import Glibc

// libFuzzer on FuzzChecks.head (Tests/AttacheTestSupport/FuzzChecks.swift): a failed property aborts.
exit(
    attache_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
        do throws(FuzzChecks.FuzzFinding) {
            try FuzzChecks.head(Array(UnsafeBufferPointer(start: data, count: size)))
        } catch {
            fatalError("finding: \(error)")
        }
        return 0
    })
