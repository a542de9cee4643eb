/* ch03_compose: partial softmaxes compose; what the running max is for
   (tangled from chapters/ch03_compose.nw; do not edit) */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/softmax.h"
#include "ch03_compose.h"

tensor make_logits_on(rng_path path, unsigned long seed, size_t rows, size_t cols,
                      double scale)
{
    tensor x = tensor_new(2, (size_t[]){ rows, cols });
    mt19937 g;
    mt_seed_path(&g, (uint32_t)seed, path);
    torch_randn(&g, x.data, tensor_count(&x));
    for (size_t i = 0; i < tensor_count(&x); i++) x.data[i] *= (float)scale;
    return x;
}

tensor make_logits(unsigned long seed, size_t rows, size_t cols, double scale)
{
    return make_logits_on(RNG_SCALAR, seed, rows, cols, scale);
}

static double row_sum(const float *p, size_t count)
{
    double s = 0.0;
    for (size_t i = 0; i < count; i++) s += p[i];
    return s;
}

static double worse(double a, double b)          /* max that keeps a NaN */
{
    return isnan(a) || isnan(b) ? NAN : fmax(a, b);
}

double max_error(const float *p, const double *ref, size_t count)
{
    double worst = 0.0;
    for (size_t i = 0; i < count; i++)
        worst = worse(worst, fabs((double)p[i] - ref[i]));
    return worst;
}

online_check check_online(const tensor *x, size_t block)
{
    size_t rows = x->shape[0], cols = x->shape[1];
    float *p = fa_alloc(fa_mul(cols, sizeof *p));
    double *ref = fa_alloc(fa_mul(cols, sizeof *ref));
    online_check c = { 0.0, 1.0 };
    for (size_t r = 0; r < rows; r++) {
        const float *row = x->data + r * cols;
        softmax_online(row, cols, block, p);
        softmax_reference(row, cols, ref);
        c.error = worse(c.error, max_error(p, ref, cols));
        double sum = row_sum(p, cols);
        if (fabs(sum - 1.0) > fabs(c.far_sum - 1.0)) c.far_sum = sum;
    }
    fa_free(p);
    fa_free(ref);
    return c;
}

static int ascending(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void arrange(float *x, size_t n, logit_order order)
{
    if (order == ORDER_DRAWN) return;
    qsort(x, n, sizeof *x, ascending);
    if (order == ORDER_DESCENDING)
        for (size_t i = 0; i < n / 2; i++) {
            float t = x[i]; x[i] = x[n - 1 - i]; x[n - 1 - i] = t;
        }
}

grid_case run_grid_case(size_t n, size_t block, unsigned seed, logit_order order)
{
    tensor x = make_logits(seed, 1, n, 8.0);
    arrange(x.data, n, order);
    float *p = fa_alloc(fa_mul(n, sizeof *p));
    double *ref = fa_alloc(fa_mul(n, sizeof *ref));
    softmax_reference(x.data, n, ref);
    softmax_two_pass(x.data, n, p);
    grid_case g = { .two_pass_ulps = max_error(p, ref, n) / PROB_ULP };
    softmax_online(x.data, n, block, p);
    g.online_ulps = max_error(p, ref, n) / PROB_ULP;
    g.far_sum = row_sum(p, n);
    fa_free(p);
    fa_free(ref);
    tensor_free(&x);
    return g;
}

size_t split_into_partials(const float *x, size_t n, size_t block,
                           softmax_partial *parts)
{
    size_t k = 0;
    for (size_t start = 0; start < n; start += block, k++) {
        size_t len = n - start < block ? n - start : block;
        parts[k] = softmax_partial_of(x + start, len);
    }
    return k;
}

softmax_partial merge_left(const softmax_partial *parts, size_t k)
{
    softmax_partial s = online_start();
    for (size_t i = 0; i < k; i++) s = softmax_merge(s, parts[i]);
    return s;
}

softmax_partial merge_right(const softmax_partial *parts, size_t k)
{
    softmax_partial s = online_start();
    for (size_t i = k; i-- > 0;) s = softmax_merge(parts[i], s);
    return s;
}

softmax_partial merge_tree(const softmax_partial *parts, size_t k)
{
    if (k == 0) return online_start();
    if (k == 1) return parts[0];
    size_t half = k / 2;
    return softmax_merge(merge_tree(parts, half), merge_tree(parts + half, k - half));
}

softmax_partial merge_random(softmax_partial *parts, size_t k, mt19937 *g)
{
    if (k == 0) return online_start();
    for (; k > 1; k--) {
        size_t i = mt_next(g) % k, j = mt_next(g) % (k - 1);
        if (j >= i) j++;
        parts[i] = softmax_merge(parts[i], parts[j]);
        parts[j] = parts[k - 1];
    }
    return parts[0];
}

_Float16 exp_f16(_Float16 h)
{
    return (_Float16)expf((float)h);
}

float f16_next_up(float h)
{
    _Float16 half = (_Float16)h;
    uint16_t bits;
    memcpy(&bits, &half, sizeof bits);
    bits++;                                  /* positive halves: the next one up */
    memcpy(&half, &bits, sizeof bits);
    return (float)half;
}

float exp_f16_last_finite(void)
{
    float h = 1.0f;
    while (isfinite((float)exp_f16((_Float16)f16_next_up(h)))) h = f16_next_up(h);
    return h;
}

float exp_f32_last_finite(void)
{
    float x = logf(FLT_MAX);
    while (!isfinite(expf(x))) x = nextafterf(x, 0.0f);
    while (isfinite(expf(nextafterf(x, INFINITY)))) x = nextafterf(x, INFINITY);
    return x;
}

float naive_softmax_f32(const float *x, size_t n, float *e, float *p)
{
    float sum = 0.0f, top = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        e[i] = expf(x[i]);
        sum += e[i];
        top = fmaxf(top, x[i]);
    }
    for (size_t i = 0; i < n; i++) p[i] = e[i] / sum;
    return top;
}

