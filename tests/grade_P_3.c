/* grade_P_3.c — grader of project P.3. Tangled from chapters/app_projects.nw. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "ex_P_3.h"

static void run_split(const void *a) { proj_decode_split(*(const proj_decode_args *)a); }
static void run_combine(const void *a) { proj_decode_combine(*(const proj_decode_args *)a); }

static void p3_decode(const float *q, const float *k, const float *v, unsigned n, unsigned d,
                      unsigned chunk, float *o)
{
    const unsigned splits = (n + chunk - 1) / chunk;
    float *pm = fa_alloc(splits * sizeof(float)), *pl = fa_alloc(splits * sizeof(float));
    float *po = fa_alloc((size_t)splits * d * sizeof(float));
    const proj_decode_args a = { q, k, v, pm, pl, po, o, n, d, chunk, 1.0f / sqrtf((float)d) };
    emu_launch((emu_dim3){ splits, 1, 1 }, (emu_dim3){ PROJ_THREADS, 1, 1 }, run_split, &a, NULL);
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ PROJ_THREADS, 1, 1 }, run_combine, &a, NULL);
    fa_free(pm); fa_free(pl); fa_free(po);
}
static double p3_reference(const float *q, const float *k, const float *v, unsigned n,
                           unsigned d, double *want)
{
    const double scale = 1.0f / sqrtf((float)d);
    double *s = fa_alloc(n * sizeof(double)), m = -INFINITY, sigma = 0, vmax = 0, l = 0;
    for (unsigned j = 0; j < n; j++) {
        double dot = 0, mag = 0;
        for (unsigned x = 0; x < d; x++) dot += (double)q[x] * k[(size_t)j * d + x],
                                         mag += fabs((double)q[x] * k[(size_t)j * d + x]);
        s[j] = scale * dot; m = fmax(m, s[j]); sigma = fmax(sigma, scale * mag);
    }
    for (unsigned x = 0; x < d; x++) want[x] = 0;
    for (unsigned j = 0; j < n; j++) {
        const double w = exp(s[j] - m);
        l += w;
        for (unsigned x = 0; x < d; x++) {
            want[x] += w * v[(size_t)j * d + x];
            vmax = fmax(vmax, fabs((double)v[(size_t)j * d + x]));
        }
    }
    for (unsigned x = 0; x < d; x++) want[x] /= l;
    fa_free(s);
    return 2.0 * ((2.0 * d + 4.0) * sigma + n + 8.0) * FLT_EPSILON * vmax;
}
typedef struct { float *q, *k, *v, *o; double *want; double bound; } p3_case;

static p3_case p3_draw(unsigned n, unsigned d, float gain)
{
    mt19937 g;
    p3_case c = { fa_alloc(d * sizeof(float)), fa_alloc((size_t)n * d * sizeof(float)),
                  fa_alloc((size_t)n * d * sizeof(float)), fa_alloc(d * sizeof(float)),
                  fa_alloc(d * sizeof(double)), 0 };
    mt_seed(&g, 13 + n);
    torch_randn(&g, c.q, d); torch_randn(&g, c.k, (size_t)n * d); torch_randn(&g, c.v, (size_t)n * d);
    for (unsigned x = 0; x < d; x++) c.q[x] *= gain;
    for (size_t x = 0; x < (size_t)n * d; x++) c.k[x] *= gain, c.v[x] += 1.0f;
    c.bound = p3_reference(c.q, c.k, c.v, n, d, c.want);
    return c;
}
static void p3_free(p3_case *c)
{
    fa_free(c->q); fa_free(c->k); fa_free(c->v); fa_free(c->o); fa_free(c->want);
}
static void check_decode(unsigned n, unsigned d, unsigned chunk, float gain)
{
    p3_case c = p3_draw(n, d, gain);
    p3_decode(c.q, c.k, c.v, n, d, chunk, c.o);
    bool finite = true;
    for (unsigned x = 0; x < d; x++) finite = finite && isfinite(c.o[x]);
    cr_expect(finite, "hint: an output is not finite: is the maximum subtracted before exp?");
    const double err = max_abs_diff_fd(c.o, c.want, d);
    cr_expect(err <= c.bound, "hint: n = %u, chunk = %u: output off the reference by %g "
              "(bound %g): the last chunk? the combine's rescaling?", n, chunk, err, c.bound);
    p3_free(&c);
}
static void check_one_against_many(unsigned n, unsigned d, unsigned chunk)
{
    p3_case c = p3_draw(n, d, 1.0f);
    float *many = fa_alloc(d * sizeof(float));
    p3_decode(c.q, c.k, c.v, n, d, n, c.o);
    p3_decode(c.q, c.k, c.v, n, d, chunk, many);
    double err = 0;
    for (unsigned x = 0; x < d; x++) err = fmax(err, fabs((double)c.o[x] - many[x]));
    cr_expect(err <= 2 * c.bound, "hint: one chunk and %u chunks differ by %g (bound %g)",
              (n + chunk - 1) / chunk, err, 2 * c.bound);
    const double off = max_abs_diff_fd(many, c.want, d);
    cr_expect(off <= c.bound, "hint: %u chunks off the reference by %g (bound %g)",
              (n + chunk - 1) / chunk, off, c.bound);
    fa_free(many); p3_free(&c);
}
static void check_combine_by_hand(void)
{
    float pm[2] = { 0.0f, 50.0f }, pl[2] = { 1.0f, 1.0f }, po[2] = { 1.0f, 3.0f }, o = -1.0f;
    const proj_decode_args a = { NULL, NULL, NULL, pm, pl, po, &o, 2, 1, 1, 1.0f };
    emu_launch((emu_dim3){ 1, 1, 1 }, (emu_dim3){ PROJ_THREADS, 1, 1 }, run_combine, &a, NULL);
    cr_expect(fabsf(o - 3.0f) <= 4 * FLT_EPSILON, "hint: partials (0, 1, 1) and (50, 1, 3) "
              "combine to %g, not 3: is each rescaled by e^(m_b - m)?", (double)o);
}
static void check_nvcc(void)
{
    const char *src = getenv("FA_GRADE_SOURCE");
    if (!src || !*src) src = "tests/ex_P_3.c";
    if (system("command -v nvcc > /dev/null 2>&1") != 0) {
        printf("grade P.3: no nvcc on PATH: the CUDA compile is not graded here\n");
        return;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "nvcc -std=c++17 -x cu -arch=sm_90 -Itests -Ikernels "
             "-c '%s' -o /dev/null", src);
    cr_expect(system(cmd) == 0, "hint: nvcc rejects %s (its messages are above)", src);
}
Test(grade_P_3, combine, .description = "the combine alone, on two partials made by hand")
{ check_combine_by_hand(); }
Test(grade_P_3, ragged, .description = "n = 1000, d = 64, chunks of 256: the last one short")
{ check_decode(1000, 64, 256, 1.0f); }
Test(grade_P_3, short_row, .description = "n = 100 below one chunk of 256, d = 40")
{ check_decode(100, 40, 256, 1.0f); }
Test(grade_P_3, long_row, .description = "n = 65536, d = 128, chunks of 1024")
{ check_decode(65536, 128, 1024, 1.0f); }
Test(grade_P_3, one_against_many, .description = "n = 3000, d = 32: one chunk against 47")
{ check_one_against_many(3000, 32, 64); }
Test(grade_P_3, large, .description = "scores in the thousands, n = 5000, d = 64: finite")
{ check_decode(5000, 64, 512, 16.0f); }
Test(grade_P_3, nvcc, .description = "the kernel file compiles with nvcc -arch=sm_90 (if any)")
{ check_nvcc(); }
