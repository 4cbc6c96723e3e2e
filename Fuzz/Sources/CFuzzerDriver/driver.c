#include "fuzzer_driver.h"

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));

int attache_fuzz_main(int argc, char **argv, int (*test)(const uint8_t *data, size_t size)) {
    return LLVMFuzzerRunDriver(&argc, &argv, test);
}
