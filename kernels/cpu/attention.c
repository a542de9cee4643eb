/* attention.c — attention kernels. Tangled from chapters/ch04_tiled.nw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "cpu/attention.h"

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static void naive_scores(const attn_params *p, const float *q, const float *k, float *s);
static float dot_product(const float *restrict a, const float *restrict b, size_t n);
static void softmax_row_in_place(float *s, size_t n);
static void naive_weighted_sum(const attn_params *p, const float *probs,
                               const float *v, float *o);

static void transpose_to_double(const float *k, size_t nk, size_t d, double *keys_t);
static void reference_row(const attn_params *p, const float *qi, const double *keys_t,
                          const float *v, size_t i, double *row, double *out);

attn_params attn_default(size_t batch, size_t heads, size_t nq, size_t nk, size_t d)
{
    attn_params p = { .batch = batch, .heads = heads, .nq = nq, .nk = nk, .d = d,
                      .scale = (float)(1.0 / sqrt((double)(d ? d : 1))),
                      .causal = false, .window = 0, .block_q = 64, .block_k = 64,
                      .rng = RNG_SCALAR };
    return p;
}

const char *attn_params_problem(const attn_params *p)
{
    if (!p->batch || !p->heads) return "batch and heads must be at least 1";
    if (!p->nq || !p->nk) return "query and key lengths must be at least 1";
    if (!p->d) return "the head dimension must be at least 1";
    if (!p->block_q || !p->block_k) return "tile sizes must be at least 1";
    if (!isfinite(p->scale)) return "the scale must be a finite number";
    return NULL;
}

static void require_valid(const attn_params *p)
{
    const char *problem = attn_params_problem(p);
    if (problem) { fprintf(stderr, "attention: error: %s\n", problem); exit(2); }
}

bool attn_visible(const attn_params *p, size_t i, size_t j)
{
    if (p->window > 0)
        return j <= i && (long long)j > (long long)i - p->window;
    return !p->causal || j <= i;
}

bool attn_row_sees_a_key(const attn_params *p, size_t i)
{
    return p->nk > 0 && attn_visible(p, i, i < p->nk ? i : p->nk - 1);
}

attn_tile_kind attn_tile_classify(const attn_params *p, size_t q0, size_t rows,
                                  size_t k0, size_t cols)
{
    if (!p->causal && p->window <= 0) return ATTN_TILE_FULL;
    const long long first_q = (long long)q0, last_q = (long long)(q0 + rows - 1);
    const long long first_k = (long long)k0, last_k = (long long)(k0 + cols - 1);
    const long long w = p->window;
    if (first_k > last_q || (w > 0 && last_k <= first_q - w)) return ATTN_TILE_SKIPPED;
    if (last_k <= first_q && (w <= 0 || first_k > last_q - w)) return ATTN_TILE_FULL;
    return ATTN_TILE_MASKED;
}

void attention_naive(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o)
{
    require_valid(p);
    size_t problems = p->batch * p->heads, nq = p->nq, nk = p->nk, d = p->d;
    float *s = fa_alloc(fa_mul(fa_mul(problems, nq), fa_mul(nk, sizeof(float))));
    for (size_t h = 0; h < problems; h++)
        naive_scores(p, q + h * nq * d, k + h * nk * d, s + h * nq * nk);
    for (size_t row = 0; row < problems * nq; row++)
        softmax_row_in_place(s + row * nk, nk);
    for (size_t h = 0; h < problems; h++)
        naive_weighted_sum(p, s + h * nq * nk, v + h * nk * d, o + h * nq * d);
    fa_free(s);
    attention_repair(p, q, k, v, o);    /* rows float32 could not hold, below */
}

static void naive_scores(const attn_params *p, const float *q, const float *k, float *s)
{
    for (size_t i = 0; i < p->nq; i++)
        for (size_t j = 0; j < p->nk; j++)
            s[i * p->nk + j] = attn_visible(p, i, j)
                ? p->scale * dot_product(q + i * p->d, k + j * p->d, p->d) : -INFINITY;
}

