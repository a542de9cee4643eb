/* ch10_gpu.c — chapter 10's program: the GPU kernels, on a device or emulated.
   Tangled from chapters/app_gpu_run.nw. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "cpu/backward.h"
#include "gpu/gpu_attention.h"
#include "ch10_gpu.h"
#define PROGRAM "ch10_gpu"
typedef struct {
    const char *device, *kernel, *q_path, *k_path, *v_path, *out_path, *data_dir;
    bool causal, json, bench, cuda_info;
    long seed, batch, heads, seq, seq_k, dim, repeats;
    double scale;                      /* 0: the default 1/sqrt(d) */
    const char *dout_path, *dq_path, *dk_path, *dv_path;
    bool backward;
    long bwd_dim;                      /* the seeded backward's head dimension */
    const char *points_path;           /* --bench: append each point here */
} ch10_options;

#define CH10_BF16_PEAK 989.4   /* TFLOP/s: dense bf16, H100/H200 SXM datasheet */
enum { CH10_NAIVE_MAX_N = 4096 };   /* the naive kernel is timed up to this N */
typedef struct {
    gpu_kernel kernel;
    bool causal;
    double error;             /* max |O - O_ref| against the double reference */
    double cpu_naive_error;   /* the same, for chapter 4's naive kernel in float32 */
    emu_counts counts;        /* zeros on a CUDA device */
} ch10_run;
enum { CH10_RUNS = 4 };

typedef struct {
    double error[2];          /* max |O - O_ref|, without and with the causal mask */
    double bf16_naive[2];     /* the same for attention done plainly in bf16 */
    emu_counts counts;        /* what the emulation counted without the mask */
} ch10_tc_runs;

typedef struct {
    bool causal;
    double gpu[3], naive[3], flash[3];  /* max error of dQ, dK, dV vs finite differences */
    double bound[3];                    /* the tests': from the error analysis */
    double vs_flash;                    /* max |GPU - chapter 9's flash| over the three */
    emu_counts counts[GPU_BWD_LAUNCHES];
    bool tc_ran;                        /* the tensor-core chain (d a multiple of 8) */
    double tc[3], plain[3];             /* its errors, and the plain bf16 backward's */
    double tc_vs_flash;                 /* max |tensor cores - chapter 9's flash| */
} ch10_bwd_run;

enum { CH10_BWD_TENSORS = 8 };
typedef struct {
    float *x[CH10_BWD_TENSORS];   /* q k v dout, then o dq dk dv */
    size_t qo, kv;                /* elements of q (and o, dout, dq), of k (and v, dk, dv) */
} ch10_bwd_tensors;

static void ch10_report_lanes(report *r, const char *dir);
static void ch10_report_tc(report *r, bool cuda, const attn_params *p, const tensor qkv[3]);
void ch10_measure_tc(bool cuda, const attn_params *p, const tensor qkv[3], ch10_tc_runs *runs);
static void ch10_report_ldmatrix(report *r, bool cuda, const emu_counts *c, size_t d);
unsigned ch10_tc_shared_loads(unsigned width, bool ldmatrix);
ch10_options ch10_defaults(void);
bool ch10_use_cuda(const char *device);
void ch10_measure(bool cuda, const attn_params *p, const tensor qkv[3],
                  ch10_run runs[CH10_RUNS]);
attn_params ch10_seeded_params(const ch10_options *o);
double ch10_ratio(const ch10_run *run);
static void ch10_report_runs(report *r, bool cuda, const attn_params *p,
                             const ch10_run runs[CH10_RUNS]);
static double ch10_max_diff(const float *a, const float *b, size_t count);
static bool ch10_bench_dim(const ch10_options *o, size_t d, table *t, FILE *data,
                           FILE *points);
ch10_bwd_tensors ch10_bwd_tensors_new(const attn_params *p, uint32_t seed);
void ch10_bwd_tensors_free(ch10_bwd_tensors *t);
void ch10_measure_backward(bool cuda, const attn_params *p, ch10_bwd_tensors *t,
                           ch10_bwd_run *run);
double ch10_bwd_ratio(const ch10_bwd_run *run);
static void ch10_backward_receipts(const ch10_options *o, bool cuda, report *r);
static void ch10_run_tc_backward(bool cuda, const attn_params *p, const float *const in[4],
                                 float *const out[4]);
static void ch10_report_backward(report *r, const attn_params *p, const ch10_bwd_run runs[2]);
static void ch10_bench_backward(const ch10_options *o, report *r);
static double ch10_time_tc_backward(const ch10_options *o, const attn_params *p,
                                    ch10_bwd_tensors *x);
static void ch10_require_shape_of_q(const tensor *dout, const tensor *q);
static void ch10_apply_file_options(const ch10_options *o, attn_params *p);
static size_t ch10_seeded_bytes(const ch10_options *o);
static void ch10_write_errors(const char *dir, const ch10_run runs[CH10_RUNS]);
static void ch10_size_file_run(const ch10_options *o, const char *const inputs[3],
                               gpu_kernel kernel, bool backward);
size_t ch10_kernel_bytes(gpu_kernel kernel, const attn_params *p);
ch10_options ch10_defaults(void)
{
    return (ch10_options){ .kernel = "fused", .seed = 0, .batch = 1, .heads = 1,
                           .seq = 100, .seq_k = 0, .dim = 64, .repeats = 5,
                           .bwd_dim = 16 };
}

