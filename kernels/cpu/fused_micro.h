/* fused_micro.h — the micro-kernels of the fused kernel for one vector width,
   included by fused.c once per instruction set after cpu/vec.h gives the names
   of that width and fused.c its register shape R, NB and DV (no include guard:
   it is read twice); it uses fused.c's fused_tile and visible_range, and
   releases the names at its end.
   Tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
ALWAYS void FN(qk_register_tile)(const float *restrict qs, size_t ldq,
                           const float *restrict kt, size_t d, V s[R][NB])
{
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int b = 0; b < NB; b++) s[r][b] = VZERO();
    for (size_t c = 0; c < d; c++) {
        V kv[NB];
        UNROLL for (int b = 0; b < NB; b++) kv[b] = VLOAD(kt + c * FUSED_KEY_TILE + b * W);
        UNROLL for (int r = 0; r < R; r++) {
            const V qb = VSET1(qs[r * ldq + c]);
            UNROLL for (int b = 0; b < NB; b++) s[r][b] = VFMA(qb, kv[b], s[r][b]);
        }
    }
}
ALWAYS void FN(store_scores)(V s[R][NB], float *restrict sbuf, const int lo[R],
                             const int hi[R], int base, bool masked, V top[R])
{
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int b = 0; b < NB; b++) {
        const V x = masked ? VKEEP(s[r][b], base + b * W, lo[r], hi[r]) : s[r][b];
        VSTORE(sbuf + r * FUSED_KEY_TILE + base + b * W, x);
        top[r] = VMAX(top[r], x);
    }
}
ALWAYS void FN(softmax_rows)(float *restrict sbuf, size_t width, float *m, float *l,
                             const V top[R], float alpha[R])
{
    float m_new[R], m_use[R];
    V sum[R];
    UNROLL for (int r = 0; r < R; r++) {
        m_new[r] = fmaxf(m[r], VHMAX(top[r]));
        m_use[r] = m_new[r] == -INFINITY ? 0.0f : m_new[r];
        sum[r] = VZERO();
    }
    for (size_t j = 0; j < width; j += W)
        UNROLL for (int r = 0; r < R; r++) {
            float *at = sbuf + r * FUSED_KEY_TILE + j;
            const V e = VEXP(VSUB(VLOAD(at), VSET1(m_use[r])));
            sum[r] = VADD(sum[r], e);
            VSTORE(at, e);
        }
    UNROLL for (int r = 0; r < R; r++) {
        alpha[r] = VI(cvtss_f32)(VEXP(VSUB(VSET1(m[r]), VSET1(m_use[r]))));
        m[r] = m_new[r];
        l[r] = l[r] * alpha[r] + VHSUM(sum[r]);
    }
}
ALWAYS void FN(pv_chunk)(const float *restrict pbuf, const float *restrict vp, size_t dp,
                         size_t kc, float *restrict acc, const float *alpha, int nv)
{
    V a[R][DV];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int b = 0; b < nv; b++)
        a[r][b] = VMUL(VLOAD(acc + r * dp + b * W), VSET1(alpha[r]));
    for (size_t j = 0; j < kc; j++) {
        V vv[DV];
        UNROLL for (int b = 0; b < nv; b++) vv[b] = VLOAD(vp + j * dp + b * W);
        UNROLL for (int r = 0; r < R; r++) {
            const V pb = VSET1(pbuf[r * FUSED_KEY_TILE + j]);
            UNROLL for (int b = 0; b < nv; b++) a[r][b] = VFMA(pb, vv[b], a[r][b]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int b = 0; b < nv; b++)
        VSTORE(acc + r * dp + b * W, a[r][b]);
}
static void FN(pv_tile)(const float *pbuf, const float *vp, size_t dp, size_t kc,
                        float *acc, const float *alpha)
{
    size_t c0 = 0;
    for (; c0 + DV * W <= dp; c0 += DV * W)
        FN(pv_chunk)(pbuf, vp + c0, dp, kc, acc + c0, alpha, DV);
    for (; c0 < dp; c0 += W)
        FN(pv_chunk)(pbuf, vp + c0, dp, kc, acc + c0, alpha, 1);
}
static void FN(row_group)(const fused_tile *t, size_t r0)
{
    int lo[R], hi[R], end = 0;
    float alpha[R];
    for (int r = 0; r < R; r++) {
        visible_range(t, r0 + (size_t)r, &lo[r], &hi[r]);
        if (hi[r] > lo[r] && hi[r] > end) end = hi[r];
    }
    if (end == 0) return;                               /* sees none of these keys */
    const size_t kc = (size_t)end, width = (kc + NB * W - 1) / (NB * W) * (NB * W);
    V top[R];
    UNROLL for (int r = 0; r < R; r++) top[r] = VSET1(-INFINITY);
    for (size_t j0 = 0; j0 < width; j0 += NB * W) {
        V s[R][NB];
        FN(qk_register_tile)(t->qs + r0 * t->dp, t->dp, t->kt + j0, t->d, s);
        FN(store_scores)(s, t->sbuf, lo, hi, (int)j0, t->needs_mask || j0 + NB * W > kc, top);
    }
    FN(softmax_rows)(t->sbuf, width, t->m + r0, t->l + r0, top, alpha);
    FN(pv_tile)(t->sbuf, t->vp, t->dp, kc, t->acc + r0 * t->dp, alpha);
}
static void FN(key_tile)(const fused_tile *t)
{
    for (size_t r0 = 0; r0 < t->rows; r0 += R) FN(row_group)(t, r0);
}
#undef R
#undef NB
#undef DV
#include "cpu/vec_end.h"
