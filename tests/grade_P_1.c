/* grade_P_1.c — grader of project P.1. Tangled from chapters/app_projects.nw. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include "harness/harness.h"
#include "ex_P_1.h"

static bool sees(long i, long j, long w) { return j <= i && j > i - w; }

static attn_stats brute_force_tiles(const attn_params *p)
{
    attn_stats s = { 0 };
    for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q)
        for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
            size_t seen = 0, all = 0;
            for (size_t i = q0; i < q0 + p->block_q && i < p->nq; i++)
                for (size_t j = k0; j < k0 + p->block_k && j < p->nk; j++, all++)
                    seen += sees((long)i, (long)j, p->window);
            s.tiles_total++;
            if (seen == 0) s.tiles_skipped++;
            else s.tiles_computed++;
            if (seen > 0 && seen < all) s.tiles_masked++;
        }
    return s;
}
static void check_window(size_t heads, size_t n, size_t d, size_t bq, size_t bk, long w)
{
    attn_params p = attn_default(1, heads, n, n, d);
    p.block_q = bq; p.block_k = bk; p.causal = true; p.window = w;
    const size_t count = heads * n * d;
    float *q = fa_alloc(count * sizeof(float)), *k = fa_alloc(count * sizeof(float));
    float *v = fa_alloc(count * sizeof(float)), *o = fa_alloc(count * sizeof(float));
    double *want = fa_alloc(count * sizeof(double));
    attn_draw_inputs(&p, 7, q, k, v);
    attention_reference(&p, q, k, v, want);
    attn_stats got;
    proj_window_attention(&p, q, k, v, o, &got);
    double vmax = 0;
    for (size_t x = 0; x < count; x++) vmax = fmax(vmax, fabs(v[x]));
    const double err = max_abs_diff_fd(o, want, count);
    const double bound = (double)(d + n + 8) * FLT_EPSILON * vmax;
    cr_expect(err <= bound, "hint: output off the reference by %g (bound %g): the window's "
              "edges? the renormalisation?", err, bound);
    const attn_stats bf = brute_force_tiles(&p);
    cr_expect(got.tiles_computed == heads * bf.tiles_computed, "hint: %zu tiles computed, "
              "%zu have a visible entry", got.tiles_computed, heads * bf.tiles_computed);
    cr_expect(got.tiles_masked == heads * bf.tiles_masked, "hint: %zu tiles masked, %zu are "
              "cut by an edge", got.tiles_masked, heads * bf.tiles_masked);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(want);
}
Test(grade_P_1, closed_form, .description = "n = 256, w = 64, blocks of 32: T(c+1) - c(c+1)/2 tiles")
{
    check_window(2, 256, 16, 32, 32, 64);
    const attn_params p = { .nq = 256, .nk = 256, .block_q = 32, .block_k = 32, .window = 64 };
    const size_t T = 8, c = 2;
    cr_expect(brute_force_tiles(&p).tiles_computed == T * (c + 1) - c * (c + 1) / 2,
              "hint: the brute force and chapter 7's closed form disagree");
}
Test(grade_P_1, ragged, .description = "n = 200, w = 50, tiles of 48 by 40, 3 heads")
{ check_window(3, 200, 24, 48, 40, 50); }
Test(grade_P_1, narrow, .description = "w = 1: each query sees only itself")
{ check_window(1, 70, 8, 16, 16, 1); }
Test(grade_P_1, wide, .description = "w = 300 > n: the causal mask alone")
{ check_window(1, 130, 32, 32, 64, 300); }