static void parse_ch10_options(int argc, char **argv, ch10_options *o)
{
    const option opts[] = {
        { "device", OPT_STRING, &o->device, 0, 0, "cpu|cuda",
          "where the kernels run (default: cuda when usable, else cpu)" },
        { "kernel", OPT_STRING, &o->kernel, 0, 0, "naive|fused|tc",
          "the kernel --out runs (tc: bf16 tensor cores)" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "measure TFLOP/s on the CUDA device" },
        { "points", OPT_STRING, &o->points_path, 0, 0, "FILE",
          "--bench: append each point to FILE as a line of JSON when measured" },
        { "repeats", OPT_INT, &o->repeats, 1, 1000, "N", "timed runs per benchmark point" },
        { "cuda-info", OPT_FLAG, &o->cuda_info, 0, 0, NULL,
          "print the CUDA device or why there is none; status 0 or 1" },
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE",
          "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE", "write the output (.npy)" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of the generated Q, K, V" },
        { "batch", OPT_INT, &o->batch, 1, 64, "B", "batch size" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads" },
        { "seq", OPT_INT, &o->seq, 1, 16384, "N", "query length" },
        { "seq-k", OPT_INT, &o->seq_k, 0, 16384, "N", "key length (0: as --seq)" },
        { "dim", OPT_INT, &o->dim, 1, GPU_MAX_DIM, "D", "head dimension" },
        { "backward", OPT_FLAG, &o->backward, 0, 0, NULL,
          "with files: the forward and the backward, as ./ch09_backward runs them" },
        { "dout", OPT_STRING, &o->dout_path, 0, 0, "FILE", "gradient of the output: the shape of --q" },
        { "dq", OPT_STRING, &o->dq_path, 0, 0, "FILE", "write dL/dQ" },
        { "dk", OPT_STRING, &o->dk_path, 0, 0, "FILE", "write dL/dK" },
        { "dv", OPT_STRING, &o->dv_path, 0, 0, "FILE", "write dL/dV" },
        { "bwd-dim", OPT_INT, &o->bwd_dim, 1, GPU_MAX_DIM, "D",
          "head dimension of the seeded backward's receipts" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR",
          "write the errors as DIR/ch10_errors.dat; with --bench the tables as DIR/ch10_bench*.dat" },
    };
    options_parse(argc, argv, PROGRAM, "chapter 4's attention as CUDA kernels, on a GPU "
                  "or on the CPU emulation", opts, sizeof opts / sizeof opts[0]);
}

static gpu_kernel ch10_kernel_named(const char *name)
{
    if (strcmp(name, "naive") == 0) return GPU_NAIVE;
    if (strcmp(name, "fused") == 0) return GPU_FUSED;
    if (strcmp(name, "tc") == 0) return GPU_TC;
    die_usage(PROGRAM, "--kernel must be naive, fused or tc (got '%s')", name);
    return GPU_FUSED;
}

bool ch10_use_cuda(const char *device)
{
    char text[256];
    if (device && strcmp(device, "cpu") == 0) return false;
    if (device && strcmp(device, "cuda") != 0)
        die_usage(PROGRAM, "--device must be cpu or cuda (got '%s')", device);
    const bool usable = gpu_cuda_device(text);
    if (device && !usable) die_usage(PROGRAM, "--device cuda: %s", text);
    if (!usable)
        fprintf(stderr, "%s: note: %s; the kernels run on the CPU emulation\n", PROGRAM, text);
    return usable;
}

static void ch10_run_kernel(bool cuda, gpu_kernel kernel, const attn_params *p,
                            const tensor qkv[3], float *o, emu_counts *counts)
{
    char why[256];
    *counts = (emu_counts){ 0 };
    if (!cuda)
        gpu_attention_emulated(kernel, p, qkv[0].data, qkv[1].data, qkv[2].data, o, counts);
    else if (gpu_attention_cuda(kernel, p, qkv[0].data, qkv[1].data, qkv[2].data, o, 0,
                                NULL, why) != 0)
        die_usage(PROGRAM, "cuda: %s", why);
    attention_repair(p, qkv[0].data, qkv[1].data, qkv[2].data, o);
}

void ch10_measure(bool cuda, const attn_params *p, const tensor qkv[3],
                  ch10_run runs[CH10_RUNS])
{
    const size_t count = tensor_count(&qkv[0]);
    double *exact = fa_alloc(fa_mul(count, sizeof(double)));
    float *out = fa_alloc(fa_mul(count, sizeof(float)));
    for (int mask = 0; mask < 2; mask++) {
        attn_params pm = *p;
        pm.causal = mask;
        attention_reference(&pm, qkv[0].data, qkv[1].data, qkv[2].data, exact);
        attention_naive(&pm, qkv[0].data, qkv[1].data, qkv[2].data, out);
        const double yardstick = max_abs_diff_fd(out, exact, count);
        for (int kernel = 0; kernel < 2; kernel++) {
            ch10_run *run = &runs[2 * mask + kernel];
            *run = (ch10_run){ .kernel = kernel ? GPU_FUSED : GPU_NAIVE, .causal = mask,
                               .cpu_naive_error = yardstick };
            ch10_run_kernel(cuda, run->kernel, &pm, qkv, out, &run->counts);
            run->error = max_abs_diff_fd(out, exact, count);
        }
    }
    fa_free(out);
    fa_free(exact);
}

attn_params ch10_seeded_params(const ch10_options *o)
{
    const size_t nk = (size_t)(o->seq_k > 0 ? o->seq_k : o->seq);
    attn_params p = attn_default((size_t)o->batch, (size_t)o->heads, (size_t)o->seq, nk,
                                 (size_t)o->dim);
    p.causal = o->causal;
    if (o->scale > 0) p.scale = (float)o->scale;
    return p;
}

static void ch10_draw(const attn_params *p, uint32_t seed, tensor qkv[3])
{
    const size_t q_shape[4] = { p->batch, p->heads, p->nq, p->d };
    const size_t kv_shape[4] = { p->batch, p->heads, p->nk, p->d };
    qkv[0] = tensor_new(4, q_shape);
    qkv[1] = tensor_new(4, kv_shape);
    qkv[2] = tensor_new(4, kv_shape);
    attn_draw_inputs(p, seed, qkv[0].data, qkv[1].data, qkv[2].data);
}

static void ch10_run_seeded(const ch10_options *o, report *r)
{
    const attn_params p = ch10_seeded_params(o);
    tensor qkv[3];
    ch10_run runs[CH10_RUNS];
    fa_require(ch10_seeded_bytes(o), "the seeded run");
    const bool cuda = ch10_use_cuda(o->device);
    ch10_draw(&p, (uint32_t)o->seed, qkv);
    ch10_measure(cuda, &p, qkv, runs);
    ch10_report_runs(r, cuda, &p, runs);
    if (o->data_dir) ch10_write_errors(o->data_dir, runs);
    ch10_report_lanes(r, o->data_dir);
    ch10_report_tc(r, cuda, &p, qkv);
    ch10_backward_receipts(o, cuda, r);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
}

static size_t ch10_seeded_bytes(const ch10_options *o)
{
    ch10_options with_dim = *o;
    with_dim.dim = o->bwd_dim;
    const attn_params p = ch10_seeded_params(o), pb = ch10_seeded_params(&with_dim);
    const size_t heads = p.batch * p.heads;
    const size_t qn = fa_mul(fa_mul(heads, p.nq), p.d), kn = fa_mul(fa_mul(heads, p.nk), p.d);
    const size_t bn = fa_mul(fa_mul(heads, p.nq), pb.d) + fa_mul(fa_mul(2 * heads, p.nk), pb.d);
    const size_t scores = ch10_kernel_bytes(GPU_NAIVE, &p);
    size_t extra = fa_mul(qn + 2 * kn, 2 * sizeof(float));          /* bf16 and rounded copies */
    if (scores > extra) extra = scores;
    const size_t forward = fa_mul(qn, sizeof(double) + sizeof(float)) + extra
                         + fa_mul(fa_mul(p.nk, p.d + 1), sizeof(double));
    const size_t backward = fa_mul(bn, 48) + scores;
    return fa_mul(qn + 2 * kn, sizeof(float)) + (forward > backward ? forward : backward);
}

static void ch10_write_errors(const char *dir, const ch10_run runs[CH10_RUNS])
{
    FILE *data = data_file(dir, "ch10_errors.dat");
    fprintf(data, "# kernel causal max_error cpu_naive_fp32_error\n");
    for (int i = 0; i < CH10_RUNS; i++)
        fprintf(data, "%s %d %.6e %.6e\n", runs[i].kernel == GPU_FUSED ? "fused" : "naive",
                runs[i].causal, runs[i].error, runs[i].cpu_naive_error);
    data_close(data);
}

static void ch10_report_lanes(report *r, const char *dir)
{
    const unsigned d = 80;
    unsigned owned[32] = { 0 };
    FILE *data = dir ? data_file(dir, "ch10_lanes.dat") : NULL;
    if (data) fprintf(data, "# lane register column owned (column < d = %u)\n", d);
    for (unsigned lane = 0; lane < 32; lane++)
        for (unsigned g = 0, c; (c = gpu_fused_column_of(lane, g)) < GPU_MAX_DIM; g++) {
            owned[lane] += c < d;
            if (data) fprintf(data, "%u %u %u %d\n", lane, g, c, c < d);
        }
    if (data) data_close(data);
    unsigned split = 0;
    while (split < 32 && owned[split] == owned[0]) split++;
    report_factf(r, "lanes_d", "%u", d);
    if (split == 32)
        report_factf(r, "lanes_sentence", "every lane owns %u columns", owned[0]);
    else
        report_factf(r, "lanes_sentence", "lanes 0 to %u own %u columns and lanes %u to 31 own %u",
                     split - 1, owned[0], split, owned[split]);
}

static void ch10_report_table(report *r, const ch10_run runs[CH10_RUNS])
{
    static const char *const columns[] = { "kernel", "mask", "max error",
                                           "CPU naive fp32", "ratio", NULL };
    table *t = report_table(r, "errors", "Max error against the float64 reference",
                            columns);
    for (int i = 0; i < CH10_RUNS; i++) {
        char err[32], yard[32], ratio[32];
        snprintf(ratio, sizeof ratio, "%.2f", ch10_ratio(&runs[i]));
        table_rowf(t, "%s|%s|%s|%s|%s", runs[i].kernel == GPU_FUSED ? "fused" : "naive",
                   runs[i].causal ? "causal" : "none", fmt_num(err, runs[i].error),
                   fmt_num(yard, runs[i].cpu_naive_error), ratio);
    }
}

double ch10_ratio(const ch10_run *run)
{
    if (run->cpu_naive_error > 0) return run->error / run->cpu_naive_error;
    return run->error == 0 ? 0.0 : INFINITY;
}

static void ch10_report_runs(report *r, bool cuda, const attn_params *p,
                             const ch10_run runs[CH10_RUNS])
{
    char b[256], b2[32];
    double worst = 0.0;
    if (!cuda) snprintf(b, sizeof b, "the CPU, through the emulation");
    else gpu_cuda_device(b);
    report_fact_labeled(r, "device", "device", b);
    snprintf(b, sizeof b, "(%zu, %zu, %zu, %zu)", p->batch, p->heads, p->nq, p->d);
    report_fact_labeled(r, "shape", "Q (batch, heads, N, d)", b);
    ch10_report_table(r, runs);
    for (int i = 0; i < CH10_RUNS; i++) worst = fmax(worst, ch10_ratio(&runs[i]));
    report_fact_labeled(r, "naive_error", "naive kernel, no mask", fmt_num(b, runs[0].error));
    report_fact_labeled(r, "fused_error", "fused kernel, no mask", fmt_num(b, runs[1].error));
    report_fact_labeled(r, "naive_error_causal", "naive kernel, causal",
                        fmt_num(b, runs[2].error));
    report_fact_labeled(r, "fused_error_causal", "fused kernel, causal",
                        fmt_num(b, runs[3].error));
    report_fact_labeled(r, "cpu_naive_error", "chapter 4's naive kernel, no mask",
                        fmt_num(b, runs[0].cpu_naive_error));
    snprintf(b, sizeof b, "%.2f", worst);
    report_fact_labeled(r, "worst_ratio", "largest ratio to the yardstick", b);
    report_fact_labeled(r, "fused_blocks", "fused: blocks", fmt_int(b, (long long)runs[1].counts.blocks));
    report_fact_labeled(r, "fused_threads", "fused: threads per block",
                        fmt_int(b, (long long)runs[1].counts.threads));
    report_fact_labeled(r, "fused_block_barriers", "fused: __syncthreads meetings",
                        fmt_int(b, (long long)runs[1].counts.block_barriers));
    report_fact_labeled(r, "fused_warp_meetings", "fused: warp meetings",
                        fmt_int(b, (long long)runs[1].counts.warp_meetings));
    report_fact_labeled(r, "naive_launches", "naive: launches",
                        fmt_int(b, (long long)runs[0].counts.launches));
    report_fact_labeled(r, "naive_warp_meetings", "naive: warp meetings",
                        fmt_int(b, (long long)runs[0].counts.warp_meetings));
    {
        float a[256], b[128], c[128], d[128];
        char why[256];
        gpu_mma_test_inputs(a, b, c);
        if (!cuda) gpu_mma_emulated(a, b, c, d);
        else if (gpu_mma_cuda(a, b, c, d, why) != 0) die_usage(PROGRAM, "cuda: %s", why);
        snprintf(b2, sizeof b2, "%d of 128", gpu_mma_exact_count(a, b, c, d));
        report_fact_labeled(r, "mma_exact", "mma.sync: exact elements of D", b2);
    }
    report_fact_labeled(r, "gpu_speed", "speed on a GPU",
                        "not yet measured on a GPU");
}

void ch10_measure_tc(bool cuda, const attn_params *p, const tensor qkv[3], ch10_tc_runs *runs)
{
    const size_t count = tensor_count(&qkv[0]);
    double *exact = fa_alloc(fa_mul(count, sizeof(double)));
    float *out = fa_alloc(fa_mul(count, sizeof(float)));
    emu_counts counts;
    for (int mask = 0; mask < 2; mask++) {
        attn_params pm = *p;
        pm.causal = mask;
        attention_reference(&pm, qkv[0].data, qkv[1].data, qkv[2].data, exact);
        runs->bf16_naive[mask] = gpu_bf16_naive_error(&pm, qkv[0].data, qkv[1].data,
                                                      qkv[2].data, exact);
        ch10_run_kernel(cuda, GPU_TC, &pm, qkv, out, &counts);
        runs->error[mask] = max_abs_diff_fd(out, exact, count);
        if (mask == 0) runs->counts = counts;
    }
    fa_free(out);
    fa_free(exact);
}

static void ch10_report_tc(report *r, bool cuda, const attn_params *p, const tensor qkv[3])
{
    char b[64];
    ch10_tc_runs runs;
    if (gpu_kernel_problem(GPU_TC, p)) {
        report_fact_labeled(r, "tc_error", "tensor-core kernel", gpu_kernel_problem(GPU_TC, p));
        return;
    }
    ch10_measure_tc(cuda, p, qkv, &runs);
    report_fact_labeled(r, "tc_error", "tensor-core kernel, no mask", fmt_num(b, runs.error[0]));
    report_fact_labeled(r, "tc_error_causal", "tensor-core kernel, causal",
                        fmt_num(b, runs.error[1]));
    report_fact_labeled(r, "tc_bf16_naive", "plain bf16 attention, no mask",
                        fmt_num(b, runs.bf16_naive[0]));
    report_fact_labeled(r, "tc_bf16_naive_causal", "plain bf16 attention, causal",
                        fmt_num(b, runs.bf16_naive[1]));
    snprintf(b, sizeof b, "%.2f", fmax(runs.error[0] / runs.bf16_naive[0],
                                       runs.error[1] / runs.bf16_naive[1]));
    report_fact_labeled(r, "tc_ratio", "tensor-core kernel: largest ratio to plain bf16", b);
    ch10_report_ldmatrix(r, cuda, &runs.counts, p->d);
}

unsigned ch10_tc_shared_loads(unsigned width, bool ldmatrix)
{
    return ldmatrix ? width / 4 + width / 4 : width + 2 * width;
}

static void ch10_report_ldmatrix(report *r, bool cuda, const emu_counts *c, size_t d)
{
    char b[64];
    static const unsigned widths[2] = { 64, 128 };
    for (int w = 0; w < 2; w++) {
        char key[32], label[64];
        snprintf(key, sizeof key, "tc_loads_before_%u", widths[w]);
        snprintf(label, sizeof label, "shared loads per warp and tile, W = %u, before", widths[w]);
        report_fact_labeled(r, key, label, fmt_int(b, ch10_tc_shared_loads(widths[w], false)));
        snprintf(key, sizeof key, "tc_loads_after_%u", widths[w]);
        snprintf(label, sizeof label, "shared loads per warp and tile, W = %u, ldmatrix", widths[w]);
        report_fact_labeled(r, key, label, fmt_int(b, ch10_tc_shared_loads(widths[w], true)));
    }
    if (cuda) snprintf(b, sizeof b, "not counted on a GPU");
    else snprintf(b, sizeof b, "%g", gpu_tc_ldmatrix_per_warp_tile(c, (unsigned)d));
    report_fact_labeled(r, "tc_ldmatrix_per_tile", "ldmatrix per warp and key tile", b);
    {
        unsigned short m[256];
        unsigned out[256];
        char why[256];
        gpu_ldmatrix_test_input(m);
        if (!cuda) gpu_ldmatrix_emulated(m, out);
        else if (gpu_ldmatrix_cuda(m, out, why) != 0) die_usage(PROGRAM, "cuda: %s", why);
        snprintf(b, sizeof b, "%d of 256", gpu_ldmatrix_exact_count(m, out));
        report_fact_labeled(r, "ldmatrix_exact", "ldmatrix: registers as documented", b);
    }
}

static void ch10_run_on_files(const ch10_options *o, report *r)
{
    if (!o->q_path || !o->k_path || !o->v_path || !o->out_path)
        die_usage(PROGRAM, "--q, --k, --v and --out go together");
    const gpu_kernel kernel = ch10_kernel_named(o->kernel);
    const char *const inputs[3] = { o->q_path, o->k_path, o->v_path };
    npy_reserve_outputs_or_exit(PROGRAM, &o->out_path, 1, inputs, 3);
    ch10_size_file_run(o, inputs, kernel, false);
    tensor qkv[3] = { npy_read_or_exit(PROGRAM, o->q_path),
                      npy_read_or_exit(PROGRAM, o->k_path),
                      npy_read_or_exit(PROGRAM, o->v_path) };
    attn_params p = attn_params_from_tensors(PROGRAM, &qkv[0], &qkv[1], &qkv[2]);
    p.causal = o->causal;
    if (o->scale > 0) p.scale = (float)o->scale;
    const char *problem = gpu_kernel_problem(kernel, &p);
    if (problem) die_usage(PROGRAM, "%s", problem);
    const bool cuda = ch10_use_cuda(o->device);
    tensor out = tensor_new(qkv[0].ndim, qkv[0].shape);
    emu_counts counts;
    ch10_run_kernel(cuda, kernel, &p, qkv, out.data, &counts);
    npy_write_or_exit(PROGRAM, o->out_path, &out);
    report_fact_labeled(r, "device", "device", cuda ? "cuda" : "cpu (emulated)");
    report_fact_labeled(r, "kernel", "kernel", o->kernel);
    report_fact_labeled(r, "output", "output written to", o->out_path);
    tensor_free(&out);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
}

static void ch10_size_file_run(const ch10_options *o, const char *const inputs[3],
                               gpu_kernel kernel, bool backward)
{
    if (o->data_dir)
        die_usage(PROGRAM, "--data goes with the seeded run or --bench; a run on files "
                  "writes only its outputs");
    attn_params p = attn_params_from_headers(PROGRAM, inputs);
    ch10_apply_file_options(o, &p);
    const size_t qn = fa_mul(fa_mul(p.batch * p.heads, p.nq), p.d),
                 kn = fa_mul(fa_mul(p.batch * p.heads, p.nk), p.d);
    const size_t floats = backward ? fa_mul(4, qn + kn) + fa_mul(2 * p.batch * p.heads, p.nq)
                                   : fa_mul(2, qn) + fa_mul(2, kn);
    fa_require(fa_mul(floats, sizeof(float)) + (backward ? 0 : ch10_kernel_bytes(kernel, &p)),
               "the inputs, the outputs and the kernels' workspace");
}

size_t ch10_kernel_bytes(gpu_kernel kernel, const attn_params *p)
{
    const size_t heads = p->batch * p->heads;
    const size_t qn = fa_mul(fa_mul(heads, p->nq), p->d), kn = fa_mul(fa_mul(heads, p->nk), p->d);
    if (kernel == GPU_NAIVE) return fa_mul(fa_mul(heads, p->nq), fa_mul(p->nk, sizeof(float)));
    if (kernel == GPU_TC) return fa_mul(qn + 2 * kn, sizeof(unsigned short));
    return 0;
}

static double ch10_flops(const attn_params *p)
{
    const double f = 4.0 * (double)(p->batch * p->heads) * (double)p->nq * (double)p->nk *
                     (double)p->d;
    return p->causal ? f / 2 : f;
}

static bool ch10_bench_point(const ch10_options *o, attn_params *p, const tensor qkv[3],
                             float *out[3], table *t, FILE *data, FILE *points)
{
    double ms[3] = { NAN, NAN, NAN };
    char why[256], a[32], b[32];
    for (int kernel = 0; kernel < 3; kernel++)
        if ((kernel != GPU_NAIVE || p->nq <= CH10_NAIVE_MAX_N) &&
            gpu_attention_cuda((gpu_kernel)kernel, p, qkv[0].data, qkv[1].data,
                               qkv[2].data, out[kernel], (int)o->repeats, &ms[kernel], why))
            die_usage(PROGRAM, "cuda: %s", why);
    const ch10_tc_check c = ch10_check_tc_rows(p, qkv, out[GPU_FUSED], out[GPU_TC]);
    const double f = ch10_flops(p) / 1e9;
    table_rowf(t, "%zu|%zu|%s|%.3f|%.1f|%.3f|%.1f|%.3f|%.1f|%.0f%%|%s ≤ %s %s", p->d, p->nq,
               p->causal ? "yes" : "no", ms[0], f / ms[0], ms[1], f / ms[1], ms[2], f / ms[2],
               100 * f / ms[2] / CH10_BF16_PEAK, fmt_num(a, c.diff), fmt_num(b, c.bound),
               c.ok ? "ok" : "FAILED");
    if (data) fprintf(data, "%zu %zu %d %.6f %.6f %.6f %.6f %.6f %.6f\n", p->d, p->nq,
                      p->causal, ms[0], f / ms[0], ms[1], f / ms[1], ms[2], f / ms[2]);
    if (points) {
        fprintf(points, "{\"d\": %zu, \"N\": %zu, \"causal\": %s, \"naive_ms\": %.6g, "
                "\"fused_ms\": %.6g, \"tc_ms\": %.6g, \"tc_tflops\": %.6g, "
                "\"tc_diff\": %.6g, \"tc_bound\": %.6g, \"ok\": %s}\n", p->d, p->nq,
                p->causal ? "true" : "false", isnan(ms[0]) ? -1.0 : ms[0], ms[1], ms[2],
                f / ms[2], c.diff, c.bound, c.ok ? "true" : "false");
        fflush(points);
    }
    return c.ok;
}

ch10_tc_check ch10_check_tc_rows(const attn_params *p, const tensor qkv[3],
                                 const float *fused, const float *tc)
{
    const size_t d = p->d, slices = p->batch * p->heads, all = slices * p->nq * d;
    const size_t rows[] = { 0, 1, 15, 16, 63, 64, p->nq / 2, p->nq - 2, p->nq - 1 };
    ch10_tc_check c = { .diff = 0.0, .bound = 0.0, .ok = true };
    double ref[GPU_MAX_DIM];
    for (size_t e = 0; e < all; e++) if (!isfinite(tc[e])) c.ok = false;
    for (size_t s = 0; s < slices; s += slices > 1 ? slices - 1 : 1)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            if (rows[r] >= p->nq) continue;
            const size_t i = rows[r], row = (s * p->nq + i) * d;
            attn_params one = *p;
            one.batch = one.heads = one.nq = 1;
            one.nk = p->causal && i + 1 < p->nk ? i + 1 : p->nk;
            one.causal = false;
            for (size_t col = 0; col < d; col++) {
                ref[col] = fused[row + col];
                const double gap = fabs((double)tc[row + col] - ref[col]);
                c.diff = isnan(gap) ? INFINITY : fmax(c.diff, gap);
            }
            c.bound = fmax(c.bound, 2.0 * gpu_bf16_naive_error(&one, qkv[0].data + row,
                                                               qkv[1].data + s * p->nk * d,
                                                               qkv[2].data + s * p->nk * d, ref));
        }
    c.ok = c.ok && c.diff <= c.bound;
    return c;
}

