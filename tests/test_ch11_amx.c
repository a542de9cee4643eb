/* test_ch11_amx.c — the bf16 model, the model against the hardware, and the
   bf16 attention kernels. Tangled from chapters/ch11_amx.nw. */
#define _POSIX_C_SOURCE 200809L   /* mkstemp, fdopen */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../tangled/ch11_amx.h"
#include "gpu/gpu_attention.h"
static uint32_t bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float flt(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static bf16 round_bits(uint32_t u) { return bf16_round(flt(u)); }
Test(model, rounding_follows_the_manual)
{
    cr_expect_eq(round_bits(0x3f808000u), 0x3f80, "a tie with an even kept bit stays");
    cr_expect_eq(round_bits(0x3f818000u), 0x3f82, "a tie with an odd kept bit rounds up");
    cr_expect_eq(round_bits(0x3f808001u), 0x3f81, "above a tie rounds up");
    cr_expect_eq(round_bits(0x007fffffu), 0x0000, "a denormal becomes zero");
    cr_expect_eq(round_bits(0x80000001u), 0x8000, "a negative denormal becomes -0");
    cr_expect_eq(round_bits(0x7f800001u), 0x7fc0, "a NaN with a low payload stays NaN, quiet");
    cr_expect_eq(round_bits(0xff800000u), 0xff80, "-inf stays");
    cr_expect_eq(round_bits(0x7f7fffffu), 0x7f80, "the largest float rounds to infinity");
}
Test(model, the_tile_adds_its_products_before_the_accumulator)
{
    const bf16 tiny = 0x3380;                   /* 2^-24 */
    const bf16 a[2] = { tiny, 0x3f80 }, b[2] = { 0x3f80, tiny };
    float c = 1.0f;
    amx_tile_dot(&c, 1, a, 2, b, 2, 1, 1, 1);
    cr_expect_eq(bits(c), bits(1.0f + 0x1p-23f), "tile: %a", (double)c);
    const float v = bf16_dot_lane(1.0f, (uint32_t)a[1] << 16 | a[0], (uint32_t)b[1] << 16 | b[0]);
    cr_expect_eq(bits(v), bits(1.0f), "vector: %a", (double)v);
}
static uint32_t tile_of_two_pairs(float c, bf16 a0, bf16 a1, bf16 a2, bf16 a3, bf16 b0)
{
    const bf16 a[4] = { a0, a1, a2, a3 }, b[4] = { b0, 0x3f80, 0x3f80, 0x3f80 };
    amx_tile_dot(&c, 1, a, 4, b, 2, 1, 2, 1);
    return bits(c);
}

Test(model, the_tile_takes_the_first_nan_in_the_manuals_order)
{
    const bf16 one = 0x3f80, nan1 = 0x7fc1, nan3 = 0x7fc3, nan2 = 0xffc2;
    cr_expect_eq(tile_of_two_pairs(1.0f, nan1, one, nan3, one, one), 0x7fc30000u, "the later pair");
    cr_expect_eq(tile_of_two_pairs(1.0f, nan1, one, one, one, nan2), 0x7fc10000u, "a over b");
    cr_expect_eq(tile_of_two_pairs(flt(0xffc12345u), nan1, one, one, one, one), 0xffc12345u, "c first");
    cr_expect_eq(tile_of_two_pairs(1.0f, nan1, nan3, one, one, one), 0x7fc10000u, "even over odd");
}
Test(model, denormals_are_read_as_zero_and_flushed)
{
    const uint32_t denormal_times_huge = 0x0001u, huge = 0x7e80u;   /* 2^-133 and 2^126 */
    cr_expect_eq(bits(bf16_dot_lane(0.0f, denormal_times_huge, huge)), 0u);
    const uint32_t small = 0x1c801c80u, minus_small = 0x9c809c80u;   /* pairs of 2^-70 */
    cr_expect_eq(bits(bf16_dot_lane(-0.0f, small, minus_small)), 0x80000000u, "-2^-140 is flushed");
    cr_expect_eq(bits(bf16_dot_lane(flt(0x00000001u), 0, 0)), 0u, "a denormal accumulator is zero");
    cr_expect_eq(bits(bf16_dot_lane(0.0f, 0x7f80u, 0)), BF16_DEFAULT_NAN, "inf times 0");
    cr_expect_eq(bits(bf16_dot_lane(1.0f, 0x7fc1u << 16, 0x7fa0u)), 0x7fe00000u, "the low NaN wins");
}
static double exp2_error(float t)
{
    const double exact = exp2((double)t);
    return fabs((double)amx_exp2(t) - exact) / exact;
}

Test(model, the_exponential_is_good_to_two_to_the_minus_13)
{
    double worst = 0;
    float at = 0;
    for (long i = 0; i <= 2000002; i++) {
        const float t = (float)(-126.0 + 126.5 * (double)i / 2000002.0);
        if (exp2_error(t) > worst) worst = exp2_error(t), at = t;
    }
    for (float t = -0.5f; t <= 0.5f; t += 0x1p-17f)
        if (exp2_error(t) > worst) worst = exp2_error(t), at = t;
    cr_expect_lt(worst, 0x1p-13, "relative error %.3e at t = %.9g", worst, (double)at);
    cr_expect_eq(bits(amx_exp2(0.0f)), bits(1.0f));
    cr_expect_lt(amx_exp2(-INFINITY), 0x1p-126f);
    cr_expect_eq(bf16_round(amx_exp2(-INFINITY)), 0);
    cr_expect(isnan(amx_exp2(NAN)));
}
static void expect_identical(const char *what, bf16_comparison c)
{
    char first[400] = "";
    for (size_t i = 0, used = 0; i < c.differ && i < 4 && used < sizeof first; i++)
        used += (size_t)snprintf(first + used, sizeof first - used,
                                 "; in %08x a %08x b %08x: hardware %08x, model %08x", c.first[i][0],
                                 c.first[i][1], c.first[i][2], c.first[i][3], c.first[i][4]);
    cr_expect_gt(c.cases, 0);
    cr_expect_eq(c.differ, 0, "%s: %zu of %zu differ%s", what, c.differ, c.cases, first);
}

Test(hardware, the_model_rounds_as_vcvtne2ps2bf16)
{
    if (!bf16_cpu_has_avx512bf16()) cr_skip_test("no AVX512-BF16 on this machine (or FA_ISA below avx512)");
    expect_identical("VCVTNE2PS2BF16", bf16_compare_rounding(11, 20000));
}
Test(hardware, the_model_adds_as_vdpbf16ps)
{
    if (!bf16_cpu_has_avx512bf16()) cr_skip_test("no AVX512-BF16 on this machine (or FA_ISA below avx512)");
    expect_identical("VDPBF16PS", bf16_compare_dot(12, 50000));
}

Test(hardware, the_model_adds_as_tdpbf16ps)
{
    char why[160];
    if (!amx_available(why)) cr_skip_test("%s", why);
    expect_identical("TDPBF16PS", amx_compare_tile_dot(13, 2000));
}
Test(hardware, the_exponential_is_its_model)
{
    if (!bf16_cpu_has_avx512bf16()) cr_skip_test("no AVX-512 on this machine (or FA_ISA below avx512)");
    mt19937 mt;
    mt_seed(&mt, 14);
    size_t differ = 0, cases = 0;
    for (int round = 0; round < 100000; round++) {
        float in[16], out[16];
        for (int i = 0; i < 16; i++)
            in[i] = round % 2 ? flt(bf16_hostile_bits(&mt, round % 3))
                              : (float)(-130.0 + 131.0 * (double)mt_next(&mt) / 4294967296.0);
        amx_exp2_hw16(in, out);
        for (int i = 0; i < 16; i++, cases++)
            differ += isnan(out[i]) ? !isnan(amx_exp2(in[i])) : bits(out[i]) != bits(amx_exp2(in[i]));
    }
    cr_expect_eq(differ, 0, "%zu of %zu differ", differ, cases);
}
static const struct { size_t nq, nk, d; bool causal; } SWEEP[] = {
    { 1, 1, 1, false }, { 2, 7, 3, false }, { 7, 2, 16, false }, { 63, 63, 64, true },
    { 64, 65, 64, false }, { 65, 64, 64, false }, { 129, 129, 128, true }, { 130, 97, 128, false },
    { 200, 200, 33, true }, { 33, 300, 100, false },
};

Test(kernel, error_within_twice_plain_bf16)
{
    for (size_t i = 0; i < sizeof SWEEP / sizeof SWEEP[0]; i++) {
        attn_params p = attn_default(1, 2, SWEEP[i].nq, SWEEP[i].nk, SWEEP[i].d);
        p.causal = SWEEP[i].causal;
        const ch11_error e = ch11_error_of(AMX_KERNEL_EMULATED, &p, (uint32_t)i, 1);
        cr_expect_leq(e.kernel, e.bound, "nq %zu nk %zu d %zu causal %d: %.3e > %.3e (plain %.3e)",
                      p.nq, p.nk, p.d, p.causal, e.kernel, e.bound, e.plain);
    }
}
Test(kernel, windows_are_within_twice_plain_bf16)
{
    static const struct { size_t nq, nk, d; long window; } WINDOWS[] = {
        { 77, 140, 64, 40 }, { 100, 100, 128, 33 }, { 130, 64, 32, 7 }, { 64, 64, 16, 1 },
    };
    for (size_t i = 0; i < sizeof WINDOWS / sizeof WINDOWS[0]; i++) {
        attn_params p = attn_default(1, 2, WINDOWS[i].nq, WINDOWS[i].nk, WINDOWS[i].d);
        p.causal = true;
        p.window = WINDOWS[i].window;
        const ch11_error e = ch11_error_of(AMX_KERNEL_EMULATED, &p, (uint32_t)i, 1);
        cr_expect_leq(e.kernel, e.bound, "window %ld: %.3e > %.3e", p.window, e.kernel, e.bound);
    }
}
Test(kernel, rows_without_keys_are_zero_and_nans_reach_their_rows)
{
    attn_params p = attn_default(1, 1, 40, 40, 8);
    p.causal = true;
    p.window = 3;
    float q[320], k[320], v[320], o[320];
    attn_draw_inputs(&p, 3, q, k, v);
    k[20 * 8 + 5] = NAN;
    attention_bf16(AMX_KERNEL_EMULATED, &p, q, k, v, o, 2, NULL);
    for (size_t i = 0; i < 40; i++)
        for (size_t c = 0; c < 8; c++)
            cr_expect_eq((bool)isnan(o[i * 8 + c]), i >= 20 && i <= 22, "row %zu", i);
}
static size_t differing(amx_kernel a, amx_kernel b, const attn_params *p, int ta, int tb)
{
    const size_t qn = p->heads * p->nq * p->d, kn = p->heads * p->nk * p->d;
    float *q = fa_alloc(qn * 4), *k = fa_alloc(kn * 4), *v = fa_alloc(kn * 4);
    float *x = fa_alloc(qn * 4), *y = fa_alloc(qn * 4);
    attn_draw_inputs(p, 5, q, k, v);
    attention_bf16(a, p, q, k, v, x, ta, NULL);
    attention_bf16(b, p, q, k, v, y, tb, NULL);
    size_t n = 0;
    for (size_t i = 0; i < qn; i++) n += bits(x[i]) != bits(y[i]);
    fa_free(q); fa_free(k); fa_free(v); fa_free(x); fa_free(y);
    return n;
}
static const struct { size_t nq, nk, d; bool causal; } SHAPES[] = {
    { 1, 1, 64, false }, { 37, 45, 3, false }, { 100, 100, 64, true }, { 77, 140, 128, false },
};

static void expect_same_bits(amx_kernel a, amx_kernel b, int ta, int tb)
{
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        attn_params p = attn_default(1, 3, SHAPES[i].nq, SHAPES[i].nk, SHAPES[i].d);
        p.causal = SHAPES[i].causal;
        cr_expect_eq(differing(a, b, &p, ta, tb), 0, "%s (%d threads) against %s (%d): shape %zu",
                     ch11_kernel_name(a), ta, ch11_kernel_name(b), tb, i);
    }
}
Test(bits, avx512bf16_equals_its_model)
{
    if (!bf16_cpu_has_avx512bf16()) cr_skip_test("no AVX512-BF16 on this machine (or FA_ISA below avx512)");
    expect_same_bits(AMX_KERNEL_AVX512BF16, AMX_KERNEL_EMULATED_VDP, 2, 1);
}