float naive_softmax_f16(const float *x, size_t n, float *e, float *p)
{
    _Float16 sum = 0, top = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        _Float16 h = (_Float16)x[i], eh = exp_f16(h);
        sum = sum + eh;
        top = h > top ? h : top;
        e[i] = (float)eh;
    }
    for (size_t i = 0; i < n; i++) p[i] = (float)((_Float16)e[i] / sum);
    return (float)top;
}

float shifted_softmax_f16(const float *x, size_t n, float *e, float *p)
{
    _Float16 m = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) m = (_Float16)x[i] > m ? (_Float16)x[i] : m;
    for (size_t i = 0; i < n; i++) {
        _Float16 d = (_Float16)x[i] - m, eh = exp_f16(d);
        sum = sum + eh;
        e[i] = (float)eh;
    }
    for (size_t i = 0; i < n; i++) p[i] = (float)((_Float16)e[i] / sum);
    return 0.0f;                             /* the largest argument, x_max - m */
}

float online_softmax_f32(const float *x, size_t n, size_t block, float *e, float *p)
{
    softmax_partial s = softmax_stream(x, n, block);
    for (size_t i = 0; i < n; i++) e[i] = expf(x[i] - s.max);
    softmax_normalize(x, n, s, p);
    return n > 0 ? 0.0f : -INFINITY;         /* the largest argument, x_max - m */
}

static float run_variant(softmax_variant v, const float *x, size_t n, size_t block,
                         float *e, float *p)
{
    switch (v) {
    case NAIVE_F32:   return naive_softmax_f32(x, n, e, p);
    case NAIVE_F16:   return naive_softmax_f16(x, n, e, p);
    case SHIFTED_F16: return shifted_softmax_f16(x, n, e, p);
    case ONLINE_F32:  break;
    }
    return online_softmax_f32(x, n, block, e, p);
}

static void tally_values(softmax_tally *t, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isinf(v[i])) t->infinities++;
        if (isnan(v[i])) t->nans++;
    }
}

