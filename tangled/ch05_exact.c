/* ch05_exact — exact tiled attention against a sliding window and a bug.
   Tangled from chapters/ch05_exact.nw. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include "harness.h"
#include "attention.h"

#define PROGRAM "ch05_exact"
enum { CH05_TILES = 3, CH05_WINDOWS = 2, CH05_SWEEP = 7 };
typedef struct {
    long seed, batch, heads, seq, dim;
    bool json;
    const char *data_dir;
} ch05_options;

static const ch05_options ch05_default_options = {
    .seed = 0, .batch = 2, .heads = 4, .seq = 1024, .dim = 64 };
typedef struct {
    attn_params p;          /* sizes and the default scale; no mask, 64 x 64 tiles */
    tensor qkv[3];
    double *exact;          /* reference output, no mask */
    double *exact_causal;   /* reference output, causal */
    float *out;             /* scratch output of the run under test */
    size_t count;           /* elements of one output */
} ch05_problem;
typedef struct {
    double tiled_error[CH05_TILES][2];         /* [tile shape][causal] */
    size_t tiles_visited[CH05_TILES][2];
    double naive_error;                        /* three-step kernel, no mask */
    double window_diff[CH05_WINDOWS];          /* against exact causal attention */
    size_t window_tiles[CH05_WINDOWS];         /* tiles visited, 64 x 64 */
    double unrescaled_error;                   /* 64 x 64, no mask */
    double mean_abs_output;                    /* mean |o| of exact causal attention */
} ch05_results;
static const size_t ch05_tiles[CH05_TILES][2] = { { 64, 64 }, { 128, 128 }, { 256, 512 } };
static const long ch05_windows[CH05_WINDOWS] = { 256, 64 };
void ch05_draw_inputs(const ch05_options *o, tensor qkv[3]);
ch05_problem ch05_problem_new(const ch05_options *o);
void ch05_problem_free(ch05_problem *pr);
double ch05_tiled_error(ch05_problem *pr, const attn_params *p, attn_update_fn *update,
                        attn_stats *stats);
void ch05_measure(ch05_problem *pr, ch05_results *r);
void ch05_update_unrescaled(size_t rows, size_t cols, size_t d, float *scores,
                            const float *v, float *m, float *l, float *acc);
