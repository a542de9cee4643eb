/* decode.c — tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/softmax.h"
#include "cpu/vexp.h"
#include "cpu/decode.h"
#include "cpu/workers.h"
typedef struct decode_job {
    const decode_params *p;
    const float *qs, *qp;            /* scaled queries: one row a vector, two */
    const void *k, *v;
    decode_cache cache;
    size_t rows, units;              /* rows of a group: (H/G) n_q */
    size_t pairs;                    /* bf16: the copy's lanes W; fp32: 0 */
    softmax_partial *part;           /* units x rows */
    float *acc;                      /* units x rows x d */
    void (*span)(const struct decode_job *job, size_t unit, float *ws);
    decode_piece_kernel *piece;      /* the span's kernel, for decode_span_piece */
    int threads;
    workers_crew *crew;              /* NULL: the workspaces are the call's own */
} decode_job;
typedef struct {
    size_t first, last, base;   /* the keys [first, last); the element offset of the head */
    const float *qs, *qp;       /* the group's query rows; the same, in pairs */
    softmax_partial *st;        /* the rows' partials */
    float *acc;                 /* the rows' accumulators */
} decode_place;

static inline decode_place decode_place_of(const decode_job *job, size_t unit)
{
    const decode_params *p = job->p;
    const size_t d = p->d, rows = job->rows, spans = decode_spans(p->nk);
    const size_t span = unit % spans, head = unit / spans;   /* head: batch * kv_heads + g */
    const size_t first = span * DECODE_SPAN;
    return (decode_place){ first, first + DECODE_SPAN < p->nk ? first + DECODE_SPAN : p->nk,
                           head * p->nk * d, job->qs + head * rows * d,
                           job->qp + head * (rows + rows % 2) * d, job->part + unit * rows,
                           job->acc + unit * rows * d };
}
enum { DECODE_AHEAD = 128 };   /* keys between a block and what it prefetches */
typedef struct { const char *k, *v; size_t bytes, next, step; } decode_ahead;

static decode_ahead decode_ahead_of(const decode_job *job, size_t base, size_t k0, size_t e,
                                    size_t steps)
{
    const size_t d = job->p->d, at = k0 + DECODE_AHEAD, nk = job->p->nk;
    if (at >= nk) return (decode_ahead){ NULL, NULL, 0, 0, 0 };
    const size_t keys = nk - at < DECODE_BLOCK ? nk - at : DECODE_BLOCK;
    const size_t lines = (keys * d * e + 63) / 64;
    return (decode_ahead){ (const char *)job->k + (base + at * d) * e,
                           (const char *)job->v + (base + at * d) * e, keys * d * e, 0,
                           (lines + steps - 1) / steps * 64 };
}
static inline __attribute__((always_inline)) void decode_prefetch(decode_ahead *a)
{
    const size_t to = a->next + a->step < a->bytes ? a->next + a->step : a->bytes;
    for (size_t b = a->next; b < to; b += 64) {
        __builtin_prefetch(a->k + b, 0, 2);
        __builtin_prefetch(a->v + b, 0, 2);
    }
    a->next = to;
}
#define VEC_WIDTH 1
#include "cpu/vec.h"
#define VWIDEN(p) bf16_float(*(p))
#define DECODE_PAIRS(p, lo, hi) (*(lo) = bf16_float((p)[0]), *(hi) = bf16_float((p)[1]))
#define VHSUM4(a, b, c, d, out) ((out)[0] = (a), (out)[1] = (b), (out)[2] = (c), (out)[3] = (d))
#define DECODE_TALL 4
#include "cpu/decode_micro.h"
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define VEC_WIDTH 8
#include "cpu/vec.h"
#define VWIDEN(p) _mm256_castsi256_ps(_mm256_slli_epi32( \
    _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define DECODE_PAIRS(p, lo, hi) do { \
    const __m256i x_ = _mm256_loadu_si256((const __m256i *)(const void *)(p)); \
    *(lo) = _mm256_castsi256_ps(_mm256_slli_epi32(x_, 16)); \
    *(hi) = _mm256_castsi256_ps(_mm256_and_si256(x_, _mm256_set1_epi32(-65536))); } while (0)
#define VHALF(p) _mm256_broadcast_ps((const __m128 *)(const void *)(p))
#define DECODE_HALF_PAIRS(p, lo, hi) do { \
    const __m256i x_ = _mm256_broadcastsi128_si256( \
        _mm_loadu_si128((const __m128i *)(const void *)(p))); \
    *(lo) = _mm256_castsi256_ps(_mm256_slli_epi32(x_, 16)); \
    *(hi) = _mm256_castsi256_ps(_mm256_and_si256(x_, _mm256_set1_epi32(-65536))); } while (0)