softmax_tally tally_variant(const tensor *x, softmax_variant v, size_t block)
{
    size_t rows = x->shape[0], cols = x->shape[1];
    float *e = fa_alloc(fa_mul(cols, sizeof *e));
    float *p = fa_alloc(fa_mul(cols, sizeof *p));
    double *ref = fa_alloc(fa_mul(cols, sizeof *ref));
    softmax_tally t = { .top = -INFINITY };
    for (size_t r = 0; r < rows; r++) {
        const float *row = x->data + r * cols;
        t.top = fmaxf(t.top, run_variant(v, row, cols, block, e, p));
        softmax_reference(row, cols, ref);
        tally_values(&t, e, cols);
        tally_values(&t, p, cols);
        for (size_t i = 0; i < cols; i++) t.zeros += p[i] == 0.0f;
        t.error = worse(t.error, max_error(p, ref, cols));
    }
    fa_free(e); fa_free(p); fa_free(ref);
    return t;
}

size_t f16_sum_overflow_at(const float *x, size_t n)
{
    _Float16 sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum = sum + exp_f16((_Float16)x[i]);
        if (isinf((float)sum)) return i;
    }
    return n;
}

size_t f16_first_inf_at(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isinf((float)exp_f16((_Float16)x[i]))) return i;
    return n;
}

long f16_overflows(const float *x, size_t n)
{
    long count = 0;
    for (size_t i = 0; i < n; i++) count += isinf((float)exp_f16((_Float16)x[i]));
    return count;
}

f16_damage measure_f16_damage(const tensor *x)
{
    size_t rows = x->shape[0], cols = x->shape[1];
    float *e = fa_alloc(fa_mul(cols, sizeof *e));
    float *p = fa_alloc(fa_mul(cols, sizeof *p));
    double *ref = fa_alloc(fa_mul(cols, sizeof *ref));
    f16_damage d = { 0.0, 0.0 };
    for (size_t r = 0; r < rows; r++) {
        naive_softmax_f16(x->data + r * cols, cols, e, p);
        softmax_reference(x->data + r * cols, cols, ref);
        double outside = 0.0;
        for (size_t i = 0; i < cols; i++) {
            if (p[i] == 0.0f) d.zero_largest = fmax(d.zero_largest, ref[i]);
            if (!isnan(p[i])) outside += ref[i];
        }
        d.outside_nan = fmax(d.outside_nan, outside);
    }
    fa_free(e); fa_free(p); fa_free(ref);
    return d;
}

row_summary summarize_row(const float *x, size_t n)
{
    double *ref = fa_alloc(fa_mul(n, sizeof *ref));
    row_summary s = { -INFINITY, INFINITY, 0.0 };
    softmax_reference(x, n, ref);
    for (size_t i = 0; i < n; i++) {
        s.max = fmaxf(s.max, x[i]);
        s.min = fminf(s.min, x[i]);
        s.largest_p = fmax(s.largest_p, ref[i]);
    }
    fa_free(ref);
    return s;
}

static void report_rows(report *r, const tensor *x)
{
    static const char *const cols[] = { "row", "max", "min", "range", "largest p",
                                        NULL };
    table *t = report_table(r, "rows", "The logits, row by row", cols);
    char a[32], b[32], c[32], d[32];
    for (size_t i = 0; i < x->shape[0]; i++) {
        row_summary s = summarize_row(x->data + i * x->shape[1], x->shape[1]);
        table_rowf(t, "%zu|%s|%s|%s|%s", i, fmt_num(a, s.max), fmt_num(b, s.min),
                   fmt_num(c, (double)s.max - s.min), fmt_num(d, s.largest_p));
    }
}

static void report_logit_facts(report *r, const tensor *x)
{
    char a[32];
    size_t cols = x->shape[1], best = 0;
    row_summary first = summarize_row(x->data, cols), whole = first;
    for (size_t i = 1; i < x->shape[0]; i++) {
        row_summary s = summarize_row(x->data + i * cols, cols);
        whole.max = fmaxf(whole.max, s.max);
        whole.min = fminf(whole.min, s.min);
        if (s.largest_p > whole.largest_p) { whole.largest_p = s.largest_p; best = i; }
    }
    double range = (double)first.max - first.min, span = (double)whole.max - whole.min;
    report_note(r, "Row 0 and the whole tensor, at the demo's one decimal and at four:");
    report_fact(r, "range_row", "0");
    report_factf(r, "row_range", "%.1f", range);
    report_fact(r, "row_range_4", fmt_num(a, range));
    report_fact(r, "row0_min", fmt_num(a, first.min));
    report_fact(r, "row0_max", fmt_num(a, first.max));
    report_fact(r, "span_exp", fmt_num(a, exp(range)));
    report_fact(r, "tensor_range", fmt_num(a, span));
    report_factf(r, "tensor_range_1", "%.1f", span);
    report_fact(r, "max_prob", fmt_num(a, whole.largest_p));
    report_factf(r, "max_prob_row", "%zu", best);
    report_factf(r, "row_max", "%.1f", whole.max);
    report_fact(r, "row_max_4", fmt_num(a, whole.max));
}

