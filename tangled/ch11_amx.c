/* ch11_amx — bf16 FlashAttention-2 on AMX, AVX512-BF16, or their model.
   Tangled from chapters/ch11_amx.nw. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch11_amx.h"
#include "gpu/gpu_attention.h"
#include "harness/ladder.h"
static void write_ch11_walk_data(const char *dir);
ch11_options ch11_defaults(void)
{
    return (ch11_options){ .kernel = "auto", .heads = 4, .seq = 1024, .seq_k = 0, .dim = 64,
                           .threads = ladder_cpus(), .repeats = 3,
                           .recorded = "chapters/recorded" };
}
static void parse_ch11_options(int argc, char **argv, ch11_options *o)
{
    const option opts[] = {
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE", "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE", "write the output (.npy float32, the shape of --q)" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "kernel", OPT_STRING, &o->kernel, 0, 0, "NAME", CH11_KERNELS },
        { "threads", OPT_INT, &o->threads, 1, AMX_MAX_THREADS, "T", "threads of the kernel" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of the generated Q, K, V" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads of the timed run" },
        { "seq", OPT_INT, &o->seq, 1, 65536, "N", "sequence length of the timed run" },
        { "seq-k", OPT_INT, &o->seq_k, 0, 65536, "N", "keys of the timed run (0: --seq)" },
        { "dim", OPT_INT, &o->dim, 1, 128, "D", "head dimension of the timed run" },
        { "repeats", OPT_INT, &o->repeats, 1, 101, "R", "timed runs per measurement" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "run the benchmark (minutes), results on stdout" },
        { "quick", OPT_FLAG, &o->quick, 0, 0, NULL, "a short run: benchmark n = 4096, d = 64; receipts on small sizes" },
        { "python", OPT_STRING, &o->python, 0, 0, "PATH", "a Python with torch: PyTorch's SDPA as a peer" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR", "write figure data to DIR" },
        { "machine", OPT_STRING, &o->machine, 0, 0, "FILE",
          "chapter 1's machine profile (default $FA_MACHINE; with neither, measure now)" },
        { "recorded", OPT_STRING, &o->recorded, 0, 0, "PATH",
          "the recorded benchmark to report: a file, or a folder of bench-*.txt" },
    };
    options_parse(argc, argv, CH11_PROGRAM, "bf16 attention on AMX tiles, AVX512-BF16, or their model",
                  opts, sizeof opts / sizeof opts[0]);
}
amx_kernel ch11_best_kernel(char why[160])
{
    if (amx_available(why)) return AMX_KERNEL_AMX;
    if (bf16_cpu_has_avx512bf16()) return AMX_KERNEL_AVX512BF16;
    return AMX_KERNEL_EMULATED;
}

const char *ch11_kernel_name(amx_kernel k)
{
    static const char *const names[AMX_ENGINES] = { "amx", "avx512bf16", "emulated",
                                                    "emulated-avx512bf16" };
    return names[k];
}
amx_kernel ch11_kernel_of(const char *name)
{
    char why[160] = "";
    const amx_kernel best = ch11_best_kernel(why);
    for (int k = 0; k < AMX_ENGINES; k++)
        if (strcmp(name, ch11_kernel_name((amx_kernel)k)) == 0) {
            if (k == AMX_KERNEL_AMX && best != AMX_KERNEL_AMX)
                die_usage(CH11_PROGRAM, "--kernel amx cannot run here (%s); --kernel emulated is its "
                          "model, --kernel auto the best engine here", why);
            if (k == AMX_KERNEL_AVX512BF16 && !bf16_cpu_has_avx512bf16())
                die_usage(CH11_PROGRAM, "--kernel avx512bf16 cannot run here (this CPU has no AVX512-BF16, "
                          "or FA_ISA forbids it); --kernel emulated-avx512bf16 is its model");
            return (amx_kernel)k;
        }
    if (strcmp(name, "auto") != 0)
        die_usage(CH11_PROGRAM, "--kernel must be %s, not '%s'", CH11_KERNELS, name);
    if (best != AMX_KERNEL_AMX) fprintf(stderr, "%s: no AMX (%s): running %s\n", CH11_PROGRAM, why,
                                        ch11_kernel_name(best));
    return best;
}
static void run_ch11_on_files(const ch11_options *o, report *r)
{
    if (!o->q_path || !o->k_path || !o->v_path || !o->out_path)
        die_usage(CH11_PROGRAM, "--q, --k, --v and --out go together");
    const char *const inputs[3] = { o->q_path, o->k_path, o->v_path };
    npy_reserve_outputs_or_exit(CH11_PROGRAM, &o->out_path, 1, inputs, 3);
    attn_params sized = attn_params_from_headers(CH11_PROGRAM, inputs);
    attn_apply_options(&sized, o->causal, 0, 16, 32, o->scale);
    const char *problem = bf16_params_problem(&sized);
    if (problem) die_usage(CH11_PROGRAM, "%s", problem);
    const size_t heads = sized.batch * sized.heads;
    fa_require(fa_mul(fa_mul(fa_mul(2 * heads, sized.nq + sized.nk), sized.d), sizeof(float))
               + attention_bf16_bytes(&sized, (int)o->threads),
               "the inputs, the output and the kernel's packed keys, values and workspaces");
    const amx_kernel kernel = ch11_kernel_of(o->kernel);
    tensor q = npy_read_or_exit(CH11_PROGRAM, o->q_path), k = npy_read_or_exit(CH11_PROGRAM, o->k_path),
           v = npy_read_or_exit(CH11_PROGRAM, o->v_path);
    const attn_params p = sized;
    tensor out = tensor_new(q.ndim, q.shape);
    attention_bf16(kernel, &p, q.data, k.data, v.data, out.data, (int)o->threads, NULL);
    attention_repair(&p, q.data, k.data, v.data, out.data);   /* chapter 4's rules */
    npy_write_or_exit(CH11_PROGRAM, o->out_path, &out);
    char a[96];
    report_fact_labeled(r, "q_shape", "Q", shape_text(&q, a));
    report_fact_labeled(r, "kernel", "kernel", ch11_kernel_name(kernel));
    report_fact_labeled(r, "output", "output written to", o->out_path);
    tensor_free(&q); tensor_free(&k); tensor_free(&v); tensor_free(&out);
}
static void report_machine_facts(report *r, bool *vdp, bool *amx)
{
    char cpu[128], why[160], text[512];
    ladder_cpu_model(cpu, sizeof cpu);
    report_factf(r, "machine", "%s (%d CPUs)", cpu, ladder_cpus());
    *vdp = bf16_cpu_has_avx512bf16();
    *amx = amx_available(why);
    snprintf(text, sizeof text, "It has %s, and %s%s.",
             *vdp ? "AVX512-BF16" : "no AVX512-BF16", *amx ? "" : "no AMX: ", why);
    report_fact(r, "hardware_sentence", text);
    report_fact(r, "amx_why", why);
}
static void comparison_row(table *t, const char *what, const bf16_comparison *c, bool ran,
                           const char *why)
{
    char a[32], b[32];
    if (!ran) { table_rowf(t, "%s|0|-|not run: %s", what, why); return; }
    table_rowf(t, "%s|%s|%s|%s", what, fmt_int(a, (long long)c->cases), fmt_int(b, (long long)c->differ),
               c->differ == 0 ? "bit for bit" : c->differ == c->nan_payloads
               ? "NaN payloads differ" : "values differ");
}
static void report_model(report *r, bool vdp, bool amx, size_t rounds)
{
    static const char *const cols[] = { "instruction", "cases", "differ", "result", NULL };
    table *t = report_table(r, "model", "The model against this machine's instructions", cols);
    const bf16_comparison conv = vdp ? bf16_compare_rounding(1, 20 * rounds) : (bf16_comparison){ 0 };
    const bf16_comparison dot = vdp ? bf16_compare_dot(2, 50 * rounds) : (bf16_comparison){ 0 };
    const bf16_comparison tile = amx ? amx_compare_tile_dot(3, 2 * rounds) : (bf16_comparison){ 0 };
    comparison_row(t, "VCVTNE2PS2BF16", &conv, vdp, "no AVX512-BF16");
    comparison_row(t, "VDPBF16PS", &dot, vdp, "no AVX512-BF16");
    comparison_row(t, "TDPBF16PS", &tile, amx, "no AMX");
    char text[600], a[32], b[32];
    const size_t differ = conv.differ + dot.differ + tile.differ;
    if (!vdp && !amx)
        snprintf(text, sizeof text, "This machine has neither instruction set, so the model ran alone here.");
    else
        snprintf(text, sizeof text, "Of %s cases compared, %s differ%s.%s",
                 fmt_int(a, (long long)(conv.cases + dot.cases + tile.cases)), fmt_int(b, (long long)differ),
                 differ == 0 ? ": the model gives the hardware's bits, NaN payloads included" : "",
                 amx ? "" : " The tile model follows the manual and has not met a tile unit on this machine;"
                            " where AMX exists, the same comparison runs in the tests.");
    report_fact(r, "model_sentence", text);
    report_factf(r, "model_dot_cases", "%zu", dot.cases);
}
static const struct { size_t nq, nk, d; bool causal; } ERROR_SHAPES[] = {
    { 1, 1, 64, false }, { 7, 7, 16, true }, { 63, 65, 64, false }, { 64, 64, 64, true },
    { 65, 129, 128, false }, { 129, 129, 128, true }, { 200, 333, 3, false }, { 1000, 1000, 64, true },
};
enum { ERROR_SHAPE_COUNT = sizeof ERROR_SHAPES / sizeof ERROR_SHAPES[0] };
ch11_error ch11_error_of(amx_kernel kernel, const attn_params *p, uint32_t seed, int threads)
{
    const size_t qn = p->batch * p->heads * p->nq * p->d, kn = p->batch * p->heads * p->nk * p->d;
    float *q = fa_alloc(fa_mul(qn, 4)), *k = fa_alloc(fa_mul(kn, 4)), *v = fa_alloc(fa_mul(kn, 4));
    float *o = fa_alloc(fa_mul(qn, 4));
    double *exact = fa_alloc(fa_mul(qn, sizeof(double))), top = 0.0;
    attn_draw_inputs(p, seed, q, k, v);
    attention_reference(p, q, k, v, exact);
    attention_bf16(kernel, p, q, k, v, o, threads, NULL);
    ch11_error e = { .kernel = max_abs_diff_fd(o, exact, qn),
                     .plain = gpu_bf16_naive_error(p, q, k, v, exact) };
    for (size_t i = 0; i < qn; i++) top = fmax(top, fabs(exact[i]));
    e.bound = 2 * fmax(e.plain, ldexp(top, -23));
    fa_free(q); fa_free(k); fa_free(v); fa_free(o); fa_free(exact);
    return e;
}
static void report_errors(report *r, size_t shapes, uint32_t seed)
{
    static const char *const cols[] = { "Nq", "Nk", "d", "causal", "bf16 kernel", "plain bf16",
                                        "ratio", "within 2x", NULL };
    char title[96];
    snprintf(title, sizeof title, "Largest error against float64, 2 heads, seed %u", seed);
    table *t = report_table(r, "errors", title, cols);
    double worst = 0.0;
    for (size_t i = 0; i < shapes; i++) {
        attn_params p = attn_default(1, 2, ERROR_SHAPES[i].nq, ERROR_SHAPES[i].nk, ERROR_SHAPES[i].d);
        p.causal = ERROR_SHAPES[i].causal;
        const ch11_error e = ch11_error_of(AMX_KERNEL_EMULATED, &p, seed, 1);
        char a[32], b[32];
        worst = fmax(worst, e.kernel / e.plain);
        table_rowf(t, "%zu|%zu|%zu|%s|%s|%s|%.2f|%s", p.nq, p.nk, p.d, p.causal ? "yes" : "no",
                   fmt_num(a, e.kernel), fmt_num(b, e.plain), e.kernel / e.plain,
                   e.kernel <= e.bound ? "yes" : "no");
    }
    report_factf(r, "worst_ratio", "%.2f", worst);
}
static void report_peaks(report *r, const ch11_options *o, bool vdp, bool amx)
{
    static const char *const cols[] = { "unit", "1 thread GFLOP/s", "all threads GFLOP/s", NULL };
    table *t = report_table(r, "peaks", "Peaks of the arithmetic units", cols);
    const int all = (int)o->threads;
    char a[64], b[64], err[256];
    ladder_profile m;
    if (ladder_profile_for(o->machine, o->data_dir, all, false, &m, err, sizeof err) < 0)
        die_usage(CH11_PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    table_rowf(t, "fp32 FMA (chapter 1)|%s|%s", ladder_peak_text(a, &m, 1), ladder_peak_text(b, &m, all));
    const double fp32 = ladder_peak_for(&m, 1);
    report_factf(r, "fp32_peak", "%.0f", fp32);
    spread s1 = { 0 }, sa = { 0 };
    if (vdp) {
        s1 = bf16_peak_gflops(false, 1, 1 << 21, 5);
        sa = bf16_peak_gflops(false, all, 1 << 21, 5);
        table_rowf(t, "VDPBF16PS|%s|%s", fmt_spread(a, s1.median, s1.min, s1.max),
                   fmt_spread(b, sa.median, sa.min, sa.max));
    } else table_rowf(t, "VDPBF16PS|not on this machine|-");
    report_factf(r, "vdp_peak", vdp ? "%.0f" : "-", s1.median);
    const double vdp_one = s1.median;
    if (amx) {
        s1 = bf16_peak_gflops(true, 1, 1 << 18, 5);
        sa = bf16_peak_gflops(true, all, 1 << 18, 5);
        table_rowf(t, "TDPBF16PS|%s|%s", fmt_spread(a, s1.median, s1.min, s1.max),
                   fmt_spread(b, sa.median, sa.min, sa.max));
    } else table_rowf(t, "TDPBF16PS|not on this machine|-");
    report_factf(r, "amx_peak", amx ? "%.0f" : "-", s1.median);
    char text[400];
    if (amx)
        snprintf(text, sizeof text, "On this machine one core's tile unit does %.0f times the fp32 multiply-add "
                 "peak.", s1.median / fp32);
    else if (vdp)
        snprintf(text, sizeof text, "This machine has no tile unit. Its bf16 dot product runs at %.1f times "
                 "the fp32 multiply-add peak on one core%s", vdp_one / fp32, vdp_one / fp32 < 1.3
                 ? ": on it, bf16 saves memory and bandwidth, not arithmetic." : ".");
    else snprintf(text, sizeof text, "This machine has neither bf16 unit; only the model runs here.");
    report_fact(r, "peak_sentence", text);
    char overlap[640];
    if (amx) {
        const amx_overlap ov = amx_overlap_probe(1 << 16, 5);
        const double v = ov.vectors.median, tl = ov.tiles.median, both = ov.both.median;
        const double shared = (v + tl - both) / (v < tl ? v : tl);
        char a1[64], a2[64], a3[64];
        snprintf(overlap, sizeof overlap, "On this machine a round of 128 vector multiply-adds takes %s ns alone, "
                 "four tile products %s ns, and the two interleaved %s ns: in a loop of nothing else the "
                 "processor overlaps %.0f%% of the shorter.", fmt_spread(a1, v, ov.vectors.min, ov.vectors.max),
                 fmt_spread(a2, tl, ov.tiles.min, ov.tiles.max), fmt_spread(a3, both, ov.both.min, ov.both.max),
                 100 * (shared < 0 ? 0 : shared > 1 ? 1 : shared));
    } else snprintf(overlap, sizeof overlap, "Without tiles, the overlap of the two units is not measured here.");
    report_fact(r, "overlap_sentence", overlap);
}
static const struct { const char *what; int ops; } SOFTMAX_OPS[] = {
    { "load, scale and mask two vectors of scores", 2 },
    { "the row's max: the two vectors' max, a share of the step's tree of 46", 3 },
    { "keep the scores and their max for the second pass", 3 },
    { "new maxima, bases and 2^((m - m') log2 e), shared by sixteen rows and a step", 1 },
    { "broadcast the row's base, once a step", 1 },
    { "t = x log2 e - m' log2 e and 2^t in eight instructions, two vectors", 18 },
    { "convert to bf16 and store", 2 },
    { "the sums: VDPBF16PS against ones; broadcast alpha, scale, store once a step", 3 },
};

static int ch11_step_vector_ops(void)
{
    int ops = 4 * 64 / 16 / 2;             /* the accumulator's rescaling, once a step of two blocks */
    for (size_t i = 0; i < sizeof SOFTMAX_OPS / sizeof SOFTMAX_OPS[0]; i++)
        ops += SOFTMAX_OPS[i].ops;
    return 16 * ops;
}
static int ch11_step_vector_cycles(void) { return ch11_step_vector_ops() / 2; }
static int ch11_step_tile_cycles(void) { return 16 * (2 * 64 / 32 + 64 / 16); }

static void report_budget(report *r)
{
    double worst = 0;
    for (float f = -0.5f; f <= 0.5f; f += 0x1p-17f) {
        const double e = fabs((double)amx_exp2(f) / exp2((double)f) - 1);
        worst = e > worst ? e : worst;
    }
    report_factf(r, "exp2_error", "%.2e", worst);
    static const char *const cols[] = { "per row of a block", "instructions", NULL };
    table *t = report_table(r, "budget", "Vector instructions per row of a block of 32 keys, d = 64", cols);
    for (size_t i = 0; i < sizeof SOFTMAX_OPS / sizeof SOFTMAX_OPS[0]; i++)
        table_rowf(t, "%s|%d", SOFTMAX_OPS[i].what, SOFTMAX_OPS[i].ops);
    table_rowf(t, "rescale the accumulator: load, load, multiply-add, store per 16 columns, "
               "once a step of two blocks|%d", 4 * 64 / 16 / 2);
    const int step = ch11_step_vector_ops(), tile_cycles = ch11_step_tile_cycles();
    report_factf(r, "vector_ops", "%d", step);
    report_factf(r, "vector_cycles", "%d", step / 2);
    report_factf(r, "tile_cycles", "%d", tile_cycles);
    char a[32];
    report_fact(r, "tile_fraction", fmt_pct(a, (double)tile_cycles / (tile_cycles + step / 2)));
}
typedef struct { const attn_params *p; amx_kernel kernel; const float *q, *k, *v; float *o; int threads; } timed_run;

static void run_timed(void *ctx)
{
    const timed_run *t = ctx;
    attention_bf16(t->kernel, t->p, t->q, t->k, t->v, t->o, t->threads, NULL);
}

spread ch11_time_kernel(amx_kernel kernel, const attn_params *p, int threads, int repeats)
{
    const size_t qn = p->batch * p->heads * p->nq * p->d, kn = p->batch * p->heads * p->nk * p->d;
    float *q = fa_alloc(fa_mul(qn, 4)), *k = fa_alloc(fa_mul(kn, 4)), *v = fa_alloc(fa_mul(kn, 4));
    float *o = fa_alloc(fa_mul(qn, 4));
    attn_draw_inputs(p, 0, q, k, v);
    timed_run t = { p, kernel, q, k, v, o, threads };
    const spread s = time_spread(run_timed, &t, 1, repeats);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o);
    return s;
}
double ch11_flops(const attn_params *p)
{
    return 4.0 * (double)(p->batch * p->heads) * (double)p->nq * (double)p->nk * (double)p->d
           / (p->causal ? 2.0 : 1.0);
}
static void report_speed(report *r, const ch11_options *o, bool vdp, bool amx)
{
    static const char *const cols[] = { "engine", "keys", "threads", "GFLOP/s", NULL };
    char title[96];
    snprintf(title, sizeof title, "The kernel on this machine, d = %ld, %ld heads, no mask", o->dim, o->heads);
    table *t = report_table(r, "speed", title, cols);
    for (int k = 0; k < AMX_ENGINES; k++) {
        if ((k == AMX_KERNEL_AMX && !amx) || (k == AMX_KERNEL_AVX512BF16 && !vdp)) continue;
        const bool model = k >= AMX_KERNEL_EMULATED;
        attn_params p = attn_default(1, (size_t)o->heads, model ? 128 : (size_t)o->seq,
                                     model ? 128 : (size_t)o->seq_k, (size_t)o->dim);
        fprintf(stderr, "%s: timing %s\n", CH11_PROGRAM, ch11_kernel_name((amx_kernel)k));
        const spread s = ch11_time_kernel((amx_kernel)k, &p, (int)o->threads, (int)o->repeats);
        const double f = ch11_flops(&p) / 1e9;
        char a[64];
        table_rowf(t, "%s|%zu|%ld|%s", ch11_kernel_name((amx_kernel)k), p.nk, o->threads,
                   fmt_spread(a, f / s.median, f / s.max, f / s.min));
    }
}
enum { PARTS_N = 4096, PARTS_RUNS = 5 };
typedef struct { const attn_params *p; int leave_out; const float *q, *k, *v; float *o; } parts_run;

