/* bf16.c — bf16 numbers and the models of the bf16 instructions.
   Tangled from chapters/ch11_amx.nw. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cpu/bf16.h"
static inline uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
static inline float f32_of_bits(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
static inline uint32_t bits_exponent(uint32_t u) { return (u >> 23) & 0xffu; }
float bf16_float(bf16 h) { return f32_of_bits((uint32_t)h << 16); }
static float quiet_nan(float x) { return f32_of_bits(f32_bits(x) | 0x400000u); }
static float nan_or_default(float x) { return isnan(x) ? f32_of_bits(BF16_DEFAULT_NAN) : x; }
static inline bool bf16_is_nan(bf16 h) { return ((h >> 7) & 0xffu) == 0xffu && (h & 0x7fu); }
bf16 bf16_round(float x)
{
    const uint32_t u = f32_bits(x);
    if (bits_exponent(u) == 0) return (bf16)((u >> 16) & 0x8000u);
    if (bits_exponent(u) == 0xff)
        return (bf16)((u >> 16) | ((u & 0x7fffffu) ? 0x40u : 0u));
    return (bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float flush_denormal(float x)
{
    const uint32_t u = f32_bits(x);
    return bits_exponent(u) == 0 ? f32_of_bits(u & 0x80000000u) : x;
}

static float fused_step(float acc, float a, float b)
{
    if (isnan(a)) return quiet_nan(a);
    if (isnan(b)) return quiet_nan(b);
    if (isnan(acc)) return quiet_nan(acc);
    const double product = (double)flush_denormal(a) * (double)flush_denormal(b);
    const double sum = product + (double)flush_denormal(acc);
    return nan_or_default(flush_denormal((float)sum));
}
static float flushed_sum(float x, float y)
{
    if (isnan(x)) return quiet_nan(x);
    if (isnan(y)) return quiet_nan(y);
    return nan_or_default(flush_denormal(flush_denormal(x) + flush_denormal(y)));
}
float bf16_dot_lane(float acc, uint32_t a, uint32_t b)
{
    const bf16 order[4] = { (bf16)a, (bf16)b, (bf16)(a >> 16), (bf16)(b >> 16) };
    for (int i = 0; i < 4; i++)
        if (bf16_is_nan(order[i])) return f32_of_bits(((uint32_t)order[i] << 16) | 0x400000u);
    if (isnan(acc)) return f32_of_bits(f32_bits(acc) | 0x400000u);
    acc = fused_step(acc, bf16_float((bf16)(a >> 16)), bf16_float((bf16)(b >> 16)));
    acc = fused_step(acc, bf16_float((bf16)a), bf16_float((bf16)b));
    return isnan(acc) ? f32_of_bits(BF16_DEFAULT_NAN) : acc;
}
void amx_tile_dot(float *c, size_t ldc, const bf16 *a, size_t lda, const bf16 *b,
                  size_t ldb, size_t rows, size_t pairs, size_t cols)
{
    for (size_t m = 0; m < rows; m++) {
        float t[2 * AMX_TILE_COLS] = { 0 };
        for (size_t k = 0; k < pairs; k++)
            for (size_t n = 0; n < 2 * cols; n++)
                t[n] = fused_step(t[n], bf16_float(a[m * lda + 2 * k + n % 2]),
                                  bf16_float(b[k * ldb + n]));
        for (size_t n = 0; n < cols; n++)
            c[m * ldc + n] = flushed_sum(c[m * ldc + n], flushed_sum(t[2 * n], t[2 * n + 1]));
    }
}
static bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit)
{
    unsigned r[4] = { 0 };
    if (__get_cpuid_max(0, NULL) < leaf) return false;
    __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
    return (r[reg] >> bit) & 1u;
}

bool bf16_cpu_has_avx512bf16(void)
{
    __builtin_cpu_init();
    return bf16_isa_allowed() && __builtin_cpu_supports("avx512f")
        && cpuid_bit(7, 1, 0, 5);
}
bool amx_available(char why[160])
{
    if (!bf16_isa_allowed()) {
        snprintf(why, 160, "FA_ISA=%s asks for no AVX-512", getenv("FA_ISA"));
        return false;
    }
    if (!cpuid_bit(7, 0, 3, 24) || !cpuid_bit(7, 0, 3, 22)) {
        snprintf(why, 160, "this CPU has no AMX-TILE and AMX-BF16");
        return false;
    }
    if (syscall(SYS_arch_prctl, AMX_ARCH_REQ_XCOMP_PERM, AMX_XFEATURE_XTILEDATA) != 0) {
        snprintf(why, 160, "Linux refused the tile state (arch_prctl: %s)", strerror(errno));
        return false;
    }
    snprintf(why, 160, "AMX-TILE and AMX-BF16, tile state granted");
    return true;
}
bool bf16_isa_allowed(void)
{
    return fa_isa_cap(NULL) == FA_ISA_AVX512;
}
__attribute__((target("avx512f,avx512bf16")))
void bf16_hw_round32(const float *x, bf16 *out)
{
    const __m512bh r = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x));
    _mm512_storeu_si512(out, (__m512i)r);
}

__attribute__((target("avx512f,avx512bf16")))
void bf16_hw_dot16(float *acc, const uint32_t *a, const uint32_t *b)
{
    const __m512bh va = (__m512bh)_mm512_loadu_si512(a), vb = (__m512bh)_mm512_loadu_si512(b);
    _mm512_storeu_ps(acc, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), va, vb));
}
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tile_config;

__attribute__((target("amx-tile")))
void amx_configure_tiles(void)
{
    static const amx_tile_config cfg = {
        .palette = 1,
        .colsb = { AMX_TILE_BYTES, AMX_TILE_BYTES, AMX_TILE_BYTES, AMX_TILE_BYTES,
                   AMX_TILE_BYTES, AMX_TILE_BYTES, AMX_TILE_BYTES, AMX_TILE_BYTES },
        .rows = { AMX_TILE_ROWS, AMX_TILE_ROWS, AMX_TILE_ROWS, AMX_TILE_ROWS,
                  AMX_TILE_ROWS, AMX_TILE_ROWS, AMX_TILE_ROWS, AMX_TILE_ROWS },
    };
    _tile_loadconfig(&cfg);
}

__attribute__((target("amx-tile")))
void amx_release_tiles(void) { _tile_release(); }
__attribute__((target("amx-tile")))
void amx_configure_decode_tiles(void)
{
    static const amx_tile_config cfg = {
        .palette = 1,
        .colsb = { 32, 32, AMX_TILE_BYTES, AMX_TILE_BYTES, 32, 32, AMX_TILE_BYTES, AMX_TILE_BYTES },
        .rows = { AMX_TILE_ROWS, AMX_TILE_ROWS, 8, AMX_TILE_ROWS, AMX_TILE_ROWS, AMX_TILE_ROWS,
                  AMX_TILE_ROWS, 8 },
    };
    _tile_loadconfig(&cfg);
}
__attribute__((target("amx-tile,amx-bf16")))
void amx_hw_tile_dot(float c[256], const bf16 a[512], const bf16 b[512])
{
    amx_configure_tiles();
    _tile_loadd(0, c, 64);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbf16ps(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
}
static const uint32_t HOSTILE[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u,
    0x00800000u, 0x80800000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
    0x7f800001u, 0xffc12345u, 0x3f808000u, 0x3f818000u, 0x3f800000u, 0xbf800000u,
    0x1f800000u, 0x20000000u, 0x00010000u, 0x80010000u, 0x7f7f8000u, 0x5f800000u,
};

uint32_t bf16_hostile_bits(mt19937 *mt, int kind)
{
    const uint32_t r = mt_next(mt);
    if (kind == 0) return HOSTILE[r % (sizeof HOSTILE / sizeof HOSTILE[0])];
    if (kind == 1) return (r & 0x80ffffffu) | ((r % 2 ? 1u + r % 24u : 100u + r % 30u) << 23);
    return r;
}
bf16_comparison bf16_compare_rounding(uint32_t seed, size_t rounds)
{
    bf16_comparison c = { 0 };
    mt19937 mt;
    mt_seed(&mt, seed);
    for (size_t r = 0; r < rounds; r++) {
        float x[32];
        bf16 hw[32];
        for (int i = 0; i < 32; i++) x[i] = f32_of_bits(bf16_hostile_bits(&mt, (int)(r % 3)));
        bf16_hw_round32(x, hw);
        for (int i = 0; i < 32; i++) {
            c.cases++;
            if (hw[i] != bf16_round(x[i])) bf16_note_difference(&c, f32_bits(x[i]), 0, 0, hw[i], bf16_round(x[i]));
        }
    }
    return c;
}
bf16_comparison bf16_compare_dot(uint32_t seed, size_t rounds)
{
    bf16_comparison c = { 0 };
    mt19937 mt;
    mt_seed(&mt, seed);
    for (size_t r = 0; r < rounds; r++) {
        float acc[16], model[16];
        uint32_t a[16], b[16];
        for (int i = 0; i < 16; i++) {
            const int kind = (int)((r + (size_t)i) % 3);
            acc[i] = f32_of_bits(bf16_hostile_bits(&mt, kind));
            a[i] = (bf16_hostile_bits(&mt, kind) >> 16) | (bf16_hostile_bits(&mt, kind) & 0xffff0000u);
            b[i] = (bf16_hostile_bits(&mt, kind) >> 16) | (bf16_hostile_bits(&mt, kind) & 0xffff0000u);
            model[i] = bf16_dot_lane(acc[i], a[i], b[i]);
        }
        float before[16];
        memcpy(before, acc, sizeof before);
        bf16_hw_dot16(acc, a, b);
        for (int i = 0; i < 16; i++) {
            c.cases++;
            if (f32_bits(acc[i]) != f32_bits(model[i]))
                bf16_note_difference(&c, f32_bits(before[i]), a[i], b[i], f32_bits(acc[i]),
                                     f32_bits(model[i]));
        }
    }
    return c;
}
void bf16_note_difference(bf16_comparison *c, uint32_t x, uint32_t a, uint32_t b,
                          uint32_t hw, uint32_t model)
{
    const bool both_nan = isnan(f32_of_bits(hw)) && isnan(f32_of_bits(model));
    if (c->differ < 4) {
        const uint32_t row[5] = { x, a, b, hw, model };
        memcpy(c->first[c->differ], row, sizeof row);
    }
    c->differ++;
    c->nan_payloads += both_nan;
}
bf16_comparison amx_compare_tile_dot(uint32_t seed, size_t rounds)
{
    bf16_comparison c = { 0 };
    mt19937 mt;
    mt_seed(&mt, seed);
    for (size_t r = 0; r < rounds; r++) {
        float hw[256], model[256];
        bf16 a[512], b[512];
        amx_draw_tiles(&mt, r, hw, a, b);
        memcpy(model, hw, sizeof model);
        amx_tile_dot(model, 16, a, 32, b, 32, 16, 16, 16);
        amx_hw_tile_dot(hw, a, b);
        for (int i = 0; i < 256; i++) {
            c.cases++;
            if (f32_bits(hw[i]) != f32_bits(model[i]))
                bf16_note_difference(&c, 0, (uint32_t)i, 0, f32_bits(hw[i]), f32_bits(model[i]));
        }
    }
    return c;
}
void amx_draw_tiles(mt19937 *mt, size_t round, float c[256], bf16 a[512], bf16 b[512])
{
    for (int i = 0; i < 512; i++) {
        const uint32_t ra = mt_next(mt), rb = mt_next(mt);
        const int kind = round % 4 == 3 ? (int)(ra % 3) : 1 + (ra % 100 == 0 ? -1 : 0);
        a[i] = (bf16)(bf16_hostile_bits(mt, kind) >> 16);
        b[i] = (bf16)(bf16_hostile_bits(mt, rb % 100 == 0 ? 0 : 1) >> 16);
        if (i < 256) c[i] = f32_of_bits(bf16_hostile_bits(mt, kind));
    }
}
__attribute__((target("avx512f,avx512bf16")))
static void vdp_probe_loop(long iterations, float *sink)
{
    __m512 acc[12];
    const __m512bh a = (__m512bh)_mm512_setzero_si512(), b = a;
    for (int i = 0; i < 12; i++) acc[i] = _mm512_setzero_ps();
    for (long it = 0; it < iterations; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    for (int i = 1; i < 12; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    *sink = _mm512_reduce_add_ps(acc[0]);
}
__attribute__((target("amx-tile,amx-bf16")))
static inline void probe_tiles_start(void)      /* accumulators 0-3 zero, operands 4 and 5 zeros */
{
    static const bf16 zeros[512];
    amx_configure_tiles();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, zeros, 64);
    _tile_loadd(5, zeros, 64);
}