static double ch10_max_diff(const float *a, const float *b, size_t count)
{
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        if (isnan(d)) return INFINITY;
        worst = fmax(worst, d);
    }
    return worst;
}

static bool ch10_bench(const ch10_options *o, report *r)
{
    static const char *const columns[] = { "d", "N", "causal", "naive ms", "naive TFLOP/s",
                                           "fused ms", "fused TFLOP/s", "tc ms", "tc TFLOP/s",
                                           "tc of peak", "tc vs fused ≤ bound", NULL };
    char text[256];
    bool ok = true;
    if (!gpu_cuda_device(text)) die_usage(PROGRAM, "--bench needs a CUDA device: %s", text);
    report_fact_labeled(r, "device", "device", text);
    table *t = report_table(r, "bench", "The kernels on the device (tc: bf16 tensor cores)",
                            columns);
    FILE *points = o->points_path ? fopen(o->points_path, "a") : NULL;
    if (o->points_path && !points) die_usage(PROGRAM, "cannot append to %s", o->points_path);
    FILE *data = o->data_dir ? data_file(o->data_dir, "ch10_bench.dat") : NULL;
    if (data) fprintf(data, "# d N causal naive_ms naive_tflops fused_ms fused_tflops "
                      "tc_ms tc_tflops\n");
    for (size_t d = 64; d <= 128; d *= 2) ok = ch10_bench_dim(o, d, t, data, points) && ok;
    if (data) data_close(data);
    if (points) fclose(points);
    ch10_bench_backward(o, r);
    return ok;
}