Test(bits, amx_equals_its_model)
{
    char why[160];
    if (!amx_available(why)) cr_skip_test("%s", why);
    expect_same_bits(AMX_KERNEL_AMX, AMX_KERNEL_EMULATED, 2, 1);
}

Test(bits, same_on_one_thread_and_three)
{
    expect_same_bits(AMX_KERNEL_EMULATED, AMX_KERNEL_EMULATED, 1, 3);
    if (bf16_cpu_has_avx512bf16()) expect_same_bits(AMX_KERNEL_AVX512BF16, AMX_KERNEL_AVX512BF16, 1, 3);
}
Test(bits, causal_walk_skips_the_future)
{
    attn_params p = attn_default(1, 1, 1024, 1024, 16);
    p.causal = true;
    float *x = fa_alloc(1024 * 16 * 4), *o = fa_alloc(1024 * 16 * 4);
    memset(x, 0, 1024 * 16 * 4);
    amx_counts c;
    attention_bf16(AMX_KERNEL_EMULATED, &p, x, x, x, o, 2, &c);
    size_t expected = 0;
    for (size_t s = 0; s < 64; s++) expected += (16 * s + 15) / 32 + 1;
    cr_expect_eq(c.blocks_computed, expected);
    cr_expect_eq(c.blocks_computed + c.blocks_skipped, 64 * 32);
    fa_free(x); fa_free(o);
}
Test(bits, the_parts_left_out_are_left_out)
{
    char why[160];
    if (!amx_available(why)) cr_skip_test("%s", why);
    attn_params p = attn_default(1, 2, 100, 100, 64);
    p.causal = true;
    const size_t n = 2 * 100 * 64;
    float *q = fa_alloc(n * 4), *k = fa_alloc(n * 4), *v = fa_alloc(n * 4), *x = fa_alloc(n * 4),
          *y = fa_alloc(n * 4);
    attn_draw_inputs(&p, 5, q, k, v);
    attention_bf16(AMX_KERNEL_AMX, &p, q, k, v, x, 2, NULL);
    attention_bf16_without(0, &p, q, k, v, y, 2);
    cr_expect_arr_eq(x, y, n * 4, "with nothing left out, the AMX engine's bits");
    size_t zero = 0, nan = 0;
    attention_bf16_without(AMX_LEAVE_TILES, &p, q, k, v, y, 2);
    for (size_t i = 0; i < n; i++) zero += y[i] == 0.0f;
    attention_bf16_without(AMX_LEAVE_VECTORS, &p, q, k, v, y, 2);
    for (size_t i = 0; i < n; i++) nan += isnan(y[i]);
    cr_expect_eq(zero, n, "without the tiles, %zu of %zu outputs are zero", zero, n);
    cr_expect_eq(nan, n, "without the vectors, %zu of %zu outputs are NaN", nan, n);
    fa_free(q); fa_free(k); fa_free(v); fa_free(x); fa_free(y);
}
Test(bits, two_slices_at_once_give_the_bits_of_one_at_a_time)
{
    char why[160];
    if (!amx_available(why)) cr_skip_test("%s", why);
    for (int shape = 0; shape < 6; shape++) {
        attn_params p = attn_default(1, 2, 77, 140, shape % 2 ? 100 : 128);
        p.causal = shape / 2 >= 1;
        p.window = shape / 2 == 2 ? 40 : 0;
        const size_t qn = 2 * 77 * p.d, kn = 2 * 140 * p.d;
        float *q = fa_alloc(qn * 4), *k = fa_alloc(kn * 4), *v = fa_alloc(kn * 4), *x = fa_alloc(qn * 4),
              *y = fa_alloc(qn * 4);
        attn_draw_inputs(&p, 7, q, k, v);
        attention_bf16(AMX_KERNEL_AMX, &p, q, k, v, x, 2, NULL);
        attention_bf16_without(AMX_LEAVE_PAIRS, &p, q, k, v, y, 1);
        size_t n = 0;
        for (size_t i = 0; i < qn; i++) n += bits(x[i]) != bits(y[i]);
        cr_expect_eq(n, 0, "shape %d: %zu of %zu numbers differ", shape, n, qn);
        fa_free(q); fa_free(k); fa_free(v); fa_free(x); fa_free(y);
    }
}
Test(bits, values_are_packed_in_pairs_of_keys)
{
    float v[40 * 20];
    bf16 out[2 * AMX_TILE_ELEMS];
    for (size_t j = 0; j < 40 * 20; j++) v[j] = (float)(j % 256);
    amx_pack_values(40, 20, v, 32, out);
    for (size_t i = 0; i < 2 * AMX_TILE_ELEMS; i++) {
        const size_t t = i / AMX_TILE_ELEMS, r = i % AMX_TILE_ELEMS / 32, place = i % 32;
        const size_t key = 32 + 2 * r + place % 2, col = 16 * t + place / 2;
        const float expected = key < 40 && col < 20 ? v[key * 20 + col] : 0.0f;
        cr_expect_eq(bf16_float(out[i]), expected, "tile %zu, row %zu, place %zu", t, r, place);
    }
}
static const decode_params TILE_SHAPES[] = {
    { .batch = 1, .heads = 8, .kv_heads = 1, .nq = 1, .nk = 1000, .d = 64 },
    { .batch = 2, .heads = 8, .kv_heads = 2, .nq = 3, .nk = 2100, .d = 128 },
    { .batch = 1, .heads = 4, .kv_heads = 4, .nq = 1, .nk = 33, .d = 32 },
    { .batch = 1, .heads = 16, .kv_heads = 1, .nq = 1, .nk = 1057, .d = 96 },
};
enum { TILE_SHAPE_COUNT = sizeof TILE_SHAPES / sizeof TILE_SHAPES[0] };

