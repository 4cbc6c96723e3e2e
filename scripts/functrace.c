// Which functions of a program's own code a run executes, in the order they first run, for
// scripts/startup-order.sh. Loaded with LD_PRELOAD, before the program's first instruction:
// the program's code is made writable and the first byte of every function named in
// $FUNCTRACE_ENTRIES (one link address per line, in hex) becomes a breakpoint (int3). The first
// call of each function traps; the handler writes the function's address to $FUNCTRACE_OUT, puts
// its byte back and resumes it, so each function costs one trap and the run goes on as before.
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t bias;
static uintptr_t *entries;  // absolute addresses, ascending
static unsigned char *saved;
static size_t count;
static int out = -1;

static long find_entry(uintptr_t address) {
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (entries[middle] < address)
            low = middle + 1;
        else
            high = middle;
    }
    return (low < count && entries[low] == address) ? (long)low : -1;
}

static void handler(int sig, siginfo_t *info, void *context) {
    (void)info;
    ucontext_t *uc = context;
    uintptr_t address = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
    long index = find_entry(address);
    if (index < 0) {  // not ours: the program's own trap
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    *(volatile unsigned char *)address = saved[index];
    __builtin___clear_cache((char *)address, (char *)address + 1);
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)address;
    // The address in hex, a line of its own (snprintf is not safe in a signal handler).
    char line[24];
    size_t n = sizeof line;
    line[--n] = '\n';
    uintptr_t value = address - bias;
    do {
        line[--n] = "0123456789abcdef"[value & 15];
        value >>= 4;
    } while (value != 0);
    ssize_t written = write(out, line + n, sizeof line - n);
    (void)written;
}

static int unprotect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') return 0;  // the program comes first
    bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uintptr_t low = (bias + ph->p_vaddr) & ~(uintptr_t)4095;
        uintptr_t high = (bias + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
        mprotect((void *)low, high - low, PROT_READ | PROT_WRITE | PROT_EXEC);
    }
    return 1;
}

static int ascending(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("FUNCTRACE_OUT"), *list = getenv("FUNCTRACE_ENTRIES");
    if (path == NULL || list == NULL) return;
    FILE *file = fopen(list, "r");
    if (file == NULL) return;
    size_t capacity = 1 << 16;
    entries = malloc(capacity * sizeof *entries);
    unsigned long value;
    while (entries != NULL && fscanf(file, "%lx", &value) == 1) {
        if (count == capacity) entries = realloc(entries, (capacity *= 2) * sizeof *entries);
        if (entries != NULL) entries[count++] = value;
    }
    fclose(file);
    if (entries == NULL || count == 0) return;
    out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    saved = malloc(count);
    if (out < 0 || saved == NULL) return;
    dl_iterate_phdr(unprotect, NULL);
    qsort(entries, count, sizeof *entries, ascending);
    size_t unique = 0;
    for (size_t i = 0; i < count; i++)
        if (unique == 0 || entries[unique - 1] != entries[i] + bias) entries[unique++] = entries[i] + bias;
    count = unique;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigaction(SIGTRAP, &action, NULL);
    for (size_t i = 0; i < count; i++) {
        saved[i] = *(unsigned char *)entries[i];
        *(volatile unsigned char *)entries[i] = 0xCC;
    }
}
