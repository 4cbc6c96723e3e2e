import AttacheTestSupport
import CFuzzerDriver
import Glibc

// libFuzzer on FuzzChecks.encode (Tests/AttacheTestSupport/FuzzEncodeCheck.swift): a failed property aborts.
exit(
    attache_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
        do throws(FuzzChecks.FuzzFinding) {
            try FuzzChecks.encode(Array(UnsafeBufferPointer(start: data, count: size)))
        } catch {
            fatalError("finding: \(error)")
        }
        return 0
    })