static float dot_product(const float *restrict a, const float *restrict b, size_t n)
{
    float part[8] = { 0 }, sum = 0.0f;
    size_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (size_t t = 0; t < 8; t++) part[t] += a[c + t] * b[c + t];
    for (; c < n; c++) sum += a[c] * b[c];
    for (size_t t = 0; t < 8; t++) sum += part[t];
    return sum;
}

static void softmax_row_in_place(float *s, size_t n)
{
    const float m = block_max(s, n);
    if (m == -INFINITY) { memset(s, 0, n * sizeof *s); return; }  /* every key hidden */
    const float sum = attn_exp_row(s, n, m);
    for (size_t j = 0; j < n; j++) s[j] /= sum;
}

static void naive_weighted_sum(const attn_params *p, const float *probs,
                               const float *v, float *o)
{
    for (size_t i = 0; i < p->nq; i++) {
        float *restrict out = o + i * p->d;
        memset(out, 0, p->d * sizeof *out);
        for (size_t j = 0; j < p->nk; j++) {
            const float pij = probs[i * p->nk + j];
            const float *restrict vj = v + j * p->d;
            for (size_t c = 0; c < p->d; c++) out[c] += pij * vj[c];
        }
    }
}

void attention_reference(const attn_params *p, const float *q, const float *k,
                         const float *v, double *o)
{
    require_valid(p);
    size_t nq = p->nq, nk = p->nk, d = p->d;
    double *keys_t = fa_alloc(fa_mul(fa_mul(nk, d), sizeof(double)));
    double *row = fa_alloc(fa_mul(nk, sizeof(double)));
    for (size_t h = 0; h < p->batch * p->heads; h++) {
        transpose_to_double(k + h * nk * d, nk, d, keys_t);
        for (size_t i = 0; i < nq; i++)
            reference_row(p, q + (h * nq + i) * d, keys_t, v + h * nk * d, i, row,
                          o + (h * nq + i) * d);
    }
    fa_free(row);
    fa_free(keys_t);
}

static void transpose_to_double(const float *k, size_t nk, size_t d, double *keys_t)
{
    for (size_t j = 0; j < nk; j++)
        for (size_t c = 0; c < d; c++) keys_t[c * nk + j] = k[j * d + c];
}

static void reference_scores(const float *qi, const double *restrict keys_t,
                             size_t nk, size_t d, double scale, double *restrict row)
{
    for (size_t j = 0; j < nk; j++) row[j] = 0.0;
    for (size_t c = 0; c < d; c++) {
        const double qc = qi[c];
        const double *restrict kc = keys_t + c * nk;
        for (size_t j = 0; j < nk; j++) row[j] += qc * kc[j];
    }
    for (size_t j = 0; j < nk; j++) row[j] *= scale;
}

static void reference_row(const attn_params *p, const float *qi, const double *keys_t,
                          const float *v, size_t i, double *row, double *out)
{
    size_t nk = p->nk, d = p->d;
    double m = -INFINITY, sum = 0.0;
    reference_scores(qi, keys_t, nk, d, (double)p->scale, row);
    for (size_t j = 0; j < nk; j++)
        if (attn_visible(p, i, j)) m = isnan(m) || isnan(row[j]) ? NAN : fmax(m, row[j]);
    for (size_t c = 0; c < d; c++) out[c] = 0.0;
    if (!attn_row_sees_a_key(p, i)) return;     /* every key hidden: zeros */
    for (size_t j = 0; j < nk; j++) {
        if (!attn_visible(p, i, j)) continue;
        const double w = exp(row[j] - m);
        sum += w;
        for (size_t c = 0; c < d; c++) out[c] += w * (double)v[j * d + c];
    }
    for (size_t c = 0; c < d; c++) out[c] /= sum;
}

double max_abs_diff_fd(const float *a, const double *b, size_t count)
{
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        if (isnan(a[i])) return NAN;
        const double diff = fabs((double)a[i] - b[i]);
        if (diff > worst) worst = diff;
    }
    return worst;
}

