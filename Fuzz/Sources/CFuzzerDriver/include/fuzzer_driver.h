// libFuzzer's driver, started from a Swift main (SwiftPM gives every executable its own entry
// point, so libFuzzer's `main` is not used).
#ifndef ATTACHE_FUZZER_DRIVER_H
#define ATTACHE_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer with the process's arguments on `test` (called once per input).
int attache_fuzz_main(int argc, char **argv, int (*test)(const uint8_t *data, size_t size));

#endif