static void block_row(table *t, const tensor *x, size_t block, char ulps[32])
{
    size_t n = x->shape[1];
    online_check oc = check_online(x, block);
    char a[32], c[32];
    table_rowf(t, "%zu|%zu|%s|%s|%s", block, (n + block - 1) / block,
               fmt_num(a, oc.error), fmt_num(ulps, oc.error / PROB_ULP),
               fmt_num(c, oc.far_sum));
}

static void report_blocks(report *r, const tensor *x, size_t extra_block)
{
    static const char *const cols[] = { "block", "blocks per row", "max |online - ref|",
                                        "ulps of 2^-24", "row sums", NULL };
    table *t = report_table(r, "blocks", "Online vs reference softmax", cols);
    size_t n = x->shape[1], blocks[] = { 64, 128, 512, n };
    const char *keys[] = { "online_ulps_64", "online_ulps_128", "online_ulps_512",
                           "two_pass_ulps" };
    char ulps[4][32], extra[32];
    for (size_t k = 0; k < 4; k++) block_row(t, x, blocks[k], ulps[k]);
    if (extra_block > 0) block_row(t, x, extra_block, extra);
    report_note(r, "The errors in ulps of 2^-24; the last is one block, the two-pass"
                   " softmax:");
    for (size_t k = 0; k < 4; k++) report_fact(r, keys[k], ulps[k]);
}

static const char *join_sizes(char *buf, size_t len, const size_t *v, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%zu", i ? ", " : "", v[i]);
    return buf;
}

typedef struct { size_t cases; double online, two_pass, excess, sum_dev; } grid_summary;

static void grid_summary_add(grid_summary *w, grid_case g)
{
    w->cases++;
    w->online = fmax(w->online, g.online_ulps);
    w->two_pass = fmax(w->two_pass, g.two_pass_ulps);
    w->excess = fmax(w->excess, g.online_ulps - g.two_pass_ulps);
    w->sum_dev = fmax(w->sum_dev, fabs(g.far_sum - 1.0));
}

static grid_summary summarize_grid(void)
{
    grid_summary w = { 0 };
    for (size_t l = 0; l < sizeof grid_lengths / sizeof *grid_lengths; l++)
        for (size_t b = 0; b < sizeof grid_blocks / sizeof *grid_blocks; b++)
            for (unsigned s = 0; s < GRID_SEEDS; s++)
                for (int o = 0; o < 3; o++)
                    grid_summary_add(&w, run_grid_case(grid_lengths[l], grid_blocks[b],
                                                       s, (logit_order)o));
    return w;
}

static void report_grid(report *r)
{
    static const char *const cols[] = { "cases", "worst online", "worst two-pass",
                                        "largest excess", "bound", "worst |sum - 1|",
                                        NULL };
    table *t = report_table(r, "grid", "Online vs two-pass error over the test grid"
                                       " (ulps of 2^-24)", cols);
    grid_summary w = summarize_grid();
    char a[32], b[32], c[32], d[32], e[32];
    table_rowf(t, "%zu|%s|%s|%s|%s|%s", w.cases, fmt_num(a, w.online),
               fmt_num(b, w.two_pass), fmt_num(c, w.excess),
               fmt_num(d, ONLINE_EXCESS_ULPS), fmt_num(e, w.sum_dev));
    char list[256];
    report_note(r, "The largest excess, the bound the tests hold it to, and the grid:");
    report_fact(r, "grid_excess", c);
    report_factf(r, "excess_bound", "%.0f", ONLINE_EXCESS_ULPS);
    report_factf(r, "grid_seeds", "%d", GRID_SEEDS);
    report_factf(r, "sum_tolerance", "%.0e", ROW_SUM_TOLERANCE);
    report_fact(r, "grid_lengths", join_sizes(list, sizeof list, grid_lengths,
                                              sizeof grid_lengths / sizeof *grid_lengths));
    report_fact(r, "grid_blocks", join_sizes(list, sizeof list, grid_blocks,
                                             sizeof grid_blocks / sizeof *grid_blocks));
}