typedef struct { decode_params p; float *q, *k, *v, *o; bf16 *k16, *v16; } tile_problem;

static tile_problem tile_problem_new(size_t shape, uint32_t seed)
{
    tile_problem t = { .p = TILE_SHAPES[shape] };
    t.p.scale = 1.0f / sqrtf((float)t.p.d);
    const size_t nq = t.p.batch * t.p.heads * t.p.nq * t.p.d,
                 nk = t.p.batch * t.p.kv_heads * t.p.nk * t.p.d;
    t.q = fa_alloc(nq * 4); t.o = fa_alloc(nq * 4); t.k = fa_alloc(nk * 4); t.v = fa_alloc(nk * 4);
    t.k16 = fa_alloc(nk * 2); t.v16 = fa_alloc(nk * 2);
    mt19937 g;
    mt_seed(&g, seed);
    torch_randn(&g, t.q, nq); torch_randn(&g, t.k, nk); torch_randn(&g, t.v, nk);
    for (size_t i = 0; i < nk; i++) {
        t.k16[i] = bf16_round(t.k[i]); t.k[i] = bf16_float(t.k16[i]);
        t.v16[i] = bf16_round(t.v[i]); t.v[i] = bf16_float(t.v16[i]);
    }
    return t;
}

static void tile_problem_free(tile_problem *t)
{
    fa_free(t->q); fa_free(t->o); fa_free(t->k); fa_free(t->v); fa_free(t->k16); fa_free(t->v16);
}

