/* ladder.c — the instruments of chapter 1 and the data files of its ladder.
   Tangled from chapters/app_ladder.nw; edit that file, not this one. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "harness/ladder.h"
#if defined(__AVX__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

static bool cpuinfo_field(const char *key, char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];                   /* the flags line is long */
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && strncmp(line, key, strlen(key)) == 0) {
            colon += strspn(colon + 1, " \t") + 1;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(out, size, "%s", colon);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

void ladder_cpu_model(char *buf, size_t size)
{
    if (!cpuinfo_field("model name", buf, size))
        snprintf(buf, size, "unknown processor");
}

double ladder_nominal_mhz(void)
{
    char text[64];
    return cpuinfo_field("cpu MHz", text, sizeof text) ? strtod(text, NULL)
                                                       : 0.0;
}

double ladder_max_mhz(void)
{
    const char *path = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq";
    FILE *f = fopen(path, "r");
    double khz = 0;
    if (f && fscanf(f, "%lf", &khz) != 1)
        khz = 0;
    if (f)
        fclose(f);
    return khz / 1000;
}

bool ladder_virtual(void)
{
    static const char word[] = "hypervisor";
    char flags[4096];
    if (!cpuinfo_field("flags", flags, sizeof flags))
        return false;
    const char *at = strstr(flags, word);
    if (!at)
        return false;
    const char *after = at + strlen(word);
    return (at == flags || at[-1] == ' ') && (*after == ' ' || *after == '\0');
}

int ladder_cpus(void)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        return CPU_COUNT(&allowed);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

size_t ladder_parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    switch (*end) {
    case 'K': case 'k': return (size_t)v << 10;
    case 'M': case 'm': return (size_t)v << 20;
    case 'G': case 'g': return (size_t)v << 30;
    default:            return (size_t)v;
    }
}