static void grouping_row(table *t, const char *name, softmax_partial s, double l_ref)
{
    char a[32], b[32], c[32];
    table_rowf(t, "%s|%s|%s|%s", name, fmt_num(a, s.max), fmt_num(b, s.sum),
               fmt_num(c, fabs(s.sum - l_ref) / l_ref / PROB_ULP));
}

static double reference_sum(const float *x, size_t n, float m)
{
    double l = 0.0;
    for (size_t i = 0; i < n; i++) l += exp((double)x[i] - m);
    return l;
}

static void report_groupings(report *r, const tensor *x, unsigned long seed)
{
    static const char *const cols[] = { "grouping", "m", "ℓ", "error of ℓ (2^-24)",
                                        NULL };
    table *t = report_table(r, "groupings", "Row 0 in blocks of 64, merged four ways",
                            cols);
    size_t n = x->shape[1], block = 64, k_max = (n + block - 1) / block;
    softmax_partial *parts = fa_alloc(fa_mul(k_max, sizeof *parts));
    size_t k = split_into_partials(x->data, n, block, parts);
    softmax_partial one = softmax_partial_of(x->data, n);
    double l_ref = reference_sum(x->data, n, one.max);
    mt19937 g;
    mt_seed(&g, (uint32_t)seed);
    grouping_row(t, "one block (two-pass)", one, l_ref);
    grouping_row(t, "left fold (stream)", merge_left(parts, k), l_ref);
    grouping_row(t, "right fold", merge_right(parts, k), l_ref);
    grouping_row(t, "balanced tree", merge_tree(parts, k), l_ref);
    grouping_row(t, "random order", merge_random(parts, k, &g), l_ref);
    fa_free(parts);
}

static void report_thresholds(report *r)
{
    char a[32];
    report_note(r, "Where exp overflows: ln of the largest finite value, and the last\n"
                   "input whose exp is finite, in fp32 and in fp16:");
    report_factf(r, "fp32_limit", "%.1f", log((double)FLT_MAX));
    report_factf(r, "fp16_limit", "%.1f", log(65504.0));
    report_fact(r, "ln_flt_max", fmt_num(a, log((double)FLT_MAX)));
    report_fact(r, "ln_half_max", fmt_num(a, log(65504.0)));
    float f32 = exp_f32_last_finite(), f16 = exp_f16_last_finite();
    report_factf(r, "f32_last_finite", "%.6f", f32);
    report_factf(r, "f16_last_finite", "%.7g", f16);
    report_factf(r, "f16_first_inf", "%.7g", f16_next_up(f16));
    report_fact(r, "f16_last_exp", fmt_int(a, llround(exp((double)f16))));
    report_fact(r, "f16_first_exp", fmt_int(a, llround(exp((double)f16_next_up(f16)))));
}

static void naive_row(table *t, const char *name, const char *limit, softmax_tally s)
{
    char a[32], b[32], c[32], d[32], e[32];
    bool bad = s.infinities + s.nans > 0;
    table_rowf(t, "%s|%s|%s|%s|%s|%s|%s", name, fmt_num(a, s.top), limit,
               fmt_int(b, s.infinities), fmt_int(c, s.nans),
               fmt_int(d, s.infinities + s.nans), bad ? "n/a" : fmt_num(e, s.error));
}

typedef struct { softmax_tally n32, n16, s16, h32, hon; double huge; } naive_tallies;