static bool ch10_bench_dim(const ch10_options *o, size_t d, table *t, FILE *data,
                           FILE *points)
{
    bool ok = true;
    attn_params p = attn_default(1, 2048 / d, 16384, 16384, d);
    tensor qkv[3];
    float *out[3];
    ch10_draw(&p, (uint32_t)o->seed, qkv);
    for (int k = 0; k < 3; k++) out[k] = fa_alloc(fa_mul(tensor_count(&qkv[0]), sizeof(float)));
    for (size_t n = 1024; n <= 16384; n *= 2)
        for (int causal = 0; causal < 2; causal++) {
            p.batch = 16384 / n; p.nq = p.nk = n; p.causal = causal;
            fprintf(stderr, "%s: bench d=%zu N=%zu causal=%d\n", PROGRAM, d, n, causal);
            ok = ch10_bench_point(o, &p, qkv, out, t, data, points) && ok;
        }
    for (int k = 0; k < 3; k++) fa_free(out[k]);
    for (int k = 0; k < 3; k++) tensor_free(&qkv[k]);
    return ok;
}

static int ch10_cuda_info(void)
{
    char text[256];
    const bool usable = gpu_cuda_device(text);
    printf("%s\n", text);
    return usable ? 0 : 1;
}

static void ch10_run_backward(bool cuda, const attn_params *p, const float *const in[4],
                              float *const out[4], emu_counts counts[GPU_BWD_LAUNCHES])
{
    char why[256];
    if (!cuda)
        gpu_backward_emulated(p, in[0], in[1], in[2], in[3], out[0], out[1], out[2], out[3],
                              counts);
    else if (gpu_backward_cuda(p, in[0], in[1], in[2], in[3], out[0], out[1], out[2],
                               out[3], 0, NULL, why) != 0)
        die_usage(PROGRAM, "cuda: %s", why);
    attention_backward_repair(p, in[0], in[1], in[2], in[3], out[0], NULL, out[1], out[2],
                              out[3]);
}

