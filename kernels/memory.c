/* memory.c — the counted allocator and bookkeeping memory. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "memory.h"
#include "report.h"
void bookkeeping_out_of_memory(void)
{
    fprintf(stderr, "error: out of memory\n");
    exit(2);
}

void *bookkeeping_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        bookkeeping_out_of_memory();
    return p;
}

enum { FA_ALIGN = 64 };
static const uint64_t FA_MAGIC = UINT64_C(0xfa11ab1e5ca1ab1e);
typedef struct {
    size_t   bytes;    /* what the caller asked for */
    uint64_t magic;    /* FA_MAGIC while the block is live */
} fa_header;
_Static_assert(sizeof(fa_header) <= FA_ALIGN, "the header fits its slot");

static _Atomic size_t fa_live;
static _Atomic size_t fa_peak;

static void fa_count_allocation(size_t bytes)
{
    size_t live = atomic_fetch_add(&fa_live, bytes) + bytes;
    size_t peak = atomic_load(&fa_peak);
    while (live > peak && !atomic_compare_exchange_weak(&fa_peak, &peak, live))
        ;
}

size_t fa_bytes_live(void) { return atomic_load(&fa_live); }
size_t fa_bytes_peak(void) { return atomic_load(&fa_peak); }
void   fa_reset_peak(void) { atomic_store(&fa_peak, atomic_load(&fa_live)); }

size_t fa_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0)
        return 0;
    return (size_t)pages * (size_t)page_size;
}

static void fa_refuse_if_too_big(size_t bytes)
{
    size_t physical = fa_physical_memory();
    size_t live = fa_bytes_live();
    if (physical == 0 || (bytes <= physical && live <= physical - bytes))
        return;
    char need[32], have[32];
    fprintf(stderr, "error: this needs %s but the machine has %s of memory\n",
            fmt_bytes(need, (double)live + (double)bytes),
            fmt_bytes(have, (double)physical));
    exit(2);
}

static void fa_out_of_memory(size_t bytes)
{
    char need[32];
    fprintf(stderr, "error: out of memory allocating %s\n",
            fmt_bytes(need, (double)bytes));
    exit(2);
}

void *fa_alloc(size_t bytes)
{
    fa_refuse_if_too_big(bytes);
    size_t lines = bytes / FA_ALIGN + (bytes % FA_ALIGN != 0) + (bytes == 0);
    size_t total = fa_mul(lines + 1, FA_ALIGN);
    unsigned char *block = aligned_alloc(FA_ALIGN, total);
    if (block == NULL)
        fa_out_of_memory(bytes);
    memset(block, 0, total);
    *(fa_header *)block = (fa_header){ .bytes = bytes, .magic = FA_MAGIC };
    fa_count_allocation(bytes);
    return block + FA_ALIGN;
}

void fa_free(void *p)
{
    if (p == NULL)
        return;
    fa_header *header = (fa_header *)((unsigned char *)p - FA_ALIGN);
    if (header->magic != FA_MAGIC) {
        fprintf(stderr, "internal error: fa_free of a pointer that fa_alloc "
                        "did not return, or that was already freed\n");
        abort();
    }
    header->magic = 0;
    atomic_fetch_sub(&fa_live, header->bytes);
    free(header);
}

size_t process_peak_rss(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL)
        return 0;
    char line[256];
    size_t kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, status) != NULL)
        found = sscanf(line, "VmHWM: %zu kB", &kib) == 1;
    fclose(status);
    return found ? kib * 1024 : 0;
}

size_t fa_mul(size_t a, size_t b)
{
    size_t product;
    if (__builtin_mul_overflow(a, b, &product)) {
        fprintf(stderr, "error: the size %zu * %zu is too large to represent\n",
                a, b);
        exit(2);
    }
    return product;
}