static const char *fact_name(char buf[32], int tile, int causal);
void ch05_draw_inputs(const ch05_options *o, tensor qkv[3])
{
    const size_t shape[4] = { (size_t)o->batch, (size_t)o->heads, (size_t)o->seq,
                              (size_t)o->dim };
    mt19937 gen;
    mt_seed(&gen, (uint32_t)o->seed);
    for (int t = 0; t < 3; t++) {
        qkv[t] = tensor_new(4, shape);
        torch_randn(&gen, qkv[t].data, tensor_count(&qkv[t]));
    }
}
void ch05_update_unrescaled(size_t rows, size_t cols, size_t d, float *scores,
                            const float *v, float *m, float *l, float *acc)
{
    for (size_t r = 0; r < rows; r++) {
        float *s = scores + r * cols, *a = acc + r * d;
        const float m_new = fmaxf(m[r], attn_row_max(s, cols));
        if (m_new == -INFINITY) continue;
        const float alpha = expf(m[r] - m_new);
        l[r] = alpha * l[r] + attn_exp_row(s, cols, m_new);
        /* BUG, on purpose: attn_scale_row(a, d, alpha) is missing */
        attn_add_weighted_rows(a, s, v, cols, d);
        m[r] = m_new;
    }
}
static void parse_options(int argc, char **argv, ch05_options *o)
{
    const option opts[] = {
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of Q, K, V (drawn in that order)" },
        { "batch", OPT_INT, &o->batch, 1, 16, "B", "batch size" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads" },
        { "seq", OPT_INT, &o->seq, 1, 8192, "N", "sequence length" },
        { "dim", OPT_INT, &o->dim, 1, 512, "D", "head dimension" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR", "write the figure's data to DIR" },
    };
    options_parse(argc, argv, PROGRAM, "exact tiled attention against approximations",
                  opts, sizeof opts / sizeof opts[0]);
}
ch05_problem ch05_problem_new(const ch05_options *o)
{
    ch05_problem pr = { .p = attn_default((size_t)o->batch, (size_t)o->heads,
                                          (size_t)o->seq, (size_t)o->seq, (size_t)o->dim) };
    ch05_draw_inputs(o, pr.qkv);
    pr.count = tensor_count(&pr.qkv[0]);
    pr.exact = fa_alloc(fa_mul(pr.count, sizeof(double)));
    pr.exact_causal = fa_alloc(fa_mul(pr.count, sizeof(double)));
    pr.out = fa_alloc(fa_mul(pr.count, sizeof(float)));
    attention_reference(&pr.p, pr.qkv[0].data, pr.qkv[1].data, pr.qkv[2].data, pr.exact);
    attn_params causal = pr.p;
    causal.causal = true;
    attention_reference(&causal, pr.qkv[0].data, pr.qkv[1].data, pr.qkv[2].data,
                        pr.exact_causal);
    return pr;
}
void ch05_problem_free(ch05_problem *pr)
{
    for (int t = 0; t < 3; t++) tensor_free(&pr->qkv[t]);
    fa_free(pr->exact);
    fa_free(pr->exact_causal);
    fa_free(pr->out);
}
double ch05_tiled_error(ch05_problem *pr, const attn_params *p, attn_update_fn *update,
                        attn_stats *stats)
{
    const float *q = pr->qkv[0].data, *k = pr->qkv[1].data, *v = pr->qkv[2].data;
    attention_tiled_with(p, q, k, v, pr->out, stats, update);
    return max_abs_diff_fd(pr->out, p->causal ? pr->exact_causal : pr->exact, pr->count);
}
static void measure_tiled(ch05_problem *pr, ch05_results *r)
{
    for (int t = 0; t < CH05_TILES; t++)
        for (int causal = 0; causal < 2; causal++) {
            attn_params p = pr->p;
            attn_stats st;
            p.block_q = ch05_tiles[t][0];
            p.block_k = ch05_tiles[t][1];
            p.causal = causal;
            r->tiled_error[t][causal] = ch05_tiled_error(pr, &p, attn_online_update, &st);
            r->tiles_visited[t][causal] = st.tiles_computed;
        }
}
static void measure_naive(ch05_problem *pr, ch05_results *r)
{
    const float *q = pr->qkv[0].data, *k = pr->qkv[1].data, *v = pr->qkv[2].data;
    attention_naive(&pr->p, q, k, v, pr->out);
    r->naive_error = max_abs_diff_fd(pr->out, pr->exact, pr->count);
}
static void measure_windows(ch05_problem *pr, ch05_results *r)
{
    for (int w = 0; w < CH05_WINDOWS; w++) {
        attn_params p = pr->p;
        attn_stats st;
        p.causal = true;
        p.window = ch05_windows[w];
        r->window_diff[w] = ch05_tiled_error(pr, &p, attn_online_update, &st);
        r->window_tiles[w] = st.tiles_computed;
    }
}
static void measure_unrescaled(ch05_problem *pr, ch05_results *r)
{
    r->unrescaled_error = ch05_tiled_error(pr, &pr->p, ch05_update_unrescaled, NULL);
    r->mean_abs_output = 0.0;
    for (size_t i = 0; i < pr->count; i++) r->mean_abs_output += fabs(pr->exact_causal[i]);
    r->mean_abs_output /= (double)pr->count;
}
void ch05_measure(ch05_problem *pr, ch05_results *r)
{
    measure_tiled(pr, r);
    measure_naive(pr, r);
    measure_windows(pr, r);
    measure_unrescaled(pr, r);
}
static void write_sweep(ch05_problem *pr, const char *dir)
{
    FILE *f = data_file(dir, "ch05_error.dat");
    fprintf(f, "# size  tiled_error  window_difference  unrescaled_error  (causal, n = %zu)\n",
            pr->p.nq);
    for (size_t b = 16; b <= pr->p.nq && b <= 1024; b *= 2) {
        attn_params p = pr->p, w = pr->p;
        p.causal = w.causal = true;
        p.block_q = p.block_k = b;
        w.window = (long)b;
        const double tiled = ch05_tiled_error(pr, &p, attn_online_update, NULL);
        const double window = ch05_tiled_error(pr, &w, attn_online_update, NULL);
        const double unrescaled = ch05_tiled_error(pr, &p, ch05_update_unrescaled, NULL);
        fprintf(f, "%zu %.6e %.6e %.6e\n", b, tiled, window, unrescaled);
    }
    fclose(f);
}
static void report_tiles(report *rep, const ch05_results *r)
{
    static const char *const columns[] = { "kernel", "tile", "causal", "tiles visited",
                                           "max error", NULL };
    table *t = report_table(rep, "tiles", "Tiled attention against the float64 reference",
                            columns);
    char tile[32], visited[32], err[32];
    for (int i = 0; i < CH05_TILES; i++)
        for (int causal = 0; causal < 2; causal++) {
            snprintf(tile, sizeof tile, "%zu x %zu", ch05_tiles[i][0], ch05_tiles[i][1]);
            fmt_int(visited, (long long)r->tiles_visited[i][causal]);
            fmt_num(err, r->tiled_error[i][causal]);
            table_row(t, (const char *const[]){ "tiled", tile, causal ? "yes" : "no",
                                                visited, err });
        }
    table_row(t, (const char *const[]){ "naive", "whole S", "no", "-",
                                        fmt_num(err, r->naive_error) });
}
static void report_windows(report *rep, const ch05_results *r)
{
    static const char *const columns[] = { "window w", "tiles visited",
                                           "max abs difference", NULL };
    table *t = report_table(rep, "windows",
                            "Sliding window against exact causal attention (64 x 64 tiles)",
                            columns);
    char w[32], visited[32], diff[32];
    for (int i = 0; i < CH05_WINDOWS; i++) {
        snprintf(w, sizeof w, "%ld", ch05_windows[i]);
        fmt_int(visited, (long long)r->window_tiles[i]);
        table_row(t, (const char *const[]){ w, visited, fmt_num(diff, r->window_diff[i]) });
    }
}
static void report_facts(report *rep, const ch05_options *o, const ch05_results *r)
{
    char b[32], key[32];
    double worst = 0.0;
    report_factf(rep, "shape", "(%ld, %ld, %ld, %ld)", o->batch, o->heads, o->seq, o->dim);
    report_factf(rep, "seed", "%ld", o->seed);
    for (int i = 0; i < CH05_TILES; i++)
        for (int causal = 0; causal < 2; causal++) {
            report_fact(rep, fact_name(key, i, causal), fmt_num(b, r->tiled_error[i][causal]));
            worst = fmax(worst, r->tiled_error[i][causal]);
        }
    report_fact(rep, "worst_tiled_error", fmt_num(b, worst));
    report_fact(rep, "naive_error", fmt_num(b, r->naive_error));
    for (int i = 0; i < CH05_WINDOWS; i++) {
        snprintf(key, sizeof key, "window_%ld", ch05_windows[i]);
        report_fact(rep, key, fmt_num(b, r->window_diff[i]));
    }
    report_fact(rep, "unrescaled", fmt_num(b, r->unrescaled_error));
    report_fact(rep, "mean_abs_output", fmt_num(b, r->mean_abs_output));
}
static const char *fact_name(char buf[32], int tile, int causal)
{
    snprintf(buf, 32, "err_%zux%zu%s", ch05_tiles[tile][0], ch05_tiles[tile][1],
             causal ? "_causal" : "");
    return buf;
}
int main(int argc, char **argv)
{
    ch05_options o = ch05_default_options;
    ch05_results r;
    parse_options(argc, argv, &o);
    ch05_problem pr = ch05_problem_new(&o);
    ch05_measure(&pr, &r);
    if (o.data_dir) write_sweep(&pr, o.data_dir);
    report *rep = report_new(PROGRAM, o.json);
    report_tiles(rep, &r);
    report_windows(rep, &r);
    report_facts(rep, &o, &r);
    report_finish(rep, stdout);
    ch05_problem_free(&pr);
    return 0;
}
