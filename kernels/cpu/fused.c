/* fused.c — tangled from chapters/ch08_fused_timing.nw; edit that file instead. */
#define _POSIX_C_SOURCE 200809L   /* setenv, execv */
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include <unistd.h>
#include "cpu/vexp.h"
#include "cpu/fused.h"
#include "cpu/workers.h"
void blas_use_known_kernels(char **argv)
{
    static const char *const family[] = { "Prescott", "Haswell", "SkylakeX" };
    if (getenv("OPENBLAS_CORETYPE")) return;
    const fa_isa widest = fa_isa_widest(NULL);
    const bool capped = widest < FA_ISA_AVX512 && fa_isa_on_cpu((fa_isa)(widest + 1)),
               fallback = strcmp(openblas_get_corename(), "Prescott") == 0;
    if (!capped && !(fallback && widest > FA_ISA_SCALAR)) return;
    if (setenv("OPENBLAS_CORETYPE", family[widest], 1) != 0) return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
}
const char *blas_kernels(void) { return openblas_get_corename(); }
static void require_params(const attn_params *p, const char *kernel)
{
    const char *problem = attn_params_problem(p);
    if (problem) {
        fprintf(stderr, "%s: %s\n", kernel, problem);
        exit(2);
    }
}
static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }
static size_t float_bytes(size_t count) { return fa_mul(count, sizeof(float)); }
static size_t smaller(size_t a, size_t b) { return a < b ? a : b; }
static void naive_blas_head(const attn_params *p, const float *q, const float *k,
                            const float *v, float *o, float *s);