static bool sysfs_line(int index, const char *file, char out[32])
{
    char path[128];
    snprintf(path, sizeof path,
             "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, file);
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(out, 32, f);
    if (f)
        fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

int ladder_caches(ladder_level out[], int max)
{
    int count = 0;
    char type[32], level[32], size[32];
    for (int i = 0; count < max && sysfs_line(i, "type", type); i++) {
        if (strcmp(type, "Instruction") == 0 || !sysfs_line(i, "level", level)
            || !sysfs_line(i, "size", size))
            continue;
        ladder_level l = { .capacity = ladder_parse_size(size),
                           .gbs_one = NAN, .gbs_all = NAN, .latency_ns = NAN };
        snprintf(l.name, sizeof l.name, "L%.3s%s", level,
                 strcmp(type, "Data") == 0 ? "d" : "");
        int at = count++;
        for (; at > 0 && out[at - 1].capacity > l.capacity; at--)
            out[at] = out[at - 1];
        out[at] = l;
    }
    return count;
}

const char *ladder_format_size(char buf[32], size_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    for (; v >= 1024 && u < 4; u++)
        v /= 1024;
    snprintf(buf, 32, v == floor(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

static int clamp_count(int n, int max)
{
    return n < 1 ? 1 : n > max ? max : n;
}

double ladder_median(const double *x, int n)
{
    double s[LADDER_MAX_REPEATS];
    int count = n < LADDER_MAX_REPEATS ? n : LADDER_MAX_REPEATS;
    if (count < 1)
        return NAN;
    memcpy(s, x, (size_t)count * sizeof *s);
    return median_of(s, (size_t)count);
}

static spread team_spread(int threads, ladder_work work, void *ctx,
                          int repeats)
{
    double seconds[LADDER_MAX_REPEATS];
    repeats = clamp_count(repeats, LADDER_MAX_REPEATS);
    ladder_team_run(threads, work, ctx);            /* warm-up, not counted */
    for (int r = 0; r < repeats; r++)
        seconds[r] = ladder_team_run(threads, work, ctx);
    return spread_of(seconds, (size_t)repeats);
}

static spread rate_of(double work, spread seconds)
{
    return (spread){ work / seconds.median, work / seconds.max,
                     work / seconds.min };
}

typedef struct {
    ladder_work work;
    void *ctx;
    pthread_barrier_t start;
    double began[LADDER_MAX_THREADS], ended[LADDER_MAX_THREADS];
} team;

typedef struct { team *t; int id; } team_member;

static void pin_to_cpu(int id)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    int skip = id % CPU_COUNT(&allowed);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &allowed) && skip-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            pthread_setaffinity_np(pthread_self(), sizeof one, &one);
            return;
        }
}

static void *team_member_main(void *arg)
{
    team_member *m = arg;
    team *t = m->t;
    pin_to_cpu(m->id);
    pthread_barrier_wait(&t->start);
    t->began[m->id] = now_seconds();
    t->work(t->ctx, m->id);
    t->ended[m->id] = now_seconds();
    return NULL;
}

double ladder_team_run(int threads, ladder_work work, void *ctx)
{
    threads = clamp_count(threads, LADDER_MAX_THREADS);
    team t = { .work = work, .ctx = ctx };
    pthread_barrier_init(&t.start, NULL, (unsigned)threads);
    pthread_t ids[LADDER_MAX_THREADS];
    team_member members[LADDER_MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        members[i] = (team_member){ &t, i };
        if (pthread_create(&ids[i], NULL, team_member_main, &members[i]) != 0) {
            fprintf(stderr, "ladder: cannot start thread %d of %d\n",
                    i + 1, threads);
            exit(1);
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&t.start);
    double first = t.began[0], last = t.ended[0];
    for (int i = 1; i < threads; i++) {
        first = fmin(first, t.began[i]);
        last = fmax(last, t.ended[i]);
    }
    return last - first;
}

static void touch_slice(void *ctx, int thread)
{
    const ladder_buffer *b = ctx;
    uint64_t *words = (uint64_t *)(b->base + (size_t)thread * b->slice);
    for (size_t i = 0; i < b->slice / sizeof *words; i++)
        words[i] = i;
}

ladder_buffer ladder_buffer_new(size_t slice, int threads)
{
    size_t bytes = fa_mul(slice, (size_t)threads);
    if (bytes > fa_physical_memory()) {
        char want[32], have[32];
        fprintf(stderr, "ladder: a probe buffer of %s does not fit in this "
                "machine's %s\n", fmt_bytes(want, (double)bytes),
                fmt_bytes(have, (double)fa_physical_memory()));
        exit(2);
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "ladder: cannot map %zu bytes for the probe buffer\n",
                bytes);
        exit(2);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    ladder_buffer b = { p, slice, threads };
    ladder_team_run(threads, touch_slice, &b);
    return b;
}

void ladder_buffer_free(ladder_buffer *b)
{
    if (b->base)
        munmap(b->base, b->slice * (size_t)b->threads);
    b->base = NULL;
}

typedef uint64_t line_vector __attribute__((vector_size(64)));

static uint64_t sum_lines(const unsigned char *p, size_t bytes, long passes)
{
    const line_vector *v = (const line_vector *)p;
    size_t count = bytes / sizeof(line_vector);
    line_vector a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
    for (long pass = 0; pass < passes; pass++)
        for (size_t i = 0; i + 4 <= count; i += 4) {
            a += v[i]; b += v[i + 1]; c += v[i + 2]; d += v[i + 3];
        }
    a += b + c + d;
    uint64_t s = 0;
    for (int lane = 0; lane < 8; lane++)
        s += a[lane];
    return s;
}

enum { READ_TARGET_BYTES = 64 << 20 };

typedef struct {
    const ladder_buffer *buf;
    size_t bytes;
    long passes;
    uint64_t sums[LADDER_MAX_THREADS];
} read_job;

static void read_slice(void *ctx, int thread)
{
    read_job *j = ctx;
    const unsigned char *slice = j->buf->base + (size_t)thread * j->buf->slice;
    j->sums[thread] = sum_lines(slice, j->bytes, j->passes);
}

spread ladder_read_spread(const ladder_buffer *b, size_t bytes, int threads,
                          int repeats)
{
    if (threads > b->threads || bytes > b->slice || bytes < 256)
        return (spread){ NAN, NAN, NAN };
    read_job j = { .buf = b, .bytes = bytes / 256 * 256 };
    j.passes = j.bytes >= READ_TARGET_BYTES
             ? 1 : (long)(READ_TARGET_BYTES / j.bytes);
    spread seconds = team_spread(threads, read_slice, &j, repeats);
    double bytes_read = (double)j.bytes * (double)j.passes * threads;
    return rate_of(bytes_read / 1e9, seconds);
}

double ladder_read_gbs(const ladder_buffer *b, size_t bytes, int threads,
                       int repeats)
{
    return ladder_read_spread(b, bytes, threads, repeats).median;
}

typedef struct {
    const void *const *arrays;
    int count, threads;
    size_t steps;                       /* 256-byte steps per array */
    uint64_t sums[LADDER_MAX_THREADS];
} arrays_job;

static void read_parts(void *ctx, int thread)
{
    arrays_job *j = ctx;
    const size_t from = j->steps * (size_t)thread / (size_t)j->threads;
    const size_t to = j->steps * (size_t)(thread + 1) / (size_t)j->threads;
    uint64_t s = 0;
    for (int a = 0; a < j->count; a++)
        s += sum_lines((const unsigned char *)j->arrays[a] + 256 * from, 256 * (to - from), 1);
    j->sums[thread] = s;
}

spread ladder_read_arrays_spread(const void *const *arrays, int count, size_t bytes,
                                 int threads, int repeats)
{
    threads = clamp_count(threads, LADDER_MAX_THREADS);
    arrays_job j = { .arrays = arrays, .count = count, .threads = threads,
                     .steps = bytes / 256 };
    bool usable = count > 0 && j.steps >= (size_t)threads;
    for (int a = 0; a < count; a++)
        usable = usable && (uintptr_t)arrays[a] % 64 == 0;
    if (!usable)
        return (spread){ NAN, NAN, NAN };
    spread seconds = team_spread(threads, read_parts, &j, repeats);
    return rate_of((double)j.steps * 256 * count / 1e9, seconds);
}

enum { LINE_WORDS = 64 / sizeof(uintptr_t) };

static void link_random_cycle(uintptr_t *words, size_t lines, mt19937 *g)
{
    for (size_t i = 0; i < lines; i++)
        words[i * LINE_WORDS] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(((uint64_t)mt_next(g) * i) >> 32);
        uintptr_t swap = words[i * LINE_WORDS];
        words[i * LINE_WORDS] = words[j * LINE_WORDS];
        words[j * LINE_WORDS] = swap;
    }
    for (size_t i = 0; i < lines; i++) {
        uintptr_t to = words[i * LINE_WORDS];
        words[i * LINE_WORDS] = (uintptr_t)&words[to * LINE_WORDS];
    }
}

typedef struct {
    const uintptr_t *at;
    long steps;
} chase_job;

static void chase(void *ctx)
{
    chase_job *j = ctx;
    const uintptr_t *p = j->at;
    for (long s = 0; s < j->steps; s++)
        p = (const uintptr_t *)*p;
    j->at = p;
}

spread ladder_chase_spread(ladder_buffer *b, size_t bytes, long steps,
                           int repeats, mt19937 *g)
{
    size_t lines = bytes / 64;
    if (bytes > b->slice || lines < 2 || lines > UINT32_MAX)
        return (spread){ NAN, NAN, NAN };
    uintptr_t *words = (uintptr_t *)b->base;
    link_random_cycle(words, lines, g);
    chase_job job = { words, steps };
    spread s = time_spread(chase, &job, 1, repeats);
    double per_step = 1e9 / (double)steps;
    return (spread){ s.median * per_step, s.min * per_step, s.max * per_step };
}

double ladder_chase_ns(ladder_buffer *b, size_t bytes, long steps,
                       int repeats, mt19937 *g)
{
    return ladder_chase_spread(b, bytes, steps, repeats, g).median;
}

#if defined(__AVX512F__)
typedef __m512 fma_vector;
enum { FMA_LANES = 16, FMA_REGISTERS = 32 };
#define FMA_ISA "AVX-512"
#define fma_splat(x) _mm512_set1_ps(x)
#define fma_madd(a, m, c) _mm512_fmadd_ps(a, m, c)
#define fma_first(v) _mm512_cvtss_f32(v)
#elif defined(__FMA__) && defined(__AVX__)
typedef __m256 fma_vector;
enum { FMA_LANES = 8, FMA_REGISTERS = 16 };
#define FMA_ISA "AVX2+FMA"
#define fma_splat(x) _mm256_set1_ps(x)
#define fma_madd(a, m, c) _mm256_fmadd_ps(a, m, c)
#define fma_first(v) _mm256_cvtss_f32(v)
#else
typedef float fma_vector;
enum { FMA_LANES = 1, FMA_REGISTERS = 16 };
#define FMA_ISA "scalar"
#define fma_splat(x) (x)
#define fma_madd(a, m, c) fmaf(a, m, c)
#define fma_first(v) (v)
#endif
_Static_assert(LADDER_FMA_CHAINS + 2 <= FMA_REGISTERS,
               "every FMA chain and both constants need a register");
_Static_assert(sizeof(fma_vector) == FMA_LANES * sizeof(float),
               "a vector holds FMA_LANES floats");

void ladder_fma_chains(long iterations, float out[LADDER_FMA_CHAINS])
{
    const fma_vector m = fma_splat(LADDER_FMA_MUL);
    const fma_vector c = fma_splat(LADDER_FMA_ADD);
    fma_vector acc[LADDER_FMA_CHAINS];
    for (int k = 0; k < LADDER_FMA_CHAINS; k++)
        acc[k] = fma_splat(LADDER_FMA_START(k));
    for (long i = 0; i < iterations; i++) {
        #pragma GCC unroll 16
        for (int k = 0; k < LADDER_FMA_CHAINS; k++)
            acc[k] = fma_madd(acc[k], m, c);
    }
    for (int k = 0; k < LADDER_FMA_CHAINS; k++)
        out[k] = fma_first(acc[k]);
}

const char *ladder_fma_isa(void) { return FMA_ISA; }
int ladder_fma_lanes(void) { return FMA_LANES; }

typedef struct {
    long iterations;
    float out[LADDER_MAX_THREADS][LADDER_FMA_CHAINS];
} fma_job;

static void fma_on_core(void *ctx, int thread)
{
    fma_job *j = ctx;
    ladder_fma_chains(j->iterations, j->out[thread]);
}

double ladder_fma_flops(long iterations, int threads)
{
    return (double)iterations * LADDER_FMA_CHAINS * FMA_LANES * 2.0 * threads;
}

spread ladder_fma_spread(int threads, long iterations, int repeats)
{
    fma_job job = { .iterations = iterations };
    spread seconds = team_spread(threads, fma_on_core, &job, repeats);
    return rate_of(ladder_fma_flops(iterations, threads) / 1e9, seconds);
}

double ladder_fma_gflops(int threads, long iterations, int repeats)
{
    return ladder_fma_spread(threads, iterations, repeats).median;
}

void ladder_pick_levels(ladder_profile *p)
{
    size_t above = 0;
    for (int k = 0; k < p->nlevels; k++) {
        ladder_level *l = &p->level[k];
        size_t lo = l->capacity ? 2 * above : above + 1;
        size_t hi = l->capacity ? l->capacity / 2 : SIZE_MAX;
        int first = -1, count = 0;
        for (int i = 0; i < p->npoints; i++)
            if (p->point[i].bytes >= lo && p->point[i].bytes <= hi && count++ == 0)
                first = i;
        if (count > 0) {
            int chosen = l->capacity ? first + count / 2 : first + count - 1;
            const ladder_point *pt = &p->point[chosen];
            l->probe = pt->bytes;
            l->gbs_one = pt->gbs_one;
            l->gbs_all = pt->gbs_all;
            l->latency_ns = pt->latency_ns;
            l->gbs_one_range = pt->gbs_one_range;
            l->gbs_all_range = pt->gbs_all_range;
            l->latency_range = pt->latency_range;
        }
        above = l->capacity;
    }
}

static void write_curve_file(const char *dir, const ladder_profile *p)
{
    FILE *f = data_file(dir, LADDER_CURVE_FILE);
    fprintf(f, "# index 0: bytes_per_core  gbs_one_core  gbs_all_cores"
               "  latency_ns\n");
    for (int i = 0; i < p->npoints; i++) {
        const ladder_point *pt = &p->point[i];
        fprintf(f, "%zu %.17g %.17g %.17g\n", pt->bytes, pt->gbs_one,
                pt->gbs_all, pt->latency_ns);
    }
    fprintf(f, "\n\n# index 1: capacity_bytes  level  probe_bytes\n");
    for (int k = 0; k < p->nlevels; k++) {
        const ladder_level *l = &p->level[k];
        fprintf(f, "%zu %s %zu\n", l->capacity, l->name, l->probe);
    }
    data_close(f);
}

typedef struct {
    const char *key;    /* as it appears in the file                   */
    char   kind;        /* 's', 'S': strings of two sizes; 'i', 'd'    */
    size_t offset;      /* of the field in ladder_profile              */
} machine_key;

static const machine_key machine_keys[] = {
    { "cpu_model",       's', offsetof(ladder_profile, cpu_model) },
    { "cpus",            'i', offsetof(ladder_profile, cpus) },
    { "threads",         'i', offsetof(ladder_profile, threads) },
    { "nominal_mhz",     'd', offsetof(ladder_profile, nominal_mhz) },
    { "max_mhz",         'd', offsetof(ladder_profile, max_mhz) },
    { "virtual_machine", 'i', offsetof(ladder_profile, virtual_machine) },
    { "fma_isa",         'S', offsetof(ladder_profile, fma_isa) },
    { "fma_lanes",       'i', offsetof(ladder_profile, fma_lanes) },
    { "fma_gflops_one",  'd', offsetof(ladder_profile, fma_gflops_one) },
    { "fma_gflops_all",  'd', offsetof(ladder_profile, fma_gflops_all) },
    { "fma_one_min",     'd', offsetof(ladder_profile, fma_one_range.min) },
    { "fma_one_max",     'd', offsetof(ladder_profile, fma_one_range.max) },
    { "fma_all_min",     'd', offsetof(ladder_profile, fma_all_range.min) },
    { "fma_all_max",     'd', offsetof(ladder_profile, fma_all_range.max) },
    { "load_before",     'd', offsetof(ladder_profile, load_before) },
    { "load_after",      'd', offsetof(ladder_profile, load_after) },
    { "others_cpu",      'd', offsetof(ladder_profile, others_cpu) },
    { "busy",            'i', offsetof(ladder_profile, busy) },
    { "attempts",        'i', offsetof(ladder_profile, attempts) },
    { "levels",          'i', offsetof(ladder_profile, nlevels) },
};
enum { MACHINE_KEYS = sizeof machine_keys / sizeof machine_keys[0] };

static void write_machine_file(const char *dir, const ladder_profile *p)
{
    FILE *f = data_file(dir, LADDER_MACHINE_FILE);
    fprintf(f, "# this machine as chapter 1 measured it; "
               "read with ladder_read()\n");
    for (int i = 0; i < MACHINE_KEYS; i++) {
        const machine_key *k = &machine_keys[i];
        const char *field = (const char *)p + k->offset;
        if (k->kind == 's' || k->kind == 'S')
            fprintf(f, "%s = %s\n", k->key, field);
        else if (k->kind == 'i')
            fprintf(f, "%s = %d\n", k->key, *(const int *)field);
        else
            fprintf(f, "%s = %.17g\n", k->key, *(const double *)field);
    }
    fprintf(f, "# levelK = name capacity_bytes probe_bytes"
               " gbs_one_core gbs_all_cores latency_ns\n");
    for (int k = 0; k < p->nlevels; k++) {
        const ladder_level *l = &p->level[k];
        fprintf(f, "level%d = %s %zu %zu %.17g %.17g %.17g\n", k, l->name,
                l->capacity, l->probe, l->gbs_one, l->gbs_all, l->latency_ns);
    }
    data_close(f);
}

void ladder_write(const char *dir, const ladder_profile *p)
{
    write_curve_file(dir, p);
    write_machine_file(dir, p);
}

static int read_error(char *err, size_t errlen, const char *path, int line,
                      const char *what)
{
    if (line > 0)
        snprintf(err, errlen, "%s:%d: %s", path, line, what);
    else
        snprintf(err, errlen, "%s: %s", path, what);
    return -1;
}

static bool parse_machine_value(ladder_profile *p, const machine_key *k,
                                const char *value)
{
    char *field = (char *)p + k->offset, *end;
    switch (k->kind) {
    case 's': snprintf(field, sizeof p->cpu_model, "%s", value); return true;
    case 'S': snprintf(field, sizeof p->fma_isa, "%s", value); return true;
    case 'i': *(int *)field = (int)strtol(value, &end, 10); break;
    default:  *(double *)field = strtod(value, &end);
    }
    return end != value && *end == '\0';
}

static bool parse_level_line(ladder_profile *p, const char *key,
                             const char *value, bool seen[])
{
    char *end;
    long k = strtol(key + strlen("level"), &end, 10);
    if (*end != '\0' || k < 0 || k >= p->nlevels || k >= LADDER_MAX_LEVELS)
        return false;
    ladder_level *l = &p->level[k];
    int used = 0;
    if (sscanf(value, "%7s %zu %zu %lf %lf %lf%n", l->name, &l->capacity,
               &l->probe, &l->gbs_one, &l->gbs_all, &l->latency_ns, &used) != 6
        || value[used] != '\0')
        return false;
    seen[MACHINE_KEYS + k] = true;
    return true;
}

static bool parse_machine_line(ladder_profile *p, char *line, bool seen[])
{
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0')
        return true;
    char *eq = strstr(line, " = ");
    if (!eq)
        return false;
    *eq = '\0';
    const char *value = eq + 3;
    for (int i = 0; i < MACHINE_KEYS; i++)
        if (strcmp(line, machine_keys[i].key) == 0)
            return (seen[i] = parse_machine_value(p, &machine_keys[i], value));
    if (strncmp(line, "level", 5) == 0 && strcmp(line, "levels") != 0)
        return parse_level_line(p, line, value, seen);
    return true;
}

static int read_machine_file(const char *path, ladder_profile *p, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return read_error(err, errlen, path, 0, strerror(errno));
    bool seen[MACHINE_KEYS + LADDER_MAX_LEVELS] = { false };
    char line[512];
    for (int n = 1; fgets(line, sizeof line, f); n++)
        if (!parse_machine_line(p, line, seen)) {
            fclose(f);
            return read_error(err, errlen, path, n,
                              "not a valid key = value line");
        }
    fclose(f);
    for (int i = 0; i < MACHINE_KEYS; i++)
        if (!seen[i]) {
            char what[64];
            snprintf(what, sizeof what, "missing key %s", machine_keys[i].key);
            return read_error(err, errlen, path, 0, what);
        }
    for (int k = 0; k < p->nlevels; k++)
        if (!seen[MACHINE_KEYS + k])
            return read_error(err, errlen, path, 0, "missing a level line");
    p->fma_one_range.median = p->fma_gflops_one;
    p->fma_all_range.median = p->fma_gflops_all;
    return 0;
}

static int read_curve_file(const char *path, ladder_profile *p, char *err,
                           size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return read_error(err, errlen, path, 0, strerror(errno));
    char line[256];
    int status = 0;
    for (int n = 1; status == 0 && fgets(line, sizeof line, f); n++) {
        if (line[0] == '#')
            continue;
        if (line[0] == '\n' && p->npoints > 0)
            break;
        ladder_point *pt = &p->point[p->npoints];
        int used = 0;
        if (p->npoints == LADDER_MAX_POINTS)
            status = read_error(err, errlen, path, n, "too many points");
        else if (sscanf(line, "%zu %lf %lf %lf %n", &pt->bytes, &pt->gbs_one,
                        &pt->gbs_all, &pt->latency_ns, &used) != 4
                 || line[used] != '\0')
            status = read_error(err, errlen, path, n,
                                "expected a size and three numbers");
        else
            p->npoints++;
    }
    fclose(f);
    return status;
}

int ladder_read(const char *dir, ladder_profile *p, char *err, size_t errlen)
{
    char path[4096];
    *p = (ladder_profile){ 0 };
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_MACHINE_FILE);
    if (read_machine_file(path, p, err, errlen) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_CURVE_FILE);
    return read_curve_file(path, p, err, errlen);
}

static double cpu_busy_seconds(void)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int got = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                         &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) : 0;
    if (f) fclose(f);
    if (got < 4) return NAN;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
         + 1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static double load_average(void)
{
    double load = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1) load = NAN;
    if (f) fclose(f);
    return load;
}