static void tile_decode(tile_problem *t, decode_piece_kernel *piece, int threads)
{
    attention_decode(&t->p, t->q, t->k16, t->v16, t->o,
                     &(decode_config){ .threads = threads, .cache = DECODE_BF16, .piece = piece });
}

static float *tile_output(tile_problem *t, decode_piece_kernel *piece, int threads, size_t *n)
{
    *n = t->p.batch * t->p.heads * t->p.nq * t->p.d;
    tile_decode(t, piece, threads);
    float *copy = fa_alloc(*n * 4);
    memcpy(copy, t->o, *n * 4);
    return copy;
}
static void gather_group(const decode_params *p, const float *x, size_t b, size_t g, float *out)
{
    const size_t group = p->heads / p->kv_heads, rows = group * p->nq;
    for (size_t r = 0; r < rows; r++) {
        const size_t h = g * group + r / p->nq, i = r % p->nq;
        memcpy(out + r * p->d, x + ((b * p->heads + h) * p->nq + i) * p->d, p->d * sizeof(float));
    }
}

Test(tiles, decoding_on_the_model_is_within_twice_plain_bf16, .timeout = 120)
{
    for (size_t s = 0; s < TILE_SHAPE_COUNT; s++) {
        tile_problem t = tile_problem_new(s, 40 + (uint32_t)s);
        tile_decode(&t, amx_decode_piece_model, 2);
        const decode_params *p = &t.p;
        const size_t rows = p->heads / p->kv_heads * p->nq, n = rows * p->d;
        attn_params a = attn_default(1, 1, rows, p->nk, p->d);
        a.scale = p->scale;
        float *q = fa_alloc(n * 4), *o = fa_alloc(n * 4);
        double *exact = fa_alloc(n * sizeof(double));
        for (size_t b = 0; b < p->batch; b++)
            for (size_t g = 0; g < p->kv_heads; g++) {
                const size_t at = (b * p->kv_heads + g) * p->nk * p->d;
                gather_group(p, t.q, b, g, q);
                gather_group(p, t.o, b, g, o);
                attention_reference(&a, q, t.k + at, t.v + at, exact);
                double top = 0;
                for (size_t i = 0; i < n; i++) top = fmax(top, fabs(exact[i]));
                const double kernel = max_abs_diff_fd(o, exact, n),
                             plain = gpu_bf16_naive_error(&a, q, t.k + at, t.v + at, exact);
                cr_expect_leq(kernel, 2 * fmax(plain, ldexp(top, -23)),
                              "shape %zu, batch %zu, group %zu: %.3e against plain bf16's %.3e", s, b, g,
                              kernel, plain);
            }
        fa_free(q); fa_free(o); fa_free(exact);
        tile_problem_free(&t);
    }
}
Test(tiles, decoding_on_the_model_has_the_same_bits_on_every_thread_count, .timeout = 120)
{
    for (size_t s = 0; s < TILE_SHAPE_COUNT; s++) {
        tile_problem t = tile_problem_new(s, 50 + (uint32_t)s);
        size_t n;
        float *one = tile_output(&t, amx_decode_piece_model, 1, &n);
        for (int threads = 2; threads <= 3; threads++) {
            tile_decode(&t, amx_decode_piece_model, threads);
            cr_expect_eq(memcmp(one, t.o, n * 4), 0, "shape %zu, %d threads", s, threads);
        }
        fa_free(one);
        tile_problem_free(&t);
    }
}

