/* test_ch08_fused_timing.c — Criterion tests of chapter 8's kernels and program.
   Tangled from chapters/ch08_fused_timing.nw. */
#define _GNU_SOURCE   /* CPU_COUNT, pthread_getaffinity_np */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "cpu/vexp.h"
#include "cpu/fused.h"
#include "cpu/decode.h"
#include "cpu/workers.h"
#include "../tangled/ch08_fused_timing.h"

int chapter_main(int argc, char **argv);
typedef struct { attn_params p; float *q, *k, *v, *o; double *exact; size_t count; } ch08_problem;

static ch08_problem ch08_problem_new(size_t heads, size_t nq, size_t nk, size_t d,
                                     bool causal, long window)
{
    ch08_problem t = { .p = attn_default(1, heads, nq, nk, d) };
    t.p.causal = causal || window > 0;
    t.p.window = window;
    t.count = heads * nq * d;
    t.q = fa_alloc(t.count * 4); t.o = fa_alloc(t.count * 4);
    t.k = fa_alloc(heads * nk * d * 4); t.v = fa_alloc(heads * nk * d * 4);
    t.exact = fa_alloc(t.count * sizeof(double));
    attn_draw_inputs(&t.p, 7, t.q, t.k, t.v);
    attention_reference(&t.p, t.q, t.k, t.v, t.exact);
    return t;
}
static void ch08_problem_free(ch08_problem *t)
{
    fa_free(t->q); fa_free(t->k); fa_free(t->v); fa_free(t->o); fa_free(t->exact);
}

static double fused_error(ch08_problem *t, size_t bq, size_t bk, fused_isa isa, int threads)
{
    const fused_config cfg = { .threads = threads, .isa = isa, .block_q = bq, .block_k = bk };
    memset(t->o, 0xff, t->count * 4);                  /* NaN until written */
    attention_fused(&t->p, t->q, t->k, t->v, t->o, &cfg, NULL);
    return max_abs_diff_fd(t->o, t->exact, t->count);
}
static const size_t TEST_N[] = { 1, 2, 7, 63, 64, 65, 129, 300 };
static const size_t TEST_D[] = { 1, 3, 16, 59, 64, 111, 128, 256 };
static const size_t TEST_BLOCKS[][2] = { { 1, 1 }, { 7, 16 }, { 64, 64 }, { 128, 128 },
                                         { 50, 300 } };
