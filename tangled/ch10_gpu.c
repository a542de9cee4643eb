/* ch10_gpu.c — chapter 10's program: the GPU kernels, on a device or emulated.
   Tangled from chapters/ch10_gpu.nw. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "attention.h"
#include "gpu_attention.h"
#define PROGRAM "ch10_gpu"
typedef struct {
    const char *device, *kernel, *q_path, *k_path, *v_path, *out_path, *data_dir;
    bool causal, json, bench, cuda_info;
    long seed, batch, heads, seq, seq_k, dim, repeats;
    double scale;                      /* 0: the default 1/sqrt(d) */
} ch10_options;

#define CH10_BF16_PEAK 989.4   /* TFLOP/s: dense bf16, H100/H200 SXM datasheet */
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

static void ch10_report_tc(report *r, bool cuda, const attn_params *p, const tensor qkv[3]);
void ch10_measure_tc(bool cuda, const attn_params *p, const tensor qkv[3], ch10_tc_runs *runs);
static void ch10_report_ldmatrix(report *r, bool cuda, const emu_counts *c);
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
static void ch10_bench_dim(const ch10_options *o, size_t d, table *t, FILE *data);
ch10_options ch10_defaults(void)
{
    return (ch10_options){ .kernel = "fused", .seed = 0, .batch = 1, .heads = 1,
                           .seq = 100, .seq_k = 0, .dim = 64, .repeats = 5 };
}

static void parse_ch10_options(int argc, char **argv, ch10_options *o)
{
    const option opts[] = {
        { "device", OPT_STRING, &o->device, 0, 0, "cpu|cuda",
          "where the kernels run (default: cuda when usable, else cpu)" },
        { "kernel", OPT_STRING, &o->kernel, 0, 0, "naive|fused|tc",
          "the kernel --out runs (tc: bf16 tensor cores)" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "measure TFLOP/s on the CUDA device" },
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
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR",
          "write the benchmark table as DIR/ch10_bench.dat" },
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
    const bool cuda = ch10_use_cuda(o->device);
    ch10_draw(&p, (uint32_t)o->seed, qkv);
    ch10_measure(cuda, &p, qkv, runs);
    ch10_report_runs(r, cuda, &p, runs);
    ch10_report_tc(r, cuda, &p, qkv);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
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
    ch10_report_ldmatrix(r, cuda, &runs.counts);
}

unsigned ch10_tc_shared_loads(unsigned width, bool ldmatrix)
{
    return ldmatrix ? width / 4 + width / 4 : width + 2 * width;
}

static void ch10_report_ldmatrix(report *r, bool cuda, const emu_counts *c)
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
    else snprintf(b, sizeof b, "%g", gpu_tc_ldmatrix_per_warp_tile(c));
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

static attn_params ch10_params_from_tensors(const tensor *q, const tensor *k,
                                            const tensor *v)
{
    const int n = q->ndim;
    bool fit = n >= 2 && k->ndim == n && v->ndim == n && q->shape[n - 1] == k->shape[n - 1];
    for (int i = 0; fit && i < n; i++)
        fit = k->shape[i] == v->shape[i] && (i >= n - 2 || q->shape[i] == k->shape[i]);
    if (!fit)
        die_usage(PROGRAM, "--q, --k, --v do not fit together: expected (.., n, d), "
                  "(.., m, d), (.., m, d) with the same leading dimensions");
    return attn_default(n == 4 ? q->shape[0] : 1, n >= 3 ? q->shape[n - 3] : 1,
                        q->shape[n - 2], k->shape[n - 2], q->shape[n - 1]);
}