static inline __attribute__((always_inline)) __m256 hsum_keys8(const __m256 *a)
{
    const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a[0], a[1]), _mm256_unpackhi_ps(a[0], a[1]));
    const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(a[2], a[3]), _mm256_unpackhi_ps(a[2], a[3]));
    return _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
}

static inline __attribute__((always_inline)) void hsum_pairs8(const __m256 *a, const __m256 *b,
                                                              float *out)
{
    const __m256 u = hsum_keys8(a), w = hsum_keys8(b);
    _mm_storeu_ps(out, _mm256_castps256_ps128(u));
    _mm_storeu_ps(out + DECODE_BLOCK, _mm256_extractf128_ps(u, 1));
    _mm_storeu_ps(out + 2 * DECODE_BLOCK, _mm256_castps256_ps128(w));
    _mm_storeu_ps(out + 3 * DECODE_BLOCK, _mm256_extractf128_ps(w, 1));
}

static inline __attribute__((always_inline)) void hsum_pair8(const __m256 *a, float *out,
                                                             size_t rows)
{
    const __m256 u = hsum_keys8(a);
    _mm_storeu_ps(out, _mm256_castps256_ps128(u));
    if (rows > 1) _mm_storeu_ps(out + DECODE_BLOCK, _mm256_extractf128_ps(u, 1));
}
#define DECODE_HSUM_PAIRS(a, b, out) hsum_pairs8(a, b, out)
#define DECODE_HSUM_PAIR(a, out, rows) hsum_pair8(a, out, rows)
#define DECODE_TALL 4
#include "cpu/decode_micro.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f")
#define VEC_WIDTH 16
#include "cpu/vec.h"
#define VWIDEN(p) _mm512_castsi512_ps(_mm512_slli_epi32( \
    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define DECODE_PAIRS(p, lo, hi) do { \
    const __m512i x_ = _mm512_loadu_si512((const void *)(p)); \
    *(lo) = _mm512_castsi512_ps(_mm512_slli_epi32(x_, 16)); \
    *(hi) = _mm512_castsi512_ps(_mm512_and_si512(x_, _mm512_set1_epi32(-65536))); } while (0)
#define VHALF(p) _mm512_castpd_ps(_mm512_broadcast_f64x4( \
    _mm256_loadu_pd((const double *)(const void *)(p))))
#define DECODE_HALF_PAIRS(p, lo, hi) do { \
    const __m512i x_ = _mm512_broadcast_i64x4( \
        _mm256_loadu_si256((const __m256i *)(const void *)(p))); \
    *(lo) = _mm512_castsi512_ps(_mm512_slli_epi32(x_, 16)); \
    *(hi) = _mm512_castsi512_ps(_mm512_and_si512(x_, _mm512_set1_epi32(-65536))); } while (0)
static inline __attribute__((always_inline)) __m512 hsum_keys16(const __m512 *a)
{
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
    return _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
}