static void run_parts(void *ctx)
{
    const parts_run *t = ctx;
    attention_bf16_without(t->leave_out, t->p, t->q, t->k, t->v, t->o, 1);
}

static void time_parts(size_t d, int runs, spread ms[])   /* whole, -tiles, -vectors, neither, alone */
{
    const attn_params p = attn_default(1, 1, PARTS_N, PARTS_N, d);
    const size_t bytes = fa_mul(fa_mul(PARTS_N, d), sizeof(float));
    float *q = fa_alloc(bytes), *k = fa_alloc(bytes), *v = fa_alloc(bytes), *o = fa_alloc(bytes);
    attn_draw_inputs(&p, 0, q, k, v);
    for (int w = 0; w < runs; w++) {
        parts_run t = { &p, w < 4 ? w : AMX_LEAVE_PAIRS, q, k, v, o };
        const spread s = time_spread(run_parts, &t, 1, PARTS_RUNS);
        ms[w] = (spread){ 1e3 * s.median, 1e3 * s.min, 1e3 * s.max };
    }
    fa_free(q); fa_free(k); fa_free(v); fa_free(o);
}
static double hidden_share(const double ms[4])
{
    const double rest = ms[3], t = ms[2] - rest, v = ms[1] - rest, both = ms[0] - rest;
    const double shorter = t < v ? t : v;
    if (shorter <= 0) return 0;
    const double h = (t + v - both) / shorter;
    return h < 0 ? 0 : h > 1 ? 1 : h;
}