#define COUNT_OF(a) (sizeof (a) / sizeof (a)[0])
Test(ch08, fused_equals_reference_over_the_sweep, .timeout = 300)
{
    for (int isa = FUSED_ISA_AVX2; isa <= FUSED_ISA_AVX512; isa++) {
        if (!fused_isa_available((fused_isa)isa)) continue;
        for (size_t a = 0; a < COUNT_OF(TEST_N); a++)
            for (size_t b = 0; b < COUNT_OF(TEST_D); b++)
                for (int causal = 0; causal <= 1; causal++) {
                    const size_t n = TEST_N[a], d = TEST_D[b];
                    ch08_problem t = ch08_problem_new(2, n, n, d, causal, 0);
                    for (size_t s = 0; s < COUNT_OF(TEST_BLOCKS); s++) {
                        if (TEST_BLOCKS[s][0] == 1 && (n > 65 || d > 64)) continue;
                        const double err = fused_error(&t, TEST_BLOCKS[s][0], TEST_BLOCKS[s][1], (fused_isa)isa, 1);
                        cr_expect(err <= 1e-5, "%s n=%zu d=%zu blocks %zux%zu causal=%d: error %.3e",
                                  fused_isa_name((fused_isa)isa), n, d, TEST_BLOCKS[s][0], TEST_BLOCKS[s][1],
                                  causal, err);
                    }
                    ch08_problem_free(&t);
                }
    }
}
Test(ch08, fused_handles_unequal_lengths_and_windows)
{
    const size_t shapes[][2] = { { 1, 300 }, { 300, 1 }, { 100, 257 }, { 257, 100 } };
    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        ch08_problem t = ch08_problem_new(3, shapes[s][0], shapes[s][1], 59, false, 0);
        cr_expect(fused_error(&t, 64, 128, FUSED_ISA_AUTO, 2) <= 1e-5, "shape %zu", s);
        ch08_problem_free(&t);
    }
    const long windows[] = { 1, 7, 64, 200 };
    for (size_t w = 0; w < COUNT_OF(windows); w++) {
        ch08_problem t = ch08_problem_new(2, 300, 300, 64, true, windows[w]);
        cr_expect(fused_error(&t, 64, 64, FUSED_ISA_AUTO, 1) <= 1e-5, "window %ld", windows[w]);
        ch08_problem_free(&t);
    }
}
Test(ch08, naive_blas_equals_reference)
{
    const size_t shapes[][3] = { { 1, 1, 1 }, { 7, 7, 3 }, { 65, 65, 59 }, { 129, 63, 128 },
                                 { 300, 300, 256 }, { 63, 129, 111 } };
    for (size_t s = 0; s < COUNT_OF(shapes); s++)
        for (int causal = 0; causal <= 1; causal++) {
            if (causal && shapes[s][0] != shapes[s][1]) continue;
            ch08_problem t = ch08_problem_new(2, shapes[s][0], shapes[s][1], shapes[s][2],
                                              causal, 0);
            attention_naive_blas(&t.p, t.q, t.k, t.v, t.o, 2, NULL);
            const double err = max_abs_diff_fd(t.o, t.exact, t.count);
            cr_expect(err <= 1e-5, "shape %zu causal %d: %.3e", s, causal, err);
            ch08_problem_free(&t);
        }
}
Test(ch08, huge_logits_stay_finite)
{
    ch08_problem t = ch08_problem_new(2, 200, 200, 64, true, 0);
    t.p.scale = 1000.0f / 8.0f;
    attention_reference(&t.p, t.q, t.k, t.v, t.exact);
    const double err = fused_error(&t, 64, 64, FUSED_ISA_AUTO, 1);
    for (size_t i = 0; i < t.count; i++) cr_assert(isfinite(t.o[i]));
    cr_expect(err <= 1e-2, "error %.3e", err);
    ch08_problem_free(&t);
}
Test(ch08, fused_bytes_cover_what_a_call_allocates)
{
    const size_t shapes[][3] = { { 1000, 64, 128 }, { 97, 59, 32 }, { 4096, 128, 256 } };
    for (size_t s = 0; s < COUNT_OF(shapes); s++)
        for (int threads = 1; threads <= 3; threads += 2) {
            attn_params p = attn_default(2, 3, shapes[s][0], shapes[s][0], shapes[s][1]);
            const fused_config cfg = { .threads = threads, .count_only = true,
                                       .block_q = shapes[s][2] };
            const size_t before = fa_bytes_live();
            fa_reset_peak();
            attention_fused(&p, NULL, NULL, NULL, NULL, &cfg, NULL);
            const size_t used = fa_bytes_peak() - before, said = attention_fused_bytes(&p, &cfg);
            cr_expect(used <= said && (threads > 1 || said <= used + used / 8),
                      "shape %zu, %d threads: allocated %zu bytes, said %zu",
                      s, threads, used, said);
        }
}
Test(ch08, threads_are_bit_identical_to_one_thread)
{
    for (int causal = 0; causal <= 1; causal++) {
        ch08_problem t = ch08_problem_new(3, 1000, 1000, 64, causal, 0);
        fused_error(&t, 128, 128, FUSED_ISA_AUTO, 1);
        float *one = fa_alloc(t.count * 4);
        memcpy(one, t.o, t.count * 4);
        const int threads[] = { 2, 3, 5, 16 };
        for (size_t i = 0; i < COUNT_OF(threads); i++) {
            fused_error(&t, 128, 128, FUSED_ISA_AUTO, threads[i]);
            cr_expect(memcmp(one, t.o, t.count * 4) == 0, "%d threads, causal %d",
                      threads[i], causal);
        }
        fa_free(one);
        ch08_problem_free(&t);
    }
}
typedef struct { int runs, cpu_count, cpu; } worker_probe;

