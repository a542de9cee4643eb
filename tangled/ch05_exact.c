/* ch05_exact — exact tiled attention against a sliding window and a bug.
   Tangled from chapters/ch05_exact.nw. */
#include "ch05_exact.h"
/* the max abs differences the reference demo prints for ch05_windows, measured
   on its own random inputs: quoted here, not computed */
static const char *const ch05_demo_windows[CH05_WINDOWS] = { "0.6047", "1.5660" };

static void report_tiles(report *rep, const ch05_results *r);
static void add_tiled_row(table *t, const ch05_results *r, int tile, int causal);
static void report_windows(report *rep, const ch05_results *r);
static void explain_error_columns(report *rep, size_t outputs);
static void report_facts(report *rep, const ch05_options *o, const ch05_problem *pr,
                         const ch05_results *r);
static void report_tiled_facts(report *rep, const ch05_results *r);
static void report_other_facts(report *rep, const ch05_results *r);

static void draw_inputs(const attn_params *p, uint32_t seed, tensor qkv[3])
{
    const size_t shape[4] = { p->batch, p->heads, p->nq, p->d };
    for (int t = 0; t < 3; t++) qkv[t] = tensor_new(4, shape);
    attn_draw_inputs(p, seed, qkv[0].data, qkv[1].data, qkv[2].data);
}

void ch05_update_unrescaled(size_t rows, size_t cols, size_t d, float *scores,
                            const float *v, float *m, float *l, float *acc)
{
    for (size_t r = 0; r < rows; r++) {
        float *s = scores + r * cols, *a = acc + r * d;
        const float m_new = fmaxf(m[r], block_max(s, cols));
        if (m_new == -INFINITY) continue;
        const float alpha = expf(m[r] - m_new);
        l[r] = alpha * l[r] + attn_exp_row(s, cols, m_new);
        /* BUG, on purpose: attn_scale_row(a, d, alpha) is missing */
        attn_add_weighted_rows(a, s, v, cols, d);
        m[r] = m_new;
    }
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
            r->tiled_error[t][causal] =
                ch05_tiled_error(pr, &p, attn_online_update, &st);
            r->tiles_visited[t][causal] = st.tiles_computed;
        }
}

static void measure_naive(ch05_problem *pr, ch05_results *r)
{
    const float *q = pr->qkv[0].data, *k = pr->qkv[1].data, *v = pr->qkv[2].data;
    attention_naive(&pr->p, q, k, v, pr->out);
    r->naive_error = max_abs_diff_fd(pr->out, pr->exact, pr->count);
}

static double mean_abs(const double *x, size_t count)
{
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) sum += fabs(x[i]);
    return sum / (double)count;
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
    r->mean_abs_output = mean_abs(pr->exact_causal, pr->count);
}

static void measure_unrescaled(ch05_problem *pr, ch05_results *r)
{
    r->unrescaled_error = ch05_tiled_error(pr, &pr->p, ch05_update_unrescaled, NULL);
}

void ch05_measure(ch05_problem *pr, ch05_results *r)
{
    measure_tiled(pr, r);
    measure_naive(pr, r);
    measure_windows(pr, r);
    measure_unrescaled(pr, r);
}