ladder_sample ladder_sample_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (ladder_sample){ .wall = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec,
                            .busy = cpu_busy_seconds(), .self = self_cpu_seconds(),
                            .load = load_average() };
}

ladder_noise ladder_noise_between(ladder_sample before, ladder_sample after)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const double span = (after.wall - before.wall) * (double)(cpus > 0 ? cpus : 1);
    double others = ((after.busy - before.busy) - (after.self - before.self)) / span;
    if (others < 0) others = 0;
    if (others > 1) others = 1;
    return (ladder_noise){ .load_before = before.load, .load_after = after.load,
                           .others = span > 0 ? others : NAN };
}

#define LADDER_BUSY_OTHERS 0.10
bool ladder_busy(ladder_noise n, double spread_ratio, double spread_limit)
{
    return (!isnan(n.others) && n.others > LADDER_BUSY_OTHERS) || spread_ratio > spread_limit;
}

const char *ladder_noise_note(char *buf, size_t size, const char *what,
                              ladder_noise n, double spread_ratio, bool busy)
{
    char share[32] = "an unknown share", spread[80] = "";
    if (!isnan(n.others)) snprintf(share, sizeof share, "%.0f%%", 100 * n.others);
    if (!isnan(spread_ratio))
        snprintf(spread, sizeof spread, ", and the repeats of one timing spread up to %.2fx",
                 spread_ratio);
    snprintf(buf, size, "While %s ran, other processes took %s of this machine's CPU "
             "time (load average %.1f before, %.1f after)%s%s", what, share,
             n.load_before, n.load_after, spread,
             busy ? ": these numbers come from a busy machine, and they move with its other "
                    "work." : "; the machine was quiet.");
    return buf;
}

