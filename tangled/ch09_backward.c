/* ch09_backward.c — tangled from chapters/ch09_backward.nw. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"
#include "harness/ladder.h"
#include "cpu/backward.h"
#include "cpu/fused.h"
#include "ch09_backward.h"
static bool has_nan(const ch09_outputs *out);
static double largest_gradient(const ch09_outputs *out);
static void flop_row(table *t, const char *mask, const char *pass, const char *products,
                     const bwd_counts *c, double forward);
static void peak_facts(report *r, const attn_params *p, const ch09_timing *naive,
                       const ch09_timing *flash);
static void timing_notes(report *r, ladder_noise n, double widest, const ch09_timing naive[2],
                         const ch09_timing flash[2], int threads);
static void report_recorded(report *r, const char *path);
typedef struct recorded_backward recorded_backward;
static int read_recorded_files(const char *path, recorded_backward *rb);
static void save_ch09_inputs(const char *dir, const ch09_inputs *in, report *r);
static bool same_shape_as(const tensor *a, const tensor *b);
static void ch09_reference(const attn_params *p, const ch09_inputs *in, ch09_outputs *out);
static void report_ch09_file_run(report *r, const ch09_options *o, const attn_params *p,
                                 const ch09_inputs *in);
static void bench_one_length(const ch09_options *o, table *t, FILE *f, size_t n,
                             int threads, const double peak[2], const double torch_s[2]);
static void torch_peer(const char *python, int threads, size_t max_n,
                       double seconds[][2]);
static void bench_memory(report *r, int threads, size_t n);
static void refuse_if_seeded_run_too_big(const attn_params *p, int threads);
static void reserve_ch09_saved(const char *dir);
static size_t ch09_file_run_bytes(const attn_params *p, bool reference, int threads);
static void refuse_slow_reference(const attn_params *p);
attn_params ch09_seeded_params(const ch09_options *o);
ch09_options ch09_defaults(void)
{
    return (ch09_options){ .block_q = 64, .block_k = 64, .batch = 1, .heads = 4,
                           .seq = 1000, .dim = 64, .max_n = 8192, .time_seq = CH09_TIME_N,
                           .recorded = "chapters/recorded" };
}
static void parse_ch09_options(int argc, char **argv, ch09_options *o)
{
    const option opts[] = {
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE",
          "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "dout", OPT_STRING, &o->dout_path, 0, 0, "FILE", "gradient of the output: the shape of --q" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE", "write the output O" },
        { "dq", OPT_STRING, &o->dq_path, 0, 0, "FILE", "write dL/dQ" },
        { "dk", OPT_STRING, &o->dk_path, 0, 0, "FILE", "write dL/dK" },
        { "dv", OPT_STRING, &o->dv_path, 0, 0, "FILE", "write dL/dV" },
        { "reference", OPT_FLAG, &o->reference, 0, 0, NULL,
          "double-precision reference and finite differences instead (slow)" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "window", OPT_INT, &o->window, 0, 1e9, "W", "sliding window of W keys (implies causal)" },
        { "block-q", OPT_INT, &o->block_q, 1, CH09_MAX_BLOCK, "N", "query rows per tile" },
        { "block-k", OPT_INT, &o->block_k, 1, CH09_MAX_BLOCK, "N", "key rows per tile" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "threads", OPT_INT, &o->threads, 0, BWD_MAX_THREADS, "T", "threads (0: all CPUs)" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of the generated Q, K, V (dO: N+1)" },
        { "batch", OPT_INT, &o->batch, 1, 64, "B", "batch size" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads" },
        { "seq", OPT_INT, &o->seq, 1, 16384, "N", "query length" },
        { "seq-k", OPT_INT, &o->seq_k, 0, 16384, "N", "key length (0: as --seq)" },
        { "dim", OPT_INT, &o->dim, 1, 1024, "D", "head dimension" },
        { "save", OPT_STRING, &o->save_dir, 0, 0, "DIR",
          "only write the generated q k v dout .npy to DIR" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "measure naive vs flash, n = 512..max-n" },
        { "max-n", OPT_INT, &o->max_n, 512, 8192, "N", "with --bench: the longest length" },
        { "quick", OPT_FLAG, &o->quick, 0, 0, NULL, "with --bench: a short run, n up to 2048" },
        { "time-seq", OPT_INT, &o->time_seq, 16, 4096, "N", "length of the timing problem" },
        { "python", OPT_STRING, &o->python, 0, 0, "PY", "with --bench: a Python with torch, as a peer" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR", "write the figure data into DIR" },
        { "machine", OPT_STRING, &o->machine, 0, 0, "FILE",
          "chapter 1's machine profile (default $FA_MACHINE; with neither, measure the peak now)" },
        { "recorded", OPT_STRING, &o->recorded, 0, 0, "PATH",
          "the recorded benchmarks to report: a file, or a folder of bench-*.txt" },
    };
    options_parse(argc, argv, PROGRAM,
                  "attention's backward pass: naive (keeps P) and flash (recomputes P)",
                  opts, sizeof opts / sizeof opts[0]);
    if (o->quick && o->max_n > 2048) o->max_n = 2048;
}
int ch09_threads(const ch09_options *o)
{
    return o->threads > 0 ? (int)o->threads : ladder_cpus();
}
void ch09_draw(const attn_params *p, uint32_t seed, ch09_inputs *in)
{
    const size_t q_shape[4] = { p->batch, p->heads, p->nq, p->d };
    const size_t kv_shape[4] = { p->batch, p->heads, p->nk, p->d };
    in->q = tensor_new(4, q_shape);
    in->k = tensor_new(4, kv_shape);
    in->v = tensor_new(4, kv_shape);
    in->dout = tensor_new(4, q_shape);
    attn_draw_inputs(p, seed, in->q.data, in->k.data, in->v.data);
    mt19937 gen;
    mt_seed(&gen, seed + 1);
    torch_randn(&gen, in->dout.data, tensor_count(&in->dout));
}
ch09_outputs ch09_outputs_new(const ch09_inputs *in)
{
    ch09_outputs out = { .o = tensor_new(in->q.ndim, in->q.shape),
                         .dq = tensor_new(in->q.ndim, in->q.shape),
                         .dk = tensor_new(in->k.ndim, in->k.shape),
                         .dv = tensor_new(in->k.ndim, in->k.shape) };
    out.lse = tensor_new(in->q.ndim - 1, in->q.shape);
    return out;
}
void ch09_free(ch09_inputs *in, ch09_outputs *out)
{
    if (in) { tensor_free(&in->q); tensor_free(&in->k); tensor_free(&in->v);
              tensor_free(&in->dout); }
    if (out) { tensor_free(&out->o); tensor_free(&out->lse); tensor_free(&out->dq);
               tensor_free(&out->dk); tensor_free(&out->dv); }
}
void ch09_flash(const attn_params *p, const ch09_inputs *in, ch09_outputs *out,
                int threads, bwd_counts *fwd, bwd_counts *bwd)
{
    attention_forward_lse(p, in->q.data, in->k.data, in->v.data, out->o.data,
                          out->lse.data, threads, fwd);
    attention_backward_flash(p, in->q.data, in->k.data, in->v.data, out->o.data,
                             out->lse.data, in->dout.data, out->dq.data, out->dk.data,
                             out->dv.data, threads, bwd);
    attention_backward_repair(p, in->q.data, in->k.data, in->v.data, in->dout.data,
                              out->o.data, out->lse.data, out->dq.data, out->dk.data,
                              out->dv.data);
}
void ch09_naive(const attn_params *p, const ch09_inputs *in, ch09_outputs *out,
                int threads, bwd_counts *fwd, bwd_counts *bwd)
{
    float *probs = fa_alloc(fa_mul(fa_mul(fa_mul(p->batch, p->heads), p->nq),
                                   fa_mul(p->nk, sizeof(float))));
    attention_forward_keep_p(p, in->q.data, in->k.data, in->v.data, out->o.data, probs,
                             threads, fwd);
    attention_backward_naive(p, in->q.data, in->k.data, in->v.data, probs,
                             in->dout.data, out->dq.data, out->dk.data, out->dv.data,
                             threads, bwd);
    fa_free(probs);
    attention_backward_repair(p, in->q.data, in->k.data, in->v.data, in->dout.data,
                              out->o.data, NULL, out->dq.data, out->dk.data, out->dv.data);
}
double ch09_error_vs_fd(const ch09_outputs *out, double *const fd[3])
{
    const tensor *g[3] = { &out->dq, &out->dk, &out->dv };
    double worst = 0.0;
    for (int t = 0; t < 3; t++)
        worst = fmax(worst, max_abs_diff_fd(g[t]->data, fd[t], tensor_count(g[t])));
    return isnan(worst) || has_nan(out) ? NAN : worst;
}
static bool has_nan(const ch09_outputs *out)
{
    const tensor *g[3] = { &out->dq, &out->dk, &out->dv };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < tensor_count(g[t]); i++)
            if (isnan(g[t]->data[i])) return true;
    return false;
}
double ch09_error_between(const ch09_outputs *a, const ch09_outputs *b)
{
    const tensor *x[3] = { &a->dq, &a->dk, &a->dv }, *y[3] = { &b->dq, &b->dk, &b->dv };
    double worst = 0.0;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < tensor_count(x[t]); i++)
            worst = fmax(worst, fabs((double)x[t]->data[i] - (double)y[t]->data[i]));
    return has_nan(a) || has_nan(b) ? NAN : worst;
}
const ch09_case CH09_CASES[] = {
    { "odd n and d, ragged tiles", 1, 2, 17, 23, 5, 4, 7, false, 0 },
    { "causal, ragged tiles", 1, 2, 23, 23, 5, 4, 7, true, 0 },
    { "Nq > Nk, tiles 8 x 5", 2, 1, 30, 12, 8, 8, 5, false, 0 },
    { "Nq < Nk, one tile", 1, 1, 9, 40, 16, 64, 64, false, 0 },
    { "window 5, empty rows", 1, 1, 30, 10, 3, 8, 3, true, 5 },
};
const size_t CH09_CASE_COUNT = sizeof CH09_CASES / sizeof CH09_CASES[0];
ch09_case_errors ch09_check_case(const ch09_case *c, uint32_t seed, int threads)
{
    attn_params p = attn_default(c->batch, c->heads, c->nq, c->nk, c->d);
    p.block_q = c->block_q; p.block_k = c->block_k;
    p.causal = c->causal || c->window > 0; p.window = c->window;
    ch09_inputs in;
    ch09_draw(&p, seed, &in);
    ch09_outputs flash = ch09_outputs_new(&in), naive = ch09_outputs_new(&in);
    ch09_flash(&p, &in, &flash, threads, NULL, NULL);
    ch09_naive(&p, &in, &naive, threads, NULL, NULL);
    double *fd[3] = { fa_alloc(fa_mul(tensor_count(&in.q), 8)),
                      fa_alloc(fa_mul(tensor_count(&in.k), 8)),
                      fa_alloc(fa_mul(tensor_count(&in.k), 8)) };
    attention_grad_fd(&p, in.q.data, in.k.data, in.v.data, in.dout.data, fd[0], fd[1], fd[2]);
    const ch09_case_errors e = { .flash_fd = ch09_error_vs_fd(&flash, fd),
                                 .naive_fd = ch09_error_vs_fd(&naive, fd),
                                 .flash_naive = ch09_error_between(&flash, &naive) };
    for (int t = 0; t < 3; t++) fa_free(fd[t]);
    ch09_free(&in, &flash);
    ch09_free(NULL, &naive);
    return e;
}
static void report_gradient_cases(report *r, uint32_t seed, int threads)
{
    static const char *const columns[] = { "problem", "(b, h, Nq, Nk, d)", "tile",
        "flash vs FD", "naive vs FD", "flash vs naive", NULL };
    table *t = report_table(r, "gradients", "Gradients against finite differences (double)",
                            columns);
    double worst[3] = { 0 };
    for (size_t i = 0; i < CH09_CASE_COUNT; i++) {
        const ch09_case *c = &CH09_CASES[i];
        const ch09_case_errors e = ch09_check_case(c, seed, threads);
        char a[32], b[32], x[32], shape[64], tile[32];
        snprintf(shape, sizeof shape, "(%zu, %zu, %zu, %zu, %zu)", c->batch, c->heads, c->nq,
                 c->nk, c->d);
        snprintf(tile, sizeof tile, "%zu x %zu", c->block_q, c->block_k);
        table_rowf(t, "%s|%s|%s|%s|%s|%s", c->label, shape, tile, fmt_num(a, e.flash_fd),
                   fmt_num(b, e.naive_fd), fmt_num(x, e.flash_naive));
        worst[0] = fmax(worst[0], e.flash_fd);
        worst[1] = fmax(worst[1], e.naive_fd);
        worst[2] = fmax(worst[2], e.flash_naive);
    }
    char v[32];
    report_fact_labeled(r, "fd_worst_flash", "worst flash vs FD", fmt_num(v, worst[0]));
    report_fact_labeled(r, "fd_worst_naive", "worst naive vs FD", fmt_num(v, worst[1]));
    report_fact_labeled(r, "small_worst", "worst flash vs naive", fmt_num(v, worst[2]));
}
ch09_big_run ch09_big(const attn_params *p, const ch09_inputs *in, bool causal, int threads)
{
    attn_params q = *p;
    q.causal = causal || p->window > 0;
    ch09_big_run run = { .causal = q.causal };
    ch09_outputs flash = ch09_outputs_new(in), naive = ch09_outputs_new(in);
    bwd_counts naive_fwd;
    ch09_flash(&q, in, &flash, threads, &run.fwd, &run.flash);
    ch09_naive(&q, in, &naive, threads, &naive_fwd, &run.naive);
    run.diff = ch09_error_between(&flash, &naive);
    run.largest = largest_gradient(&flash);
    ch09_free(NULL, &flash);
    ch09_free(NULL, &naive);
    return run;
}
static double largest_gradient(const ch09_outputs *out)
{
    const tensor *g[3] = { &out->dq, &out->dk, &out->dv };
    double largest = 0.0;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < tensor_count(g[t]); i++)
            largest = fmax(largest, fabs((double)g[t]->data[i]));
    return largest;
}
static void report_flops(report *r, const ch09_big_run runs[2])
{
    static const char *const columns[] = { "mask", "pass", "products", "GFLOP",
                                           "x forward", "exponentials", NULL };
    table *t = report_table(r, "flops", "FLOPs counted in the loops", columns);
    for (int i = 0; i < 2; i++) {
        const char *mask = runs[i].causal ? "causal" : "none";
        const double f = runs[i].fwd.matmul_flops;
        flop_row(t, mask, "forward (saves L)", "2", &runs[i].fwd, f);
        flop_row(t, mask, "naive backward", "4", &runs[i].naive, f);
        flop_row(t, mask, "flash backward", "5", &runs[i].flash, f);
    }
    char v[32];
    snprintf(v, sizeof v, "%.2f", runs[0].flash.matmul_flops / runs[0].fwd.matmul_flops);
    report_fact_labeled(r, "flash_ratio", "flash backward / forward FLOPs", v);
    snprintf(v, sizeof v, "%.2f", runs[0].naive.matmul_flops / runs[0].fwd.matmul_flops);
    report_fact_labeled(r, "naive_ratio", "naive backward / forward FLOPs", v);
    snprintf(v, sizeof v, "%.2f", runs[1].flash.matmul_flops / runs[1].fwd.matmul_flops);
    report_fact_labeled(r, "flash_ratio_causal", "the same, causal", v);
    report_fact_labeled(r, "flash_exps", "exponentials of the flash backward",
                        fmt_int(v, (long long)runs[0].flash.exps));
    fmt_num(v, runs[0].diff);
    report_fact_labeled(r, "big_diff", "flash vs naive", v);
    report_fact_labeled(r, "big_diff_causal", "flash vs naive, causal", fmt_num(v, runs[1].diff));
    report_fact_labeled(r, "big_largest", "largest |gradient|", fmt_num(v, runs[0].largest));
    report_fact_labeled(r, "big_largest_causal", "largest |gradient|, causal",
                        fmt_num(v, runs[1].largest));
}
static void flop_row(table *t, const char *mask, const char *pass, const char *products,
                     const bwd_counts *c, double forward)
{
    char g[32], x[32], e[32];
    snprintf(g, sizeof g, "%.3f", c->matmul_flops / 1e9);
    snprintf(x, sizeof x, "%.2f", c->matmul_flops / forward);
    table_rowf(t, "%s|%s|%s|%s|%s|%s", mask, pass, products, g, x,
               fmt_int(e, (long long)c->exps));
}
double ch09_kept_p(size_t heads, size_t n) { return 4.0 * (double)heads * (double)n * (double)n; }
double ch09_kept_l(size_t heads, size_t n) { return 4.0 * (double)heads * (double)n; }
double ch09_tensors(size_t heads, size_t n, size_t d)
{
    return 4.0 * (double)heads * (8.0 * (double)n * (double)d + (double)n);
}
static const char *fmt_kept(char buf[32], double bytes)
{
    if (bytes < 1024.0 * 1024.0) snprintf(buf, 32, "%.1f KiB", bytes / 1024.0);
    else fmt_bytes(buf, bytes);
    return buf;
}
static void report_kept(report *r, const char *data_dir)
{
    static const char *const columns[] = { "n", "naive keeps P", "flash keeps L",
        "P / L", "Q K V O dO L dQ dK dV", NULL };
    table *t = report_table(r, "kept", "Kept for the backward, 8 heads, d = 64, float32",
                            columns);
    FILE *f = data_dir ? data_file(data_dir, "ch09_memory.dat") : NULL;
    if (f) fprintf(f, "# n  P_bytes  L_bytes  tensors_bytes (8 heads, d = 64)\n");
    for (size_t n = 512; n <= 131072; n *= 2) {
        char a[32], b[32], c[32], x[32];
        const double p = ch09_kept_p(8, n), l = ch09_kept_l(8, n), all = ch09_tensors(8, n, 64);
        table_rowf(t, "%zu|%s|%s|%s|%s", n, fmt_kept(a, p), fmt_kept(b, l),
                   fmt_int(x, (long long)(p / l)), fmt_kept(c, all));
        if (f) fprintf(f, "%zu %.0f %.0f %.0f\n", n, p, l, all);
    }
    if (f) data_close(f);
}
static void run_one_backward(const ch09_timed *t)
{
    const ch09_inputs *in = t->in;
    ch09_outputs *out = t->out;
    if (t->probs)
        attention_backward_naive(t->p, in->q.data, in->k.data, in->v.data, t->probs,
                                 in->dout.data, out->dq.data, out->dk.data, out->dv.data,
                                 t->threads, NULL);
    else
        attention_backward_flash(t->p, in->q.data, in->k.data, in->v.data, out->o.data,
                                 out->lse.data, in->dout.data, out->dq.data, out->dk.data,
                                 out->dv.data, t->threads, NULL);
}
static ch09_timing time_backward(const ch09_timed *t, int repeats)
{
    double s[64];
    const int n = repeats < 1 ? 1 : repeats > 64 ? 64 : repeats;
    run_one_backward(t);
    fa_reset_peak();
    for (int i = 0; i < n; i++) {
        const double start = now_seconds();
        run_one_backward(t);
        s[i] = now_seconds() - start;
    }
    ch09_timing r = { .peak_bytes = fa_bytes_peak() };
    r.min = r.max = s[0];
    for (int i = 1; i < n; i++) { r.min = fmin(r.min, s[i]); r.max = fmax(r.max, s[i]); }
    r.median = median_of(s, (size_t)n);
    return r;
}
void ch09_time_both(const attn_params *p, const ch09_inputs *in, int threads,
                    int repeats, ch09_timing *naive, ch09_timing *flash)
{
    ch09_outputs out = ch09_outputs_new(in);
    float *probs = fa_alloc(fa_mul(fa_mul(fa_mul(p->batch, p->heads), p->nq),
                                   fa_mul(p->nk, sizeof(float))));
    attention_forward_keep_p(p, in->q.data, in->k.data, in->v.data, out.o.data, probs,
                             threads, NULL);
    *naive = time_backward(&(ch09_timed){ p, in, &out, probs, threads }, repeats);
    fa_free(probs);
    attention_forward_lse(p, in->q.data, in->k.data, in->v.data, out.o.data,
                          out.lse.data, threads, NULL);
    *flash = time_backward(&(ch09_timed){ p, in, &out, NULL, threads }, repeats);
    ch09_free(NULL, &out);
}
double ch09_nominal_flops(const attn_params *p)
{
    const double f = 2.5 * 4.0 * (double)(p->batch * p->heads) * (double)p->nq *
                     (double)p->nk * (double)p->d;
    return p->causal ? f / 2.0 : f;
}
static void timing_cells(const ch09_timing *t, double flops, double peak,
                         char time[64], char rate[32], char pct[32])
{
    snprintf(time, 64, "%.1f (%.1f-%.1f)", 1e3 * t->median, 1e3 * t->min, 1e3 * t->max);
    snprintf(rate, 32, "%.1f", flops / t->median / 1e9);
    if (isnan(peak)) snprintf(pct, 32, "-");          /* a team the profile did not measure */
    else fmt_pct(pct, flops / t->median / 1e9 / peak);
}
static void report_timing(report *r, const attn_params *p, const ch09_inputs *in,
                          int threads, const ch09_options *o)
{
    static const char *const columns[] = { "threads", "pass", "ms: median (min-max)",
                                           "GFLOP/s", "of FMA peak", NULL };
    table *t = report_table(r, "timing", "Backward wall-clock", columns);
    double peak[2], widest = 1;
    const int counts[2] = { 1, threads };
    ch09_timing naive[2], flash[2];
    char machine[160], v[64], err[256];
    ladder_profile m;
    if (ladder_profile_for(o->machine, o->data_dir, threads, false, &m, err, sizeof err) < 0)
        die_usage(PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    snprintf(machine, sizeof machine, "%s, %d CPUs", m.cpu_model, m.cpus);
    report_fact_labeled(r, "machine", "machine", machine);
    peak[0] = ladder_peak_for(&m, 1);
    peak[1] = ladder_peak_for(&m, threads);
    report_fact_labeled(r, "peak_one", "FMA peak, one core, GFLOP/s", ladder_peak_text(v, &m, 1));
    report_fact_labeled(r, "peak_all", "FMA peak, all threads, GFLOP/s",
                        ladder_peak_text(v, &m, threads));
    const ladder_sample before = ladder_sample_now();
    for (int i = 0; i < (threads > 1 ? 2 : 1); i++) {
        ch09_time_both(p, in, counts[i], CH09_REPEATS, &naive[i], &flash[i]);
        char tm[64], rate[32], pct[32], th[16];
        const double flops = ch09_nominal_flops(p);
        snprintf(th, sizeof th, "%d", counts[i]);
        timing_cells(&naive[i], flops, peak[i], tm, rate, pct);
        table_rowf(t, "%s|naive|%s|%s|%s", th, tm, rate, pct);
        timing_cells(&flash[i], flops, peak[i], tm, rate, pct);
        table_rowf(t, "%s|flash|%s|%s|%s", th, tm, rate, pct);
        if (i == 0) peak_facts(r, p, &naive[i], &flash[i]);
        if (naive[i].max / naive[i].min > widest) widest = naive[i].max / naive[i].min;
        if (flash[i].max / flash[i].min > widest) widest = flash[i].max / flash[i].min;
    }
    timing_notes(r, ladder_noise_between(before, ladder_sample_now()), widest, naive, flash,
                 threads);
}
#define CH09_SPREAD_LIMIT 1.25
static void timing_notes(report *r, ladder_noise n, double widest, const ch09_timing naive[2],
                         const ch09_timing flash[2], int threads)
{
    const bool busy = ladder_busy(n, widest, CH09_SPREAD_LIMIT);
    char note[400], one[64], all[64];
    report_fact(r, "busy", busy ? "yes" : "no");
    report_factf(r, "others_cpu", "%.0f%%", 100 * n.others);
    report_fact(r, "noise_note", ladder_noise_note(note, sizeof note, "the backward's timings",
                                                   n, widest, busy));
    ladder_compare_times(one, sizeof one, flash[0].median, naive[0].median);
    if (threads > 1)
        snprintf(note, sizeof note, "At this size, on this machine, the flash pass %s the naive "
                 "pass on one thread, and %s it on %d threads.", one,
                 ladder_compare_times(all, sizeof all, flash[1].median, naive[1].median), threads);
    else
        snprintf(note, sizeof note, "At this size, on this machine, the flash pass %s the naive "
                 "pass.", one);
    report_fact(r, "speed_note", note);
}
static void peak_facts(report *r, const attn_params *p, const ch09_timing *naive,
                       const ch09_timing *flash)
{
    char v[32];
    report_fact_labeled(r, "flash_peak", "flash backward peak bytes",
                        fmt_kept(v, (double)flash->peak_bytes));
    report_fact_labeled(r, "naive_peak", "naive backward peak bytes",
                        fmt_kept(v, (double)naive->peak_bytes));
    report_fact_labeled(r, "tensor_bytes", "Q K V O dO L dQ dK dV",
                        fmt_kept(v, ch09_tensors(p->batch * p->heads, p->nq, p->d)));
}
static void report_timing_problem(report *r, uint32_t seed, int threads, const ch09_options *o)
{
    const size_t n = (size_t)o->time_seq;
    attn_params p = attn_default(1, CH09_TIME_HEADS, n, n, CH09_TIME_D);
    ch09_inputs in;
    ch09_draw(&p, seed, &in);
    report_factf(r, "time_n", "%zu", n);
    report_factf(r, "time_heads", "%d", CH09_TIME_HEADS);
    report_factf(r, "time_d", "%d", CH09_TIME_D);
    report_factf(r, "time_repeats", "%d", CH09_REPEATS);
    report_timing(r, &p, &in, threads, o);
    ch09_free(&in, NULL);
}
static void run_receipts(const ch09_options *o, report *r)
{
    attn_params p = ch09_seeded_params(o);
    const uint32_t seed = (uint32_t)o->seed;
    const int threads = ch09_threads(o);
    ch09_inputs in;
    if (o->save_dir) reserve_ch09_saved(o->save_dir);
    refuse_if_seeded_run_too_big(&p, threads);
    ch09_draw(&p, seed, &in);
    if (o->save_dir) { save_ch09_inputs(o->save_dir, &in, r); ch09_free(&in, NULL); return; }
    report_gradient_cases(r, seed, threads);
    char shape[96], tile[32];
    snprintf(shape, sizeof shape, "(%zu, %zu, %zu, %zu)", p.batch, p.heads, p.nq, p.d);
    snprintf(tile, sizeof tile, "%zu x %zu", p.block_q, p.block_k);
    report_fact_labeled(r, "big_shape", "Q (batch, heads, N, d)", shape);
    report_fact_labeled(r, "big_tile", "tile", tile);
    const ch09_big_run runs[2] = { ch09_big(&p, &in, o->causal, threads),
                                   ch09_big(&p, &in, true, threads) };
    report_flops(r, runs);
    ch09_free(&in, NULL);                  /* before the timing, which weighs memory */
    report_kept(r, o->data_dir);
    report_timing_problem(r, seed, threads, o);
    report_recorded(r, o->recorded);
}
static void refuse_if_seeded_run_too_big(const attn_params *p, int threads)
{
    const size_t heads = p->batch * p->heads;
    const size_t q = fa_mul(fa_mul(heads, p->nq), p->d), kv = fa_mul(fa_mul(heads, p->nk), p->d);
    const size_t scores = fa_mul(fa_mul(heads + (size_t)threads, p->nq), p->nk);
    fa_require(fa_mul(fa_mul(6, q + kv) + fa_mul(2 * heads, p->nq) + scores, sizeof(float)),
               "the seeded run");
}
attn_params ch09_seeded_params(const ch09_options *o)
{
    const size_t nk = (size_t)(o->seq_k > 0 ? o->seq_k : o->seq);
    attn_params p = attn_default((size_t)o->batch, (size_t)o->heads, (size_t)o->seq, nk,
                                 (size_t)o->dim);
    attn_apply_options(&p, o->causal, o->window, o->block_q, o->block_k, o->scale);
    return p;
}
static void ch09_saved_paths(const char *dir, char paths[4][4096])
{
    static const char *const names[4] = { "q.npy", "k.npy", "v.npy", "dout.npy" };
    data_directory(dir);                        /* creates DIR, or exits with a reason */
    for (int i = 0; i < 4; i++)
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
}

static void reserve_ch09_saved(const char *dir)
{
    char paths[4][4096];
    ch09_saved_paths(dir, paths);
    npy_reserve_outputs_or_exit(PROGRAM, (const char *const[]){ paths[0], paths[1], paths[2],
                                paths[3] }, 4, NULL, 0);
}
static void save_ch09_inputs(const char *dir, const ch09_inputs *in, report *r)
{
    const tensor *t[4] = { &in->q, &in->k, &in->v, &in->dout };
    char paths[4][4096];
    ch09_saved_paths(dir, paths);
    npy_write_all_or_exit(PROGRAM, 4, (const char *const[]){ paths[0], paths[1], paths[2],
                          paths[3] }, t);
    report_fact_labeled(r, "saved", "q k v dout written to", dir);
}
enum { CH09_MAX_RECORDS = 8, CH09_RECORDED_ROWS = 32 };
typedef struct { long n, threads; double naive_ms, flash_ms; } recorded_row;
struct recorded_backward {
    char when[64], machine[128];
    int count;
    recorded_row row[CH09_RECORDED_ROWS];
};
static bool read_recorded_backward(const char *path, recorded_backward *rb)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    bool in_table = false;
    *rb = (recorded_backward){ .when = "(unknown)", .machine = "(unknown)" };
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        recorded_row row;
        sscanf(line, "# make bench: date %63s", rb->when);
        if (strncmp(line, "Backward, 8 heads", 17) == 0)
            in_table = true;
        else if (in_table && line[0] == '\n')
            in_table = false;
        else if (in_table && rb->count < CH09_RECORDED_ROWS
                 && sscanf(line, "%ld %ld %lf %lf", &row.n, &row.threads, &row.naive_ms,
                           &row.flash_ms) == 4)
            rb->row[rb->count++] = row;
        if (strncmp(line, "machine:", 8) == 0 && rb->count > 0)
            sscanf(line + 8, " %127[^\n]", rb->machine);
    }
    fclose(f);
    return rb->count > 0;
}
#define CH09_CLEAR_WIN 1.05
static const char *flash_wins(char *buf, size_t size, const recorded_backward *rb,
                              long threads)
{
    long first = 0;
    bool every = true, none = true, from_first = true;
    for (int i = 0; i < rb->count; i++) {
        const recorded_row *w = &rb->row[i];
        if (w->threads != threads) continue;
        const bool wins = w->flash_ms * CH09_CLEAR_WIN < w->naive_ms;
        if (wins && first == 0) first = w->n;
        if (!wins && first != 0) from_first = false;
        every = every && wins;
        none = none && !wins;
    }
    if (every) snprintf(buf, size, "at every length recorded");
    else if (none) snprintf(buf, size, "at no length recorded");
    else if (from_first) snprintf(buf, size, "from n = %ld on", first);
    else snprintf(buf, size, "at some lengths only, the first n = %ld", first);
    return buf;
}
static void recorded_note(char *note, size_t size, const recorded_backward *rb, int count)
{
    size_t used = 0;
    note[0] = '\0';
    for (int k = 0; k < count && used < size; k++) {
        long all = 1;
        char one[80], many[80];
        for (int i = 0; i < rb[k].count; i++)
            if (rb[k].row[i].threads > all) all = rb[k].row[i].threads;
        used += (size_t)snprintf(note + used, size - used, "%sOn %s, recorded %.16s, the "
                                 "flash pass was more than %.0f%% faster than the naive pass "
                                 "on one thread %s, and on %ld threads %s.", k ? " " : "",
                                 rb[k].machine, rb[k].when, 100 * (CH09_CLEAR_WIN - 1),
                                 flash_wins(one, sizeof one, &rb[k], 1), all,
                                 flash_wins(many, sizeof many, &rb[k], all));
    }
    if (count == 0) snprintf(note, size, "(nothing is recorded yet.)");
}
static void report_recorded(report *r, const char *path)
{
    static const char *const cols[] = { "machine", "n", "threads", "naive ms", "flash ms",
                                        NULL };
    table *t = report_table(r, "recorded", "The recorded backward, 8 heads, d = 64", cols);
    recorded_backward *rb = fa_alloc(CH09_MAX_RECORDS * sizeof *rb);
    const int count = read_recorded_files(path, rb);
    char note[2048];
    for (int k = 0; k < count; k++)
        for (int i = 0; i < rb[k].count; i++)
            table_rowf(t, "%s|%ld|%ld|%.1f|%.1f", rb[k].machine, rb[k].row[i].n,
                       rb[k].row[i].threads, rb[k].row[i].naive_ms, rb[k].row[i].flash_ms);
    if (count == 0) table_rowf(t, "(not recorded)|-|-|-|-");
    recorded_note(note, sizeof note, rb, count);
    report_fact(r, "recorded_note", note);
    fa_free(rb);
}
static int read_recorded_files(const char *path, recorded_backward *rb)
{
    static char names[CH09_MAX_RECORDS][LADDER_PATH_MAX];
    const size_t files = ladder_recorded_files(path, names, CH09_MAX_RECORDS);
    int count = 0;
    for (size_t i = 0; i < files; i++) count += read_recorded_backward(names[i], &rb[count]);
    return count;
}
static bool same_shape_as(const tensor *a, const tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}
static attn_params ch09_params_from_files(const ch09_options *o, const ch09_inputs *in)
{
    attn_params p = attn_params_from_tensors(PROGRAM, &in->q, &in->k, &in->v);
    char a[96], b[96];
    if (!same_shape_as(&in->dout, &in->q))
        die_usage(PROGRAM, "--dout %s must have the shape of --q %s",
                  shape_text(&in->dout, a), shape_text(&in->q, b));
    attn_apply_options(&p, o->causal, o->window, o->block_q, o->block_k, o->scale);
    const char *problem = attn_params_problem(&p);
    if (problem) die_usage(PROGRAM, "%s", problem);
    return p;
}
static void ch09_run_on_files(const ch09_options *o, report *r)
{
    const char *paths[8] = { o->q_path, o->k_path, o->v_path, o->dout_path,
                             o->out_path, o->dq_path, o->dk_path, o->dv_path };
    for (int i = 0; i < 8; i++)
        if (!paths[i])
            die_usage(PROGRAM, "--q --k --v --dout --out --dq --dk --dv go together");
    npy_reserve_outputs_or_exit(PROGRAM, paths + 4, 4, paths, 4);
    const ch09_inputs shapes = { npy_shape_or_exit(PROGRAM, o->q_path),
                                 npy_shape_or_exit(PROGRAM, o->k_path),
                                 npy_shape_or_exit(PROGRAM, o->v_path),
                                 npy_shape_or_exit(PROGRAM, o->dout_path) };
    const attn_params sized = ch09_params_from_files(o, &shapes);
    fa_require(ch09_file_run_bytes(&sized, o->reference, ch09_threads(o)),
               "the inputs, the outputs and the passes' workspace");
    ch09_inputs in = { npy_read_or_exit(PROGRAM, o->q_path),
                       npy_read_or_exit(PROGRAM, o->k_path),
                       npy_read_or_exit(PROGRAM, o->v_path),
                       npy_read_or_exit(PROGRAM, o->dout_path) };
    const attn_params p = ch09_params_from_files(o, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    if (o->reference) refuse_slow_reference(&p);
    if (o->reference) ch09_reference(&p, &in, &out);
    else ch09_flash(&p, &in, &out, ch09_threads(o), NULL, NULL);
    npy_write_all_or_exit(PROGRAM, 4, paths + 4,
                          (const tensor *const[]){ &out.o, &out.dq, &out.dk, &out.dv });
    report_ch09_file_run(r, o, &p, &in);
    ch09_free(&in, &out);
}
static size_t ch09_file_run_bytes(const attn_params *p, bool reference, int threads)
{
    const size_t heads = p->batch * p->heads;
    const size_t q = fa_mul(fa_mul(heads, p->nq), p->d), kv = fa_mul(fa_mul(heads, p->nk), p->d);
    const size_t rows = p->block_q < p->nq ? p->block_q : p->nq;
    const size_t cols = p->block_k < p->nk ? p->block_k : p->nk;
    const size_t tiles = fa_mul(3, fa_mul(rows, cols)) + fa_mul(rows, p->d + 2) + p->nq;
    size_t floats = fa_mul(4, q + kv) + fa_mul(heads, p->nq);
    floats += fa_mul((size_t)(threads < 1 ? 1 : threads), tiles);
    if (reference) floats += fa_mul(4, q + 2 * kv) + fa_mul(2, (p->nq + 2 * p->nk) * p->d + p->nk);
    return fa_mul(floats, sizeof(float));
}
static void refuse_slow_reference(const attn_params *p)
{
    const double nq = (double)p->nq, nk = (double)p->nk, d = (double)p->d;
    const double work = (double)(p->batch * p->heads) * 2.0 * (nq + 2.0 * nk) * d *
                        2.0 * nq * nk * d;
    if (work > 2e10)
        die_usage(PROGRAM, "--reference would take %.1e operations of finite differences; "
                  "it is for small problems (up to 2e10)", work);
}
static void ch09_reference(const attn_params *p, const ch09_inputs *in, ch09_outputs *out)
{
    tensor *t[4] = { &out->o, &out->dq, &out->dk, &out->dv };
    double *x[4];
    for (int i = 0; i < 4; i++) x[i] = fa_alloc(fa_mul(tensor_count(t[i]), 8));
    attention_reference(p, in->q.data, in->k.data, in->v.data, x[0]);
    attention_grad_fd(p, in->q.data, in->k.data, in->v.data, in->dout.data, x[1], x[2], x[3]);
    for (int i = 0; i < 4; i++) {
        for (size_t e = 0; e < tensor_count(t[i]); e++) t[i]->data[e] = (float)x[i][e];
        fa_free(x[i]);
    }
}
static void report_ch09_file_run(report *r, const ch09_options *o, const attn_params *p,
                                 const ch09_inputs *in)
{
    char a[96];
    report_fact_labeled(r, "q_shape", "Q and dO", shape_text(&in->q, a));
    report_fact_labeled(r, "k_shape", "K and V", shape_text(&in->k, a));
    report_fact_labeled(r, "pass", "pass", o->reference
                        ? "reference (double, finite differences)" : "flash");
    if (p->window > 0) snprintf(a, sizeof a, "window %ld", p->window);
    else snprintf(a, sizeof a, "%s", p->causal ? "causal" : "none");
    report_fact_labeled(r, "mask", "mask", a);
    snprintf(a, sizeof a, "%zu x %zu", p->block_q, p->block_k);
    report_fact_labeled(r, "tile", "tile", a);
}
enum { CH09_BENCH_HEADS = 8, CH09_BENCH_D = 64, CH09_BENCH_LENGTHS = 5 };

static int bench_repeats(size_t n) { return n <= 1024 ? 5 : n <= 4096 ? 3 : 1; }
static const char *const BENCH_COLUMNS[] = { "n", "threads", "naive ms", "flash ms",
    "torch ms", "naive GFLOP/s", "flash GFLOP/s", "torch GFLOP/s", "flash % peak", NULL };
static void run_bench(const ch09_options *o, report *r)
{
    table *t = report_table(r, "bench", "Backward, 8 heads, d = 64, fp32", BENCH_COLUMNS);
    const int threads = ch09_threads(o);
    ladder_profile m;
    char err[256];
    if (ladder_profile_for(o->machine, o->data_dir, threads, false, &m, err, sizeof err) < 0)
        die_usage(PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    const double peak[2] = { ladder_peak_for(&m, 1), ladder_peak_for(&m, threads) };
    FILE *f = o->data_dir ? data_file(o->data_dir, "ch09_bench.dat") : NULL;
    double torch_s[CH09_BENCH_LENGTHS][2] = { { 0 } };
    char v[64];
    report_fact_labeled(r, "machine", "machine", m.cpu_model);
    report_fact_labeled(r, "peak_one", "FMA peak, one core, GFLOP/s", ladder_peak_text(v, &m, 1));
    report_fact_labeled(r, "peak_all", "FMA peak, all threads, GFLOP/s",
                        ladder_peak_text(v, &m, threads));
    if (f) fprintf(f, "# n threads naive_s flash_s torch_s (0: none) peak_gflops\n");
    if (o->python) {
        fprintf(stderr, "%s: bench PyTorch (%s)\n", PROGRAM, o->python);
        torch_peer(o->python, threads, (size_t)o->max_n, torch_s);
    }
    for (size_t n = 512, i = 0; n <= (size_t)o->max_n; n *= 2, i++)
        bench_one_length(o, t, f, n, threads, peak, torch_s[i]);
    if (f) data_close(f);
    bench_memory(r, threads, 2 * (size_t)o->max_n);
}
static void bench_one_length(const ch09_options *o, table *t, FILE *f, size_t n,
                             int threads, const double peak[2], const double torch_s[2])
{
    attn_params p = attn_default(1, CH09_BENCH_HEADS, n, n, CH09_BENCH_D);
    ch09_inputs in;
    ch09_draw(&p, (uint32_t)o->seed, &in);
    const int counts[2] = { 1, threads };
    for (int i = 0; i < (threads > 1 ? 2 : 1); i++) {
        ch09_timing naive, flash;
        const double torch = torch_s[i];
        fprintf(stderr, "%s: bench n = %zu, %d thread(s)\n", PROGRAM, n, counts[i]);
        ch09_time_both(&p, &in, counts[i], bench_repeats(n), &naive, &flash);
        const double flops = ch09_nominal_flops(&p) / 1e9;
        char nm[32], fm[32], tm[32], ng[32], fg[32], tg[32], pct[32];
        snprintf(nm, sizeof nm, "%.1f", 1e3 * naive.median);
        snprintf(fm, sizeof fm, "%.1f", 1e3 * flash.median);
        snprintf(tm, sizeof tm, torch > 0 ? "%.1f" : "-", 1e3 * torch);
        snprintf(ng, sizeof ng, "%.1f", flops / naive.median);
        snprintf(fg, sizeof fg, "%.1f", flops / flash.median);
        snprintf(tg, sizeof tg, torch > 0 ? "%.1f" : "-", flops / torch);
        table_rowf(t, "%zu|%d|%s|%s|%s|%s|%s|%s|%s", n, counts[i], nm, fm, tm, ng, fg, tg,
                   fmt_pct(pct, flops / flash.median / peak[i]));
        if (f) fprintf(f, "%zu %d %.6f %.6f %.6f %.1f\n", n, counts[i], naive.median,
                       flash.median, torch > 0 ? torch : 0.0, peak[i]);
    }
    ch09_free(&in, NULL);
}
static void torch_peer(const char *python, int threads, size_t max_n,
                       double seconds[][2])
{
    char cmd[1024], line[128];
    int used = snprintf(cmd, sizeof cmd, "'%s' tangled/ch09_torch_peer.py --heads %d "
                        "--dim %d --points", python, CH09_BENCH_HEADS, CH09_BENCH_D);
    const int counts[2] = { 1, threads };
    for (size_t n = 512; n <= max_n && used < 900; n *= 2)
        for (int i = 0; i < (threads > 1 ? 2 : 1) && used < 900; i++)
            used += snprintf(cmd + used, sizeof cmd - (size_t)used, " %zu:%d:%d", n,
                             counts[i], bench_repeats(n));
    snprintf(cmd + used, sizeof cmd - (size_t)used, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p)) {
        size_t n; int t; double s;
        if (sscanf(line, "%zu %d %lf", &n, &t, &s) != 3) continue;
        for (size_t i = 0, m = 512; m <= 8192; m *= 2, i++)
            if (m == n) seconds[i][t == 1 ? 0 : 1] = s;
    }
    pclose(p);
}
static void bench_memory(report *r, int threads, size_t n)
{
    attn_params p = attn_default(1, 2, n, n, CH09_BENCH_D);
    p.causal = true;
    ch09_inputs in;
    fprintf(stderr, "%s: bench memory at n = %zu\n", PROGRAM, n);
    ch09_draw(&p, 0, &in);
    ch09_outputs out = ch09_outputs_new(&in);
    fa_reset_peak();
    ch09_flash(&p, &in, &out, threads, NULL, NULL);
    char a[32], b[32], c[32];
    const double peak = (double)fa_bytes_peak(), need = ch09_tensors(2, n, CH09_BENCH_D);
    report_factf(r, "mem_n", "%zu", n);
    report_fact_labeled(r, "mem_peak", "2 heads, causal: peak", fmt_kept(a, peak));
    report_fact_labeled(r, "mem_tensors", "the nine tensors", fmt_kept(b, need));
    report_fact_labeled(r, "mem_over", "over them", fmt_pct(c, peak / need - 1.0));
    ch09_free(&in, &out);
}
int main(int argc, char **argv)
{
    ch09_options o = ch09_defaults();
    parse_ch09_options(argc, argv, &o);
    fa_isa_cap(PROGRAM);           /* a wrong FA_ISA stops here */
#ifndef main
    blas_use_known_kernels(argv);
#endif
    if (o.python && !o.bench) die_usage(PROGRAM, "--python goes with --bench");
    report *r = report_new(PROGRAM, o.json);
    if (o.bench) run_bench(&o, r);
    else if (o.q_path || o.k_path || o.v_path || o.dout_path) ch09_run_on_files(&o, r);
    else run_receipts(&o, r);
    report_finish(r, stdout);
    return 0;
}