__attribute__((target("amx-tile,amx-bf16")))
static inline void probe_four_products(void)
{
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
}

__attribute__((target("amx-tile,amx-bf16")))
static inline float probe_tiles_end(void)
{
    float out[256];
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0];
}

__attribute__((target("amx-tile,amx-bf16")))
static void amx_probe_loop(long iterations, float *sink)
{
    probe_tiles_start();
    for (long it = 0; it < iterations; it++) probe_four_products();
    *sink = probe_tiles_end();
}
typedef struct { bool amx; long iterations; float sink; } probe_arg;

static void *probe_thread(void *arg)
{
    probe_arg *a = arg;
    if (a->amx) amx_probe_loop(a->iterations, &a->sink);
    else vdp_probe_loop(a->iterations, &a->sink);
    return NULL;
}

static double probe_seconds(bool amx, long iterations, int threads)
{
    pthread_t id[256];
    probe_arg args[256];
    const double start = now_seconds();
    for (int i = 0; i < threads; i++) {
        args[i] = (probe_arg){ amx, iterations, 0.0f };
        if (i > 0 && pthread_create(&id[i], NULL, probe_thread, &args[i]) != 0)
            die_line("cannot start a thread");
    }
    probe_thread(&args[0]);
    for (int i = 1; i < threads; i++) pthread_join(id[i], NULL);
    return now_seconds() - start;
}
spread bf16_peak_gflops(bool amx, int threads, long iterations, int repeats)
{
    double g[64];
    threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
    repeats = repeats < 1 ? 1 : repeats > 64 ? 64 : repeats;
    const double per = amx ? 4.0 * 16384.0 : 12.0 * 64.0;
    probe_seconds(amx, iterations / 10 + 1, threads);
    for (int r = 0; r < repeats; r++)
        g[r] = per * (double)iterations * threads / probe_seconds(amx, iterations, threads) / 1e9;
    return spread_of(g, (size_t)repeats);
}
__attribute__((target("amx-tile,amx-bf16,avx512f")))
static void overlap_loop(bool tiles, bool vectors, long rounds, float *sink)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    probe_tiles_start();
    for (long it = 0; it < rounds; it++) {
        if (tiles) probe_four_products();
        for (int k = 0; vectors && k < 16; k++) {
            a0 = _mm512_fmadd_ps(a0, one, one), a1 = _mm512_fmadd_ps(a1, one, one);
            a2 = _mm512_fmadd_ps(a2, one, one), a3 = _mm512_fmadd_ps(a3, one, one);
            a4 = _mm512_fmadd_ps(a4, one, one), a5 = _mm512_fmadd_ps(a5, one, one);
            a6 = _mm512_fmadd_ps(a6, one, one), a7 = _mm512_fmadd_ps(a7, one, one);
        }
    }
    const float tile_sum = probe_tiles_end();
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                     _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    *sink = tile_sum + _mm512_reduce_add_ps(sum);
}

amx_overlap amx_overlap_probe(long rounds, int repeats)
{
    double ns[3][64];
    float sink = 0;
    repeats = repeats < 1 ? 1 : repeats > 64 ? 64 : repeats;
    overlap_loop(true, true, rounds / 10 + 1, &sink);
    for (int r = 0; r < repeats; r++)
        for (int which = 0; which < 3; which++) {
            const double start = now_seconds();
            overlap_loop(which != 0, which != 1, rounds, &sink);
            ns[which][r] = (now_seconds() - start) / (double)rounds * 1e9;
        }
    return (amx_overlap){ spread_of(ns[0], (size_t)repeats), spread_of(ns[1], (size_t)repeats),
                          spread_of(ns[2], (size_t)repeats) };
}