static bool row_is_finite(const float *x, size_t n)
{
    uint32_t carries = 0;
    for (size_t c = 0; c < n; c++) {
        uint32_t bits;
        memcpy(&bits, &x[c], sizeof bits);
        carries |= (bits & 0x7f800000u) + 0x00800000u;
    }
    return (carries & 0x80000000u) == 0;
}

size_t attention_repair(const attn_params *p, const float *q, const float *k,
                        const float *v, float *o)
{
    const size_t nq = p->nq, nk = p->nk, d = p->d;
    double *keys_t = NULL, *row = NULL, *exact = NULL;
    size_t repaired = 0;
    for (size_t h = 0; h < p->batch * p->heads; h++)
        for (size_t i = 0, converted = 0; i < nq; i++) {
            float *oi = o + (h * nq + i) * d;
            if (row_is_finite(oi, d)) continue;
            if (keys_t == NULL) {
                keys_t = fa_alloc(fa_mul(fa_mul(nk, d), sizeof(double)));
                row = fa_alloc(fa_mul(nk, sizeof(double)));
                exact = fa_alloc(fa_mul(d, sizeof(double)));
            }
            if (!converted++) transpose_to_double(k + h * nk * d, nk, d, keys_t);
            reference_row(p, q + (h * nq + i) * d, keys_t, v + h * nk * d, i, row, exact);
            for (size_t c = 0; c < d; c++) oi[c] = (float)exact[c];
            repaired++;
        }
    fa_free(keys_t); fa_free(row); fa_free(exact);
    return repaired;
}

static void transpose_tile(const float *restrict k, size_t cols, size_t d,
                           float *restrict keys_t)
{
    for (size_t j = 0; j < cols; j++)
        for (size_t c = 0; c < d; c++) keys_t[c * cols + j] = k[j * d + c];
}

static void score_tile(const float *restrict q, const float *restrict keys_t,
                       size_t rows, size_t cols, size_t d, float scale,
                       float *restrict s)
{
    for (size_t r = 0; r < rows; r++) {
        float *restrict sr = s + r * cols;
        for (size_t j = 0; j < cols; j++) sr[j] = 0.0f;
        for (size_t c = 0; c < d; c++) {
            const float qc = q[r * d + c];
            const float *restrict kc = keys_t + c * cols;
            for (size_t j = 0; j < cols; j++) sr[j] += qc * kc[j];
        }
        for (size_t j = 0; j < cols; j++) sr[j] *= scale;
    }
}

static void mask_tile(const attn_params *p, size_t q0, size_t rows, size_t k0,
                      size_t cols, float *s)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++)
            if (!attn_visible(p, q0 + r, k0 + j)) s[r * cols + j] = -INFINITY;
}

float attn_exp_row(float *x, size_t n, float m)
{
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) { x[j] = expf(x[j] - m); sum += x[j]; }
    return sum;
}

void attn_scale_row(float *restrict x, size_t n, float factor)
{
    for (size_t c = 0; c < n; c++) x[c] *= factor;
}

void attn_add_weighted_rows(float *restrict acc, const float *restrict weights,
                            const float *restrict v, size_t cols, size_t d)
{
    for (size_t j = 0; j < cols; j++) {
        const float w = weights[j];
        const float *restrict vj = v + j * d;
        for (size_t c = 0; c < d; c++) acc[c] += w * vj[c];
    }
}

void attn_online_update(size_t rows, size_t cols, size_t d, float *scores,
                        const float *v, float *m, float *l, float *acc)
{
    for (size_t r = 0; r < rows; r++) {
        float *s = scores + r * cols, *a = acc + r * d;
        const float m_new = max_keeping_nan(m[r], block_max(s, cols));
        if (m_new == -INFINITY) continue;           /* nothing visible yet */
        const float alpha = expf(m[r] - m_new);     /* e^{m_old - m_new} */
        l[r] = alpha * l[r] + attn_exp_row(s, cols, m_new);
        attn_scale_row(a, d, alpha);                /* the accumulator too */
        attn_add_weighted_rows(a, s, v, cols, d);
        m[r] = m_new;
    }
}

