/* memory.c — the counted allocator. Tangled from chapters/harness.nw; edit that file. */
#define _GNU_SOURCE
#include <errno.h>   /* program_invocation_short_name */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "harness/fail.h"
#include "harness/format.h"
#include "harness/memory.h"
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

static size_t read_number_after(const char *path, const char *label)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return SIZE_MAX;
    char line[256];
    unsigned long long value = 0;
    bool found = false;
    size_t n = strlen(label);
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strncmp(line, label, n) == 0 && sscanf(line + n, "%llu", &value) == 1;
    fclose(f);
    return found && value <= SIZE_MAX ? (size_t)value : SIZE_MAX;
}

static size_t kib_to_bytes(size_t kib)
{
    return kib == SIZE_MAX || kib > SIZE_MAX / 1024 ? SIZE_MAX : kib * 1024;
}

static size_t address_space_left(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    size_t used = kib_to_bytes(read_number_after("/proc/self/status", "VmSize:"));
    if (used == SIZE_MAX) used = 0;
    return limit.rlim_cur > used ? (size_t)(limit.rlim_cur - used) : 0;
}

static size_t cgroup_room(const char *dir, const char *limit_file, const char *usage_file)
{
    char path[4096 + 64];   /* a directory name of up to 4096 bytes, a file name */
    snprintf(path, sizeof path, "%s/%s", dir, limit_file);
    size_t limit = read_number_after(path, "");
    snprintf(path, sizeof path, "%s/%s", dir, usage_file);
    size_t usage = read_number_after(path, "");
    if (limit == SIZE_MAX) return SIZE_MAX;
    if (usage == SIZE_MAX) usage = 0;
    return limit > usage ? limit - usage : 0;
}

static size_t cgroup_room_along(const char *mount, const char *group,
                                const char *limit_file, const char *usage_file)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s", mount, group);
    size_t least = SIZE_MAX;
    for (;;) {
        size_t room = cgroup_room(dir, limit_file, usage_file);
        if (room < least) least = room;
        char *slash = strrchr(dir, '/');
        if (slash == NULL || (size_t)(slash - dir) < strlen(mount)) return least;
        *slash = '\0';
    }
}

static size_t cgroup_memory_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f == NULL) return SIZE_MAX;
    char line[4096];
    size_t least = SIZE_MAX, room = SIZE_MAX;
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "0::", 3) == 0)
            room = cgroup_room_along("/sys/fs/cgroup", line + 3, "memory.max", "memory.current");
        else if (strstr(line, ":memory:") != NULL)
            room = cgroup_room_along("/sys/fs/cgroup/memory", strstr(line, ":memory:") + 8,
                                     "memory.limit_in_bytes", "memory.usage_in_bytes");

        if (room < least) least = room;
    }
    fclose(f);
    return least;
}

size_t fa_memory_available(void)
{
    size_t least = kib_to_bytes(read_number_after("/proc/meminfo", "MemAvailable:"));
    size_t cgroup = cgroup_memory_room(), address = address_space_left();
    if (cgroup < least) least = cgroup;
    if (address < least) least = address;
    return least;
}

void fa_require(size_t bytes, const char *what)
{
    size_t available = fa_memory_available();
    if (bytes <= available)
        return;
    char need[32], have[32];
    die_line("%s needs %s of memory, but only %s is available (the least of "
             "MemAvailable, the cgroup's limit and ulimit -v)", what,
             fmt_bytes(need, (double)bytes), fmt_bytes(have, (double)available));
}

static void fa_refuse_if_too_big(size_t bytes)
{
    if (bytes < ((size_t)1 << 20))
        return;
    size_t available = fa_memory_available();
    if (bytes <= available)
        return;
    char need[32], have[32];
    die_line("this needs %s more but only %s of memory is available",
             fmt_bytes(need, (double)bytes), fmt_bytes(have, (double)available));
}

static void fa_out_of_memory(size_t bytes)
{
    char need[32];
    fprintf(stderr, "%s: error: out of memory allocating %s\n",
            program_invocation_short_name, fmt_bytes(need, (double)bytes));
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
        fprintf(stderr, "%s: error: the size %zu * %zu is too large to represent\n",
                program_invocation_short_name, a, b);
        exit(2);
    }
    return product;
}