static void softmax_visible(const attn_params *p, size_t i, float *row);
static void softmax_row_vexp(float *row, size_t n);
void attention_naive_blas(const attn_params *p, const float *q, const float *k,
                          const float *v, float *o, int threads, attn_counts *counts)
{
    require_params(p, "attention_naive_blas");
    const size_t nq = p->nq, nk = p->nk, d = p->d;
    openblas_set_num_threads(threads < 1 ? 1 : threads);
    float *s = fa_alloc(fa_mul(fa_mul(nq, nk), sizeof(float)));
    attn_counts c = { 0 };
    for (size_t h = 0; h < p->batch * p->heads; h++) {
        naive_blas_head(p, q + h * nq * d, k + h * nk * d, v + h * nk * d,
                        o + h * nq * d, s);
        count_naive_head(&c, p);
    }
    fa_free(s);
    if (counts) *counts = c;
    attention_repair(p, q, k, v, o);    /* chapter 4's rules for unusual data */
}
static void naive_blas_head(const attn_params *p, const float *q, const float *k,
                            const float *v, float *o, float *s)
{
    const int nq = (int)p->nq, nk = (int)p->nk, d = (int)p->d;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, d, p->scale,
                q, d, k, d, 0.0f, s, nk);
    for (size_t i = 0; i < p->nq; i++) softmax_visible(p, i, s + i * p->nk);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d, nk, 1.0f,
                s, nk, v, d, 0.0f, o, d);
}
static void softmax_visible(const attn_params *p, size_t i, float *row)
{
    size_t lo = 0, hi = p->nk;
    if (p->causal || p->window > 0) hi = smaller(i + 1, p->nk);
    if (p->window > 0 && i + 1 > (size_t)p->window) lo = i + 1 - (size_t)p->window;
    if (lo > hi) lo = hi;
    memset(row, 0, lo * sizeof *row);
    memset(row + hi, 0, (p->nk - hi) * sizeof *row);
    softmax_row_vexp(row + lo, hi - lo);
}
static void softmax_row_vexp(float *row, size_t n)
{
    if (n == 0) return;                          /* the mask left no key */
    const float m = block_max(row, n);
    for (size_t j = 0; j < n; j++) row[j] -= m;
    vexp_array(vexp_best_isa(), row, row, n);
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) sum += row[j];
    for (size_t j = 0; j < n; j++) row[j] /= sum;
}
void count_naive_head(attn_counts *c, const attn_params *p)
{
    const double nq = (double)p->nq, nk = (double)p->nk, d = (double)p->d;
    c->tiles_computed++;
    c->flops += 4.0 * nq * nk * d;
    c->score_bytes += 4.0 * nq * nk * sizeof(float);
    c->q_bytes += nq * d * sizeof(float);
    c->o_bytes += nq * d * sizeof(float);
    c->k_bytes += nk * d * sizeof(float);
    c->v_bytes += nk * d * sizeof(float);
}
enum { FUSED_KEY_TILE = 128 };     /* keys per packed tile */
typedef struct {
    const attn_params *p;
    const float *qs, *kt, *vp;     /* packed: scaled Q rows, K^T tile, V tile   */
    float *acc, *m, *l;            /* per query row: accumulator, max, sum      */
    float *sbuf;                   /* scores of one register row group          */
    size_t rows, d, dp, kc;        /* real rows, dimension, padded, keys in tile */
    size_t q0, k0;                 /* first query row, first key of the tile    */
    bool needs_mask;
} fused_tile;
#pragma GCC push_options
#pragma GCC target("avx")
static void transpose8(const float *src, size_t lds, float *dst, size_t ldd)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (size_t)i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + (size_t)i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}
#pragma GCC pop_options
enum { PACK_BLOCK = 16 };   /* keys, and dimensions, per block of the copy */
static void pack_key_block(const float *restrict k, size_t kc, size_t d, size_t j0,
                           size_t c0, float *restrict kt)
{
    const size_t j1 = smaller(j0 + PACK_BLOCK, kc), c1 = smaller(c0 + PACK_BLOCK, d);
    if (j1 - j0 == PACK_BLOCK && c1 - c0 == PACK_BLOCK) {
        for (size_t j = j0; j < j1; j += 8)
            for (size_t c = c0; c < c1; c += 8)
                transpose8(k + j * d + c, d, kt + c * FUSED_KEY_TILE + j, FUSED_KEY_TILE);
        return;
    }
    for (size_t c = c0; c < c1; c++)
        for (size_t j = j0; j < j1; j++) kt[c * FUSED_KEY_TILE + j] = k[j * d + c];
}
static void pack_keys(const float *k, size_t kc, size_t d, float *kt)
{
    if (kc < FUSED_KEY_TILE) memset(kt, 0, d * FUSED_KEY_TILE * sizeof *kt);
    for (size_t j0 = 0; j0 < kc; j0 += PACK_BLOCK)
        for (size_t c0 = 0; c0 < d; c0 += PACK_BLOCK) pack_key_block(k, kc, d, j0, c0, kt);
}
static const float *pack_values(const float *v, size_t kc, size_t d, size_t dp, float *vp)
{
    if (dp == d) return v;
    memset(vp, 0, FUSED_KEY_TILE * dp * sizeof *vp);
    for (size_t j = 0; j < kc; j++) memcpy(vp + j * dp, v + j * d, d * sizeof *vp);
    return vp;
}
static void pack_queries(const float *q, size_t rows, size_t rows_pad, size_t d,
                         size_t dp, float scale, float *qs)
{
    memset(qs, 0, rows_pad * dp * sizeof *qs);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < d; c++) qs[r * dp + c] = q[r * d + c] * scale;
}
static void visible_range(const fused_tile *t, size_t row, int *lo, int *hi)
{
    const long long i = (long long)(t->q0 + row), k0 = (long long)t->k0;
    const long long kc = (long long)t->kc, w = t->p->window;
    long long first = 0, last = kc;            /* visible offsets [first, last) */
    if (t->p->causal || w > 0) last = i - k0 + 1 < kc ? i - k0 + 1 : kc;
    if (w > 0 && i - w + 1 - k0 > first) first = i - w + 1 - k0;
    if (last < 0) last = 0;
    if (first > last) first = last;
    *lo = (int)first;
    *hi = (int)last;
}
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define VEC_WIDTH 8
#include "cpu/vec.h"
#define R 6      /* query rows per register tile             */
#define NB 2     /* key vectors per register tile (16 keys)  */
#define DV 2     /* dimension vectors per PV register tile   */
#include "cpu/fused_micro.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f")
#define VEC_WIDTH 16
#include "cpu/vec.h"
#define R 6
#define NB 4     /* 64 keys */
#define DV 4
#include "cpu/fused_micro.h"
#pragma GCC pop_options
typedef struct {
    size_t rows, lanes;                       /* R and W of the copy */
    void (*key_tile)(const fused_tile *t);
} fused_isa_copy;

static fused_isa_copy copy_for(fused_isa isa)
{
    if (isa == FUSED_ISA_AVX512) return (fused_isa_copy){ 6, 16, key_tile_avx512 };
    return (fused_isa_copy){ 6, 8, key_tile_avx2 };
}
bool fused_isa_available(fused_isa isa)
{
    if (isa == FUSED_ISA_AUTO) return vexp_best_isa() != VEXP_ISA_SCALAR;
    return vexp_isa_available(isa == FUSED_ISA_AVX512 ? VEXP_ISA_AVX512 : VEXP_ISA_AVX2);
}