typedef struct {
    float *scores;   /* rows x cols of one tile: S, then exp(S - m) */
    float *keys_t;   /* d x cols: the key tile, transposed */
    float *m, *l;    /* per query row: running max, running sum */
    float *acc;      /* rows x d: the output rows, not yet divided */
} tile_workspace;

static tile_workspace workspace_new(size_t rows, size_t cols, size_t d)
{
    tile_workspace w = {
        .scores = fa_alloc(fa_mul(fa_mul(rows, cols), sizeof(float))),
        .keys_t = fa_alloc(fa_mul(fa_mul(d, cols), sizeof(float))),
        .m = fa_alloc(fa_mul(rows, sizeof(float))),
        .l = fa_alloc(fa_mul(rows, sizeof(float))),
        .acc = fa_alloc(fa_mul(fa_mul(rows, d), sizeof(float))) };
    return w;
}

static void workspace_free(tile_workspace *w)
{
    fa_free(w->scores); fa_free(w->keys_t);
    fa_free(w->m); fa_free(w->l); fa_free(w->acc);
}

static void start_query_block(tile_workspace *w, size_t rows, size_t d)
{
    for (size_t r = 0; r < rows; r++) { w->m[r] = -INFINITY; w->l[r] = 0.0f; }
    memset(w->acc, 0, rows * d * sizeof *w->acc);
}

static void finish_query_block(const attn_params *p, size_t q0, const tile_workspace *w,
                               size_t rows, float *o)
{
    const size_t d = p->d;
    for (size_t r = 0; r < rows; r++) {
        float *restrict out = o + r * d;
        const float *restrict a = w->acc + r * d;
        const float l = w->l[r];
        if (w->m[r] == -INFINITY) {
            const float empty = attn_row_sees_a_key(p, q0 + r) ? NAN : 0.0f;
            for (size_t c = 0; c < d; c++) out[c] = empty;
            continue;
        }
        for (size_t c = 0; c < d; c++) out[c] = a[c] / l;
    }
}

static void count_tile(attn_stats *st, attn_tile_kind kind)
{
    st->tiles_total++;
    if (kind == ATTN_TILE_SKIPPED) st->tiles_skipped++;
    else st->tiles_computed++;
    if (kind == ATTN_TILE_MASKED) st->tiles_masked++;
}

static void visit_key_tiles(const attn_params *p, const float *qb, size_t q0,
                            size_t rows, const float *k, const float *v,
                            tile_workspace *w, attn_stats *st, attn_update_fn *update)
{
    for (size_t k0 = 0; k0 < p->nk; k0 += p->block_k) {
        const size_t cols = min_size(p->block_k, p->nk - k0);
        const attn_tile_kind kind = attn_tile_classify(p, q0, rows, k0, cols);
        count_tile(st, kind);
        if (kind == ATTN_TILE_SKIPPED) continue;
        transpose_tile(k + k0 * p->d, cols, p->d, w->keys_t);
        score_tile(qb, w->keys_t, rows, cols, p->d, p->scale, w->scores);
        if (kind == ATTN_TILE_MASKED) mask_tile(p, q0, rows, k0, cols, w->scores);
        update(rows, cols, p->d, w->scores, v + k0 * p->d, w->m, w->l, w->acc);
    }
}

static void tiled_one_head(const attn_params *p, const float *q, const float *k,
                           const float *v, float *o, tile_workspace *w,
                           attn_stats *st, attn_update_fn *update)
{
    for (size_t q0 = 0; q0 < p->nq; q0 += p->block_q) {
        const size_t rows = min_size(p->block_q, p->nq - q0);
        start_query_block(w, rows, p->d);
        visit_key_tiles(p, q + q0 * p->d, q0, rows, k, v, w, st, update);
        finish_query_block(p, q0, w, rows, o + q0 * p->d);
    }
}

void attention_tiled_with(const attn_params *p, const float *q, const float *k,
                          const float *v, float *o, attn_stats *stats,
                          attn_update_fn *update)
{
    require_valid(p);
    const size_t rows = min_size(p->block_q, p->nq), cols = min_size(p->block_k, p->nk);
    const size_t nq = p->nq, nk = p->nk, d = p->d;
    attn_stats st = { .peak_tile_bytes = (rows * cols + 2 * rows) * sizeof(float) };
    tile_workspace w = workspace_new(rows, cols, d);
    for (size_t h = 0; h < p->batch * p->heads; h++)
        tiled_one_head(p, q + h * nq * d, k + h * nk * d, v + h * nk * d,
                       o + h * nq * d, &w, &st, update);
    workspace_free(&w);
    if (stats) *stats = st;
}