const char *ladder_compare_times(char *buf, size_t size, double seconds, double reference)
{
    const double x = reference / seconds;
    if (x >= 1.05) snprintf(buf, size, "ran %.2f times as fast as", x);
    else if (x <= 1 / 1.05) snprintf(buf, size, "took %.2f times as long as", 1 / x);
    else snprintf(buf, size, "ran about as fast (%.2f times) as", x);
    return buf;
}

void plan_sizes(ladder_plan *plan, size_t max_bytes, bool quick)
{
    plan->count = 0;
    for (size_t s = quick ? SWEEP_FIRST_QUICK : SWEEP_FIRST;
         s <= max_bytes && plan->count < LADDER_MAX_POINTS;) {
        plan->sizes[plan->count++] = s;
        size_t next = s * (quick || s >= SWEEP_DENSE_END ? 4 : 2);
        if (next > max_bytes && s >= SWEEP_DENSE_END && s < max_bytes)
            next = max_bytes;
        s = next;
    }
}

void measure_ladder(const ladder_plan *plan, ladder_profile *p, bool progress)
{
    *p = (ladder_profile){ .cpus = ladder_cpus(), .threads = plan->threads,
                           .nominal_mhz = ladder_nominal_mhz(),
                           .max_mhz = ladder_max_mhz(),
                           .virtual_machine = ladder_virtual(),
                           .fma_lanes = ladder_fma_lanes() };
    ladder_cpu_model(p->cpu_model, sizeof p->cpu_model);
    snprintf(p->fma_isa, sizeof p->fma_isa, "%s", ladder_fma_isa());
    p->nlevels = ladder_caches(p->level, LADDER_MAX_LEVELS - 1);
    p->level[p->nlevels++] = (ladder_level){ .name = "DRAM", .gbs_one = NAN,
                                             .gbs_all = NAN, .latency_ns = NAN };
    size_t largest = plan->sizes[plan->count - 1];
    if (progress)
        fprintf(stderr, "ch01_memory_ladder: writing %zu MiB x %d threads"
                " before reading\n", largest >> 20, plan->threads);
    ladder_buffer buf = ladder_buffer_new(largest, plan->threads);
    for (int i = 0; i < plan->count; i++) {
        ladder_point *pt = &p->point[p->npoints++];
        pt->bytes = plan->sizes[i];
        pt->gbs_one_range = ladder_read_spread(&buf, pt->bytes, 1, plan->repeats);
        pt->gbs_all_range = pt->gbs_one_range;
        if (plan->threads > 1)
            pt->gbs_all_range = ladder_read_spread(&buf, pt->bytes, plan->threads,
                                                   plan->repeats);
        pt->gbs_one = pt->gbs_one_range.median;
        pt->gbs_all = pt->gbs_all_range.median;
        if (progress)
            fprintf(stderr, "ch01_memory_ladder: read %8zu KiB per core: "
                    "%.1f GB/s, %d cores %.1f GB/s\n", pt->bytes >> 10,
                    pt->gbs_one, plan->threads, pt->gbs_all);
    }
    mt19937 g;
    mt_seed(&g, plan->seed);
    for (int i = 0; i < plan->count; i++) {
        ladder_point *pt = &p->point[i];
        pt->latency_range = ladder_chase_spread(&buf, pt->bytes, plan->chase_steps,
                                                plan->repeats, &g);
        pt->latency_ns = pt->latency_range.median;
        if (progress)
            fprintf(stderr, "ch01_memory_ladder: chase %8zu KiB: "
                    "%.2f ns per load\n", pt->bytes >> 10, pt->latency_ns);
    }
    ladder_buffer_free(&buf);
    p->fma_one_range = ladder_fma_spread(1, plan->fma_iterations, plan->repeats);
    p->fma_all_range = ladder_fma_spread(plan->threads, plan->fma_iterations,
                                         plan->repeats);
    p->fma_gflops_one = p->fma_one_range.median;
    p->fma_gflops_all = p->fma_all_range.median;
    if (progress)
        fprintf(stderr, "ch01_memory_ladder: %s FMA: %.1f GFLOP/s on one core, "
                "%.1f on %d\n", p->fma_isa, p->fma_gflops_one, p->fma_gflops_all,
                plan->threads);
    ladder_pick_levels(p);
}

