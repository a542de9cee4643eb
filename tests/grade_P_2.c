/* grade_P_2.c — grader of project P.2. Tangled from chapters/app_projects.nw. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "ex_P_2.h"

typedef struct { float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv; double *fq, *fk, *fv; } p2_arrays;

static float *p2_floats(size_t n) { return memset(fa_alloc(n * sizeof(float)), 0, n * sizeof(float)); }
static double *p2_doubles(size_t n) { return memset(fa_alloc(n * sizeof(double)), 0, n * sizeof(double)); }

static p2_arrays p2_new(const attn_params *p)
{
    const size_t nq = p->nq * p->d, nk = p->nk * p->d;
    p2_arrays a = { p2_floats(nq), p2_floats(nk), p2_floats(nk), p2_floats(nq), p2_floats(p->nq),
                    p2_floats(nq), p2_floats(nq), p2_floats(nk), p2_floats(nk),
                    p2_doubles(nq), p2_doubles(nk), p2_doubles(nk) };
    return a;
}
static void p2_free(p2_arrays *a)
{
    float *f[] = { a->q, a->k, a->v, a->o, a->lse, a->dout, a->dq, a->dk, a->dv };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) fa_free(f[i]);
    fa_free(a->fq); fa_free(a->fk); fa_free(a->fv);
}
static void p2_prepare(const attn_params *p, size_t nqv, size_t nkv, p2_arrays *a)
{
    mt19937 g;
    attn_draw_inputs(p, 11, a->q, a->k, a->v);
    mt_seed(&g, 12);
    torch_randn(&g, a->dout, p->nq * p->d);
    for (size_t i = 0; i < p->nq; i++) a->lse[i] = -INFINITY;
    attn_params cut = *p;
    cut.nq = nqv; cut.nk = nkv;
    if (nqv == 0 || nkv == 0) return;
    attention_forward_lse(&cut, a->q, a->k, a->v, a->o, a->lse, 1, NULL);
    attention_grad_fd(&cut, a->q, a->k, a->v, a->dout, a->fq, a->fk, a->fv);
}
static size_t p2_tiles(const attn_params *p, size_t nqv, size_t nkv)
{
    size_t computed = 0;
    for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q)
        for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
            bool seen = false;
            for (size_t i = q0; i < q0 + p->block_q && i < nqv; i++)
                for (size_t j = k0; j < k0 + p->block_k && j < nkv; j++)
                    seen = seen || !p->causal || j <= i;
            computed += seen;
        }
    return computed;
}
static double p2_worst(const float *got, const double *want, size_t real, size_t all)
{
    double worst = max_abs_diff_fd(got, want, real);
    for (size_t x = real; x < all; x++) if (got[x] != 0.0f) return INFINITY;
    return worst;
}
static void check_padded(size_t n_q, size_t n_k, size_t nqv, size_t nkv, size_t d,
                         size_t bq, size_t bk, bool causal)
{
    attn_params p = attn_default(1, 1, n_q, n_k, d);
    p.block_q = bq; p.block_k = bk; p.causal = causal;
    p2_arrays a = p2_new(&p);
    p2_prepare(&p, nqv, nkv, &a);
    bwd_counts c;
    proj_masked_backward(&p, nqv, nkv, a.q, a.k, a.v, a.o, a.lse, a.dout, a.dq, a.dk, a.dv, &c);
    const double eq = p2_worst(a.dq, a.fq, nqv * d, n_q * d);
    const double ek = p2_worst(a.dk, a.fk, nkv * d, n_k * d);
    const double ev = p2_worst(a.dv, a.fv, nkv * d, n_k * d);
    cr_expect(eq <= 1e-5, "hint: dQ off by %g (inf: a padding row is not zero)", eq);
    cr_expect(ek <= 1e-5, "hint: dK off by %g (inf: a padding key's row is not zero)", ek);
    cr_expect(ev <= 1e-5, "hint: dV off by %g (inf: a padding key's row is not zero)", ev);
    cr_expect(c.tiles_computed == p2_tiles(&p, nqv, nkv), "hint: %zu tiles computed, %zu have "
              "a visible entry", c.tiles_computed, p2_tiles(&p, nqv, nkv));
    p2_free(&a);
}
Test(grade_P_2, keys, .description = "40 by 40, 22 real keys, d = 8, tiles of 8")
{ check_padded(40, 40, 40, 22, 8, 8, 8, false); }
Test(grade_P_2, both, .description = "30 queries (19 real) by 45 keys (31 real), tiles of 8 by 16")
{ check_padded(30, 45, 19, 31, 6, 8, 16, false); }
Test(grade_P_2, causal, .description = "48 by 48, 33 real queries, 20 real keys, causal, tiles of 16")
{ check_padded(48, 48, 33, 20, 8, 16, 16, true); }
Test(grade_P_2, empty, .description = "no real key: every gradient zero")
{ check_padded(20, 20, 20, 0, 4, 8, 8, false); }