static void ch10_run_tc_backward(bool cuda, const attn_params *p, const float *const in[4],
                                 float *const out[4])
{
    char why[256];
    if (!cuda)
        gpu_backward_tc_emulated(p, in[0], in[1], in[2], in[3], out[0], out[1], out[2],
                                 out[3], NULL);
    else if (gpu_backward_tc_cuda(p, in[0], in[1], in[2], in[3], out[0], out[1], out[2],
                                  out[3], 0, NULL, why) != 0)
        die_usage(PROGRAM, "cuda: %s", why);
}

static void ch10_run_backward_on_files(const ch10_options *o, report *r)
{
    const char *paths[8] = { o->q_path, o->k_path, o->v_path, o->dout_path,
                             o->out_path, o->dq_path, o->dk_path, o->dv_path };
    for (int i = 0; i < 8; i++)
        if (!paths[i])
            die_usage(PROGRAM, "--backward takes --q --k --v --dout --out --dq --dk --dv together");
    npy_reserve_outputs_or_exit(PROGRAM, paths + 4, 4, paths, 4);
    const tensor dout_shape = npy_shape_or_exit(PROGRAM, paths[3]),
                 q_shape = npy_shape_or_exit(PROGRAM, paths[0]);
    ch10_require_shape_of_q(&dout_shape, &q_shape);
    ch10_size_file_run(o, paths, GPU_FUSED, true);
    tensor t[8];
    for (int i = 0; i < 4; i++) t[i] = npy_read_or_exit(PROGRAM, paths[i]);
    attn_params p = attn_params_from_tensors(PROGRAM, &t[0], &t[1], &t[2]);
    ch10_require_shape_of_q(&t[3], &t[0]);
    ch10_apply_file_options(o, &p);
    const bool cuda = ch10_use_cuda(o->device);
    for (int i = 4; i < 8; i++) t[i] = tensor_new(t[i < 6 ? 0 : 1].ndim, t[i < 6 ? 0 : 1].shape);
    const float *const in[4] = { t[0].data, t[1].data, t[2].data, t[3].data };
    float *const out[4] = { t[4].data, t[5].data, t[6].data, t[7].data };
    ch10_run_backward(cuda, &p, in, out, NULL);
    npy_write_all_or_exit(PROGRAM, 4, paths + 4,
                          (const tensor *const[]){ &t[4], &t[5], &t[6], &t[7] });
    report_fact_labeled(r, "device", "device", cuda ? "cuda" : "cpu (emulated)");
    report_fact_labeled(r, "pass", "pass", "forward saving L, D pre-pass, backward");
    for (int i = 0; i < 8; i++) tensor_free(&t[i]);
}