#define LADDER_FMA_SPREAD 1.10
static double fma_spread_ratio(const ladder_profile *p)
{
    const double one = p->fma_one_range.max / p->fma_one_range.min;
    const double all = p->fma_all_range.max / p->fma_all_range.min;
    return one > all ? one : all;
}

static void judge_quiet(ladder_profile *p, ladder_sample before)
{
    const ladder_noise n = ladder_noise_between(before, ladder_sample_now());
    p->load_before = n.load_before;
    p->load_after = n.load_after;
    p->others_cpu = n.others;
    p->busy = ladder_busy(n, fma_spread_ratio(p), LADDER_FMA_SPREAD);
}

static bool quieter(const ladder_profile *a, const ladder_profile *b)
{
    if (a->busy != b->busy) return a->busy < b->busy;
    return a->others_cpu < b->others_cpu;
}

void measure_ladder_quietly(const ladder_plan *plan, int attempts, ladder_profile *p,
                            bool progress)
{
    ladder_profile tried;
    for (int a = 1; a <= attempts; a++) {
        const ladder_sample before = ladder_sample_now();
        measure_ladder(plan, &tried, progress);
        judge_quiet(&tried, before);
        if (a == 1 || quieter(&tried, p)) *p = tried;
        p->attempts = a;
        if (!tried.busy) break;
        if (progress && a < attempts)
            fprintf(stderr, "ch01_memory_ladder: a busy machine (others took %.0f%%, FMA repeats "
                    "spread %.2fx): measuring again\n", 100 * tried.others_cpu,
                    fma_spread_ratio(&tried));
        if (a < attempts) sleep(1);
    }
}