ch05_problem ch05_problem_new(const ch05_options *o)
{
    const size_t n = (size_t)o->seq;
    ch05_problem pr = { .p = attn_default((size_t)o->batch, (size_t)o->heads, n, n,
                                          (size_t)o->dim) };
    const size_t values = fa_mul(fa_mul((size_t)o->batch, (size_t)o->heads),
                                 fa_mul(n, (size_t)o->dim));
    fa_require(fa_mul(values, 4 * sizeof(float) + 2 * sizeof(double))
                   + fa_mul(fa_mul(n, (size_t)o->dim + 1), sizeof(double)),
               "the inputs, outputs and references");
    pr.p.rng = rng_path_named(PROGRAM, o->rng);
    draw_inputs(&pr.p, (uint32_t)o->seed, pr.qkv);
    pr.count = tensor_count(&pr.qkv[0]);
    pr.exact = fa_alloc(fa_mul(pr.count, sizeof(double)));
    pr.exact_causal = fa_alloc(fa_mul(pr.count, sizeof(double)));
    pr.out = fa_alloc(fa_mul(pr.count, sizeof(float)));
    const float *q = pr.qkv[0].data, *k = pr.qkv[1].data, *v = pr.qkv[2].data;
    attn_params causal = pr.p;
    causal.causal = true;
    attention_reference(&pr.p, q, k, v, pr.exact);
    attention_reference(&causal, q, k, v, pr.exact_causal);
    return pr;
}

void ch05_problem_free(ch05_problem *pr)
{
    for (int t = 0; t < 3; t++) tensor_free(&pr->qkv[t]);
    fa_free(pr->exact);
    fa_free(pr->exact_causal);
    fa_free(pr->out);
}

static void report_results(const ch05_options *o, const ch05_problem *pr,
                           const ch05_results *r)
{
    report *rep = report_new(PROGRAM, o->json);
    report_tiles(rep, r);
    report_windows(rep, r);
    explain_error_columns(rep, pr->count);
    report_facts(rep, o, pr, r);
    report_finish(rep, stdout);
}

static void report_tiles(report *rep, const ch05_results *r)
{
    static const char *const columns[] = { "kernel", "tile", "causal", "tiles visited",
                                           "max error", NULL };
    table *t = report_table(
        rep, "tiles", "Tiled attention against the float64 reference", columns);
    char err[32];
    for (int i = 0; i < CH05_TILES; i++)
        for (int causal = 0; causal < 2; causal++) add_tiled_row(t, r, i, causal);
    table_rowf(t, "naive|whole S|no|-|%s", fmt_num(err, r->naive_error));
}

static void add_tiled_row(table *t, const ch05_results *r, int tile, int causal)
{
    char visited[32], err[32];
    fmt_int(visited, (long long)r->tiles_visited[tile][causal]);
    fmt_num(err, r->tiled_error[tile][causal]);
    table_rowf(t, "tiled|%zu x %zu|%s|%s|%s", ch05_tiles[tile][0], ch05_tiles[tile][1],
               causal ? "yes" : "no", visited, err);
}

static void report_windows(report *rep, const ch05_results *r)
{
    static const char *const columns[] = { "window w", "tiles visited",
                                           "max abs difference", "demo", NULL };
    table *t = report_table(
        rep, "windows", "Sliding window against exact causal attention (64 x 64 tiles)",
        columns);
    char visited[32], diff[32];
    for (int i = 0; i < CH05_WINDOWS; i++)
        table_rowf(t, "%ld|%s|%s|%s", ch05_windows[i],
                   fmt_int(visited, (long long)r->window_tiles[i]),
                   fmt_num(diff, r->window_diff[i]), ch05_demo_windows[i]);
}

static void explain_error_columns(report *rep, size_t outputs)
{
    char count[32], line[160];
    snprintf(line, sizeof line, "max error:           largest |O - O_ref| over all %s "
             "outputs, O_ref in float64", fmt_int(count, (long long)outputs));
    report_note(rep, line);
    report_note(rep, "max abs difference:  the same, against exact causal attention");
    report_note(rep, "window w:            query i sees keys j with i - w < j <= i");
    report_note(rep, "demo:                the reference demo's figure, "
                     "on its own inputs");
}

