/* decode_micro.h — one copy of the decoding kernel's span, for one vector width;
   included by decode.c once per copy after cpu/vec.h gives the names of its
   width and decode.c VWIDEN and VHSUM4 (no include guard: it is read three
   times); it releases them all.
   Tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
ALWAYS void FN(decode_scores)(const float *restrict qs, const float *restrict kb,
                              size_t rows, size_t n, size_t d, float *restrict s)
{
    for (size_t r = 0; r < rows; r++) {
        const float *qr = qs + r * d;
        float *sr = s + r * DECODE_BLOCK;
        size_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const float *k0 = kb + j * d;
            V a0 = VZERO(), a1 = VZERO(), a2 = VZERO(), a3 = VZERO();
            for (size_t c = 0; c < d; c += W) {
                const V qv = VLOAD(qr + c);
                a0 = VFMA(qv, VLOAD(k0 + c), a0);
                a1 = VFMA(qv, VLOAD(k0 + d + c), a1);
                a2 = VFMA(qv, VLOAD(k0 + 2 * d + c), a2);
                a3 = VFMA(qv, VLOAD(k0 + 3 * d + c), a3);
            }
            VHSUM4(a0, a1, a2, a3, sr + j);
        }
        for (; j < n; j++) {
            V a = VZERO();
            for (size_t c = 0; c < d; c += W) a = VFMA(VLOAD(qr + c), VLOAD(kb + j * d + c), a);
            sr[j] = VHSUM(a);
        }
    }
}
ALWAYS float FN(decode_row_update)(float *restrict s, size_t n, softmax_partial *st)
{
    for (size_t j = n; j < DECODE_BLOCK; j++) s[j] = -INFINITY;
    V mx = VLOAD(s);
    for (size_t j = W; j < DECODE_BLOCK; j += W) mx = VMAX(mx, VLOAD(s + j));
    const float m = fmaxf(st->max, VHMAX(mx));
    const float alpha = st->max == -INFINITY ? 0.0f : expf(st->max - m);
    V sum = VZERO();
    for (size_t j = 0; j < DECODE_BLOCK; j += W) {
        const V p = VEXP(VSUB(VLOAD(s + j), VSET1(m)));
        VSTORE(s + j, p);
        sum = VADD(sum, p);
    }
    *st = (softmax_partial){ m, alpha * st->sum + VHSUM(sum) };
    return alpha;
}
ALWAYS void FN(decode_values)(const float *restrict s, const float *restrict alpha,
                              const float *restrict vb, size_t rows, size_t n, size_t d,
                              float *restrict acc)
{
    for (size_t r = 0; r < rows; r++) {
        const float *p = s + r * DECODE_BLOCK;
        float *a = acc + r * d;
        const V keep = VSET1(alpha[r]);
        size_t c = 0;
        for (; c + 4 * W <= d; c += 4 * W) {
            V a0 = VMUL(keep, VLOAD(a + c)), a1 = VMUL(keep, VLOAD(a + c + W));
            V a2 = VMUL(keep, VLOAD(a + c + 2 * W)), a3 = VMUL(keep, VLOAD(a + c + 3 * W));
            for (size_t j = 0; j < n; j++) {
                const V pj = VSET1(p[j]);
                const float *vj = vb + j * d + c;
                a0 = VFMA(pj, VLOAD(vj), a0);
                a1 = VFMA(pj, VLOAD(vj + W), a1);
                a2 = VFMA(pj, VLOAD(vj + 2 * W), a2);
                a3 = VFMA(pj, VLOAD(vj + 3 * W), a3);
            }
            VSTORE(a + c, a0); VSTORE(a + c + W, a1);
            VSTORE(a + c + 2 * W, a2); VSTORE(a + c + 3 * W, a3);
        }
        for (; c < d; c += W) {
            V a0 = VMUL(keep, VLOAD(a + c));
            for (size_t j = 0; j < n; j++) a0 = VFMA(VSET1(p[j]), VLOAD(vb + j * d + c), a0);
            VSTORE(a + c, a0);
        }
    }
}
ALWAYS const float *FN(decode_block_of)(const void *cache, size_t at, size_t count,
                                        bool bf16_cache, float *restrict buf)
{
    if (!bf16_cache) return (const float *)cache + at;
    const bf16 *h = (const bf16 *)cache + at;
    size_t i = 0;
    for (; i + W <= count; i += W) VSTORE(buf + i, VWIDEN(h + i));
    for (; i < count; i++) buf[i] = bf16_float(h[i]);
    return buf;
}
ALWAYS void FN(decode_span_with)(const decode_job *job, size_t unit, float *restrict ws,
                                 bool bf16_cache)
{
    const decode_params *p = job->p;
    const size_t d = p->d, rows = job->rows;
    const size_t spans = decode_spans(p->nk), span = unit % spans;
    const size_t head = unit / spans;                 /* batch * kv_heads + g */
    const size_t first = span * DECODE_SPAN,
                 last = first + DECODE_SPAN < p->nk ? first + DECODE_SPAN : p->nk;
    const size_t base = head * p->nk * d;              /* element offset of the head */
    const float *qs = job->qs + head * rows * d;       /* the group's query rows */
    softmax_partial *st = job->part + unit * rows;
    float *acc = job->acc + unit * rows * d;
    float *s = ws, *alpha = s + rows * DECODE_BLOCK, *kt = alpha + rows,
          *vt = kt + DECODE_BLOCK * d;
    for (size_t r = 0; r < rows; r++) st[r] = online_start();
    memset(acc, 0, rows * d * sizeof(float));
    for (size_t k0 = first; k0 < last; k0 += DECODE_BLOCK) {
        const size_t n = last - k0 < DECODE_BLOCK ? last - k0 : DECODE_BLOCK;
        const float *kb = FN(decode_block_of)(job->k, base + k0 * d, n * d, bf16_cache, kt);
        const float *vb = FN(decode_block_of)(job->v, base + k0 * d, n * d, bf16_cache, vt);
        FN(decode_scores)(qs, kb, rows, n, d, s);
        for (size_t r = 0; r < rows; r++)
            alpha[r] = FN(decode_row_update)(s + r * DECODE_BLOCK, n, &st[r]);
        FN(decode_values)(s, alpha, vb, rows, n, d, acc);
    }
}
static void FN(decode_span)(const decode_job *job, size_t unit, float *ws)
{
    if (job->cache == DECODE_BF16) FN(decode_span_with)(job, unit, ws, true);
    else FN(decode_span_with)(job, unit, ws, false);
}
#undef VWIDEN
#undef VHSUM4
#include "cpu/vec_end.h"