static void *probe_worker(void *arg)
{
    worker_probe *w = arg;
    cpu_set_t mine;
    w->runs++;
    w->cpu_count = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0
                   ? CPU_COUNT(&mine) : -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) { w->cpu = c; break; }
    return NULL;
}
Test(ch08, workers_start_each_thread_once_on_a_processor_of_its_own)
{
    cpu_set_t allowed;
    cr_assert(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    const int cpus = CPU_COUNT(&allowed), counts[] = { 1, 2, 3, 16 };
    for (size_t i = 0; i < COUNT_OF(counts); i++) {
        const int n = counts[i];
        worker_probe w[16] = { { 0 } };
        pthread_t ids[16];
        workers_start(ids, n, probe_worker, w, sizeof w[0], "test");
        workers_join(ids, n);
        cr_expect_eq(w[0].runs, 0, "thread 0 is the caller's");
        for (int t = 1; t < n; t++) {
            cr_expect_eq(w[t].runs, 1, "n = %d, thread %d", n, t);
            cr_expect_eq(w[t].cpu_count, n <= cpus ? 1 : cpus, "n = %d, thread %d", n, t);
            for (int u = 1; u < t && n <= cpus; u++)
                cr_expect_neq(w[t].cpu, w[u].cpu, "n = %d: threads %d and %d", n, u, t);
        }
    }
}
static void *count_share(void *arg)
{
    (*(int *)arg)++;
    return NULL;
}
Test(ch08, a_crew_runs_every_share_once_a_round)
{
    enum { ROUNDS = 3000 };
    for (int n = 1; n <= 4; n++) {
        workers_crew *crew = crew_open(n, "test");
        int runs[4] = { 0 };
        for (int round = 0; round < ROUNDS; round++) {
            if (round % 500 == 0) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
            workers_run(crew, n, count_share, runs, sizeof runs[0], "test");
        }
        for (int t = 0; t < n; t++)
            cr_expect_eq(runs[t], ROUNDS, "n = %d, thread %d", n, t);
        crew_close(crew);
    }
}
static void *note_cpu(void *arg)
{
    *(int *)arg = sched_getcpu();
    return NULL;
}
Test(ch08, a_crew_member_moves_off_the_callers_processor)
{
    cpu_set_t allowed, one;
    cr_assert(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    if (CPU_COUNT(&allowed) < 2) cr_skip_test("one processor: nothing to share");
    workers_crew *crew = crew_open(2, "test");
    int cpu[2];
    workers_run(crew, 2, note_cpu, cpu, sizeof cpu[0], "test");
    CPU_ZERO(&one);
    CPU_SET(cpu[1], &one);
    cr_assert(sched_setaffinity(0, sizeof one, &one) == 0);
    workers_run(crew, 2, note_cpu, cpu, sizeof cpu[0], "test");
    cr_expect_neq(cpu[0], cpu[1], "caller and member both on processor %d", cpu[0]);
    sched_setaffinity(0, sizeof allowed, &allowed);
    crew_close(crew);
}
Test(ch08, a_crew_gives_the_bits_of_threads_started_for_the_call)
{
    ch08_problem big = ch08_problem_new(4, 700, 700, 128, false, 0);
    ch08_problem t = ch08_problem_new(3, 300, 300, 64, true, 0);
    fused_error(&t, 0, 0, FUSED_ISA_AUTO, 2);
    float *fresh = fa_alloc(t.count * 4);
    memcpy(fresh, t.o, t.count * 4);
    workers_crew *crew = crew_open(2, "test"), *three = crew_open(3, "test");
    fused_config cfg = { .threads = 2, .crew = crew };
    attention_fused(&big.p, big.q, big.k, big.v, big.o, &cfg, NULL);
    for (int i = 0; i < 2; i++) {
        cfg.crew = i ? three : crew;
        memset(t.o, 0xff, t.count * 4);
        attention_fused(&t.p, t.q, t.k, t.v, t.o, &cfg, NULL);
        cr_expect(memcmp(fresh, t.o, t.count * 4) == 0, "a crew of %d", i ? 3 : 2);
    }
    const decode_params dp = { .batch = 1, .heads = 8, .kv_heads = 2, .nq = 2,
                               .nk = 3 * DECODE_SPAN + 5, .d = 64, .scale = 0.125f };
    decode_problem dt = decode_problem_new(&dp, 4, true);
    const size_t dcount = 8 * 2 * 64;
    decode_run(&dt, DECODE_BF16, &(decode_config){ .threads = 2 });
    float *dfresh = fa_alloc(dcount * 4);
    memcpy(dfresh, dt.o, dcount * 4);
    for (int c = 0; c < 2; c++) {
        memset(dt.o, 0xff, dcount * 4);
        decode_run(&dt, c ? DECODE_BF16 : DECODE_FP32, &(decode_config){ .threads = 2,
                   .crew = crew });
    }
    cr_expect(memcmp(dfresh, dt.o, dcount * 4) == 0, "decoding on a crew");
    fa_free(dfresh);
    decode_problem_free(&dt);
    crew_close(crew); crew_close(three);
    fa_free(fresh);
    ch08_problem_free(&big); ch08_problem_free(&t);
}
Test(ch08, counters_equal_their_formulas)
{
    const double h = 8, d = 64;
    for (size_t bs = 128; bs <= 256; bs *= 2)
    for (size_t n = 512; n <= 4096; n *= 2) {
        const double N = (double)n, b = (double)bs, T = N / b;
        const attn_counts f = counted_fused(n, false, bs), c = counted_fused(n, true, bs);
        const attn_counts nv = counted_naive(n);
        cr_expect_eq(f.flops, 4 * h * N * N * d);
        cr_expect_eq(f.k_bytes, 4 * h * N * d * T);
        cr_expect_eq(f.v_bytes, f.k_bytes);
        cr_expect_eq(f.q_bytes, 4 * h * N * d);
        cr_expect_eq(f.o_bytes, 4 * h * N * d);
        cr_expect_eq(f.score_bytes, 0);
        cr_expect_eq(c.flops, h * T * (T + 1) / 2 * 4 * b * b * d);
        cr_expect_eq(c.tiles_skipped, (size_t)(h * T * (T - 1) / 2));
        cr_expect_eq(nv.flops, f.flops);
        cr_expect_eq(nv.score_bytes, 16 * h * N * N);
    }
}
Test(ch08, count_only_counts_what_a_real_run_counts)
{
    ch08_problem t = ch08_problem_new(3, 300, 300, 59, true, 0);
    attn_counts real = { 0 }, counted = { 0 };
    attention_fused(&t.p, t.q, t.k, t.v, t.o,
                    &(fused_config){ .threads = 2, .block_q = 50, .block_k = 70 }, &real);
    attention_fused(&t.p, NULL, NULL, NULL, NULL, &(fused_config){ .threads = 1,
                    .count_only = true, .block_q = 50, .block_k = 70 }, &counted);
    cr_expect_eq(real.flops, counted.flops);
    cr_expect_eq(real.k_bytes, counted.k_bytes);
    cr_expect_eq(real.tiles_computed, counted.tiles_computed);
    cr_expect_eq(real.tiles_skipped, counted.tiles_skipped);
    cr_expect(real.flops > 0 && real.tiles_skipped > 0);
    ch08_problem_free(&t);
}
static uint32_t float_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float bits_float(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

static uint64_t ulp_distance(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : UINT64_MAX;
    const int64_t x = float_bits(a), y = float_bits(b);   /* both >= 0 here: e^x >= 0 */
    return (uint64_t)(x > y ? x - y : y - x);
}
static uint64_t worst_ulps(vexp_isa isa, const float *x, size_t n, float *worst_x)
{
    float *y = fa_alloc(n * 4);
    vexp_array(isa, x, y, n);
    uint64_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t u = ulp_distance(y[i], expf(x[i]));
        if (u > worst) { worst = u; *worst_x = x[i]; }
    }
    fa_free(y);
    return worst;
}
Test(ch08, vexp_is_within_its_bound_over_the_whole_range, .timeout = 120)
{
    enum { BATCH = 1 << 16 };
    float *x = fa_alloc(BATCH * 4), worst_x = 0;
    for (int isa = VEXP_ISA_AVX2; isa <= VEXP_ISA_AVX512; isa++) {
        if (!vexp_isa_available((vexp_isa)isa)) continue;
        uint64_t worst = 0;
        size_t fill = 0;
        for (uint64_t u = 0; u < (1ull << 32); u += 61) {
            x[fill++] = bits_float((uint32_t)u);
            if (fill == BATCH) { uint64_t w = worst_ulps(isa, x, fill, &worst_x);
                                 worst = w > worst ? w : worst; fill = 0; }
        }
        for (float v = -104.0f; v <= -87.0f; v = nextafterf(v, 0.0f)) {
            x[fill++] = v;
            if (fill == BATCH) { uint64_t w = worst_ulps(isa, x, fill, &worst_x);
                                 worst = w > worst ? w : worst; fill = 0; }
        }
        if (fill) { uint64_t w = worst_ulps(isa, x, fill, &worst_x); worst = w > worst ? w : worst; }
        cr_expect(worst <= VEXP_ULP_BOUND, "isa %d: %llu ulps at %a", isa,
                  (unsigned long long)worst, (double)worst_x);
    }
    fa_free(x);
}
Test(ch08, vexp_special_values)
{
    const float x[8] = { -INFINITY, 0.0f, -0.0f, -104.0f, -1e30f, 89.0f, INFINITY, NAN };
    for (int isa = VEXP_ISA_AVX2; isa <= VEXP_ISA_AVX512; isa++) {
        if (!vexp_isa_available((vexp_isa)isa)) continue;
        float y[8];
        vexp_array((vexp_isa)isa, x, y, 8);
        cr_expect(y[0] == 0.0f && !signbit(y[0]));
        cr_expect(y[1] == 1.0f && y[2] == 1.0f);
        cr_expect(y[3] == 0.0f && y[4] == 0.0f);
        cr_expect(isinf(y[5]) && isinf(y[6]));
        cr_expect(isnan(y[7]));
    }
}
Test(ch08, receipts_reproduce_the_counted_tables, .timeout = 120)
{
    const char *args[] = { "ch08_fused_timing", "--json", "--seq", "64", "--heads", "1",
                           "--repeats", "1", "--recorded", "/nonexistent" };
    char *json = capture_stdout_of(chapter_main, 10, (char **)args);
    cr_expect(json_fact_is(json, "flop_ratio_noncausal", "1.00x"));
    cr_expect(json_fact_is(json, "traffic_ratio_first", "3.6x"));
    cr_expect(json_fact_is(json, "traffic_ratio_last", "3.9x"));
    cr_expect(json_fact_is(json, "naive_score_mib_last", "2048"));
    cr_expect(strstr(json, "[\"4096\", \"34.4\", \"34.4\", \"1.00x\", \"17.7\", \"0.52x\"]"));
    cr_expect(strstr(json, "[\"512\", \"32\", \"0\", \"36\", \"10\", \"3.6x\", \"4x\"]"));
    char *ratio = json_fact(json, "mem_ratio");
    cr_expect(ratio && atof(ratio) >= 1.0 && atof(ratio) < 1.10, "peak/QKVO %s", ratio);
    free(ratio);
    free(json);
}
static size_t fused_extra_bytes(int threads)
{
    attn_params p = attn_default(1, 4, 512, 512, 64);
    const size_t before = fa_bytes_live();
    fa_reset_peak();
    const fused_config cfg = { .threads = threads, .count_only = true,
                               .block_q = 64, .block_k = 64 };
    attention_fused(&p, NULL, NULL, NULL, NULL, &cfg, NULL);
    return fa_bytes_peak() - before;
}

Test(ch08, extra_memory_is_one_workspace_per_thread)
{
    const size_t one = fused_extra_bytes(1), two = fused_extra_bytes(2);
    const size_t three = fused_extra_bytes(3);
    cr_assert_gt(two, one, "a second thread adds a workspace of its own");
    cr_expect_geq(two - one, three - two, "the second thread adds a workspace and handles");
    for (int t = 4; t <= 6; t++)
        cr_expect_eq(fused_extra_bytes(t), two + (size_t)(t - 2) * (three - two),
                     "%d threads", t);
}
static const size_t DECODE_SHAPES[][5] = {   /* n_q, n_k, H, G, d */
    { 1, 4133, 8, 1, 64 }, { 3, 1500, 8, 2, 64 }, { 16, 2049, 8, 8, 128 },
    { 1, 70, 4, 2, 40 }, { 3, 3000, 6, 2, 16 },
};

static decode_params decode_shape(size_t s)
{
    const size_t *x = DECODE_SHAPES[s];
    return (decode_params){ .batch = 1, .heads = x[2], .kv_heads = x[3], .nq = x[0],
                            .nk = x[1], .d = x[4], .scale = 1.0f / sqrtf((float)x[4]) };
}
static double decode_error(decode_problem *t, decode_cache cache, decode_isa isa, int threads,
                           const double *exact)
{
    const size_t count = t->p.batch * t->p.heads * t->p.nq * t->p.d;
    memset(t->o, 0xff, count * 4);                      /* NaN until written */
    decode_run(t, cache, &(decode_config){ .threads = threads, .isa = isa });
    return max_abs_diff_fd(t->o, exact, count);
}
Test(ch08, decode_equals_the_float64_reference, .timeout = 120)
{
    for (size_t s = 0; s < COUNT_OF(DECODE_SHAPES); s++) {
        const decode_params p = decode_shape(s);
        decode_problem t = decode_problem_new(&p, 11, true);
        const size_t count = p.heads * p.nq * p.d;
        double *exact = fa_alloc(count * 8), *exact16 = fa_alloc(count * 8);
        decode_reference(&p, t.q, t.k32, t.v32, exact);
        decode_reference(&p, t.q, t.kr, t.vr, exact16);
        const double bound = decode_bf16_bound(&t);
        for (decode_isa isa = DECODE_ISA_SCALAR; isa <= DECODE_ISA_AVX512; isa++) {
            if (decode_isa_problem(isa, p.d)) continue;
            double e = decode_error(&t, DECODE_FP32, isa, 2, exact);
            cr_expect(e <= 1e-5, "shape %zu %s fp32: error %.3e", s, decode_isa_name(isa), e);
            e = decode_error(&t, DECODE_BF16, isa, 2, exact16);
            cr_expect(e <= 1e-5, "shape %zu %s bf16 against its own numbers: %.3e", s,
                      decode_isa_name(isa), e);
            e = decode_error(&t, DECODE_BF16, isa, 2, exact);
            cr_expect(e <= bound, "shape %zu %s bf16 against fp32: %.3e, bound %.3e", s,
                      decode_isa_name(isa), e, bound);
        }
        fa_free(exact); fa_free(exact16);
        decode_problem_free(&t);
    }
}
Test(ch08, decode_threads_are_bit_identical, .timeout = 60)
{
    const size_t lengths[] = { 4 * DECODE_SPAN + 77, 300 };
    for (size_t l = 0; l < COUNT_OF(lengths); l++)
        for (int c = 0; c < 2; c++) {
            const decode_params p = { .batch = 2, .heads = 8, .kv_heads = 2, .nq = 3,
                                      .nk = lengths[l], .d = 64, .scale = 0.125f };
            decode_problem t = decode_problem_new(&p, 5, true);
            const size_t count = 2 * 8 * 3 * 64;
            const decode_cache cache = c ? DECODE_BF16 : DECODE_FP32;
            decode_run(&t, cache, &(decode_config){ .threads = 1 });
            float *one = fa_alloc(count * 4);
            memcpy(one, t.o, count * 4);
            const int threads[] = { 2, 3, 7 };
            for (size_t i = 0; i < COUNT_OF(threads); i++) {
                memset(t.o, 0xff, count * 4);
                decode_run(&t, cache, &(decode_config){ .threads = threads[i] });
                cr_expect(memcmp(one, t.o, count * 4) == 0, "n_k %zu, %s cache, %d threads",
                          p.nk, c ? "bf16" : "fp32", threads[i]);
            }
            fa_free(one);
            decode_problem_free(&t);
        }
}
Test(ch08, decode_groups_equal_repeated_heads)
{
    const decode_params p = { .batch = 1, .heads = 8, .kv_heads = 2, .nq = 3, .nk = 2500,
                              .d = 64, .scale = 0.125f };
    decode_params wide = p;
    wide.kv_heads = 8;
    decode_problem t = decode_problem_new(&p, 9, false), e = decode_problem_new(&wide, 9, false);
    const size_t head = p.nk * p.d, count = p.heads * p.nq * p.d;
    memcpy(e.q, t.q, count * 4);
    for (size_t h = 0; h < 8; h++) {
        memcpy(e.k32 + h * head, t.k32 + h / 4 * head, head * 4);
        memcpy(e.v32 + h * head, t.v32 + h / 4 * head, head * 4);
    }
    decode_run(&t, DECODE_FP32, &(decode_config){ .threads = 2 });
    decode_run(&e, DECODE_FP32, &(decode_config){ .threads = 2 });
    cr_expect(memcmp(t.o, e.o, count * 4) == 0, "G = 2 differs from its heads repeated");
    decode_problem_free(&t); decode_problem_free(&e);
}
Test(ch08, decode_intensity_follows_the_formula)
{
    decode_params p = { .batch = 1, .heads = 8, .kv_heads = 1, .nq = 1, .nk = 4096, .d = 64 };
    cr_expect_float_eq(decode_intensity(&p, 4), 4.0, 1e-12);
    cr_expect_float_eq(decode_intensity(&p, 2), 8.0, 1e-12);
    cr_expect_float_eq(decode_arithmetic_share(&p, 4, 30, 240), 0.5, 1e-12);
    p.kv_heads = 8;
    cr_expect_float_eq(decode_intensity(&p, 4), 0.5, 1e-12);
    p.nq = 3;
    cr_expect_float_eq(decode_arithmetic_share(&p, 2, 30, 240), 0.375, 1e-12);
}
Test(ch08, decode_bytes_cover_what_a_call_allocates)
{
    const decode_params p = { .batch = 2, .heads = 8, .kv_heads = 2, .nq = 5, .nk = 3000,
                              .d = 64, .scale = 0.125f };
    decode_problem t = decode_problem_new(&p, 3, false);
    for (int threads = 1; threads <= 3; threads += 2) {
        const decode_config cfg = { .threads = threads };
        const size_t before = fa_bytes_live();
        fa_reset_peak();
        decode_run(&t, DECODE_FP32, &cfg);
        const size_t used = fa_bytes_peak() - before, said = attention_decode_bytes(&p, &cfg);
        cr_expect(used <= said && (threads > 1 || said <= used + used / 8),
                  "%d threads: allocated %zu bytes, said %zu", threads, used, said);
    }
    decode_problem_free(&t);
}
Test(ch08, roofline_labels_never_overprint)
{
    const double u[] = { 0.5, 0.5, 0.5, 0.51, 0.9, 0.9 }, v[] = { 0.5, 0.5, 0.52, 0.5, 0.95, 0.95 };
    const int chars[] = { 14, 14, 14, 14, 14, 14 }, count = 6;
    label_place at[6];
    place_labels(u, v, chars, count, at);
    for (int i = 0; i < count; i++) {
        const plot_box a = label_box(at[i], chars[i]);
        cr_expect(a.u0 >= 0 && a.u1 <= 1 && a.v0 >= 0 && a.v1 <= 1, "label %d outside", i);
        for (int j = 0; j < count; j++) {
            const plot_box b = label_box(at[j], chars[j]);
            cr_expect(j == i || a.u1 <= b.u0 || b.u1 <= a.u0 || a.v1 <= b.v0 || b.v1 <= a.v0,
                      "labels %d and %d overprint", i, j);
            cr_expect(a.u1 <= u[j] - 0.015 || u[j] + 0.015 <= a.u0 || a.v1 <= v[j] - 0.015
                      || v[j] + 0.015 <= a.v0, "label %d covers point %d", i, j);
        }
    }
}
Test(ch08, roofline_words_follow_the_ridges)
{
    char buf[256];
    cr_expect(strstr(roof_place(buf, sizeof buf, 15.1, 6.2, 9.3), "right of") == buf);
    cr_expect(strstr(buf, "flat roofs") != NULL);
    cr_expect(strstr(roof_place(buf, sizeof buf, 5.0, 6.2, 9.3), "left of") == buf);
    cr_expect(strstr(buf, "sloped lines") != NULL);
    cr_expect(strstr(roof_place(buf, sizeof buf, 8.0, 6.2, 9.3),
                     "flat roof of one core and the sloped line of all cores") != NULL);
    cr_expect(strstr(roof_place(buf, sizeof buf, 8.0, 9.3, 6.2),
                     "flat roof of all cores and the sloped line of one core") != NULL);
}