int ladder_profile_for(const char *path, const char *dir, int threads, bool levels,
                       ladder_profile *p, char *err, size_t errlen)
{
    const char *env = getenv("FA_MACHINE");
    char in_dir[4096];
    if (!path && env && *env) path = env;
    if (!path && dir) {
        snprintf(in_dir, sizeof in_dir, "%s/%s", dir, LADDER_MACHINE_FILE);
        if (access(in_dir, R_OK) == 0) path = in_dir;
    }
    *p = (ladder_profile){ 0 };
    if (path) return read_machine_file(path, p, err, errlen);
    if (levels) {
        ladder_plan plan = { .threads = threads, .repeats = 3, .chase_steps = 1 << 14,
                             .fma_iterations = 1 << 20 };
        plan_sizes(&plan, SWEEP_DENSE_END, true);
        measure_ladder_quietly(&plan, 1, p, false);
    } else {
        const ladder_plan *plan = &(ladder_plan){ .threads = threads };
        const ladder_sample before = ladder_sample_now();
        *p = (ladder_profile){ .cpus = ladder_cpus(), .threads = plan->threads,
                               .nominal_mhz = ladder_nominal_mhz(),
                               .max_mhz = ladder_max_mhz(),
                               .virtual_machine = ladder_virtual(),
                               .fma_lanes = ladder_fma_lanes() };
        ladder_cpu_model(p->cpu_model, sizeof p->cpu_model);
        snprintf(p->fma_isa, sizeof p->fma_isa, "%s", ladder_fma_isa());
        p->fma_one_range = ladder_fma_spread(1, 1 << 20, 5);
        p->fma_all_range = ladder_fma_spread(threads, 1 << 20, 5);
        p->fma_gflops_one = p->fma_one_range.median;
        p->fma_gflops_all = p->fma_all_range.median;
        judge_quiet(p, before);
        p->attempts = 1;
    }
    return 1;
}