Test(tiles, decoding_on_the_tiles_gives_the_models_bits, .timeout = 120)
{
    char why[160];
    if (!amx_available(why)) cr_skip_test("%s", why);
    if (!bf16_cpu_has_avx512bf16()) cr_skip_test("no AVX512-BF16 on this machine");
    for (size_t s = 0; s < TILE_SHAPE_COUNT; s++) {
        tile_problem t = tile_problem_new(s, 60 + (uint32_t)s);
        size_t n;
        float *model = tile_output(&t, amx_decode_piece_model, 2, &n);
        for (int threads = 1; threads <= 2; threads++) {
            tile_decode(&t, amx_decode_piece, threads);
            size_t differ = 0;
            for (size_t i = 0; i < n; i++) differ += memcmp(&model[i], &t.o[i], 4) != 0;
            cr_expect_eq(differ, 0, "shape %zu, %d threads: %zu of %zu numbers differ", s, threads,
                         differ, n);
        }
        fa_free(model);
        tile_problem_free(&t);
    }
}
Test(tiles, decoding_shapes_the_tiles_cannot_run_are_named)
{
    decode_params p = TILE_SHAPES[0];
    p.scale = 0.125f;
    cr_expect_null(amx_decode_problem(&p, DECODE_BF16));
    cr_expect_not_null(amx_decode_problem(&p, DECODE_FP32));
    p.d = 48;
    cr_expect_not_null(amx_decode_problem(&p, DECODE_BF16));
    p.d = 160;
    cr_expect_not_null(amx_decode_problem(&p, DECODE_BF16));
    p.d = 64;
    p.kv_heads = 3;
    cr_expect_not_null(amx_decode_problem(&p, DECODE_BF16));
}