fused_isa fused_isa_chosen(fused_isa wanted)
{
    if (wanted != FUSED_ISA_AUTO) return wanted;
    const vexp_isa best = vexp_best_isa();
    return best == VEXP_ISA_AVX512 ? FUSED_ISA_AVX512
         : best == VEXP_ISA_AVX2 ? FUSED_ISA_AVX2 : FUSED_ISA_AUTO;
}

const char *fused_isa_name(fused_isa isa)
{
    return isa == FUSED_ISA_AVX512 ? "AVX-512" : isa == FUSED_ISA_AVX2 ? "AVX2" : "auto";
}
typedef struct { float *qs, *acc, *m, *l, *kt, *vp, *sbuf; } fused_workspace;
typedef struct { size_t qs, acc, m, l, kt, vp, sbuf; } fused_workspace_floats;

static fused_workspace_floats workspace_floats(const attn_params *p, fused_isa_copy isa)
{
    const size_t rows = round_up(smaller(p->block_q, p->nq), isa.rows);
    const size_t dp = round_up(p->d, isa.lanes);
    return (fused_workspace_floats){ .qs = rows * dp, .acc = rows * dp, .m = rows, .l = rows,
                                     .kt = p->d * FUSED_KEY_TILE, .vp = FUSED_KEY_TILE * dp,
                                     .sbuf = isa.rows * FUSED_KEY_TILE };
}
static size_t line_up(size_t floats) { return round_up(floats, 16); }

static size_t workspace_total(fused_workspace_floats n)
{
    return line_up(n.qs) + line_up(n.acc) + line_up(n.m) + line_up(n.l)
         + line_up(n.kt) + line_up(n.vp) + line_up(n.sbuf);
}
static fused_workspace workspace_carve(float *block, fused_workspace_floats n)
{
    fused_workspace w;
    w.qs = block;                  w.acc = w.qs + line_up(n.qs);
    w.m = w.acc + line_up(n.acc);  w.l = w.m + line_up(n.m);
    w.kt = w.l + line_up(n.l);     w.vp = w.kt + line_up(n.kt);
    w.sbuf = w.vp + line_up(n.vp);
    return w;
}
typedef struct { size_t head, q0, cost; } fused_item;