static void ch10_run_on_files(const ch10_options *o, report *r)
{
    if (!o->q_path || !o->k_path || !o->v_path || !o->out_path)
        die_usage(PROGRAM, "--q, --k, --v and --out go together");
    const gpu_kernel kernel = ch10_kernel_named(o->kernel);
    tensor qkv[3] = { npy_read_or_exit(PROGRAM, o->q_path),
                      npy_read_or_exit(PROGRAM, o->k_path),
                      npy_read_or_exit(PROGRAM, o->v_path) };
    attn_params p = ch10_params_from_tensors(&qkv[0], &qkv[1], &qkv[2]);
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

static double ch10_flops(const attn_params *p)
{
    const double f = 4.0 * (double)(p->batch * p->heads) * (double)p->nq * (double)p->nk *
                     (double)p->d;
    return p->causal ? f / 2 : f;
}

static void ch10_bench_point(const ch10_options *o, attn_params *p, const tensor qkv[3],
                             float *out[3], table *t, FILE *data)
{
    double ms[3] = { 0, 0, 0 };
    char why[256], a[32];
    for (int kernel = 0; kernel < 3; kernel++)
        if (gpu_attention_cuda((gpu_kernel)kernel, p, qkv[0].data, qkv[1].data,
                               qkv[2].data, out[kernel], (int)o->repeats, &ms[kernel], why))
            die_usage(PROGRAM, "cuda: %s", why);
    const double diff = ch10_max_diff(out[0], out[1], tensor_count(&qkv[0]));
    const double f = ch10_flops(p) / 1e9;
    table_rowf(t, "%zu|%zu|%s|%.3f|%.1f|%.3f|%.1f|%.3f|%.1f|%.0f%%|%s", p->d, p->nq,
               p->causal ? "yes" : "no", ms[0], f / ms[0], ms[1], f / ms[1], ms[2], f / ms[2],
               100 * f / ms[2] / CH10_BF16_PEAK, fmt_num(a, diff));
    if (data) fprintf(data, "%zu %zu %d %.6f %.6f %.6f %.6f %.6f %.6f\n", p->d, p->nq,
                      p->causal, ms[0], f / ms[0], ms[1], f / ms[1], ms[2], f / ms[2]);
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

static void ch10_bench(const ch10_options *o, report *r)
{
    static const char *const columns[] = { "d", "N", "causal", "naive ms", "naive TFLOP/s",
                                           "fused ms", "fused TFLOP/s", "tc ms", "tc TFLOP/s",
                                           "tc of peak", "max |diff|", NULL };
    char text[256];
    if (!gpu_cuda_device(text)) die_usage(PROGRAM, "--bench needs a CUDA device: %s", text);
    report_fact_labeled(r, "device", "device", text);
    table *t = report_table(r, "bench", "The kernels on the device (tc: bf16 tensor cores)",
                            columns);
    FILE *data = o->data_dir ? data_file(o->data_dir, "ch10_bench.dat") : NULL;
    if (data) fprintf(data, "# d N causal naive_ms naive_tflops fused_ms fused_tflops "
                      "tc_ms tc_tflops\n");
    for (size_t d = 64; d <= 128; d *= 2) ch10_bench_dim(o, d, t, data);
    if (data) data_close(data);
}

static void ch10_bench_dim(const ch10_options *o, size_t d, table *t, FILE *data)
{
    attn_params p = attn_default(1, 2048 / d, 16384, 16384, d);
    tensor qkv[3];
    float *out[3];
    ch10_draw(&p, (uint32_t)o->seed, qkv);
    for (int k = 0; k < 3; k++) out[k] = fa_alloc(fa_mul(tensor_count(&qkv[0]), sizeof(float)));
    for (size_t n = 1024; n <= 16384; n *= 2)
        for (int causal = 0; causal < 2; causal++) {
            p.batch = 16384 / n; p.nq = p.nk = n; p.causal = causal;
            fprintf(stderr, "%s: bench d=%zu N=%zu causal=%d\n", PROGRAM, d, n, causal);
            ch10_bench_point(o, &p, qkv, out, t, data);
        }
    for (int k = 0; k < 3; k++) fa_free(out[k]);
    for (int k = 0; k < 3; k++) tensor_free(&qkv[k]);
}

static int ch10_cuda_info(void)
{
    char text[256];
    const bool usable = gpu_cuda_device(text);
    printf("%s\n", text);
    return usable ? 0 : 1;
}

int main(int argc, char **argv)
{
    ch10_options o = ch10_defaults();
    parse_ch10_options(argc, argv, &o);
    if (o.cuda_info) return ch10_cuda_info();
    ch10_kernel_named(o.kernel);
    report *r = report_new(PROGRAM, o.json);
    if (o.bench) ch10_bench(&o, r);
    else if (o.q_path || o.k_path || o.v_path || o.out_path) ch10_run_on_files(&o, r);
    else ch10_run_seeded(&o, r);
    report_finish(r, stdout);
    return 0;
}