static void report_facts(report *rep, const ch05_options *o, const ch05_problem *pr,
                         const ch05_results *r)
{
    char b[64];
    snprintf(b, sizeof b, "(%ld, %ld, %ld, %ld)", o->batch, o->heads, o->seq, o->dim);
    report_fact_labeled(rep, "shape", "Q, K and V (batch, heads, N, d)", b);
    snprintf(b, sizeof b, "%ld", o->seed);
    report_fact_labeled(rep, "seed", "seed", b);
    report_fact_labeled(rep, "outputs", "outputs compared",
                        fmt_int(b, (long long)pr->count));
    report_tiled_facts(rep, r);
    report_other_facts(rep, r);
}

static const char *fact_name(char buf[32], int tile, int causal)
{
    snprintf(buf, 32, "err_%zux%zu%s", ch05_tiles[tile][0], ch05_tiles[tile][1],
             causal ? "_causal" : "");
    return buf;
}

static void report_tiled_facts(report *rep, const ch05_results *r)
{
    char key[32], label[64], b[32];
    double worst = 0.0;
    for (int i = 0; i < CH05_TILES; i++)
        for (int causal = 0; causal < 2; causal++) {
            snprintf(label, sizeof label, "max error, tiled %zu x %zu%s",
                     ch05_tiles[i][0], ch05_tiles[i][1], causal ? ", causal" : "");
            report_fact_labeled(rep, fact_name(key, i, causal), label,
                                fmt_num(b, r->tiled_error[i][causal]));
            worst = fmax(worst, r->tiled_error[i][causal]);
        }
    report_fact_labeled(rep, "worst_tiled_error", "worst of the six", fmt_num(b, worst));
}

static void report_other_facts(report *rep, const ch05_results *r)
{
    char key[32], label[64], b[32];
    report_fact_labeled(rep, "naive_error", "max error, naive",
                        fmt_num(b, r->naive_error));
    for (int i = 0; i < CH05_WINDOWS; i++) {
        snprintf(key, sizeof key, "window_%ld", ch05_windows[i]);
        snprintf(label, sizeof label, "max abs difference, window %ld", ch05_windows[i]);
        report_fact_labeled(rep, key, label, fmt_num(b, r->window_diff[i]));
        snprintf(key, sizeof key, "demo_window_%ld", ch05_windows[i]);
        snprintf(label, sizeof label, "the demo's figure, window %ld", ch05_windows[i]);
        report_fact_labeled(rep, key, label, ch05_demo_windows[i]);
    }
    report_fact_labeled(rep, "unrescaled", "max error, accumulator not rescaled",
                        fmt_num(b, r->unrescaled_error));
    report_fact_labeled(rep, "mean_abs_output", "mean |O|, exact causal attention",
                        fmt_num(b, r->mean_abs_output));
}

static void write_sweep(ch05_problem *pr, const char *dir)
{
    FILE *f = data_file(dir, "ch05_error.dat");
    fprintf(f, "# size  tiled_error  window_difference  unrescaled_error  "
               "(causal, n = %zu)\n", pr->p.nq);
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
    data_close(f);
}

static void parse_ch05_options(int argc, char **argv, ch05_options *o)
{
    const option opts[] = {
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N",
          "seed of Q, K, V (drawn in that order)" },
        { "batch", OPT_INT, &o->batch, 1, 16, "B", "batch size" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads" },
        { "seq", OPT_INT, &o->seq, 1, 8192, "N", "sequence length" },
        { "dim", OPT_INT, &o->dim, 1, 512, "D", "head dimension" },
        RNG_OPTION(&o->rng),
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR",
          "write the figure's data to DIR" },
    };
    options_parse(argc, argv, PROGRAM, "exact tiled attention against approximations",
                  opts, sizeof opts / sizeof opts[0]);
}

int main(int argc, char **argv)
{
    ch05_options o = ch05_default_options;
    ch05_results r;
    parse_ch05_options(argc, argv, &o);
    ch05_problem pr = ch05_problem_new(&o);
    ch05_measure(&pr, &r);
    if (o.data_dir) write_sweep(&pr, o.data_dir);
    report_results(&o, &pr, &r);
    ch05_problem_free(&pr);
    return 0;
}