static void parts_clause(char *buf, size_t size, long d, const double ms[4])
{
    const double rest = ms[3];
    snprintf(buf, size, "at d = %ld the tile work alone takes %.1f ms, the vector work %.1f ms, the two "
             "together %.1f ms and the rest %.1f ms, %.0f%% of the whole: the processor hides %.0f%% "
             "of the shorter part", d, ms[2] - rest, ms[1] - rest, ms[0] - rest, rest, 100 * rest / ms[0],
             100 * hidden_share(ms));
}
static void parts_sentence(char *buf, size_t size, const char *where, const double med[2][4])
{
    char c64[400], c128[400];
    parts_clause(c64, sizeof c64, 64, med[0]);
    parts_clause(c128, sizeof c128, 128, med[1]);
    const double h = fmax(hidden_share(med[0]), hidden_share(med[1]));
    snprintf(buf, size, "%s, %s; %s. %s", where, c64, c128,
             h < 0.25 ? "The two units' times add up here, the four stages notwithstanding: the kernel "
                        "goes faster only where a part itself gets shorter."
             : h < 0.75 ? "The stages hide part of the shorter work; the rest of it adds to the longer."
                        : "The stages work: the shorter part is nearly free, and the longer bounds the kernel.");
}
static void report_parts(report *r, bool amx)
{
    static const char *const cols[] = { "d", "whole", "without the tiles", "without the vectors",
                                        "without either", "one slice at a time", NULL };
    table *t = report_table(r, "parts", "The AMX engine with parts of its work left out, milliseconds", cols);
    report_factf(r, "parts_n", "%d", PARTS_N);
    report_factf(r, "parts_runs", "%d", PARTS_RUNS);
    if (!amx) {
        table_rowf(t, "-|no tiles on this machine|-|-|-|-");
        report_fact(r, "parts_sentence", "Without tiles, the parts are not timed here.");
        return;
    }
    double med[2][4];
    spread ms[5];
    for (int i = 0; i < 2; i++) {
        time_parts(64 * (size_t)(i + 1), i ? 5 : 4, ms);
        char c[5][64] = { [4] = "-" };
        for (int w = 0; w < (i ? 5 : 4); w++) fmt_spread(c[w], ms[w].median, ms[w].min, ms[w].max);
        for (int w = 0; w < 4; w++) med[i][w] = ms[w].median;
        table_rowf(t, "%d|%s|%s|%s|%s|%s", 64 * (i + 1), c[0], c[1], c[2], c[3], c[4]);
    }
    char text[1200], pairs[200];
    parts_sentence(text, sizeof text, "On this machine", med);
    snprintf(pairs, sizeof pairs, " At d = 128 the walk in pairs took %.1f ms, and one slice at a time "
             "%.1f ms.", ms[0].median, ms[4].median);
    strncat(text, pairs, sizeof text - strlen(text) - 1);
    report_fact(r, "parts_sentence", text);
}
static void report_walk(report *r, const char *data_dir)
{
    report_factf(r, "tdp_scores_64", "%d", 2 * 64 / 32);
    report_factf(r, "tdp_values_64", "%d", 64 / 16);
    report_factf(r, "tdp_scores_128", "%d", 2 * 128 / 32);
    report_factf(r, "tdp_values_128", "%d", 128 / 16);
    attn_params p = attn_default(1, 1, 1024, 1024, 64);
    p.causal = true;
    amx_counts c = { 0 };
    float *x = fa_alloc(fa_mul(1024 * 64, 4)), *o = fa_alloc(fa_mul(1024 * 64, 4));
    memset(x, 0, 1024 * 64 * 4);
    attention_bf16(AMX_KERNEL_EMULATED, &p, x, x, x, o, 1, &c);
    report_factf(r, "causal_computed", "%zu", c.blocks_computed);
    report_factf(r, "causal_skipped", "%zu", c.blocks_skipped);
    fa_free(x); fa_free(o);
    if (data_dir) write_ch11_walk_data(data_dir);
}
static void write_ch11_walk_data(const char *dir)
{
    static const char *const scores[8] = { "Q cols 0-31", "Q cols 32-63", "-", "-",
                                           "S keys 0-15", "S keys 16-31", "K (VNNI)", "K (VNNI)" };
    static const char *const values[8] = { "Q cols 0-31", "Q cols 32-63", "PV cols 32-47", "PV cols 48-63",
                                           "PV cols 0-15", "PV cols 16-31", "P (bf16)", "V (VNNI)" };
    FILE *f = data_file(dir, "ch11_tiles.dat");
    fprintf(f, "# tile phase label (phase 0: scores, 1: values)\n");
    for (int t = 0; t < 8; t++) {
        fprintf(f, "%d 0 \"%s\"\n", t, scores[t]);
        fprintf(f, "%d 1 \"%s\"\n", t, values[t]);
    }
    data_close(f);
}
static void write_ch11_vnni_data(const char *dir)
{
    float key[32 * 16], col[32 * 16];
    bf16 by_key[2 * AMX_TILE_ELEMS], by_col[2 * AMX_TILE_ELEMS];
    for (size_t j = 0; j < 32 * 16; j++) key[j] = (float)(j / 16 + 1), col[j] = (float)(j % 16 + 1);
    amx_pack_values(32, 16, key, 0, by_key);
    amx_pack_values(32, 16, col, 0, by_col);
    FILE *f = data_file(dir, "ch11_vnni.dat");
    fprintf(f, "# tile_row place key column (of the block of V that lands there)\n");
    for (size_t i = 0; i < AMX_TILE_ELEMS; i++)
        fprintf(f, "%zu %zu %.0f %.0f\n", i / 32, i % 32, bf16_float(by_key[i]) - 1,
                bf16_float(by_col[i]) - 1);
    data_close(f);
}
static void report_bits(report *r, const char *dir)
{
    static const float x[4] = { 1.0f / 3.0f, 3.14159265f, 1.00390625f, 1.01171875f };
    FILE *f = dir ? data_file(dir, "ch11_bits.dat") : NULL, *g = dir ? data_file(dir, "ch11_bits_values.dat") : NULL;
    if (f) fprintf(f, "# value bit fp32_bit bf16_bit (-1: not kept)\n");
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        const bf16 h = bf16_round(x[i]);
        char key[4][24];
        snprintf(key[0], sizeof key[0], "bits_f32_%d", i);
        snprintf(key[1], sizeof key[1], "bits_bf16_%d", i);
        snprintf(key[2], sizeof key[2], "bits_x_%d", i);
        snprintf(key[3], sizeof key[3], "bits_rounded_%d", i);
        report_factf(r, key[0], "0x%08x", (unsigned)u);
        report_factf(r, key[1], "0x%04x", (unsigned)h);
        report_factf(r, key[2], "%.9g", (double)x[i]);
        report_factf(r, key[3], "%.9g", (double)bf16_float(h));
        for (int b = 31; f && b >= 0; b--)
            fprintf(f, "%d %d %u %d\n", i, b, (unsigned)(u >> b) & 1u, b >= 16 ? (h >> (b - 16)) & 1 : -1);
        if (g) fprintf(g, "%d \"%.9g becomes %.9g\"\n", i, (double)x[i], (double)bf16_float(h));
    }
    if (f) data_close(f);
    if (g) data_close(g);
}
static void report_walk_grid(report *r, const char *dir)
{
    attn_params p = attn_default(1, 1, 256, 256, 64);
    p.causal = true;
    size_t seen[3] = { 0 };
    FILE *f = dir ? data_file(dir, "ch11_walk.dat") : NULL;
    if (f) fprintf(f, "# slice block kind(0 skipped, 1 full, 2 masked) visit\n");
    for (size_t s = 0; s < 256 / 16; s++)
        for (size_t b = 0, visit = 0; b < 256 / 32; b++) {
            const attn_tile_kind kind = attn_tile_classify(&p, 16 * s, 16, 32 * b, 32);
            seen[kind]++;
            visit += kind != ATTN_TILE_SKIPPED;
            if (f) fprintf(f, "%zu %zu %d %zu\n", s, b, (int)kind, kind == ATTN_TILE_SKIPPED ? 0 : visit);
        }
    if (f) data_close(f);
    amx_counts c = { 0 };
    float *x = fa_alloc(fa_mul(256 * 64, 4)), *o = fa_alloc(fa_mul(256 * 64, 4));
    memset(x, 0, 256 * 64 * 4);
    attention_bf16(AMX_KERNEL_EMULATED, &p, x, x, x, o, 1, &c);
    fa_free(x); fa_free(o);
    if (c.blocks_computed != seen[1] + seen[2] || c.blocks_skipped != seen[0])
        die_line("the walk figure's blocks differ from the kernel's counts");
    report_factf(r, "walk_full", "%zu", seen[1]);
    report_factf(r, "walk_masked", "%zu", seen[2]);
    report_factf(r, "walk_skipped", "%zu", seen[0]);
}
static void report_figures(report *r, const char *data_dir)
{
    report_bits(r, data_dir);
    report_walk_grid(r, data_dir);
    if (data_dir) write_ch11_vnni_data(data_dir);
}
static void run_ch11_receipts(const ch11_options *o, report *r)
{
    bool vdp, amx;
    fa_require(fa_mul((size_t)(o->heads * o->seq), (size_t)o->dim * 16) + (64u << 20),
               "the timed run's tensors and workspaces");
    report_machine_facts(r, &vdp, &amx);
    report_model(r, vdp, amx, o->quick ? 10 : 1000);
    report_errors(r, o->quick ? 4 : ERROR_SHAPE_COUNT, (uint32_t)o->seed);
    report_walk(r, o->data_dir);
    report_figures(r, o->data_dir);
    report_budget(r);
    char note[4096];
    ch11_recorded_note(o->recorded, note, sizeof note);
    report_fact(r, "recorded_note", note);
    if (o->quick) return;
    report_peaks(r, o, vdp, amx);
    report_speed(r, o, vdp, amx);
    report_parts(r, amx);
}
typedef struct { long n, d, threads; int causal; } ch11_config;