static size_t item_cost(const attn_params *p, size_t q0)
{
    if (!p->causal && p->window <= 0) return p->nk;
    const size_t last = smaller(q0 + p->block_q, p->nq), hi = smaller(last, p->nk);
    const long long from = p->window > 0 ? (long long)q0 - p->window + 1 : 0;
    const size_t lo = from > 0 ? (size_t)from : 0;
    return hi > lo ? hi - lo : 0;
}
typedef struct {
    const attn_params *p;
    const float *q, *k, *v;
    float *o, *lse;             /* lse: NULL, or one float per query row */
    fused_isa_copy isa;
    bool count_only;
    workers_crew *crew;         /* NULL: the workspaces are the call's own */
    const fused_item *items;
    size_t item_count;
    atomic_size_t next;         /* the next item to hand out */
} fused_job;
static void count_block(attn_counts *c, const attn_params *p, size_t rows, size_t cols)
{
    c->tiles_computed++;
    c->flops += 4.0 * (double)rows * (double)cols * (double)p->d;
    c->k_bytes += (double)float_bytes(cols * p->d);
    c->v_bytes += (double)float_bytes(cols * p->d);
}
static void visit_key_block(const fused_job *job, fused_workspace *w, fused_tile *t,
                            const float *k, const float *v, size_t k0, size_t cols,
                            attn_tile_kind kind)
{
    const size_t d = job->p->d;
    for (size_t kk = k0; kk < k0 + cols; kk += FUSED_KEY_TILE) {
        t->k0 = kk;
        t->kc = smaller(FUSED_KEY_TILE, k0 + cols - kk);
        t->needs_mask = kind == ATTN_TILE_MASKED;
        pack_keys(k + kk * d, t->kc, d, w->kt);
        t->vp = pack_values(v + kk * d, t->kc, d, t->dp, w->vp);
        job->isa.key_tile(t);
    }
}
static void divide_row(const float *restrict acc, float sum, size_t d, float *restrict o)
{
    for (size_t c = 0; c < d; c++) o[c] = acc[c] / sum;
}
static void start_item(const fused_job *job, fused_workspace *w, fused_item it,
                       size_t rows, size_t dp)
{
    const attn_params *p = job->p;
    const size_t rows_pad = round_up(rows, job->isa.rows);
    pack_queries(job->q + (it.head * p->nq + it.q0) * p->d, rows, rows_pad, p->d, dp,
                 p->scale, w->qs);
    memset(w->acc, 0, rows_pad * dp * sizeof *w->acc);
    for (size_t r = 0; r < rows_pad; r++) { w->m[r] = -INFINITY; w->l[r] = 0.0f; }
}
static void finish_item(const fused_workspace *w, const attn_params *p, size_t q0,
                        size_t rows, size_t dp, float *o, float *lse)
{
    const size_t d = p->d;
    for (size_t r = 0; r < rows; r++) {
        const bool sees = attn_row_sees_a_key(p, q0 + r);
        if (lse) lse[r] = sees ? w->m[r] + logf(w->l[r]) : -INFINITY;
        if (!sees) { memset(o + r * d, 0, d * sizeof *o); continue; }
        divide_row(w->acc + r * dp, w->l[r], d, o + r * d);
    }
}
static void run_item(const fused_job *job, fused_workspace *w, fused_item it,
                     attn_counts *c)
{
    const attn_params *p = job->p;
    const size_t d = p->d, dp = round_up(d, job->isa.lanes);
    const size_t rows = smaller(p->block_q, p->nq - it.q0);
    fused_tile t = { .p = p, .qs = w->qs, .kt = w->kt, .vp = w->vp, .acc = w->acc,
                     .m = w->m, .l = w->l, .sbuf = w->sbuf, .rows = rows, .d = d,
                     .dp = dp, .q0 = it.q0 };
    c->q_bytes += (double)float_bytes(rows * d);
    c->o_bytes += (double)float_bytes(rows * d);
    if (!job->count_only) start_item(job, w, it, rows, dp);
    const float *k = job->k + it.head * p->nk * d, *v = job->v + it.head * p->nk * d;
    for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
        const size_t cols = smaller(p->block_k, p->nk - k0);
        const attn_tile_kind kind = attn_tile_classify(p, it.q0, rows, k0, cols);
        if (kind == ATTN_TILE_SKIPPED) { c->tiles_skipped++; continue; }
        count_block(c, p, rows, cols);
        if (!job->count_only) visit_key_block(job, w, &t, k, v, k0, cols, kind);
    }
    if (!job->count_only)
        finish_item(w, p, it.q0, rows, dp, job->o + (it.head * p->nq + it.q0) * p->d,
                    job->lse ? job->lse + it.head * p->nq + it.q0 : NULL);
}
typedef struct {
    fused_job *job;
    int t;
    float *block;               /* the workspace's memory */
    fused_workspace w;
    attn_counts counts;
} fused_worker;
static void *worker_main(void *arg)
{
    fused_worker *me = arg;
    const fused_workspace_floats n = workspace_floats(me->job->p, me->job->isa);
    const size_t bytes = float_bytes(workspace_total(n));
    me->block = me->job->crew ? crew_scratch(me->job->crew, me->t, bytes) : fa_alloc(bytes);
    me->w = workspace_carve(me->block, n);
    for (;;) {
        const size_t i = atomic_fetch_add(&me->job->next, 1);
        if (i >= me->job->item_count) break;
        run_item(me->job, &me->w, me->job->items[i], &me->counts);
    }
    return NULL;
}
static fused_worker *workers_prepare(fused_job *job, int n)
{
    fused_worker *workers = fa_alloc(fa_mul((size_t)n, sizeof *workers));
    for (int t = 0; t < n; t++) workers[t] = (fused_worker){ .job = job, .t = t };
    return workers;
}
static attn_counts workers_retire(fused_worker *workers, int n)
{
    attn_counts total = { 0 };
    for (int t = 0; t < n; t++) {
        add_counts(&total, &workers[t].counts);
        if (!workers[t].job->crew) fa_free(workers[t].block);
    }
    fa_free(workers);
    return total;
}
static int by_cost_then_place(const void *a, const void *b);