void attention_tiled(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, attn_stats *stats)
{
    attention_tiled_with(p, q, k, v, o, stats, attn_online_update);
    attention_repair(p, q, k, v, o);
}
void attn_draw_inputs(const attn_params *p, uint32_t seed, float *q, float *k,
                      float *v)
{
    const size_t problems = fa_mul(p->batch, p->heads);
    const size_t q_count = fa_mul(fa_mul(problems, p->nq), p->d);
    const size_t kv_count = fa_mul(fa_mul(problems, p->nk), p->d);
    mt19937 gen;
    mt_seed_path(&gen, seed, p->rng);
    torch_randn(&gen, q, q_count);
    torch_randn(&gen, k, kv_count);
    torch_randn(&gen, v, kv_count);
}
static void check_shapes(const char *program, const tensor *q, const tensor *k,
                         const tensor *v);
static bool same_leading_dims(const tensor *a, const tensor *b);
static bool same_shape(const tensor *a, const tensor *b);
static void check_shapes(const char *program, const tensor *q, const tensor *k,
                         const tensor *v)
{
    char a[96], b[96];
    if (q->ndim < 2 || q->ndim > 4)
        die_usage(program, "--q has shape %s; expected (n, d), (h, n, d) "
                  "or (b, h, n, d)", shape_text(q, a));
    if (k->ndim != q->ndim)
        die_usage(program, "--q %s and --k %s have different numbers of dimensions",
                  shape_text(q, a), shape_text(k, b));
    if (!same_leading_dims(q, k))
        die_usage(program, "--q %s and --k %s disagree in batch or heads",
                  shape_text(q, a), shape_text(k, b));
    if (!same_shape(k, v))
        die_usage(program, "--k %s and --v %s differ", shape_text(k, a), shape_text(v, b));
    if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1])
        die_usage(program, "--q %s and --k %s have different head dimensions",
                  shape_text(q, a), shape_text(k, b));
}

static bool same_leading_dims(const tensor *a, const tensor *b)
{
    for (int i = 0; i + 2 < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static bool same_shape(const tensor *a, const tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

const char *shape_text(const tensor *t, char buf[96])
{
    int used = snprintf(buf, 96, "(");
    for (int i = 0; i < t->ndim && used < 90; i++)
        used += snprintf(buf + used, 96 - (size_t)used, "%s%zu", i ? ", " : "",
                         t->shape[i]);
    snprintf(buf + used, 96 - (size_t)used, t->ndim == 1 ? ",)" : ")");
    return buf;
}

attn_params attn_params_from_tensors(const char *program, const tensor *q,
                                     const tensor *k, const tensor *v)
{
    check_shapes(program, q, k, v);
    const int n = q->ndim;
    attn_params p = attn_default(n == 4 ? q->shape[0] : 1, n >= 3 ? q->shape[n - 3] : 1,
                                 q->shape[n - 2], k->shape[n - 2], q->shape[n - 1]);
    const char *problem = attn_params_problem(&p);
    if (problem) die_usage(program, "%s", problem);
    return p;
}

attn_params attn_params_from_headers(const char *program, const char *const paths[3])
{
    const tensor t[3] = { npy_shape_or_exit(program, paths[0]),
                          npy_shape_or_exit(program, paths[1]),
                          npy_shape_or_exit(program, paths[2]) };
    return attn_params_from_tensors(program, &t[0], &t[1], &t[2]);
}

void attn_apply_options(attn_params *p, bool causal, long window, long block_q,
                        long block_k, double scale)
{
    p->causal = causal || window > 0;
    p->window = window;
    p->block_q = (size_t)block_q;
    p->block_k = (size_t)block_k;
    if (scale > 0) p->scale = (float)scale;
}