Test(tiles, a_piece_of_an_fp32_cache_is_refused, .exit_code = 2, .init = cr_redirect_stderr)
{
    tile_problem t = tile_problem_new(0, 70);
    attention_decode(&t.p, t.q, t.k, t.v, t.o, &(decode_config){ .threads = 1,
                     .cache = DECODE_FP32, .piece = amx_decode_piece_model });
}
static void note_of_record(const char *record, char note[4096])
{
    char path[32];
    cr_assert(temp_file_with(record, path), "cannot write a temporary record");
    ch11_recorded_note(path, note, 4096);
    remove(path);
}
Test(recorded, the_sentence_counts_the_goals_from_the_record)
{
    char note[4096];
    note_of_record("# make bench: date 2026-01-02T03:04Z commit 0\n"
          "# ch11_amx: Test Machine, 2 CPUs; kernel amx; AMX: yes\n"
          "# peak GFLOP/s, one thread: fp32 FMA 200 (chapter 1's profile), TDPBF16PS 3200\n"
          "ch11_amx amx 1024 64 0 1 3 0.010000 0.01 0.01 100.0 0.50 1.20\n"
          "ch11_amx amx 1024 64 0 2 3 0.005000 0.005 0.005 200.0 2.10 1.80\n"
          "ch11_amx amx 2048 64 1 1 3 0.040000 0.04 0.04 100.0 - -\n"
          "ch08_fused_timing fused 1024 64 0 1 5 0.020000 0.02 0.02 1 1 1 1\n"
          "ch08_fused_timing fused 1024 64 0 2 5 0.004000 0.004 0.004 1 1 1 1\n", note);
    cr_expect(strstr(note, "On Test Machine, 2 CPUs, recorded 2026-01-02T03:04, the tile (AMX) "
                          "engine ran at") != NULL, "%s", note);
    cr_expect(strstr(note, "0.50–2.10× PyTorch's bf16 attention (the goal of 2.0× met in 1 of 2)")
              != NULL, "%s", note);
    cr_expect(strstr(note, "1.20–1.80× its fp32") != NULL, "%s", note);
    cr_expect(strstr(note, "0.80–2.00× chapter 8's fp32 kernel, at least as fast in 1 of 2")
              != NULL, "%s", note);
    cr_expect(strstr(note, "16 times the fp32 multiply-add's") != NULL, "%s", note);
}
Test(recorded, the_parts_of_the_record_say_why)
{
    char note[4096];
    note_of_record("# make bench: date 2026-01-02T03:04Z commit 0\n"
          "# ch11_amx: Test Machine, 2 CPUs; kernel amx; AMX: yes\n"
          "# peak GFLOP/s, one thread: fp32 FMA 200 (chapter 1's profile), TDPBF16PS 3200\n"
          "# parts ms, n = 4096, one head, one thread; d whole without_tiles without_vectors neither: "
          "64 10 6 5 1\n"
          "# parts ms, n = 4096, one head, one thread; d whole without_tiles without_vectors neither: "
          "128 16 8 14 2\n"
          "ch11_amx amx 1024 64 0 1 3 0.010000 0.01 0.01 100.0 0.50 1.20\n", note);
    cr_expect(strstr(note, "There, at d = 64 the tile work alone takes 4.0 ms, the vector work 5.0 ms, "
                          "the two together 9.0 ms and the rest 1.0 ms, 10% of the whole: the processor "
                          "hides 0% of the shorter part") != NULL, "%s", note);
    cr_expect(strstr(note, "at d = 128 the tile work alone takes 12.0 ms, the vector work 6.0 ms, the "
                          "two together 14.0 ms") != NULL, "%s", note);
    cr_expect(strstr(note, "hides 67% of the shorter part. The stages hide part of the shorter work")
              != NULL, "%s", note);
    cr_expect(strstr(note, "multiply-add's") == NULL, "%s", note);
}