static size_t ch11_configs(const ch11_options *o, ch11_config *out)
{
    size_t count = 0;
    for (long d = 64; d <= (o->quick ? 64 : 128); d *= 2)
        for (int causal = 0; causal <= 1; causal++)
            for (long n = o->quick ? 4096 : 1024; n <= 4096; n *= 2)
                for (long t = 1; t <= o->threads; t = t == o->threads ? t + 1 : o->threads)
                    out[count++] = (ch11_config){ n, d, t, causal };
    return count;
}
static size_t ch11_run_torch(const ch11_options *o, const ch11_config *cfg, size_t count,
                             double seconds[][2])
{
    char cmd[16384], line[512];
    if (strchr(o->python, '\'')) die_usage(CH11_PROGRAM, "--python: a path without quotes, please");
    size_t used = (size_t)snprintf(cmd, sizeof cmd, "'%s' tangled/ch08_torch_peer.py %d", o->python, CH11_BENCH_HEADS);
    for (size_t i = 0; i < 2 * count && used < sizeof cmd; i++)
        used += (size_t)snprintf(cmd + used, sizeof cmd - used, " %ld,%ld,%d,%ld,3,1,%d", cfg[i / 2].n,
                                 cfg[i / 2].d, cfg[i / 2].causal, cfg[i / 2].threads, i % 2 ? 32 : 16);
    if (used >= sizeof cmd) die_usage(CH11_PROGRAM, "the PyTorch command line is too long");
    FILE *p = popen(cmd, "r");
    if (!p) die_usage(CH11_PROGRAM, "cannot run %s", o->python);
    size_t got = 0;
    while (fgets(line, sizeof line, p) && got < 2 * count) {
        double median;
        if (line[0] == '#') { printf("%s", line); continue; }
        if (sscanf(line, "%*d %*d %*d %*d %*d %lf", &median) == 1) seconds[got / 2][got % 2] = median, got++;
    }
    pclose(p);
    return got;
}
static void print_bench_line(const char *kernel, const ch11_config *c, spread s, const double torch[2],
                             bool have_torch)
{
    attn_params p = attn_default(1, CH11_BENCH_HEADS, (size_t)c->n, (size_t)c->n, (size_t)c->d);
    p.causal = c->causal;
    const double g = ch11_flops(&p) / s.median / 1e9;
    printf("ch11_amx %s %ld %ld %d %ld 3 %.6f %.6f %.6f %.1f", kernel, c->n, c->d, c->causal,
           c->threads, s.median, s.min, s.max, g);
    if (have_torch) printf(" %.2f %.2f\n", torch[0] / s.median, torch[1] / s.median);
    else printf(" - -\n");
}
static void run_ch11_bench(const ch11_options *o)
{
    ch11_config cfg[64];
    static double torch[64][2];
    char why[160], cpu[128];
    const amx_kernel kernel = ch11_best_kernel(why);
    const size_t count = ch11_configs(o, cfg);
    ladder_cpu_model(cpu, sizeof cpu);
    printf("# ch11_amx: %s, %d CPUs; kernel %s; AMX: %s\n", cpu, ladder_cpus(), ch11_kernel_name(kernel), why);
    if (kernel != AMX_KERNEL_EMULATED) {
        ladder_profile m;
        char err[256];
        if (ladder_profile_for(o->machine, NULL, 1, false, &m, err, sizeof err) < 0)
            die_usage(CH11_PROGRAM, "%s", err);
        const spread b = bf16_peak_gflops(kernel == AMX_KERNEL_AMX, 1, kernel == AMX_KERNEL_AMX ? 1 << 18 : 1 << 21, 5);
        printf("# peak GFLOP/s, one thread: fp32 FMA %.0f (chapter 1's profile), %s %.0f\n", ladder_peak_for(&m, 1),
               kernel == AMX_KERNEL_AMX ? "TDPBF16PS" : "VDPBF16PS", b.median);
    } else printf("# no bf16 hardware: only the model runs here, and it is not benchmarked\n");
    if (kernel == AMX_KERNEL_EMULATED) return;
    for (size_t d = 64; kernel == AMX_KERNEL_AMX && d <= 128; d += 64) {
        spread ms[4];
        time_parts(d, 4, ms);
        printf("# parts ms, n = %d, one head, one thread; d whole without_tiles without_vectors neither: "
               "%zu %.3f %.3f %.3f %.3f\n", PARTS_N, d, ms[0].median, ms[1].median, ms[2].median, ms[3].median);
    }
    const size_t got = o->python ? ch11_run_torch(o, cfg, count, torch) : 0;
    if (!o->python) printf("# PyTorch: not run (make bench PYTHON=/path/to/python adds it)\n");
    for (size_t i = 0; i < count; i++) {
        attn_params p = attn_default(1, CH11_BENCH_HEADS, (size_t)cfg[i].n, (size_t)cfg[i].n, (size_t)cfg[i].d);
        p.causal = cfg[i].causal;
        fa_require(attention_bf16_bytes(&p, (int)cfg[i].threads) + fa_mul(p.heads * p.nq * p.d, 16),
                   "the benchmark's tensors");
        fprintf(stderr, "bench: %s n=%ld d=%ld causal=%d threads=%ld\n", ch11_kernel_name(kernel),
                cfg[i].n, cfg[i].d, cfg[i].causal, cfg[i].threads);
        const spread s = ch11_time_kernel(kernel, &p, (int)cfg[i].threads, 3);
        print_bench_line(ch11_kernel_name(kernel), &cfg[i], s, torch[i], 2 * i + 1 < got);
    }
}
enum { CH11_MAX_RECORDS = 8, CH11_RECORDED_ROWS = 64 };
typedef struct { long n, d, threads; int causal; double median, x_bf16, x_fp32, fused; } ch11_row;
typedef struct {
    char when[64], machine[128], kernel[32], unit[32];
    double fp32_peak, unit_peak, parts[2][4];   /* parts: d = 64 and 128, as time_parts */
    int count, fused_count, parts_count;
    ch11_row row[CH11_RECORDED_ROWS], fused[CH11_RECORDED_ROWS];
} ch11_record;
static void match_fused(ch11_record *rec)
{
    for (int i = 0; i < rec->count; i++)
        for (int j = 0; j < rec->fused_count; j++) {
            const ch11_row *a = &rec->row[i], *b = &rec->fused[j];
            if (a->n == b->n && a->d == b->d && a->causal == b->causal
                && a->threads == b->threads)
                rec->row[i].fused = b->median;
        }
}
static bool read_ch11_record(const char *path, ch11_record *rec)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    *rec = (ch11_record){ .when = "(unknown)", .machine = "(unknown)", .kernel = "?" };
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        ch11_row w = { .x_bf16 = NAN, .x_fp32 = NAN, .fused = NAN };
        sscanf(line, "# make bench: date %63s", rec->when);
        sscanf(line, "# ch11_amx: %127[^;]; kernel %31[^;]", rec->machine, rec->kernel);
        sscanf(line, "# peak GFLOP/s, one thread: fp32 FMA %lf (chapter 1's profile), %31s %lf",
               &rec->fp32_peak, rec->unit, &rec->unit_peak);
        long pd;
        double pm[4];
        if (sscanf(line, "# parts ms, n = %*d, one head, one thread; d whole without_tiles without_vectors "
                         "neither: %ld %lf %lf %lf %lf", &pd, &pm[0], &pm[1], &pm[2], &pm[3]) == 5
            && (pd == 64 || pd == 128))
            memcpy(rec->parts[pd / 64 - 1], pm, sizeof pm), rec->parts_count++;
        if (rec->count < CH11_RECORDED_ROWS
            && sscanf(line, "ch11_amx %*s %ld %ld %d %ld %*d %lf %*f %*f %*f %lf %lf", &w.n, &w.d,
                      &w.causal, &w.threads, &w.median, &w.x_bf16, &w.x_fp32) >= 5)
            rec->row[rec->count++] = w;
        if (rec->fused_count < CH11_RECORDED_ROWS
            && sscanf(line, "ch08_fused_timing fused %ld %ld %d %ld %*d %lf", &w.n, &w.d, &w.causal,
                      &w.threads, &w.median) == 5)
            rec->fused[rec->fused_count++] = w;
    }
    fclose(f);
    match_fused(rec);
    return rec->count > 0;
}
typedef struct { double lo, hi; int met, of; } ch11_range;