static inline __attribute__((always_inline)) void hsum_pairs16(const __m512 *a, const __m512 *b,
                                                               float *out)
{
    const __m512 u = hsum_keys16(a), w = hsum_keys16(b);
    const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(u, w, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_ps(out, _mm512_castps512_ps128(t));
    _mm_storeu_ps(out + DECODE_BLOCK, _mm512_extractf32x4_ps(t, 1));
    _mm_storeu_ps(out + 2 * DECODE_BLOCK, _mm512_extractf32x4_ps(t, 2));
    _mm_storeu_ps(out + 3 * DECODE_BLOCK, _mm512_extractf32x4_ps(t, 3));
}

static inline __attribute__((always_inline)) void hsum_pair16(const __m512 *a, float *out,
                                                              size_t rows)
{
    const __m512 u = hsum_keys16(a);
    const __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(u, u, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(u, u, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_ps(out, _mm512_castps512_ps128(t));
    if (rows > 1) _mm_storeu_ps(out + DECODE_BLOCK, _mm512_extractf32x4_ps(t, 1));
}
#define DECODE_HSUM_PAIRS(a, b, out) hsum_pairs16(a, b, out)
#define DECODE_HSUM_PAIR(a, out, rows) hsum_pair16(a, out, rows)
#define DECODE_TALL 8
#include "cpu/decode_micro.h"
#pragma GCC pop_options
static void decode_span_piece(const decode_job *job, size_t unit, float *ws)
{
    (void)ws;
    const decode_place at = decode_place_of(job, unit);
    const size_t e = job->cache == DECODE_BF16 ? 2 : 4;
    const decode_piece piece = { at.qs, (const char *)job->k + at.base * e,
                                 (const char *)job->v + at.base * e, job->cache, job->rows,
                                 job->p->d, at.first, at.last };
    job->piece(&piece, at.st, at.acc);
}
size_t decode_spans(size_t nk) { return (nk + DECODE_SPAN - 1) / DECODE_SPAN; }

size_t decode_units(const decode_params *p)
{
    return p->batch * p->kv_heads * decode_spans(p->nk);
}

size_t decode_first_unit(size_t units, int threads, int t)
{
    return units * (size_t)t / (size_t)threads;
}
const char *decode_params_problem(const decode_params *p)
{
    if (p->batch < 1 || p->heads < 1 || p->d < 1) return "batch, heads and d must be at least 1";
    if (p->nq < 1 || p->nq > DECODE_MAX_ROWS) return "the query rows must be 1 to 16";
    if (p->nk < 1 || p->nk > DECODE_MAX_KEYS) return "the keys must be 1 to 131072";
    if (p->kv_heads < 1 || p->heads % p->kv_heads != 0)
        return "the K/V heads must divide the query heads";
    if (!(p->scale > 0) || !isfinite(p->scale)) return "the scale must be positive";
    return NULL;
}
bool decode_isa_available(decode_isa isa)
{
    if (isa == DECODE_ISA_AVX512) return vexp_isa_available(VEXP_ISA_AVX512);
    if (isa == DECODE_ISA_AVX2) return vexp_isa_available(VEXP_ISA_AVX2);
    return true;
}

decode_isa decode_isa_chosen(decode_isa wanted, size_t d)
{
    if (wanted != DECODE_ISA_AUTO) return wanted;
    if (d % 16 == 0 && decode_isa_available(DECODE_ISA_AVX512)) return DECODE_ISA_AVX512;
    if (d % 8 == 0 && decode_isa_available(DECODE_ISA_AVX2)) return DECODE_ISA_AVX2;
    return DECODE_ISA_SCALAR;
}
static size_t decode_lanes(decode_isa isa)
{
    return isa == DECODE_ISA_AVX512 ? 16 : isa == DECODE_ISA_AVX2 ? 8 : 1;
}

const char *decode_isa_name(decode_isa isa)
{
    return isa == DECODE_ISA_AVX512 ? "AVX-512" : isa == DECODE_ISA_AVX2 ? "AVX2"
         : isa == DECODE_ISA_SCALAR ? "portable" : "auto";
}

static void (*decode_copy(decode_isa isa))(const decode_job *, size_t, float *)
{
    return isa == DECODE_ISA_AVX512 ? decode_span_avx512
         : isa == DECODE_ISA_AVX2 ? decode_span_avx2 : decode_span_scalar;
}
const char *decode_isa_problem(decode_isa isa, size_t d)
{
    if (!decode_isa_available(isa)) return "that instruction set is not available here";
    if (d % decode_lanes(isa) != 0) return "d is not a whole number of that instruction set's vectors";
    return NULL;
}
static size_t decode_slot(size_t c, size_t d, size_t lanes)
{
    if (lanes == 0) return c;
    const size_t piece = c - c % (2 * lanes), i = c - piece;
    if (piece + 2 * lanes > d) return c;
    return piece + (i % 2 == 0 ? i / 2 : lanes + i / 2);
}
static size_t decode_pair_slot(size_t e, size_t side, size_t lanes, bool bf16_cache)
{
    const size_t c = e - e % lanes, i = e % lanes, h = lanes / 2;
    const size_t upper = bf16_cache ? i % 2 : i / h, at = bf16_cache ? i / 2 : i % h;
    return 2 * c + upper * lanes + side * h + at;
}

static float *decode_pair_rows(const decode_params *p, const float *q, size_t rows,
                               size_t lanes, bool bf16_cache)
{
    const size_t d = p->d, groups = p->batch * p->kv_heads, even = rows + rows % 2;
    float *qp = fa_alloc(groups * even * d * sizeof(float));      /* zeros */
    for (size_t g = 0; lanes > 1 && g < groups; g++)
        for (size_t r = 0; r < rows; r++)
            for (size_t e = 0; e < d; e++)
                qp[(g * even + r - r % 2) * d + decode_pair_slot(e, r % 2, lanes, bf16_cache)] =
                    q[(g * rows + r) * d + e] * p->scale;
    return qp;
}
static void decode_merge_add(float *out, const float *a, float keep, float take, size_t d,
                             size_t lanes)
{
    size_t c = 0;
    if (lanes > 0)
        for (; c + 2 * lanes <= d; c += 2 * lanes)
            for (size_t i = 0; i < 2 * lanes; i++)
                out[c + i] = keep * out[c + i] + take * a[c + (i % 2 ? lanes + i / 2 : i / 2)];
    for (; c < d; c++) out[c] = keep * out[c] + take * a[c];
}
static void decode_merge_row(const decode_job *job, size_t head, size_t r, float *out)
{
    const size_t d = job->p->d, spans = decode_spans(job->p->nk);
    softmax_partial run = online_start();
    memset(out, 0, d * sizeof(float));
    for (size_t s = 0; s < spans; s++) {
        const size_t unit = head * spans + s;
        const softmax_partial piece = job->part[unit * job->rows + r];
        const softmax_partial both = softmax_merge(run, piece);
        if (both.max == -INFINITY) continue;
        const float keep = expf(run.max - both.max), take = expf(piece.max - both.max);
        decode_merge_add(out, job->acc + (unit * job->rows + r) * d, keep, take, d, job->pairs);
        run = both;
    }
    const float inv = run.sum > 0 ? 1.0f / run.sum : 0.0f;
    for (size_t c = 0; c < d; c++) out[c] *= inv;
}
static void decode_merge(const decode_job *job, float *o)
{
    const decode_params *p = job->p;
    const size_t group = p->heads / p->kv_heads;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++)
            for (size_t i = 0; i < p->nq; i++) {
                const size_t g = h / group, r = (h - g * group) * p->nq + i;
                decode_merge_row(job, b * p->kv_heads + g, r,
                                 o + ((b * p->heads + h) * p->nq + i) * p->d);
            }
}
static size_t decode_workspace_floats(const decode_params *p)
{
    const size_t rows = p->heads / p->kv_heads * p->nq;
    return rows * DECODE_BLOCK + rows;
}

typedef struct { const decode_job *job; int t; } decode_thread;

static void *decode_worker(void *arg)
{
    const decode_thread *me = arg;
    const decode_job *job = me->job;
    const size_t bytes = decode_workspace_floats(job->p) * sizeof(float);
    float *ws = job->crew ? crew_scratch(job->crew, me->t, bytes) : fa_alloc(bytes);
    const size_t end = decode_first_unit(job->units, job->threads, me->t + 1);
    for (size_t u = decode_first_unit(job->units, job->threads, me->t); u < end; u++)
        job->span(job, u, ws);
    if (!job->crew) fa_free(ws);
    return NULL;
}
static void decode_run_threads(const decode_job *job)
{
    enum { MAX_THREADS = 1024 };
    decode_thread arg[MAX_THREADS];
    const int n = job->threads < MAX_THREADS ? job->threads : MAX_THREADS;
    for (int t = 0; t < n; t++) arg[t] = (decode_thread){ job, t };
    workers_run(job->crew, n, decode_worker, arg, sizeof arg[0], "decode");
}
void attention_decode(const decode_params *p, const float *q, const void *k, const void *v,
                      float *o, const decode_config *cfg)
{
    const decode_isa isa = decode_isa_chosen(cfg->isa, p->d);
    const char *problem = decode_params_problem(p);
    if (!problem) problem = decode_isa_problem(isa, p->d);
    if (problem) die_line("decode: %s", problem);
    decode_job job = { .p = p, .k = k, .v = v, .cache = cfg->cache,
                       .rows = p->heads / p->kv_heads * p->nq, .units = decode_units(p),
                       .threads = cfg->threads < 1 ? 1 : cfg->threads,
                       .span = cfg->piece ? decode_span_piece : decode_copy(isa),
                       .piece = cfg->piece,
                       .pairs = cfg->cache == DECODE_BF16 && !cfg->piece ? decode_lanes(isa) : 0 };
    job.crew = crew_for(cfg->crew, job.threads);
    const size_t nqd = p->batch * p->heads * p->nq * p->d;
    float *qs = fa_alloc(nqd * sizeof(float));
    for (size_t i = 0; i < nqd; i++)
        qs[i - i % p->d + decode_slot(i % p->d, p->d, job.pairs)] = q[i] * p->scale;
    job.qs = qs;
    job.qp = decode_pair_rows(p, q, job.rows, decode_lanes(isa), cfg->cache == DECODE_BF16);
    job.part = fa_alloc(job.units * job.rows * sizeof(softmax_partial));
    job.acc = fa_alloc(job.units * job.rows * p->d * sizeof(float));
    decode_run_threads(&job);
    decode_merge(&job, o);
    fa_free((float *)job.qs); fa_free((float *)job.qp); fa_free(job.part); fa_free(job.acc);
}
size_t attention_decode_bytes(const decode_params *p, const decode_config *cfg)
{
    const size_t rows = p->heads / p->kv_heads * p->nq, units = decode_units(p);
    const size_t threads = cfg->threads < 1 ? 1 : (size_t)cfg->threads;
    return sizeof(float) * (p->batch * (p->heads * p->nq + p->kv_heads * (rows + rows % 2)) * p->d
                            + units * rows * (p->d + 2)
                            + threads * decode_workspace_floats(p))
         + threads * sizeof(pthread_t);
}

size_t decode_cache_bytes(const decode_params *p, decode_cache cache)
{
    return 2 * p->batch * p->kv_heads * p->nk * p->d * (cache == DECODE_BF16 ? 2 : 4);
}