static void ch10_require_shape_of_q(const tensor *dout, const tensor *q)
{
    char a[96], b[96];
    bool same = dout->ndim == q->ndim;
    for (int i = 0; same && i < q->ndim; i++) same = dout->shape[i] == q->shape[i];
    if (!same)
        die_usage(PROGRAM, "--dout %s must have the shape of --q %s", shape_text(dout, a),
                  shape_text(q, b));
}

static void ch10_apply_file_options(const ch10_options *o, attn_params *p)
{
    p->causal = o->causal;
    if (o->scale > 0) p->scale = (float)o->scale;
    const char *problem = gpu_params_problem(p);
    if (problem) die_usage(PROGRAM, "%s", problem);
}

ch10_bwd_tensors ch10_bwd_tensors_new(const attn_params *p, uint32_t seed)
{
    const size_t qo = p->batch * p->heads * p->nq * p->d, kv = p->batch * p->heads * p->nk * p->d;
    const size_t sizes[CH10_BWD_TENSORS] = { qo, kv, kv, qo, qo, qo, kv, kv };
    ch10_bwd_tensors t = { .qo = qo, .kv = kv };
    for (int i = 0; i < CH10_BWD_TENSORS; i++) t.x[i] = fa_alloc(fa_mul(sizes[i], sizeof(float)));
    attn_draw_inputs(p, seed, t.x[0], t.x[1], t.x[2]);
    mt19937 g;
    mt_seed(&g, seed + 1);
    torch_randn(&g, t.x[3], qo);
    return t;
}