static double ch11_ratio(const ch11_row *w, int which)
{
    return which == 0 ? w->x_bf16 : which == 1 ? w->x_fp32 : w->fused / w->median;
}
static ch11_range ch11_range_of(const ch11_record *rec, int which, double goal)
{
    ch11_range g = { INFINITY, -INFINITY, 0, 0 };
    for (int i = 0; i < rec->count; i++) {
        const double x = round(100 * ch11_ratio(&rec->row[i], which)) / 100;
        if (!isfinite(x)) continue;
        g.lo = fmin(g.lo, x);
        g.hi = fmax(g.hi, x);
        g.of++;
        g.met += x >= goal;
    }
    return g;
}
static int ch11_step_vector_cycles(void);
static int ch11_step_tile_cycles(void);
static void parts_sentence(char *buf, size_t size, const char *where, const double med[2][4]);

static void ch11_miss_reason(char *buf, size_t size, const ch11_record *rec)
{
    char parts[1200];
    if (rec->unit_peak > 4 * rec->fp32_peak && rec->parts_count == 2) {
        parts_sentence(parts, sizeof parts, "There", rec->parts);
        snprintf(buf, size, " Its parts were timed apart (n = %d, one head, one thread). %s", PARTS_N, parts);
    } else if (rec->unit_peak > 4 * rec->fp32_peak)
        snprintf(buf, size, " There the tile unit's peak is %.0f times the fp32 multiply-add's, "
                 "and the kernel waits on its vector work: %d vector cycles a block against %d "
                 "of the tiles (the count above).", rec->unit_peak / rec->fp32_peak,
                 ch11_step_vector_cycles(), ch11_step_tile_cycles());
    else
        snprintf(buf, size, " There %s peaks at %.0f GFLOP/s on one core against the fp32 "
                 "multiply-add's %.0f, so bf16 can gain only on memory and packing.",
                 rec->unit, rec->unit_peak, rec->fp32_peak);
}
static void ch11_record_sentence(char *buf, size_t size, const ch11_record *rec)
{
    const bool tiles = strcmp(rec->kernel, "amx") == 0;
    const double goal = tiles ? 2.0 : 1.3;
    const ch11_range b = ch11_range_of(rec, 0, goal), f = ch11_range_of(rec, 1, 0),
                     own = ch11_range_of(rec, 2, 1.0);
    char torch[256] = "PyTorch was not recorded", ours[160] = "", why[1400] = "";
    if (b.of)
        snprintf(torch, sizeof torch, "%.2f–%.2f× PyTorch's bf16 attention (the goal of %.1f× "
                 "met in %d of %d) and %.2f–%.2f× its fp32", b.lo, b.hi, goal, b.met, b.of,
                 f.lo, f.hi);
    if (own.of)
        snprintf(ours, sizeof ours, "; %.2f–%.2f× chapter 8's fp32 kernel, at least as fast "
                 "in %d of %d", own.lo, own.hi, own.met, own.of);
    if ((b.of && b.met < b.of) || (!tiles && own.met < own.of))
        ch11_miss_reason(why, sizeof why, rec);
    snprintf(buf, size, "On %s, recorded %.16s, the %s engine ran at %s%s.%s", rec->machine,
             rec->when, tiles ? "tile (AMX)" : strcmp(rec->kernel, "avx512bf16") == 0
             ? "AVX512-BF16" : rec->kernel, torch, ours, why);
}
void ch11_recorded_note(const char *path, char *note, size_t size)
{
    static char names[CH11_MAX_RECORDS][LADDER_PATH_MAX];
    const size_t files = ladder_recorded_files(path, names, CH11_MAX_RECORDS);
    ch11_record *rec = fa_alloc(sizeof *rec);
    size_t used = 0;
    note[0] = '\0';
    for (size_t i = 0; i < files && used < size; i++) {
        if (!read_ch11_record(names[i], rec)) continue;
        char one[2048];
        ch11_record_sentence(one, sizeof one, rec);
        used += (size_t)snprintf(note + used, size - used, "%s%s", used ? " " : "", one);
    }
    if (used == 0) snprintf(note, size, "(Nothing is recorded yet.)");
    fa_free(rec);
}
int main(int argc, char **argv)
{
    ch11_options o = ch11_defaults();
    parse_ch11_options(argc, argv, &o);
    fa_isa_cap(CH11_PROGRAM);
    if (o.machine) {
        ladder_profile m;
        char err[256];
        if (ladder_profile_for(o.machine, NULL, 1, false, &m, err, sizeof err) < 0)
            die_usage(CH11_PROGRAM, "%s", err);
    }
    if (o.seq_k == 0) o.seq_k = o.seq;
    if (o.bench) { run_ch11_bench(&o); finish_stdout(CH11_PROGRAM); return 0; }
    report *r = report_new(CH11_PROGRAM, o.json);
    if (o.q_path || o.k_path || o.v_path || o.out_path) run_ch11_on_files(&o, r);
    else run_ch11_receipts(&o, r);
    report_finish(r, stdout);
    return 0;
}