static fused_item *make_items(const attn_params *p, size_t *count)
{
    const size_t heads = p->batch * p->heads, blocks = (p->nq + p->block_q - 1) / p->block_q;
    *count = fa_mul(heads, blocks);
    fused_item *items = fa_alloc(fa_mul(*count, sizeof *items));
    for (size_t h = 0; h < heads; h++)
        for (size_t b = 0; b < blocks; b++)
            items[h * blocks + b] = (fused_item){ h, b * p->block_q,
                                                  item_cost(p, b * p->block_q) };
    qsort(items, *count, sizeof *items, by_cost_then_place);
    return items;
}
static int by_cost_then_place(const void *a, const void *b)
{
    const fused_item *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? 1 : -1;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    return (x->q0 > y->q0) - (x->q0 < y->q0);
}
void add_counts(attn_counts *to, const attn_counts *c)
{
    to->flops += c->flops;
    to->q_bytes += c->q_bytes; to->k_bytes += c->k_bytes;
    to->v_bytes += c->v_bytes; to->o_bytes += c->o_bytes;
    to->score_bytes += c->score_bytes;
    to->tiles_computed += c->tiles_computed;
    to->tiles_skipped += c->tiles_skipped;
}
static attn_counts run_workers(fused_job *job, int n)
{
    fused_worker *workers = workers_prepare(job, n);
    workers_run(job->crew, n, worker_main, workers, sizeof *workers, "attention_fused");
    return workers_retire(workers, n);
}
static size_t level2_bytes(void)
{
    const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return bytes > 0 ? (size_t)bytes : (size_t)1 << 20;   /* unknown: 1 MiB */
}
static size_t own_block_q(const attn_params *p, int threads, size_t lanes)
{
    const size_t dp = round_up(p->d, lanes), cache = level2_bytes();
    const size_t heads = p->batch * p->heads, items_wanted = 2 * (size_t)threads;
    size_t bq = 1024;
    while (bq > 64 && (float_bytes(2 * bq * dp + 2 * FUSED_KEY_TILE * dp) > cache
                       || bq / 2 >= p->nq
                       || heads * ((p->nq + bq - 1) / bq) < items_wanted))
        bq /= 2;
    return bq;
}
attn_params fused_blocks(const attn_params *p, const fused_config *cfg)
{
    attn_params b = *p;
    const size_t lanes = copy_for(fused_isa_chosen(cfg->isa)).lanes;
    const int threads = cfg->threads < 1 ? 1 : cfg->threads;
    b.block_q = cfg->block_q ? cfg->block_q : own_block_q(p, threads, lanes);
    b.block_k = cfg->block_k ? cfg->block_k : FUSED_KEY_TILE;
    return b;
}
void attention_fused(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, const fused_config *cfg,
                     attn_counts *counts)
{
    require_params(p, "attention_fused");
    if (!fused_isa_available(cfg->isa))
        die_line("attention_fused: no %s copy here (not on this CPU, or above FA_ISA=%s)",
                 fused_isa_name(cfg->isa), fa_isa_name(fa_isa_cap(NULL)));
    const attn_params blocks = fused_blocks(p, cfg);
    require_params(&blocks, "attention_fused");
    const int threads = cfg->threads < 1 ? 1 : cfg->threads;
    fused_job job = { .p = &blocks, .q = q, .k = k, .v = v, .o = o, .lse = cfg->lse,
                      .isa = copy_for(fused_isa_chosen(cfg->isa)),
                      .count_only = cfg->count_only, .crew = crew_for(cfg->crew, threads) };
    fused_item *items = make_items(&blocks, &job.item_count);
    job.items = items;
    atomic_init(&job.next, 0);
    const attn_counts total = run_workers(&job, threads);
    if (counts) *counts = total;
    fa_free(items);
    if (!cfg->count_only) attention_repair(p, q, k, v, o);
}
size_t attention_fused_bytes(const attn_params *given, const fused_config *cfg)
{
    const attn_params chosen = fused_blocks(given, cfg), *p = &chosen;
    const fused_workspace_floats n = workspace_floats(p, copy_for(fused_isa_chosen(cfg->isa)));
    const size_t per_thread = float_bytes(workspace_total(n))
                            + sizeof(fused_worker) + sizeof(pthread_t);
    const size_t blocks = (p->nq + p->block_q - 1) / p->block_q;
    return fa_mul((size_t)(cfg->threads < 1 ? 1 : cfg->threads), per_thread)
         + fa_mul(fa_mul(p->batch * p->heads, blocks), sizeof(fused_item));
}