static naive_tallies tally_all_variants(const tensor *x, double huge)
{
    naive_tallies v = { .n32 = tally_variant(x, NAIVE_F32, 0),
                        .n16 = tally_variant(x, NAIVE_F16, 0),
                        .s16 = tally_variant(x, SHIFTED_F16, 0), .huge = huge };
    tensor big = tensor_new(2, x->shape);
    for (size_t i = 0; i < tensor_count(x); i++) big.data[i] = x->data[i] * (float)huge;
    v.h32 = tally_variant(&big, NAIVE_F32, 0);
    v.hon = tally_variant(&big, ONLINE_F32, 64);
    tensor_free(&big);
    return v;
}

static void report_naive(report *r, const naive_tallies *v)
{
    static const char *const cols[] = { "softmax", "largest exp argument",
                                        "overflows past", "inf", "NaN", "bad values",
                                        "max error", NULL };
    table *t = report_table(r, "naive", "Softmax with and without the max subtracted",
                            cols);
    char f32[32], f16[32], big32[64], big_online[64];
    fmt_num(f32, log((double)FLT_MAX));
    fmt_num(f16, log(65504.0));
    snprintf(big32, sizeof big32, "fp32, %gx logits, no max subtraction", v->huge);
    snprintf(big_online, sizeof big_online, "fp32, %gx logits, online (block 64)",
             v->huge);
    naive_row(t, "fp32, no max subtraction", f32, v->n32);
    naive_row(t, "fp16, no max subtraction", f16, v->n16);
    naive_row(t, "fp16, max subtracted", f16, v->s16);
    naive_row(t, big32, f32, v->h32);
    naive_row(t, big_online, f32, v->hon);
}

static void naive_facts(report *r, const tensor *x, const naive_tallies *v)
{
    char a[32];
    report_note(r, "Bad values (infinities and NaNs) and errors of the softmaxes"
                   " above:");
    report_fact(r, "fp32_bad", fmt_int(a, v->n32.infinities + v->n32.nans));
    report_fact(r, "naive_fp32_ulps", fmt_num(a, v->n32.error / PROB_ULP));
    report_fact(r, "fp16_inf", fmt_int(a, v->n16.infinities));
    report_fact(r, "fp16_nan", fmt_int(a, v->n16.nans));
    report_fact(r, "fp16_bad", fmt_int(a, v->n16.infinities + v->n16.nans));
    report_fact(r, "fp16_zero", fmt_int(a, v->n16.zeros));
    report_fact(r, "fp16_shifted_error", fmt_num(a, v->s16.error));
    report_factf(r, "huge_scale", "%g", v->huge);
    report_fact(r, "huge_fp32_bad", fmt_int(a, v->h32.infinities + v->h32.nans));
    report_fact(r, "huge_online_bad", fmt_int(a, v->hon.infinities + v->hon.nans));
    report_fact(r, "values", fmt_int(a, (long long)tensor_count(x)));
    f16_damage dmg = measure_f16_damage(x);
    report_fact(r, "fp16_zero_largest", fmt_num(a, dmg.zero_largest));
    report_fact(r, "fp16_outside_nan", fmt_num(a, dmg.outside_nan));
    char over[256] = "", at[256] = "";
    for (size_t i = 0; i < x->shape[0]; i++) {
        const float *row = x->data + i * x->shape[1];
        snprintf(over + strlen(over), sizeof over - strlen(over), "%s%ld",
                 i ? ", " : "", f16_overflows(row, x->shape[1]));
        snprintf(at + strlen(at), sizeof at - strlen(at), "%s%zu",
                 i ? ", " : "", f16_sum_overflow_at(row, x->shape[1]));
    }
    report_fact(r, "fp16_over_rows", over);
    report_fact(r, "fp16_sum_inf_at", at);
}

static void write_histogram(const char *dir, const tensor *x)
{
    size_t n = tensor_count(x);
    float lo = x->data[0], hi = x->data[0];
    for (size_t i = 0; i < n; i++) {
        lo = fminf(lo, x->data[i]);
        hi = fmaxf(hi, x->data[i]);
    }
    FILE *f = data_file(dir, "ch03_logits.dat");
    fprintf(f, "# bin centre, logits whose fp16 exp is finite, is infinite\n");
    for (float b = floorf(lo); b <= hi; b += 1.0f) {
        long finite = 0, over = 0;
        for (size_t i = 0; i < n; i++)
            if (x->data[i] >= b && x->data[i] < b + 1.0f) {
                if (isinf((float)exp_f16((_Float16)x->data[i]))) over++; else finite++;
            }
        fprintf(f, "%.1f %ld %ld\n", b + 0.5, finite, over);
    }
    data_close(f);
    FILE *l = data_file(dir, "ch03_limits.dat");
    fprintf(l, "# fp16 exp overflows past, largest logit, fp32 exp overflows past\n");
    fprintf(l, "%.4f\n%.4f\n%.4f\n", log(65504.0), hi, log((double)FLT_MAX));
    data_close(l);
}

