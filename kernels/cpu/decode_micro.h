/* decode_micro.h — one copy of the decoding kernel's span, for one vector width;
   included by decode.c once per copy after cpu/vec.h gives the names of its
   width and decode.c its own (VWIDEN, DECODE_PAIRS, DECODE_TALL, and VHSUM4
   or VHALF, DECODE_HALF_PAIRS, DECODE_HSUM_PAIRS and DECODE_HSUM_PAIR); no
   include guard: it is read three times; it releases them all.
   Tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
ALWAYS void FN(decode_load2)(const void *cache, size_t at, bool half, V *lo, V *hi)
{
    if (half) {
        DECODE_PAIRS((const bf16 *)cache + at, lo, hi);
    } else {
        *lo = VLOAD((const float *)cache + at);
        *hi = VLOAD((const float *)cache + at + W);
    }
}

ALWAYS V FN(decode_load1)(const void *cache, size_t at, bool half)
{
    return half ? VWIDEN((const bf16 *)cache + at) : VLOAD((const float *)cache + at);
}
ALWAYS V FN(decode_dot2)(V q0, V q1, const void *kc, size_t at, bool half, V a)
{
    V lo, hi;
    FN(decode_load2)(kc, at, half, &lo, &hi);
    return VFMA(q1, hi, VFMA(q0, lo, a));
}

ALWAYS V FN(decode_dot)(const float *restrict qr, const void *kc, size_t at, bool half,
                        size_t d, V a)
{
    size_t c = 0;
    for (; c + 2 * W <= d; c += 2 * W)
        a = FN(decode_dot2)(VLOAD(qr + c), VLOAD(qr + c + W), kc, at + c, half, a);
    return c < d ? VFMA(VLOAD(qr + c), FN(decode_load1)(kc, at + c, half), a) : a;
}
#if W == 1
ALWAYS void FN(decode_scores_rows)(const float *restrict qs, const void *kc, size_t at,
                                   bool half, size_t r0, const size_t R, size_t n, size_t d,
                                   float *restrict s, decode_ahead *ahead)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        decode_prefetch(ahead);
        V a[4][4] = { { VZERO() } };
        size_t c = 0;
        for (; c + 2 * W <= d; c += 2 * W) {
            V lo[4], hi[4];
            UNROLL for (size_t i = 0; i < 4; i++)
                FN(decode_load2)(kc, at + (j + i) * d + c, half, &lo[i], &hi[i]);
            UNROLL for (size_t r = 0; r < R; r++) {
                const V q0 = VLOAD(qs + (r0 + r) * d + c), q1 = VLOAD(qs + (r0 + r) * d + c + W);
                UNROLL for (size_t i = 0; i < 4; i++)
                    a[r][i] = VFMA(q1, hi[i], VFMA(q0, lo[i], a[r][i]));
            }
        }
        if (c < d) {
            UNROLL for (size_t i = 0; i < 4; i++) {
                const V k = FN(decode_load1)(kc, at + (j + i) * d + c, half);
                UNROLL for (size_t r = 0; r < R; r++)
                    a[r][i] = VFMA(VLOAD(qs + (r0 + r) * d + c), k, a[r][i]);
            }
        }
        UNROLL for (size_t r = 0; r < R; r++)
            VHSUM4(a[r][0], a[r][1], a[r][2], a[r][3], s + (r0 + r) * DECODE_BLOCK + j);
    }
    for (; j < n; j++)
        UNROLL for (size_t r = 0; r < R; r++)
            s[(r0 + r) * DECODE_BLOCK + j] =
                VHSUM(FN(decode_dot)(qs + (r0 + r) * d, kc, at + j * d, half, d, VZERO()));
}
#else
ALWAYS void FN(decode_load_halves)(const void *cache, size_t at, bool half, V *lo, V *hi)
{
    if (half) {
        DECODE_HALF_PAIRS((const bf16 *)cache + at, lo, hi);
    } else {
        *lo = VHALF((const float *)cache + at);
        *hi = VHALF((const float *)cache + at + W / 2);
    }
}
ALWAYS void FN(decode_scores_pairs)(const float *restrict qs, const float *restrict qp,
                                    const void *kc, size_t at, bool half, size_t r0,
                                    const size_t R, size_t n, size_t d, float *restrict s,
                                    decode_ahead *ahead)
{
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        decode_prefetch(ahead);
        V a[DECODE_TALL / 2][4] = { { VZERO() } };
        for (size_t c = 0; c < d; c += W) {
            V lo[4], hi[4];
            UNROLL for (size_t i = 0; i < 4; i++)
                FN(decode_load_halves)(kc, at + (j + i) * d + c, half, &lo[i], &hi[i]);
            UNROLL for (size_t p = 0; p < (R + 1) / 2; p++) {
                const float *qq = qp + (r0 + 2 * p) * d + 2 * c;
                const V q0 = VLOAD(qq), q1 = VLOAD(qq + W);
                UNROLL for (size_t i = 0; i < 4; i++)
                    a[p][i] = VFMA(q1, hi[i], VFMA(q0, lo[i], a[p][i]));
            }
        }
        UNROLL for (size_t p = 0; p + 2 <= R / 2; p += 2)
            DECODE_HSUM_PAIRS(a[p], a[p + 1], s + (r0 + 2 * p) * DECODE_BLOCK + j);
        if (R % 4 != 0)
            DECODE_HSUM_PAIR(a[R / 4 * 2], s + (r0 + R / 4 * 4) * DECODE_BLOCK + j, R % 4);
    }
    for (; j < n; j++)
        for (size_t r = r0; r < r0 + R; r++)
            s[r * DECODE_BLOCK + j] =
                VHSUM(FN(decode_dot)(qs + r * d, kc, at + j * d, half, d, VZERO()));
}
#endif
ALWAYS void FN(decode_scores)(const float *restrict qs, const float *restrict qp,
                              const void *kc, size_t at, bool half, size_t rows, size_t n,
                              size_t d, float *restrict s, decode_ahead *ahead)
{
    size_t r = 0;
#if W > 1
    for (; r + DECODE_TALL <= rows; r += DECODE_TALL)
        FN(decode_scores_pairs)(qs, qp, kc, at, half, r, DECODE_TALL, n, d, s, ahead);
    if (r + 4 <= rows) FN(decode_scores_pairs)(qs, qp, kc, at, half, r, 4, n, d, s, ahead), r += 4;
    if (r + 2 <= rows) FN(decode_scores_pairs)(qs, qp, kc, at, half, r, 2, n, d, s, ahead), r += 2;
    if (r < rows) FN(decode_scores_pairs)(qs, qp, kc, at, half, r, 1, n, d, s, ahead);
#else
    (void)qp;
    for (; r + DECODE_TALL <= rows; r += DECODE_TALL)
        FN(decode_scores_rows)(qs, kc, at, half, r, DECODE_TALL, n, d, s, ahead);
    if (r + 2 <= rows) FN(decode_scores_rows)(qs, kc, at, half, r, 2, n, d, s, ahead), r += 2;
    if (r < rows) FN(decode_scores_rows)(qs, kc, at, half, r, 1, n, d, s, ahead);
#endif
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
ALWAYS void FN(decode_values_tile)(const float *restrict s, const float *restrict alpha,
                                   const void *vc, size_t at, bool half, size_t r0,
                                   const size_t R, const size_t P, size_t c0, size_t n,
                                   size_t d, float *restrict acc, decode_ahead *ahead)
{
    V a[4][4];
    UNROLL for (size_t r = 0; r < R; r++)
        UNROLL for (size_t i = 0; i < 2 * P; i++)
            a[r][i] = VMUL(VSET1(alpha[r0 + r]), VLOAD(acc + (r0 + r) * d + c0 + i * W));
    for (size_t j = 0; j < n; j++) {
        if (j % 4 == 0) decode_prefetch(ahead);
        V x[4];
        UNROLL for (size_t i = 0; i < P; i++)
            FN(decode_load2)(vc, at + j * d + c0 + 2 * i * W, half, &x[2 * i], &x[2 * i + 1]);
        UNROLL for (size_t r = 0; r < R; r++) {
            const V pj = VSET1(s[(r0 + r) * DECODE_BLOCK + j]);
            UNROLL for (size_t i = 0; i < 2 * P; i++) a[r][i] = VFMA(pj, x[i], a[r][i]);
        }
    }
    UNROLL for (size_t r = 0; r < R; r++)
        UNROLL for (size_t i = 0; i < 2 * P; i++) VSTORE(acc + (r0 + r) * d + c0 + i * W, a[r][i]);
}
ALWAYS void FN(decode_values_last)(const float *restrict s, const float *restrict alpha,
                                   const void *vc, size_t at, bool half, size_t rows,
                                   size_t n, size_t d, float *restrict acc)
{
    const size_t c = d - W;
    for (size_t r = 0; r < rows; r++) {
        V a0 = VMUL(VSET1(alpha[r]), VLOAD(acc + r * d + c));
        for (size_t j = 0; j < n; j++)
            a0 = VFMA(VSET1(s[r * DECODE_BLOCK + j]), FN(decode_load1)(vc, at + j * d + c, half), a0);
        VSTORE(acc + r * d + c, a0);
    }
}
ALWAYS void FN(decode_values_rows)(const float *restrict s, const float *restrict alpha,
                                   const void *vc, size_t at, bool half, size_t r0,
                                   const size_t R, size_t n, size_t d, float *restrict acc,
                                   decode_ahead *ahead)
{
    const size_t whole = d / (2 * W) * (2 * W);     /* the part in pairs of vectors */
    size_t c = 0;
    for (; c + 4 * W <= whole; c += 4 * W)
        FN(decode_values_tile)(s, alpha, vc, at, half, r0, R, 2, c, n, d, acc, ahead);
    if (c < whole) FN(decode_values_tile)(s, alpha, vc, at, half, r0, R, 1, c, n, d, acc, ahead);
}
ALWAYS void FN(decode_values)(const float *restrict s, const float *restrict alpha,
                              const void *vc, size_t at, bool half, size_t rows, size_t n,
                              size_t d, float *restrict acc, decode_ahead *ahead)
{
    size_t r = 0;
    for (; r + 4 <= rows; r += 4)
        FN(decode_values_rows)(s, alpha, vc, at, half, r, 4, n, d, acc, ahead);
    for (; r < rows; r++) FN(decode_values_rows)(s, alpha, vc, at, half, r, 1, n, d, acc, ahead);
    if (d % (2 * W) != 0) FN(decode_values_last)(s, alpha, vc, at, half, rows, n, d, acc);
}
ALWAYS size_t FN(decode_steps)(size_t rows, size_t n, size_t d)
{
    const size_t pairs = d / (2 * W);
    const size_t score_tiles = rows / DECODE_TALL + rows % DECODE_TALL / 4
                             + rows % 4 / 2 + rows % 2;
    const size_t value_tiles = (rows / 4 + rows % 4) * ((pairs + 1) / 2);
    return score_tiles * (n / 4) + value_tiles * ((n + 3) / 4) + 1;
}
ALWAYS void FN(decode_span_with)(const decode_job *job, size_t unit, float *restrict ws,
                                 bool bf16_cache)
{
    const size_t d = job->p->d, rows = job->rows;
    const decode_place at = decode_place_of(job, unit);
    float *s = ws, *alpha = s + rows * DECODE_BLOCK;
    for (size_t r = 0; r < rows; r++) at.st[r] = online_start();
    memset(at.acc, 0, rows * d * sizeof(float));
    for (size_t k0 = at.first; k0 < at.last; k0 += DECODE_BLOCK) {
        const size_t n = at.last - k0 < DECODE_BLOCK ? at.last - k0 : DECODE_BLOCK;
        decode_ahead ahead = decode_ahead_of(job, at.base, k0, bf16_cache ? 2 : 4,
                                             FN(decode_steps)(rows, n, d));
        FN(decode_scores)(at.qs, at.qp, job->k, at.base + k0 * d, bf16_cache, rows, n, d, s,
                          &ahead);
        for (size_t r = 0; r < rows; r++)
            alpha[r] = FN(decode_row_update)(s + r * DECODE_BLOCK, n, &at.st[r]);
        FN(decode_values)(s, alpha, job->v, at.base + k0 * d, bf16_cache, rows, n, d, at.acc,
                          &ahead);
    }
}
static void FN(decode_span)(const decode_job *job, size_t unit, float *ws)
{
    if (job->cache == DECODE_BF16) FN(decode_span_with)(job, unit, ws, true);
    else FN(decode_span_with)(job, unit, ws, false);
}
#undef VWIDEN
#undef DECODE_PAIRS
#undef VHSUM4
#undef VHALF
#undef DECODE_HALF_PAIRS
#undef DECODE_HSUM_PAIRS
#undef DECODE_HSUM_PAIR
#undef DECODE_TALL
#include "cpu/vec_end.h"