void ch10_bwd_tensors_free(ch10_bwd_tensors *t)
{
    for (int i = 0; i < CH10_BWD_TENSORS; i++) fa_free(t->x[i]);
}

void ch10_measure_backward(bool cuda, const attn_params *p, ch10_bwd_tensors *t,
                           ch10_bwd_run *run)
{
    double *exact[3] = { fa_alloc(fa_mul(t->qo, 8)), fa_alloc(fa_mul(t->kv, 8)),
                         fa_alloc(fa_mul(t->kv, 8)) };
    float *flash[4];
    const size_t count[3] = { t->qo, t->kv, t->kv };
    gpu_backward_reference(p, t->x[0], t->x[1], t->x[2], t->x[3], exact, run->naive,
                           run->flash, run->bound);
    for (int g = 0; g < 4; g++) flash[g] = fa_alloc(fa_mul(g == 2 || g == 3 ? t->kv : t->qo, 4));
    float *lse = fa_alloc(fa_mul(p->batch * p->heads * p->nq, sizeof(float)));
    attention_forward_lse(p, t->x[0], t->x[1], t->x[2], flash[0], lse, 1, NULL);
    attention_backward_flash(p, t->x[0], t->x[1], t->x[2], flash[0], lse, t->x[3], flash[1],
                             flash[2], flash[3], 1, NULL);
    fa_free(lse);
    ch10_run_backward(cuda, p, (const float *const *)t->x, t->x + 4, run->counts);
    run->vs_flash = 0.0;
    for (int g = 0; g < 3; g++) {
        run->gpu[g] = max_abs_diff_fd(t->x[5 + g], exact[g], count[g]);
        run->vs_flash = fmax(run->vs_flash, ch10_max_diff(t->x[5 + g], flash[1 + g], count[g]));
    }
    run->tc_ran = gpu_kernel_problem(GPU_TC, p) == NULL;
    run->tc_vs_flash = 0.0;
    if (run->tc_ran) {
        ch10_run_tc_backward(cuda, p, (const float *const *)t->x, t->x + 4);
        gpu_bf16_naive_backward_error(p, t->x[0], t->x[1], t->x[2], t->x[3], exact, run->plain);
        for (int g = 0; g < 3; g++) {
            run->tc[g] = max_abs_diff_fd(t->x[5 + g], exact[g], count[g]);
            run->tc_vs_flash = fmax(run->tc_vs_flash, ch10_max_diff(t->x[5 + g], flash[1 + g], count[g]));
        }
    }
    for (int g = 0; g < 3; g++) fa_free(exact[g]);
    for (int g = 0; g < 4; g++) fa_free(flash[g]);
}

static void ch10_backward_receipts(const ch10_options *o, bool cuda, report *r)
{
    ch10_options with_dim = *o;
    with_dim.dim = o->bwd_dim;
    attn_params p = ch10_seeded_params(&with_dim);
    ch10_bwd_run runs[2];
    ch10_bwd_tensors t = ch10_bwd_tensors_new(&p, (uint32_t)o->seed);
    for (int mask = 0; mask < 2; mask++) {
        p.causal = mask;
        runs[mask].causal = mask;
        ch10_measure_backward(cuda, &p, &t, &runs[mask]);
    }
    ch10_report_backward(r, &p, runs);
    ch10_bwd_tensors_free(&t);
}

static void ch10_backward_table(report *r, const ch10_bwd_run runs[2])
{
    static const char *const columns[] = { "mask", "backward", "dQ error", "dK error",
                                           "dV error", NULL };
    static const char *const names[6] = { "GPU kernels (fp32)", "chapter 9 flash (fp32)",
                                          "chapter 9 naive (fp32)", "bound (error analysis)",
                                          "GPU tensor cores (bf16)", "plain bf16 (yardstick)" };
    table *t = report_table(r, "backward", "Gradients' max error against the float64 "
                            "finite differences", columns);
    for (int m = 0; m < 2; m++) {
        const double *e[6] = { runs[m].gpu, runs[m].flash, runs[m].naive, runs[m].bound,
                               runs[m].tc, runs[m].plain };
        for (int w = 0; w < (runs[m].tc_ran ? 6 : 4); w++) {
            char a[32], b[32], c[32];
            table_rowf(t, "%s|%s|%s|%s|%s", m ? "causal" : "none", names[w],
                       fmt_num(a, e[w][0]), fmt_num(b, e[w][1]), fmt_num(c, e[w][2]));
        }
    }
}

double ch10_bwd_ratio(const ch10_bwd_run *run)
{
    double worst = 0.0;
    for (int g = 0; g < 3; g++) {
        worst = fmax(worst, run->bound[g] > 0 ? run->gpu[g] / run->bound[g]
                                              : run->gpu[g] == 0 ? 0.0 : INFINITY);
    }
    return worst;
}