double ladder_peak_for(const ladder_profile *p, int threads)
{
    return threads == 1 ? p->fma_gflops_one
         : threads == p->threads ? p->fma_gflops_all : NAN;
}

const char *ladder_peak_text(char buf[64], const ladder_profile *p, int threads)
{
    const spread s = threads == 1 ? p->fma_one_range : p->fma_all_range;
    if (isnan(ladder_peak_for(p, threads))) return strcpy(buf, "-");
    return fmt_spread(buf, s.median, s.min, s.max);
}

static bool is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
size_t ladder_recorded_files(const char *path, char (*names)[LADDER_PATH_MAX], size_t max)
{
    glob_t g = { 0 };
    char pattern[LADDER_PATH_MAX + 16];
    size_t count = 0;
    snprintf(pattern, sizeof pattern, "%s/bench-*.txt", path);
    if (glob(pattern, 0, NULL, &g) == 0)
        for (; count < g.gl_pathc && count < max; count++)
            snprintf(names[count], LADDER_PATH_MAX, "%s", g.gl_pathv[count]);
    else if (max > 0 && is_regular_file(path))
        snprintf(names[count++], LADDER_PATH_MAX, "%s", path);
    globfree(&g);
    return count;
}

static const char *fmt_measured(char buf[32], double x)
{
    return isnan(x) ? strcpy(buf, "-") : fmt_sig(buf, x, 2);
}

static const char *fmt_range(char buf[64], spread s)
{
    return fmt_spread(buf, s.median, s.min, s.max);
}

void report_machine(report *r, const ladder_profile *p,
                           const ladder_plan *plan)
{
    static const char *const columns[] = { "item", "value", NULL };
    table *t = report_table(r, "machine", "This machine", columns);
    char buf[32];
    table_rowf(t, "processor|%s", p->cpu_model);
    table_rowf(t, "cores used|%d of %d", plan->threads, p->cpus);
    table_rowf(t, "clock reported|%.0f MHz (nominal)", p->nominal_mhz);
    if (p->max_mhz > 0)
        table_rowf(t, "frequency driver|maximum %.0f MHz", p->max_mhz);
    else
        table_rowf(t, "frequency driver|none");
    table_rowf(t, "virtual machine|%s", p->virtual_machine ? "yes" : "no");
    for (int k = 0; k < p->nlevels - 1; k++)
        table_rowf(t, "%s cache|%s", p->level[k].name,
                   ladder_format_size(buf, p->level[k].capacity));
    table_rowf(t, "FMA kernel|%s, %d lanes, %d chains", p->fma_isa, p->fma_lanes,
               LADDER_FMA_CHAINS);
    report_fact(r, "cpu_model", p->cpu_model);
    report_factf(r, "cpus", "%d", p->cpus);
    report_factf(r, "threads", "%d", plan->threads);
    report_factf(r, "nominal_mhz", "%.0f", p->nominal_mhz);
    report_fact(r, "virtual", p->virtual_machine ? "yes" : "no");
    report_fact(r, "fma_isa", p->fma_isa);
    report_factf(r, "fma_lanes", "%d", p->fma_lanes);
    report_factf(r, "fma_chains", "%d", LADDER_FMA_CHAINS);
    report_fact(r, "sweep_first", ladder_format_size(buf, p->point[0].bytes));
    report_fact(r, "sweep_last",
                ladder_format_size(buf, p->point[p->npoints - 1].bytes));
    report_fact(r, "sweep_dense_end", ladder_format_size(buf, SWEEP_DENSE_END));
    const ladder_noise n = { p->load_before, p->load_after, p->others_cpu };
    char note[320];
    table_rowf(t, "quiet check|%s, attempt %d of up to %d", p->busy ? "busy" : "quiet",
               p->attempts, plan->attempts);
    report_fact(r, "busy", p->busy ? "yes" : "no");
    report_factf(r, "others_cpu", "%.0f%%", 100 * p->others_cpu);
    report_fact(r, "noise_note", ladder_noise_note(note, sizeof note, "the ladder's measurement",
                                                   n, fma_spread_ratio(p), p->busy));
    const double fma = fma_spread_ratio(p);
    if (p->attempts == 1 && !p->busy)
        snprintf(note, sizeof note, "The first attempt passed the quiet check: the multiply-add "
                 "repeats agreed within %.0f%%.", 100 * (fma - 1));
    else
        snprintf(note, sizeof note, "The program measured %d time%s looking for a quiet machine "
                 "and kept the quietest attempt, whose multiply-add repeats spread by %.0f%%.",
                 p->attempts, p->attempts == 1 ? "" : "s", 100 * (fma - 1));
    report_fact(r, "attempts_note", note);
}

void report_sweep(report *r, const ladder_profile *p)
{
    static const char *const columns[] = { "working set", "GB/s one core",
        "GB/s all cores", "latency ns", NULL };
    table *t = report_table(r, "sweep", "Read bandwidth and latency against "
                            "working set (per core)", columns);
    for (int i = 0; i < p->npoints; i++) {
        const ladder_point *pt = &p->point[i];
        char size[32], one[64], all[64], ns[64];
        table_rowf(t, "%s|%s|%s|%s", ladder_format_size(size, pt->bytes),
                   fmt_range(one, pt->gbs_one_range), fmt_range(all, pt->gbs_all_range),
                   fmt_range(ns, pt->latency_range));
    }
    report_note(r, "Each core reads its own working set of the size shown;"
                "\nthe latency is one core chasing a random cycle through it.");
}