static void write_block_sweep(const char *dir, const tensor *x)
{
    size_t n = x->shape[1];
    double two_pass = check_online(x, n).error / PROB_ULP;
    FILE *f = data_file(dir, "ch03_block_error.dat");
    fprintf(f, "# block, online error (ulps of 2^-24), two-pass error\n");
    for (size_t b = 1;; b = b + 1 + b / 16 < n ? b + 1 + b / 16 : n) {
        fprintf(f, "%zu %.4f %.4f\n", b, check_online(x, b).error / PROB_ULP, two_pass);
        if (b == n) break;
    }
    data_close(f);
}

typedef struct {
    long seed, rows, cols, block;
    double scale, huge;
    bool json;
    const char *data, *rng;
} ch03_options;

static ch03_options parse_options(int argc, char **argv)
{
    ch03_options o = { .seed = 0, .rows = 4, .cols = 2048, .scale = 8.0,
                       .huge = 1000.0, .rng = "scalar" };
    const option opts[] = {
        { "seed", OPT_INT, &o.seed, 0, 4294967295.0, "S", "torch.manual_seed(S)" },
        RNG_OPTION(&o.rng),
        { "rows", OPT_INT, &o.rows, 1, 65536, "N", "rows of logits" },
        { "cols", OPT_INT, &o.cols, 1, 16777216, "N", "logits per row" },
        { "scale", OPT_DOUBLE, &o.scale, 1e-6, 1e6, "X", "multiply torch.randn by X" },
        { "huge", OPT_DOUBLE, &o.huge, 1.0, 1e6, "X",
          "multiply the logits by X for the huge-logit rows" },
        { "block", OPT_INT, &o.block, 1, 16777216, "B",
          "also report block size B (none unless given)" },
        { "json", OPT_FLAG, &o.json, 0, 0, NULL, "print JSON instead of text" },
        { "data", OPT_STRING, &o.data, 0, 0, "DIR", "write the figure data into DIR" },
    };
    options_parse(argc, argv, "ch03_compose",
                  "Partial softmaxes compose; what the running max is for.",
                  opts, sizeof opts / sizeof opts[0]);
    return o;
}

int main(int argc, char **argv)
{
    ch03_options o = parse_options(argc, argv);
    fa_require(fa_mul(fa_mul((size_t)o.rows, (size_t)o.cols), 2 * sizeof(float))
                   + fa_mul((size_t)o.cols, 32),
               "the logits and their working rows");
    tensor x = make_logits_on(rng_path_named("ch03_compose", o.rng), (unsigned long)o.seed,
                              (size_t)o.rows, (size_t)o.cols, o.scale);
    report *r = report_new("ch03_compose", o.json);
    report_note(r, "Partial softmaxes compose; what the running max is for.\n"
                   "The logits: torch.manual_seed(seed); torch.randn(rows, cols) * scale.");
    report_factf(r, "seed", "%ld", o.seed);
    report_factf(r, "rows", "%ld", o.rows);
    report_factf(r, "cols", "%ld", o.cols);
    report_factf(r, "scale", "%g", o.scale);
    report_rows(r, &x);
    report_logit_facts(r, &x);
    report_blocks(r, &x, (size_t)o.block);
    report_grid(r);
    report_groupings(r, &x, (unsigned long)o.seed);
    report_thresholds(r);
    naive_tallies v = tally_all_variants(&x, o.huge);
    report_naive(r, &v);
    naive_facts(r, &x, &v);
    if (o.data) {
        write_histogram(o.data, &x);
        write_block_sweep(o.data, &x);
    }
    report_finish(r, stdout);
    tensor_free(&x);
    return 0;
}