static void ch10_report_backward(report *r, const attn_params *p, const ch10_bwd_run runs[2])
{
    char b[64];
    ch10_backward_table(r, runs);
    snprintf(b, sizeof b, "%zu", p->d);
    report_fact_labeled(r, "bwd_dim", "backward: head dimension", b);
    snprintf(b, sizeof b, "%.2g", fmax(ch10_bwd_ratio(&runs[0]), ch10_bwd_ratio(&runs[1])));
    report_fact_labeled(r, "bwd_worst_ratio", "backward: largest ratio to the bound", b);
    report_fact_labeled(r, "bwd_vs_flash", "backward: largest difference from chapter 9's flash",
                        fmt_num(b, fmax(runs[0].vs_flash, runs[1].vs_flash)));
    double tc_ratio = 0.0, tc_vs_flash = 0.0;
    for (int m = 0; m < 2 && runs[m].tc_ran; m++)
        for (int g = 0; g < 3; g++) {
            tc_ratio = fmax(tc_ratio, runs[m].tc[g] / runs[m].plain[g]);
            tc_vs_flash = fmax(tc_vs_flash, runs[m].tc_vs_flash);
        }
    snprintf(b, sizeof b, "%.2f", tc_ratio);
    report_fact_labeled(r, "bwd_tc_ratio", "backward: tensor cores' largest ratio to plain bf16",
                        runs[0].tc_ran ? b : "n/a");
    report_fact_labeled(r, "bwd_tc_vs_flash", "backward: tensor cores' largest difference from "
                        "chapter 9's flash", runs[0].tc_ran ? fmt_num(b, tc_vs_flash) : "n/a");
    report_fact_labeled(r, "bwd_blocks", "backward: blocks of the main kernel",
                        fmt_int(b, (long long)runs[0].counts[2].blocks));
    report_fact_labeled(r, "bwd_block_barriers", "backward: __syncthreads meetings",
                        fmt_int(b, (long long)runs[0].counts[2].block_barriers));
    report_fact_labeled(r, "bwd_dsum_warp_meetings", "backward: pre-pass warp meetings",
                        fmt_int(b, (long long)runs[0].counts[1].warp_meetings));
    report_fact_labeled(r, "bwd_atomics", "backward: atomic adds into dQ",
                        fmt_int(b, (long long)runs[0].counts[2].atomics));
}

static void ch10_bench_backward(const ch10_options *o, report *r)
{
    static const char *const columns[] = { "d", "N", "causal", "backward ms",
                                           "backward TFLOP/s", "tensor cores ms",
                                           "tensor cores TFLOP/s", NULL };
    table *t = report_table(r, "bench_bwd", "the backward on the device: fp32, then bf16 tensor cores", columns);
    FILE *data = o->data_dir ? data_file(o->data_dir, "ch10_bench_bwd.dat") : NULL;
    if (data) fprintf(data, "# d N causal bwd_ms bwd_tflops tc_ms tc_tflops (nan: not run)\n");
    for (size_t d = 64; d <= 128; d *= 2) {
        attn_params p = attn_default(1, 2048 / d, 16384, 16384, d);
        ch10_bwd_tensors x = ch10_bwd_tensors_new(&p, (uint32_t)o->seed);
        for (size_t n = 1024; n <= 16384; n *= 2)
            for (int causal = 0; causal < 2; causal++) {
                double ms = 0.0;
                char why[256];
                p.batch = 16384 / n; p.nq = p.nk = n; p.causal = causal;
                fprintf(stderr, "%s: bench backward d=%zu N=%zu causal=%d\n", PROGRAM, d, n, causal);
                if (gpu_backward_cuda(&p, x.x[0], x.x[1], x.x[2], x.x[3], x.x[4], x.x[5], x.x[6],
                                      x.x[7], (int)o->repeats, &ms, why) != 0)
                    die_usage(PROGRAM, "cuda: %s", why);
                const double gflop = 2.5 * ch10_flops(&p) / 1e9, tc_ms = ch10_time_tc_backward(o, &p, &x);
                char tc[2][32] = { "n/a", "n/a" };
                if (tc_ms > 0) {
                    snprintf(tc[0], sizeof tc[0], "%.3f", tc_ms);
                    snprintf(tc[1], sizeof tc[1], "%.1f", gflop / tc_ms);
                }
                table_rowf(t, "%zu|%zu|%s|%.3f|%.1f|%s|%s", d, n, causal ? "yes" : "no", ms,
                           gflop / ms, tc[0], tc[1]);
                if (data) fprintf(data, "%zu %zu %d %.6f %.6f %.6f %.6f\n", d, n, causal, ms, gflop / ms,
                                  tc_ms > 0 ? tc_ms : NAN, tc_ms > 0 ? gflop / tc_ms : NAN);
            }
        ch10_bwd_tensors_free(&x);
    }
    if (data) data_close(data);
}

static double ch10_time_tc_backward(const ch10_options *o, const attn_params *p,
                                    ch10_bwd_tensors *x)
{
    double ms = 0.0;
    char why[256];
    if (gpu_backward_tc_cuda(p, x->x[0], x->x[1], x->x[2], x->x[3], x->x[4], x->x[5], x->x[6],
                             x->x[7], (int)o->repeats, &ms, why) == 0)
        return ms;
    fprintf(stderr, "%s: tensor-core backward not timed: %s\n", PROGRAM, why);
    return 0.0;
}

int main(int argc, char **argv)
{
    ch10_options o = ch10_defaults();
    parse_ch10_options(argc, argv, &o);
    if (o.cuda_info) return ch10_cuda_info();
    ch10_kernel_named(o.kernel);
    report *r = report_new(PROGRAM, o.json);
    bool ok = true;
    if (o.bench) ok = ch10_bench(&o, r);
    else if (o.backward || o.dout_path || o.dq_path || o.dk_path || o.dv_path)
        ch10_run_backward_on_files(&o, r);
    else if (o.q_path || o.k_path || o.v_path || o.out_path) ch10_run_on_files(&o, r);
    else ch10_run_seeded(&o, r);
    report_finish(r, stdout);
    if (!ok) fprintf(stderr, "%s: the tensor-core kernel's output is out of bounds\n", PROGRAM);
    return ok ? 0 : 1;
}