static void report_level_facts(report *r, const char *key,
                               const ladder_level *l)
{
    static const ladder_level none = { .gbs_one = NAN, .gbs_all = NAN,
        .latency_ns = NAN, .gbs_one_range = { NAN, NAN, NAN },
        .gbs_all_range = { NAN, NAN, NAN }, .latency_range = { NAN, NAN, NAN } };
    static const char *const suffix[] = { "size", "gbs_one", "gbs_all", "ns" };
    char value[4][64], name[48];
    l = l ? l : &none;
    strcpy(value[0], "-");
    if (l->capacity)
        ladder_format_size(value[0], l->capacity);
    fmt_range(value[1], l->gbs_one_range);
    fmt_range(value[2], l->gbs_all_range);
    fmt_range(value[3], l->latency_range);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s_%s", key, suffix[i]);
        report_fact(r, name, value[i]);
    }
}

void report_ladder(report *r, const ladder_profile *p)
{
    static const char *const columns[] = { "level", "capacity", "read at",
        "GB/s one core", "GB/s all cores", "latency ns", NULL };
    table *t = report_table(r, "ladder", "The memory ladder of this machine",
                            columns);
    for (int k = 0; k < p->nlevels; k++) {
        const ladder_level *l = &p->level[k];
        char cap[32], at[32], one[64], all[64], ns[64];
        table_rowf(t, "%s|%s|%s|%s|%s|%s", l->name,
                   l->capacity ? ladder_format_size(cap, l->capacity) : "-",
                   l->probe ? ladder_format_size(at, l->probe) : "-",
                   fmt_range(one, l->gbs_one_range), fmt_range(all, l->gbs_all_range),
                   fmt_range(ns, l->latency_range));
    }
    report_note(r, "A cache is read at the middle working set between twice "
                "the level\nabove and half its capacity; DRAM at the largest.");
    static const char *const keys[] = { "l1", "l2", "l3" };
    report_note(r, "Each level by position (GB/s, ns):");
    for (int k = 0; k < 3; k++)
        report_level_facts(r, keys[k], k < p->nlevels - 1 ? &p->level[k] : NULL);
    report_level_facts(r, "dram", &p->level[p->nlevels - 1]);
}

void report_ladder_ratios(report *r, const ladder_profile *p)
{
    const ladder_level *l1 = &p->level[0], *dram = &p->level[p->nlevels - 1];
    char buf[32];
    report_fact(r, "l1_over_dram",
                fmt_measured(buf, l1->gbs_one / dram->gbs_one));
    report_note(r, "The arithmetic peak (GFLOP/s), the ridge point (flops per "
                "byte of\nDRAM traffic) and the clock the peak implies:");
    char range[64];
    report_fact(r, "fma_one", fmt_range(range, p->fma_one_range));
    report_fact(r, "fma_all", fmt_range(range, p->fma_all_range));
    report_fact(r, "fma_scaling",
                fmt_measured(buf, p->fma_gflops_all / p->fma_gflops_one));
    report_fact(r, "ridge",
                fmt_measured(buf, p->fma_gflops_all / dram->gbs_all));
    enum { ASSUMED_FMA_UNITS = 2 };
    double per_cycle = ASSUMED_FMA_UNITS * 2.0 * p->fma_lanes;
    double ghz = p->fma_gflops_one / per_cycle;
    report_factf(r, "fma_units", "%d", ASSUMED_FMA_UNITS);
    report_factf(r, "flops_per_cycle", "%.0f", per_cycle);
    report_fact(r, "implied_ghz", fmt_measured(buf, ghz));
    char note[320];
    if (p->max_mhz > 0) {
        double peak = per_cycle * p->max_mhz * 1e-3 * p->threads;
        char ratio[32];
        snprintf(note, sizeof note, "the frequency driver reports a maximum of "
                 "%.0f MHz, so %d cores with %d FMA units each peak at %s GFLOP/s, "
                 "and the measured rate is %s of that.", p->max_mhz, p->threads,
                 ASSUMED_FMA_UNITS, fmt_sig(buf, peak, 2),
                 fmt_measured(ratio, p->fma_gflops_all / peak));
    } else
        snprintf(note, sizeof note, "/proc/cpuinfo says %.0f MHz, but that is "
                 "the nominal rate of the time-stamp counter, and there is no "
                 "frequency driver to ask for the real one.", p->nominal_mhz);
    report_fact(r, "clock_note", note);
    const double ABOUT_NOMINAL = 0.02, mhz = ghz * 1e3;
    const char *vs = p->nominal_mhz <= 0 ? "not comparable with"
                   : mhz > p->nominal_mhz * (1 + ABOUT_NOMINAL) ? "above"
                   : mhz < p->nominal_mhz * (1 - ABOUT_NOMINAL) ? "below"
                   : "about";
    report_fact(r, "implied_vs_nominal", vs);
    char scaling[400], ratio[32];
    int used = snprintf(scaling, sizeof scaling, "With %d cores", p->threads);
    for (int k = 0; k < p->nlevels - 1 && k < 2; k++)
        used += snprintf(scaling + used, sizeof scaling - (size_t)used, "%s the %s rate is %s "
                         "times", k ? " and" : "", p->level[k].name,
                         fmt_measured(ratio, p->level[k].gbs_all / p->level[k].gbs_one));
    snprintf(scaling + used, sizeof scaling - (size_t)used, " that of one core; DRAM, which "
             "they share, gives %s times, and %d cores together read it at %s GB/s.",
             fmt_measured(ratio, dram->gbs_all / dram->gbs_one), p->threads,
             fmt_measured(buf, dram->gbs_all));
    report_fact(r, "scaling_note", scaling);
}

