/* ch08_fused_timing — counted, measured and benchmarked attention kernels.
   Tangled from chapters/app_timing.nw. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "harness/ladder.h"
#include "cpu/fused.h"
#include "cpu/backward.h"
#include "cpu/decode.h"
#include "cpu/amx_attention.h"
#include "cpu/workers.h"
#include "ch08_fused_timing.h"

#define CH08_PROGRAM "ch08_fused_timing"
enum { CH08_MAX_BLOCK = 4096, CH08_MAX_SEQ = 65536,
       COUNT_BLOCK = 128 };              /* the counted tables' default blocks */
typedef struct {
    const char *q_path, *k_path, *v_path, *out_path, *kernel, *isa;
    const char *data_dir, *python, *recorded, *traffic_run, *profile_run, *machine;
    bool causal, json, bench, quick;
    long window, block_q, block_k, count_block, seed, heads, seq, dim, threads, repeats;
    long max_seq, naive_max_seq, tiled_max_seq;
    long seq_q, seq_k, kv_heads, decode_max_seq;     /* decoding; 0: not asked */
    const char *cache;
    double scale;
    workers_crew *crew;       /* not an option: the run's threads, kept between calls */
} ch08_options;
static void apply_ch08_kernel_options(const ch08_options *o, attn_params *p);
static void report_ch08_file_run(report *r, const ch08_options *o, const tensor *q,
                            const attn_counts *c);
static size_t floats_bytes(size_t count);
static void bench_memory(const ch08_options *o);
static void run_decode_bench(const ch08_options *o, const ladder_profile *m);
static void decode_facts(report *r, decode_problem *t, const ladder_profile *m);
static ch08_options ch08_defaults(void)
{
    return (ch08_options){ .kernel = "fused", .isa = "auto",
                           .recorded = "chapters/recorded",
                           .block_q = 0, .block_k = 0, .count_block = COUNT_BLOCK,
                           .heads = 8, .seq = 1024,
                           .dim = 64, .threads = ladder_cpus(), .repeats = 3,
                           .max_seq = 16384, .naive_max_seq = 4096, .tiled_max_seq = 1024,
                           .decode_max_seq = DECODE_MAX_KEYS };
}
static void parse_ch08_options(int argc, char **argv, ch08_options *o)
{
    const option opts[] = {
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE", "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE", "write the output (.npy, the shape of --q)" },
        { "kernel", OPT_STRING, &o->kernel, 0, 0, "NAME", "fused, naive (OpenBLAS) or tiled (chapter 4)" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "window", OPT_INT, &o->window, 0, 1e9, "W", "sliding window of W keys (implies causal)" },
        { "block-q", OPT_INT, &o->block_q, 0, CH08_MAX_BLOCK, "N",
          "query rows per block (0: the fused kernel's choice; 128 for the others)" },
        { "block-k", OPT_INT, &o->block_k, 0, CH08_MAX_BLOCK, "N",
          "keys per block (0: the fused kernel's choice; 128 for the others)" },
        { "count-block", OPT_INT, &o->count_block, 1, CH08_MAX_BLOCK, "N",
          "block size (query rows and keys) of the counted tables" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "threads", OPT_INT, &o->threads, 1, 1024, "T", "threads of the fused and naive kernels" },
        { "isa", OPT_STRING, &o->isa, 0, 0, "NAME",
          "auto, avx2 or avx512 (decoding: or portable, or tiles, chapter 11's AMX)" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of the generated Q, K, V" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads of the ladder" },
        { "seq", OPT_INT, &o->seq, 1, 16384, "N", "sequence length of the ladder" },
        { "dim", OPT_INT, &o->dim, 1, 1024, "D", "head dimension of the ladder" },
        { "repeats", OPT_INT, &o->repeats, 1, 101, "R", "timed runs per measurement" },
        { "traffic-run", OPT_STRING, &o->traffic_run, 0, 0, "KERNEL",
          "run naive or fused once on the cachegrind problem, print nothing" },
        { "profile-run", OPT_STRING, &o->profile_run, 0, 0, "KERNEL",
          "run fused or backward once on the profile problem, print nothing" },
        { "bench", OPT_FLAG, &o->bench, 0, 0, NULL, "run the benchmark (minutes), results on stdout" },
        { "quick", OPT_FLAG, &o->quick, 0, 0, NULL, "benchmark only up to n = 4096, d = 64" },
        { "python", OPT_STRING, &o->python, 0, 0, "PATH", "a Python with torch: PyTorch's SDPA as a peer" },
        { "max-seq", OPT_INT, &o->max_seq, 512, CH08_MAX_SEQ, "N", "largest n of the benchmark" },
        { "naive-max-seq", OPT_INT, &o->naive_max_seq, 0, CH08_MAX_SEQ, "N",
          "largest n at which the benchmark runs the naive kernel" },
        { "tiled-max-seq", OPT_INT, &o->tiled_max_seq, 0, CH08_MAX_SEQ, "N",
          "largest n at which the benchmark runs chapter 4's kernel" },
        { "recorded", OPT_STRING, &o->recorded, 0, 0, "PATH",
          "the recorded benchmark to report: a file, or a folder of bench-*.txt" },
        { "seq-q", OPT_INT, &o->seq_q, 1, DECODE_MAX_ROWS, "N", "decoding: query rows per head, 1 to 16" },
        { "seq-k", OPT_INT, &o->seq_k, 1, DECODE_MAX_KEYS, "N", "decoding: keys of the cache, up to 131072" },
        { "kv-heads", OPT_INT, &o->kv_heads, 1, 64, "G", "decoding: K/V heads, dividing --heads" },
        { "cache", OPT_STRING, &o->cache, 0, 0, "TYPE", "decoding: the cache's numbers, fp32 or bf16" },
        { "decode-max-seq", OPT_INT, &o->decode_max_seq, 0, DECODE_MAX_KEYS, "N",
          "largest n_k of the benchmark's decoding (0: none)" },
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR",
          "read cachegrind's data from DIR, write figure data there" },
        { "machine", OPT_STRING, &o->machine, 0, 0, "FILE",
          "chapter 1's machine profile (default $FA_MACHINE; with neither, measure now)" },
    };
    options_parse(argc, argv, CH08_PROGRAM, "fused attention: counted, measured, benchmarked",
                  opts, sizeof opts / sizeof opts[0]);
}
static fused_config config_of(const ch08_options *o, int threads)
{
    fused_config cfg = { .threads = threads, .isa = FUSED_ISA_AUTO, .crew = o->crew,
                         .block_q = (size_t)o->block_q, .block_k = (size_t)o->block_k };
    if (strcmp(o->isa, "avx2") == 0) cfg.isa = FUSED_ISA_AVX2;
    else if (strcmp(o->isa, "avx512") == 0) cfg.isa = FUSED_ISA_AVX512;
    else if (strcmp(o->isa, "auto") != 0)
        die_usage(CH08_PROGRAM, "--isa must be auto, avx2 or avx512, not '%s'", o->isa);
    if (!fused_isa_available(cfg.isa))
        die_usage(CH08_PROGRAM, "the fused kernel has no %s copy here (the CPU lacks it, "
                  "or FA_ISA=%s caps it)", cfg.isa == FUSED_ISA_AUTO ? "AVX2 or AVX-512"
                  : fused_isa_name(cfg.isa), fa_isa_name(fa_isa_cap(CH08_PROGRAM)));
    return cfg;
}
typedef enum { KERNEL_NAIVE, KERNEL_TILED, KERNEL_FUSED } ch08_kernel;

static ch08_kernel kernel_of(const char *name)
{
    if (strcmp(name, "naive") == 0) return KERNEL_NAIVE;
    if (strcmp(name, "tiled") == 0) return KERNEL_TILED;
    if (strcmp(name, "fused") != 0)
        die_usage(CH08_PROGRAM, "--kernel must be fused, naive or tiled, not '%s'", name);
    return KERNEL_FUSED;
}
static attn_counts run_kernel(ch08_kernel kernel, const attn_params *p, const float *q,
                       const float *k, const float *v, float *o, const fused_config *cfg)
{
    attn_counts c = { 0 };
    if (kernel == KERNEL_NAIVE) attention_naive_blas(p, q, k, v, o, cfg->threads, &c);
    else if (kernel == KERNEL_TILED) attention_tiled(p, q, k, v, o, NULL);
    else attention_fused(p, q, k, v, o, cfg, &c);
    return c;
}
static size_t kernel_bytes(ch08_kernel kernel, const attn_params *p, const fused_config *cfg)
{
    if (kernel == KERNEL_NAIVE) return floats_bytes(fa_mul(p->nq, p->nk));
    if (kernel == KERNEL_TILED)
        return floats_bytes(fa_mul(p->block_q, p->block_k)
                            + fa_mul(p->block_q + p->block_k, p->d) + 2 * p->block_q);
    return attention_fused_bytes(p, cfg);
}
static void tiled_blocks(const ch08_options *o, attn_params *p)
{
    p->block_q = o->block_q > 0 ? (size_t)o->block_q : 128;
    p->block_k = o->block_k > 0 ? (size_t)o->block_k : 128;
}
static void run_ch08_on_files(const ch08_options *o, report *r)
{
    if (!o->q_path || !o->k_path || !o->v_path || !o->out_path)
        die_usage(CH08_PROGRAM, "--q, --k, --v and --out go together");
    const ch08_kernel kernel = kernel_of(o->kernel);
    const fused_config cfg = config_of(o, (int)o->threads);
    const char *const inputs[3] = { o->q_path, o->k_path, o->v_path };
    npy_reserve_outputs_or_exit(CH08_PROGRAM, &o->out_path, 1, inputs, 3);
    attn_params sized = attn_params_from_headers(CH08_PROGRAM, inputs);
    apply_ch08_kernel_options(o, &sized);
    const size_t heads = sized.batch * sized.heads;
    fa_require(floats_bytes(fa_mul(fa_mul(2 * heads, sized.nq + sized.nk), sized.d))
               + kernel_bytes(kernel, &sized, &cfg),
               "the inputs, the output and the kernel's workspace");
    tensor q = npy_read_or_exit(CH08_PROGRAM, o->q_path), k = npy_read_or_exit(CH08_PROGRAM, o->k_path),
           v = npy_read_or_exit(CH08_PROGRAM, o->v_path);
    attn_params p = attn_params_from_tensors(CH08_PROGRAM, &q, &k, &v);
    apply_ch08_kernel_options(o, &p);
    tensor out = tensor_new(q.ndim, q.shape);
    const attn_counts c = run_kernel(kernel, &p, q.data, k.data, v.data, out.data, &cfg);
    npy_write_or_exit(CH08_PROGRAM, o->out_path, &out);
    report_ch08_file_run(r, o, &q, &c);
    tensor_free(&q); tensor_free(&k); tensor_free(&v); tensor_free(&out);
}
static void apply_ch08_kernel_options(const ch08_options *o, attn_params *p)
{
    attn_apply_options(p, o->causal, o->window, 128, 128, o->scale);
    tiled_blocks(o, p);
    const char *problem = attn_params_problem(p);
    if (problem) die_usage(CH08_PROGRAM, "%s", problem);
}
static void report_ch08_file_run(report *r, const ch08_options *o, const tensor *q,
                            const attn_counts *c)
{
    char a[96];
    report_fact_labeled(r, "q_shape", "Q", shape_text(q, a));
    report_fact_labeled(r, "kernel", "kernel", o->kernel);
    report_fact_labeled(r, "flops", "operations counted", fmt_num(a, c->flops));
    report_fact_labeled(r, "output", "output written to", o->out_path);
}
enum { COUNT_HEADS = 8, COUNT_DIM = 64, COUNT_SIZES = 4 };
static const size_t COUNT_N[COUNT_SIZES] = { 512, 1024, 2048, 4096 };

attn_counts counted_fused(size_t n, bool causal, size_t block)
{
    attn_params p = attn_default(1, COUNT_HEADS, n, n, COUNT_DIM);
    p.causal = causal;
    p.block_q = p.block_k = block;
    const fused_config cfg = { .threads = 1, .count_only = true,
                               .block_q = block, .block_k = block };
    attn_counts c = { 0 };
    attention_fused(&p, NULL, NULL, NULL, NULL, &cfg, &c);
    return c;
}
attn_counts counted_naive(size_t n)
{
    const attn_params p = attn_default(1, COUNT_HEADS, n, n, COUNT_DIM);
    attn_counts c = { 0 };
    for (size_t h = 0; h < p.batch * p.heads; h++) count_naive_head(&c, &p);
    return c;
}
static void flops_table(report *r, size_t block)
{
    static const char *const cols[] = { "n", "naive GFLOP", "tiled GFLOP", "ratio",
                                        "causal tiled GFLOP", "causal ratio", NULL };
    char title[80];
    snprintf(title, sizeof title, "Counted operations, 8 heads, d = 64, blocks of %zu", block);
    table *t = report_table(r, "flops", title, cols);
    for (int i = 0; i < COUNT_SIZES; i++) {
        const attn_counts nv = counted_naive(COUNT_N[i]);
        const attn_counts tf = counted_fused(COUNT_N[i], false, block);
        const attn_counts tc = counted_fused(COUNT_N[i], true, block);
        table_rowf(t, "%zu|%.1f|%.1f|%.2fx|%.1f|%.2fx", COUNT_N[i], nv.flops / 1e9,
                   tf.flops / 1e9, tf.flops / nv.flops, tc.flops / 1e9, tc.flops / nv.flops);
    }
    const attn_counts nv = counted_naive(COUNT_N[0]), tf = counted_fused(COUNT_N[0], false, block);
    report_factf(r, "flop_ratio_noncausal", "%.2fx", tf.flops / nv.flops);
}
static double all_bytes(const attn_counts *c)
{
    return c->q_bytes + c->k_bytes + c->v_bytes + c->o_bytes + c->score_bytes;
}
static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }
static void traffic_table(report *r, size_t block)
{
    static const char *const cols[] = { "n", "naive scores MiB", "tiled scores MiB",
        "naive all MiB", "tiled all MiB", "ratio", "K/V reads", NULL };
    char title[80];
    snprintf(title, sizeof title, "Counted traffic, 8 heads, d = 64, blocks of %zu", block);
    table *t = report_table(r, "traffic", title, cols);
    for (int i = 0; i < COUNT_SIZES; i++) {
        const attn_counts nv = counted_naive(COUNT_N[i]);
        const attn_counts tf = counted_fused(COUNT_N[i], false, block);
        const double kv_size = 4.0 * COUNT_HEADS * (double)COUNT_N[i] * COUNT_DIM;
        table_rowf(t, "%zu|%.0f|%.0f|%.0f|%.0f|%.1fx|%.0fx", COUNT_N[i], mib(nv.score_bytes),
                   mib(tf.score_bytes), mib(all_bytes(&nv)), mib(all_bytes(&tf)),
                   all_bytes(&nv) / all_bytes(&tf), tf.k_bytes / kv_size);
    }
    const attn_counts n0 = counted_naive(COUNT_N[0]), t0 = counted_fused(COUNT_N[0], false, block);
    const attn_counts n1 = counted_naive(COUNT_N[COUNT_SIZES - 1]);
    const attn_counts t1 = counted_fused(COUNT_N[COUNT_SIZES - 1], false, block);
    report_factf(r, "count_last_n", "%zu", COUNT_N[COUNT_SIZES - 1]);
    report_factf(r, "naive_score_mib_last", "%.0f", mib(n1.score_bytes));
    report_factf(r, "traffic_ratio_first", "%.1fx", all_bytes(&n0) / all_bytes(&t0));
    report_factf(r, "traffic_ratio_last", "%.1fx", all_bytes(&n1) / all_bytes(&t1));
    report_factf(r, "count_heads", "%d", COUNT_HEADS);
    report_factf(r, "count_dim", "%d", COUNT_DIM);
    report_factf(r, "count_block", "%zu", block);
}
enum { CG_SEQ = 1024, CG_DIM = 16 };

static void traffic_run(const ch08_options *o)
{
    attn_params p = attn_default(1, 1, CG_SEQ, CG_SEQ, CG_DIM);
    p.block_q = p.block_k = COUNT_BLOCK;
    const size_t bytes = floats_bytes(CG_SEQ * CG_DIM);
    float *q = fa_alloc(bytes), *k = fa_alloc(bytes), *v = fa_alloc(bytes), *out = fa_alloc(bytes);
    attn_draw_inputs(&p, 0, q, k, v);
    fused_config cfg = config_of(o, 1);
    cfg.block_q = cfg.block_k = COUNT_BLOCK;
    run_kernel(kernel_of(o->traffic_run), &p, q, k, v, out, &cfg);
    fa_free(q); fa_free(k); fa_free(v); fa_free(out);
}
static size_t floats_bytes(size_t count) { return fa_mul(count, sizeof(float)); }
typedef struct { double refs, d1_misses, ll_misses; char geometry[160]; bool found; } cg_result;

static double cg_number(const char *line)      /* "==1== D1  misses:  1,234 (..." */
{
    const char *colon = strchr(line, ':');
    double x = 0;
    for (const char *c = colon ? colon + 1 : line; *c && *c != '('; c++)
        if (*c >= '0' && *c <= '9') x = 10 * x + (*c - '0');
    return x;
}
static cg_result read_cachegrind(const char *dir, const char *kernel)
{
    cg_result g = { 0 };
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/ch08_cachegrind_%s.txt", dir ? dir : ".", kernel);
    FILE *f = fopen(path, "r");
    if (!f) return g;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') sscanf(line, "# %159[^\n]", g.geometry);
        if (strstr(line, "D   refs:")) g.refs = cg_number(line);
        if (strstr(line, "D1  misses:")) g.d1_misses = cg_number(line);
        if (strstr(line, "LLd misses:")) { g.ll_misses = cg_number(line); g.found = true; }
    }
    fclose(f);
    return g;
}
static void cachegrind_row(table *t, report *r, const char *dir, const char *kernel)
{
    const cg_result g = read_cachegrind(dir, kernel);
    char key[64];
    snprintf(key, sizeof key, "cg_%s_ll_mib", kernel);
    if (!g.found) {
        table_rowf(t, "%s|not measured|-|-|-", kernel);
        report_fact(r, key, "(not measured)");
        return;
    }
    table_rowf(t, "%s|%.0f|%.0f|%.0f|%.1f", kernel, g.refs, g.d1_misses, g.ll_misses,
               mib(64.0 * g.ll_misses));
    report_factf(r, key, "%.1f", mib(64.0 * g.ll_misses));
}
static void cachegrind_table(report *r, const char *dir)
{
    static const char *const cols[] = { "kernel", "data refs", "D1 misses",
                                        "LL misses", "LL misses MiB", NULL };
    table *t = report_table(r, "cachegrind", "Cachegrind, one head, n = 1024, d = 16", cols);
    cachegrind_row(t, r, dir, "naive");
    cachegrind_row(t, r, dir, "fused");
    const cg_result g = read_cachegrind(dir, "fused");
    report_fact(r, "cachegrind_geometry", g.found ? g.geometry : "(not measured)");
    report_factf(r, "cg_seq", "%d", CG_SEQ);
    report_factf(r, "cg_dim", "%d", CG_DIM);
    report_factf(r, "cg_score_mib", "%.0f", mib(4.0 * CG_SEQ * CG_SEQ));
    report_factf(r, "cg_tensor_mib", "%.2f", mib(4.0 * 4.0 * CG_SEQ * CG_DIM));
}
enum { PR_SEQ = 1024, PR_DIM = 64 };

static void profile_run(const char *which)
{
    if (strcmp(which, "fused") != 0 && strcmp(which, "backward") != 0)
        die_usage(CH08_PROGRAM, "--profile-run must be fused or backward, not '%s'", which);
    const attn_params p = attn_default(1, 1, PR_SEQ, PR_SEQ, PR_DIM);
    const size_t bytes = floats_bytes(PR_SEQ * PR_DIM);
    float *t[8], *lse = fa_alloc(floats_bytes(PR_SEQ));
    for (int i = 0; i < 8; i++) t[i] = fa_alloc(bytes);
    attn_draw_inputs(&p, 0, t[0], t[1], t[2]);
    attn_draw_inputs(&p, 1, t[4], t[5], t[6]);                 /* t[4]: dO */
    if (strcmp(which, "fused") == 0) {
        attention_fused(&p, t[0], t[1], t[2], t[3],
                        &(fused_config){ .threads = 1, .isa = FUSED_ISA_AVX2 }, NULL);
    } else {
        attention_forward_lse(&p, t[0], t[1], t[2], t[3], lse, 1, NULL);
        attention_backward_flash(&p, t[0], t[1], t[2], t[3], lse, t[4], t[5], t[6], t[7], 1,
                                 NULL);
    }
    for (int i = 0; i < 8; i++) fa_free(t[i]);
    fa_free(lse);
}
static const char *const MIX_KINDS[] = { "multiply-add", "load", "store", "other-vector",
                                         "scalar", "libraries" };
enum { MIX_KIND_COUNT = 6 };
typedef struct { double count[MIX_KIND_COUNT], total; } instruction_mix;

static instruction_mix read_mix(const char *dir, const char *run)
{
    instruction_mix m = { 0 };
    char path[4096], line[256], r[32], kind[32];
    double n;
    snprintf(path, sizeof path, "%s/ch08_profile.txt", dir ? dir : ".");
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%31s %31s %lf", r, kind, &n) == 3 && strcmp(r, run) == 0)
            for (int k = 0; k < MIX_KIND_COUNT; k++)
                if (strcmp(kind, MIX_KINDS[k]) == 0) { m.count[k] += n; m.total += n; }
    if (f) fclose(f);
    return m;
}
static void mix_row(table *t, const char *name, const instruction_mix *m, double flops)
{
    char cells[MIX_KIND_COUNT][16];
    for (int k = 0; k < MIX_KIND_COUNT; k++)
        snprintf(cells[k], sizeof cells[k], "%.1f%%", 100.0 * m->count[k] / m->total);
    table_rowf(t, "%s|%.1f M|%.2f|%s|%s|%s|%s|%s|%s", name, m->total / 1e6,
               m->total / (flops / 16.0), cells[0], cells[1], cells[2], cells[3], cells[4],
               cells[5]);
}
static void profile_table(report *r, const char *dir)
{
    static const char *const cols[] = { "kernel", "instructions", "per multiply-add needed",
        "multiply-add", "load", "store", "other vector", "scalar", "libraries", NULL };
    const instruction_mix fwd = read_mix(dir, "fused"), bwd = read_mix(dir, "backward");
    const double flops = 4.0 * PR_SEQ * PR_SEQ * PR_DIM;
    table *t = report_table(r, "profile", "Executed instructions by kind, AVX2 copy, "
                            "one head, n = 1024, d = 64", cols);
    if (fwd.total > 0) mix_row(t, "fused forward", &fwd, flops);
    if (bwd.total > 0) mix_row(t, "flash backward", &bwd, 2.5 * flops);
    char say[512] = "(not measured: the build found no profile)";
    if (fwd.total > 0 && bwd.total > 0)
        snprintf(say, sizeof say, "Multiply-adds are %.0f%% of the forward's instructions and "
                 "%.0f%% of the backward's; loads and broadcasts %.0f%% and %.0f%%; scalar "
                 "instructions (loop counters, addresses, branches) %.0f%% and %.0f%%",
                 100 * fwd.count[0] / fwd.total, 100 * bwd.count[0] / bwd.total,
                 100 * fwd.count[1] / fwd.total, 100 * bwd.count[1] / bwd.total,
                 100 * fwd.count[4] / fwd.total, 100 * bwd.count[4] / bwd.total);
    report_fact(r, "profile_summary", say);
}
typedef struct { double median, fastest, slowest; int runs; } timing;

static timing time_kernel(ch08_kernel kernel, const attn_params *p, const tensor qkv[3],
                          float *o, const fused_config *cfg, int warmup, int repeats)
{
    double seconds[128];
    const int n = repeats < 128 ? repeats : 128;
    for (int i = 0; i < warmup + n; i++) {
        const double start = now_seconds();
        run_kernel(kernel, p, qkv[0].data, qkv[1].data, qkv[2].data, o, cfg);
        if (i >= warmup) seconds[i - warmup] = now_seconds() - start;
    }
    timing t = { .fastest = seconds[0], .slowest = seconds[0], .runs = n };
    for (int i = 1; i < n; i++) {
        if (seconds[i] < t.fastest) t.fastest = seconds[i];
        if (seconds[i] > t.slowest) t.slowest = seconds[i];
    }
    t.median = median_of(seconds, (size_t)n);
    return t;
}
typedef struct {
    const char *name, *key;
    ch08_kernel kernel;
    bool all_threads;
    fused_isa isa;            /* FUSED_ISA_AUTO: the program's --isa */
    size_t block;             /* 0: the kernel's own blocks */
} rung;
static const rung RUNGS[] = {
    { "naive, OpenBLAS", "naive_1", KERNEL_NAIVE, false, FUSED_ISA_AUTO, 0 },
    { "naive, OpenBLAS", "naive_all", KERNEL_NAIVE, true, FUSED_ISA_AUTO, 0 },
    { "tiled, chapter 4", "tiled_1", KERNEL_TILED, false, FUSED_ISA_AUTO, 0 },
    { "fused, AVX2, 64 x 64", "fused_avx2_64", KERNEL_FUSED, false, FUSED_ISA_AVX2, 64 },
    { "fused, AVX2", "fused_avx2", KERNEL_FUSED, false, FUSED_ISA_AVX2, 0 },
    { "fused", "fused_1", KERNEL_FUSED, false, FUSED_ISA_AUTO, 0 },
    { "fused", "fused_all", KERNEL_FUSED, true, FUSED_ISA_AUTO, 0 },
};
enum { RUNG_COUNT = sizeof RUNGS / sizeof RUNGS[0] };
static attn_params ladder_params(const ch08_options *o)
{
    attn_params p = attn_default(1, (size_t)o->heads, (size_t)o->seq, (size_t)o->seq,
                                 (size_t)o->dim);
    tiled_blocks(o, &p);
    return p;
}

static void draw_tensors(const attn_params *p, uint32_t seed, tensor qkv[3])
{
    const size_t shape[4] = { p->batch, p->heads, p->nq, p->d };
    for (int i = 0; i < 3; i++) qkv[i] = tensor_new(4, shape);
    attn_draw_inputs(p, seed, qkv[0].data, qkv[1].data, qkv[2].data);
}
static double first_head_error(const attn_params *p, const tensor qkv[3], const float *o)
{
    attn_params one = *p;
    one.batch = one.heads = 1;
    double *exact = fa_alloc(fa_mul(p->nq * p->d, sizeof(double)));
    attention_reference(&one, qkv[0].data, qkv[1].data, qkv[2].data, exact);
    const double err = max_abs_diff_fd(o, exact, p->nq * p->d);
    fa_free(exact);
    return err;
}
typedef struct { double gflops, intensity, seconds, spread; } rung_point;

static rung_point ladder_row(table *t, report *r, const ch08_options *o,
                               const attn_params *p, const tensor qkv[3], float *out,
                               const rung *g, const ladder_profile *machine)
{
    const int threads = g->all_threads ? (int)o->threads : 1;
    fused_config cfg = config_of(o, threads);
    if (g->isa != FUSED_ISA_AUTO) cfg.isa = g->isa;
    if (g->block) cfg.block_q = cfg.block_k = g->block;
    const attn_counts c = g->kernel == KERNEL_NAIVE
        ? run_kernel(KERNEL_NAIVE, p, qkv[0].data, qkv[1].data, qkv[2].data, out, &cfg)
        : run_kernel(KERNEL_FUSED, p, NULL, NULL, NULL, NULL,
                     &(fused_config){ .threads = 1, .count_only = true });
    const timing tm = time_kernel(g->kernel, p, qkv, out, &cfg, 1, (int)o->repeats);
    const rung_point pt = { c.flops / tm.median / 1e9, c.flops / all_bytes(&c), tm.median,
                            tm.slowest / tm.fastest };
    const double peak = ladder_peak_for(machine, threads);
    char med[32], err[32], pct[32], key[64];
    table_rowf(t, "%s|%d|%s|%.4f-%.4f|%.1f|%s|%s", g->name, threads, fmt_num(med, tm.median),
               tm.fastest, tm.slowest, pt.gflops,
               peak > 0 ? fmt_pct(pct, pt.gflops / peak) : "-",   /* NaN > 0 is false */
               fmt_num(err, first_head_error(p, qkv, out)));
    snprintf(key, sizeof key, "gflops_%s", g->key);
    report_factf(r, key, "%.1f", pt.gflops);
    return pt;
}
static int rung_of(const char *key);
typedef struct { double xmin, xmax, ymin, ymax; } plot_ranges;
static plot_ranges roofline_ranges(const ladder_profile *m, const rung_point pts[RUNG_COUNT]);
static double axis_fraction(double x, double lo, double hi);
static double axis_value(double f, double lo, double hi);
static int rung_label(char *buf, size_t size, const rung *g, long threads);
static void report_ladder_noise(report *r, const rung_point pts[RUNG_COUNT], ladder_noise n);
static void ladder_notes(report *r, const ch08_options *o, const rung_point pts[RUNG_COUNT],
                         const ladder_profile *m);
static void write_roofline(const char *dir, const ch08_options *o, const ladder_profile *m,
                           const rung_point pts[RUNG_COUNT])
{
    const plot_ranges g = roofline_ranges(m, pts);
    double u[RUNG_COUNT], v[RUNG_COUNT];
    int chars[RUNG_COUNT];
    char label[RUNG_COUNT][64];
    label_place at[RUNG_COUNT];
    for (int i = 0; i < RUNG_COUNT; i++) {
        chars[i] = rung_label(label[i], sizeof label[i], &RUNGS[i], o->threads);
        u[i] = axis_fraction(pts[i].intensity, g.xmin, g.xmax);
        v[i] = axis_fraction(pts[i].gflops, g.ymin, g.ymax);
    }
    place_labels(u, v, chars, RUNG_COUNT, at);
    FILE *f = data_file(dir, "ch08_roofline.dat");
    fprintf(f, "# intensity gflops label label_x label_y left_of_point moved\n");
    for (int i = 0; i < RUNG_COUNT; i++)
        fprintf(f, "%.6g %.6g \"%s\" %.6g %.6g %d %d\n", pts[i].intensity, pts[i].gflops,
                label[i], axis_value(at[i].u, g.xmin, g.xmax), axis_value(at[i].v, g.ymin, g.ymax),
                at[i].left_of_point, at[i].moved);
    fprintf(f, "\n\n# roof: level gbs_one gbs_all peak_one peak_all\n");
    for (int l = 0; l < m->nlevels; l++)
        fprintf(f, "\"%s\" %.6g %.6g %.6g %.6g\n", m->level[l].name, m->level[l].gbs_one,
                m->level[l].gbs_all, m->fma_gflops_one, m->fma_gflops_all);
    fprintf(f, "\n\n# ranges: xmin xmax ymin ymax\n%.6g %.6g %.6g %.6g\n", g.xmin, g.xmax,
            g.ymin, g.ymax);
    data_close(f);
}
static const char *step_sentence(char *buf, size_t size, double now, double before,
                                 const char *what, const char *than)
{
    const double x = now / before;
    snprintf(buf, size, "%s ran %.2f times as fast as %s (%s)", what, x, than,
             x >= 1.05 ? "a gain" : x > 0.95 ? "within the noise of a busy machine" : "a loss");
    return buf;
}
static void ladder_table(report *r, const ch08_options *o, const ladder_profile *machine)
{
    static const char *const cols[] = { "kernel", "threads", "median s", "min-max s",
                                        "GFLOP/s", "% of peak", "max error", NULL };
    table *t = report_table(r, "ladder", "The ladder, no mask", cols);
    const attn_params p = ladder_params(o);
    tensor qkv[3];
    draw_tensors(&p, (uint32_t)o->seed, qkv);
    float *out = fa_alloc(floats_bytes(tensor_count(&qkv[0])));
    rung_point pts[RUNG_COUNT];
    const ladder_sample before = ladder_sample_now();
    for (int i = 0; i < RUNG_COUNT; i++)
        pts[i] = ladder_row(t, r, o, &p, qkv, out, &RUNGS[i], machine);
    report_ladder_noise(r, pts, ladder_noise_between(before, ladder_sample_now()));
    report_factf(r, "ladder_shape", "1 x %ld x %ld x %ld", o->heads, o->seq, o->dim);
    report_factf(r, "ladder_repeats", "%ld", o->repeats);
    report_factf(r, "intensity_naive", "%.1f", pts[rung_of("naive_1")].intensity);
    report_factf(r, "intensity_fused", "%.0f", pts[rung_of("fused_1")].intensity);
    report_fact(r, "step_blocks", step_sentence((char[160]){ 0 }, 160, pts[4].gflops, pts[3].gflops,
                                                "the kernel's own blocks", "64 x 64 blocks"));
    report_fact(r, "step_isa", step_sentence((char[160]){ 0 }, 160, pts[5].gflops, pts[4].gflops,
                                             "the widest copy", "the AVX2 copy"));
    report_fact(r, "isa", fused_isa_name(fused_isa_chosen(config_of(o, 1).isa)));
    if (o->data_dir && machine->nlevels > 0) write_roofline(o->data_dir, o, machine, pts);
    ladder_notes(r, o, pts, machine);
    fa_free(out);
    for (int i = 0; i < 3; i++) tensor_free(&qkv[i]);
}
static ladder_profile machine_of(const ch08_options *o, report *r)
{
    ladder_profile m;
    char err[256];
    const int got = ladder_profile_for(o->machine, o->data_dir, (int)o->threads,
                                       o->data_dir != NULL, &m, err, sizeof err);
    if (got < 0) die_usage(CH08_PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    report_factf(r, "machine", "%s, %d CPUs", m.cpu_model, m.cpus);
    char peak[64];
    report_fact(r, "peak_one", ladder_peak_text(peak, &m, 1));
    report_fact(r, "peak_all", ladder_peak_text(peak, &m, (int)o->threads));
    report_fact(r, "peak_source", got == 0 ? "chapter 1's measurement, from the same build"
                                           : "measured by this program as it started");
    return m;
}
static int rung_of(const char *key)
{
    for (int i = 0; i < RUNG_COUNT; i++)
        if (strcmp(RUNGS[i].key, key) == 0) return i;
    die_usage(CH08_PROGRAM, "no rung %s", key);
    return 0;
}
#define CH08_SPREAD_LIMIT 1.25
static void report_ladder_noise(report *r, const rung_point pts[RUNG_COUNT], ladder_noise n)
{
    double widest = 1;
    for (int i = 0; i < RUNG_COUNT; i++)
        if (pts[i].spread > widest) widest = pts[i].spread;
    const bool busy = ladder_busy(n, widest, CH08_SPREAD_LIMIT);
    char note[320];
    report_fact(r, "busy", busy ? "yes" : "no");
    report_factf(r, "others_cpu", "%.0f%%", 100 * n.others);
    report_fact(r, "noise_note", ladder_noise_note(note, sizeof note, "the ladder's timings",
                                                   n, widest, busy));
}
static void threads_note(report *r, const ch08_options *o, const rung_point pts[RUNG_COUNT])
{
    char fused[64], naive[64], note[320];
    snprintf(note, sizeof note, "On this machine, on %ld threads, the fused kernel %s on "
             "one, and naive attention on OpenBLAS %s on one.", o->threads,
             ladder_compare_times(fused, sizeof fused, pts[rung_of("fused_all")].seconds,
                           pts[rung_of("fused_1")].seconds),
             ladder_compare_times(naive, sizeof naive, pts[rung_of("naive_all")].seconds,
                           pts[rung_of("naive_1")].seconds));
    report_fact(r, "threads_note", note);
}
static void tiled_note(report *r, const rung_point pts[RUNG_COUNT])
{
    char tiled[64], fused[64], note[320];
    const double t = pts[rung_of("tiled_1")].seconds;
    snprintf(note, sizeof note, "On one thread it %s naive attention on OpenBLAS, and the "
             "fused kernel, the same walk over the same blocks, %s it.",
             ladder_compare_times(tiled, sizeof tiled, t, pts[rung_of("naive_1")].seconds),
             ladder_compare_times(fused, sizeof fused, pts[rung_of("fused_1")].seconds, t));
    report_fact(r, "tiled_note", note);
}
const char *roof_place(char *buf, size_t size, double i, double one, double all)
{
    char ridges[96];
    snprintf(ridges, sizeof ridges, "the ridge of one core (%.1f) and of all cores (%.1f)",
             one, all);
    if (i > one && i > all)
        snprintf(buf, size, "right of %s, under the flat roofs, where only the arithmetic "
                 "peak bounds it", ridges);
    else if (i <= one && i <= all)
        snprintf(buf, size, "left of %s, under the sloped lines, where memory bandwidth "
                 "bounds it", ridges);
    else
        snprintf(buf, size, "between %s: under the flat roof of %s and the sloped line of "
                 "%s", ridges, i > one ? "one core" : "all cores",
                 i > one ? "all cores" : "one core");
    return buf;
}
static double roof_share(const rung_point *pt, double peak, double gbs)
{
    const double allowed = pt->intensity * gbs < peak ? pt->intensity * gbs : peak;
    return pt->gflops / allowed;
}
static void roofline_note(report *r, const ladder_profile *m, const rung_point pts[RUNG_COUNT])
{
    const ladder_level *dram = &m->level[m->nlevels - 1];
    const double one = m->fma_gflops_one / dram->gbs_one, all = m->fma_gflops_all / dram->gbs_all;
    const rung_point *n1 = &pts[rung_of("naive_1")], *na = &pts[rung_of("naive_all")];
    const rung_point *f1 = &pts[rung_of("fused_1")], *fa = &pts[rung_of("fused_all")];
    char naive[256], fused[256], note[1024];
    snprintf(note, sizeof note, "Naive attention's counted intensity is %.1f operations per "
             "byte, %s; it reached %.0f%% of what its roof allows on one core and %.0f%% on "
             "all. The tiled kernels reach %.0f operations per byte, %s; the fused kernel "
             "reached %.0f%% of its roof on one core and %.0f%% on all.", n1->intensity,
             roof_place(naive, sizeof naive, n1->intensity, one, all),
             100 * roof_share(n1, m->fma_gflops_one, dram->gbs_one),
             100 * roof_share(na, m->fma_gflops_all, dram->gbs_all), f1->intensity,
             roof_place(fused, sizeof fused, f1->intensity, one, all),
             100 * roof_share(f1, m->fma_gflops_one, dram->gbs_one),
             100 * roof_share(fa, m->fma_gflops_all, dram->gbs_all));
    report_fact(r, "roofline_note", note);
}
static void ladder_notes(report *r, const ch08_options *o, const rung_point pts[RUNG_COUNT],
                         const ladder_profile *m)
{
    threads_note(r, o, pts);
    tiled_note(r, pts);
    if (m->nlevels > 0) roofline_note(r, m, pts);
    else report_fact(r, "roofline_note", "(no bandwidths measured: no roofline)");
}
#define LABEL_HEIGHT 0.065   /* one line of the labels' font        */
#define LABEL_CHAR   0.019   /* one character's width                */
#define LABEL_GAP    0.03    /* between a point and its label        */
#define POINT_HALF   0.022   /* half the size of a point's marker    */
#define LABELS_MAX   32
static bool boxes_meet(plot_box a, plot_box b)
{
    return a.u0 < b.u1 && b.u0 < a.u1 && a.v0 < b.v1 && b.v0 < a.v1;
}
static bool box_free(plot_box b, const plot_box placed[], int count)
{
    if (b.u0 < 0 || b.u1 > 1 || b.v0 < 0 || b.v1 > 1) return false;
    for (int i = 0; i < count; i++)
        if (boxes_meet(b, placed[i])) return false;
    return true;
}
plot_box label_box(label_place l, int chars)
{
    const double w = chars * LABEL_CHAR;
    return (plot_box){ l.left_of_point ? l.u - w : l.u, l.v - LABEL_HEIGHT / 2,
                       l.left_of_point ? l.u : l.u + w, l.v + LABEL_HEIGHT / 2 };
}
void place_labels(const double u[], const double v[], const int chars[], int count,
                  label_place out[])
{
    plot_box placed[2 * LABELS_MAX];
    int used = 0;
    if (count > LABELS_MAX) count = LABELS_MAX;
    for (int i = 0; i < count; i++)
        placed[used++] = (plot_box){ u[i] - POINT_HALF, v[i] - POINT_HALF,
                                     u[i] + POINT_HALF, v[i] + POINT_HALF };
    for (int i = 0; i < count; i++) {
        out[i] = (label_place){ u[i] + LABEL_GAP, v[i], false, false };
        for (int step = 0; step < 60; step++) {
            const double dv = ((step + 1) / 2) * LABEL_HEIGHT * (step % 2 ? 1 : -1);
            const label_place right = { u[i] + LABEL_GAP, v[i] + dv, false, step > 0 };
            const label_place left = { u[i] - LABEL_GAP, v[i] + dv, true, step > 0 };
            if (box_free(label_box(right, chars[i]), placed, used)) { out[i] = right; break; }
            if (box_free(label_box(left, chars[i]), placed, used)) { out[i] = left; break; }
        }
        placed[used++] = label_box(out[i], chars[i]);
    }
}
static plot_ranges roofline_ranges(const ladder_profile *m, const rung_point pts[RUNG_COUNT])
{
    plot_ranges g = { 0.1, 1000, m->level[m->nlevels - 1].gbs_one * 0.1, m->fma_gflops_all * 1.2 };
    for (int i = 0; i < RUNG_COUNT; i++) {
        if (pts[i].intensity < g.xmin) g.xmin = pts[i].intensity;
        if (pts[i].intensity > g.xmax) g.xmax = pts[i].intensity;
        if (pts[i].gflops < g.ymin) g.ymin = pts[i].gflops;
    }
    return (plot_ranges){ pow(10, floor(log10(g.xmin))), pow(10, ceil(log10(g.xmax))),
                          pow(10, floor(log10(g.ymin))), pow(10, ceil(log10(g.ymax))) };
}
static double axis_fraction(double x, double lo, double hi)
{
    return (log10(x) - log10(lo)) / (log10(hi) - log10(lo));
}

static double axis_value(double f, double lo, double hi)
{
    return pow(10, log10(lo) + f * (log10(hi) - log10(lo)));
}
static int rung_label(char *buf, size_t size, const rung *g, long threads)
{
    const int name = g->kernel == KERNEL_FUSED ? (int)strlen(g->name)
                                               : (int)strcspn(g->name, ",");
    if (!g->all_threads) return snprintf(buf, size, "%.*s, 1 core", name, g->name);
    return snprintf(buf, size, "%.*s, %ld cores", name, g->name, threads);
}
typedef struct {
    char kernel[16];
    long n, d, threads;
    int causal;
    timing t;
    double gflops;            /* NaN when not run */
} bench_result;
enum { BENCH_HEADS = 8 };
static double bench_flops(long n, long d, int causal)
{
    return (causal ? 2.0 : 4.0) * BENCH_HEADS * (double)n * (double)n * (double)d;
}
enum { BLAS_SPIN_WAIT_US = 300000 };   /* OpenBLAS's idle threads spin, then sleep */
static int bench_repeats(long n)
{
    return n <= 2048 ? 5 : n <= 4096 ? 3 : 1;
}
typedef struct { long n, d, threads; int causal; } bench_config;

static size_t bench_configs(const ch08_options *o, bench_config *out, size_t max)
{
    const long dims[2] = { 64, 128 }, threads[2] = { 1, o->threads };
    const long last_n = o->quick && o->max_seq > 4096 ? 4096 : o->max_seq;
    size_t count = 0;
    for (int di = 0; di < (o->quick ? 1 : 2); di++)
        for (int causal = 0; causal <= 1; causal++)
            for (long n = 512; n <= last_n; n *= 2)
                for (int ti = 0; ti < (o->threads > 1 ? 2 : 1); ti++)
                    if (count < max)
                        out[count++] = (bench_config){ n, dims[di], threads[ti], causal };
    return count;
}
static size_t torch_command(const ch08_options *o, const bench_config *cfg, size_t count,
                            char *cmd, size_t size)
{
    if (strchr(o->python, '\'')) die_usage(CH08_PROGRAM, "--python: a path without quotes, please");
    size_t used = (size_t)snprintf(cmd, size, "'%s' tangled/ch08_torch_peer.py %d", o->python,
                                   BENCH_HEADS);
    for (size_t i = 0; i < count && used < size; i++) {
        const long n = cfg[i].n;
        used += (size_t)snprintf(cmd + used, size - used, " %ld,%ld,%d,%ld,%d,%d", n,
                                 cfg[i].d, cfg[i].causal, cfg[i].threads,
                                 bench_repeats(n), n <= 4096);
    }
    return used;
}
static size_t run_torch(const ch08_options *o, const bench_config *cfg, size_t count,
                        bench_result *out)
{
    char cmd[16384], line[512];
    if (torch_command(o, cfg, count, cmd, sizeof cmd) >= sizeof cmd)
        die_usage(CH08_PROGRAM, "the PyTorch command line is too long");
    FILE *p = popen(cmd, "r");
    if (!p) die_usage(CH08_PROGRAM, "cannot run %s", o->python);
    size_t got = 0;
    while (fgets(line, sizeof line, p) && got < count) {
        bench_result b = { .kernel = "torch" };
        if (line[0] == '#') { printf("%s", line); continue; }
        if (sscanf(line, "%ld %ld %d %ld %d %lf %lf %lf", &b.n, &b.d, &b.causal, &b.threads,
                   &b.t.runs, &b.t.median, &b.t.fastest, &b.t.slowest) != 8) continue;
        b.gflops = bench_flops(b.n, b.d, b.causal) / b.t.median / 1e9;
        out[got++] = b;
    }
    pclose(p);
    return got;
}
static size_t bench_ours(const ch08_options *o, const bench_config *c, const tensor qkv[3],
                         float *out, bench_result *res)
{
    attn_params p = attn_default(1, BENCH_HEADS, (size_t)c->n, (size_t)c->n, (size_t)c->d);
    p.causal = c->causal;
    tiled_blocks(o, &p);
    const fused_config cfg = config_of(o, (int)c->threads);
    size_t count = 0;
    for (int k = KERNEL_NAIVE; k <= KERNEL_FUSED; k++) {
        if (k == KERNEL_NAIVE && c->n > o->naive_max_seq) continue;
        if (k == KERNEL_TILED && (c->threads != 1 || c->n > o->tiled_max_seq)) continue;
        bench_result *b = &res[count++];
        *b = (bench_result){ .n = c->n, .d = c->d, .causal = c->causal, .threads = c->threads };
        snprintf(b->kernel, sizeof b->kernel, "%s", k == KERNEL_NAIVE ? "naive"
                 : k == KERNEL_TILED ? "tiled" : "fused");
        b->t = time_kernel((ch08_kernel)k, &p, qkv, out, &cfg, c->n <= 4096, bench_repeats(c->n));
        b->gflops = bench_flops(c->n, c->d, c->causal) / b->t.median / 1e9;
        fprintf(stderr, "bench: %s n=%ld d=%ld causal=%d threads=%ld: %.3f s\n", b->kernel,
                c->n, c->d, c->causal, c->threads, b->t.median);
        if (k == KERNEL_NAIVE && c->threads > 1) usleep(BLAS_SPIN_WAIT_US);
    }
    return count;
}
static void print_result(const bench_result *b, double peak, const bench_result *naive,
                         const bench_result *torch)
{
    char xn[32] = "-", xt[32] = "-";
    if (naive) snprintf(xn, sizeof xn, "%.2f", b->gflops / naive->gflops);
    if (torch) snprintf(xt, sizeof xt, "%.2f", b->gflops / torch->gflops);
    printf("%s %s %ld %ld %d %ld %d %.6f %.6f %.6f %.2f %.1f %s %s\n", CH08_PROGRAM, b->kernel,
           b->n, b->d, b->causal, b->threads, b->t.runs, b->t.median, b->t.fastest,
           b->t.slowest, b->gflops, 100.0 * b->gflops / peak, xn, xt);
    fflush(stdout);
}
static const bench_result *find_result(const bench_result *r, size_t count, const char *kernel,
                                       const bench_result *like)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(r[i].kernel, kernel) == 0 && r[i].n == like->n && r[i].d == like->d
            && r[i].causal == like->causal && r[i].threads == like->threads)
            return &r[i];
    return NULL;
}
static void *note_start(void *started)
{
    *(double *)started = now_seconds();
    return NULL;
}

static spread thread_start_after_idle(int starts, bool bound)
{
    double wait[64], started[2] = { 0, 0 };
    for (int i = 0; i < starts && i < 64; i++) {
        pthread_t id[2];
        usleep(20000);
        const double t0 = now_seconds();
        if (bound) workers_start(id, 2, note_start, started, sizeof started[0], CH08_PROGRAM);
        else if (pthread_create(&id[1], NULL, note_start, &started[1]) != 0)
            die_usage(CH08_PROGRAM, "cannot start a thread");
        while (now_seconds() < t0 + 0.005) continue;     /* the caller computes */
        pthread_join(id[1], NULL);
        wait[i] = started[1] - t0;
    }
    return spread_of(wait, (size_t)(starts < 64 ? starts : 64));
}
static void run_bench(const ch08_options *o)
{
    static bench_config cfg[256];
    static bench_result torch[256], ours[8];
    const size_t count = bench_configs(o, cfg, 256);
    ladder_profile m;
    char err[256];
    if (ladder_profile_for(o->machine, NULL, (int)o->threads, false, &m, err, sizeof err) < 0)
        die_usage(CH08_PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    const double peak_one = ladder_peak_for(&m, 1), peak_all = ladder_peak_for(&m, (int)o->threads);
    char model[128];
    ladder_cpu_model(model, sizeof model);
    const attn_params chosen = fused_blocks(&(attn_params){ .batch = 1, .heads = BENCH_HEADS,
        .nq = 4096, .nk = 4096, .d = 64 }, &(fused_config){ .threads = 1 });
    printf("# %s: machine %s, %d CPUs; fused kernel %s; its own blocks (n = 4096, d = 64: "
           "%zu x %zu); %d heads\n", CH08_PROGRAM, model, ladder_cpus(),
           fused_isa_name(fused_isa_chosen(config_of(o, 1).isa)), chosen.block_q, chosen.block_k,
           BENCH_HEADS);
    printf("# %s: fp32 FMA peak %.1f GFLOP/s one core, %.1f all %ld\n", CH08_PROGRAM, peak_one,
           peak_all, o->threads);
    printf("# %s: naive kernel on OpenBLAS with its %s kernels\n", CH08_PROGRAM, blas_kernels());
    const spread wake = thread_start_after_idle(15, false), bound = thread_start_after_idle(15, true);
    printf("# %s: a thread started after 20 ms idle, its caller computing, begins in %.2f ms "
           "(%.2f-%.2f ms) placed by the scheduler, %.2f ms (%.2f-%.2f ms) bound to an idle "
           "processor, 15 starts each\n", CH08_PROGRAM, 1e3 * wake.median, 1e3 * wake.min,
           1e3 * wake.max, 1e3 * bound.median, 1e3 * bound.min, 1e3 * bound.max);
    printf("# columns: program kernel n d causal threads runs median_s min_s max_s gflops "
           "pct_peak x_naive x_torch\n");
    const size_t torch_count = o->python ? run_torch(o, cfg, count, torch) : 0;
    if (!o->python)
        printf("# PyTorch: not run (make bench PYTHON=/path/to/python adds it)\n");
    for (size_t i = 0; i < count; i++) {
        const bench_config *c = &cfg[i];
        tensor qkv[3];
        attn_params p = attn_default(1, BENCH_HEADS, (size_t)c->n, (size_t)c->n, (size_t)c->d);
        draw_tensors(&p, 0, qkv);
        float *out = fa_alloc(floats_bytes(tensor_count(&qkv[0])));
        const size_t got = bench_ours(o, c, qkv, out, ours);
        const double peak = c->threads == 1 ? peak_one : peak_all;
        for (size_t j = 0; j < got; j++)
            print_result(&ours[j], peak, find_result(ours, got, "naive", &ours[j]),
                         find_result(torch, torch_count, "torch", &ours[j]));
        const bench_result *t = find_result(torch, torch_count, "torch", &ours[0]);
        if (t) print_result(t, peak, find_result(ours, got, "naive", t), t);
        fa_free(out);
        for (int q = 0; q < 3; q++) tensor_free(&qkv[q]);
    }
    run_decode_bench(o, &m);
    bench_memory(o);
}
static void bench_memory(const ch08_options *o)
{
    const long n = o->quick && o->max_seq > 4096 ? 4096 : o->max_seq;
    attn_params p = attn_default(1, BENCH_HEADS, (size_t)n, (size_t)n, 64);
    tiled_blocks(o, &p);
    tensor qkv[3];
    draw_tensors(&p, 0, qkv);
    float *out = fa_alloc(floats_bytes(tensor_count(&qkv[0])));
    const double tensors = 4.0 * (double)floats_bytes(tensor_count(&qkv[0]));
    FILE *clear = fopen("/proc/self/clear_refs", "w");
    bool reset = false;
    if (clear) { reset = fputs("5", clear) >= 0; reset = fclose(clear) == 0 && reset; }
    fa_reset_peak();
    fused_config cfg = config_of(o, (int)o->threads);
    cfg.crew = NULL;                        /* the call's own workspaces, none kept */
    attention_fused(&p, qkv[0].data, qkv[1].data, qkv[2].data, out, &cfg, NULL);
    const double rss = (double)process_peak_rss();
    printf("# memory: fused n=%ld d=64 heads=%d threads=%ld: Q+K+V+O %.1f MiB, allocator peak "
           "%.1f MiB (%.3fx), process peak %s%.1f MiB (%.3fx)\n", n, BENCH_HEADS, o->threads,
           mib(tensors), mib((double)fa_bytes_peak()), (double)fa_bytes_peak() / tensors,
           reset ? "" : "(not reset) ", mib(rss), rss / tensors);
    fa_free(out);
    for (int q = 0; q < 3; q++) tensor_free(&qkv[q]);
}
typedef struct { long nk, kv, threads; bool bf16, torch, tiles; double gbs, limit; } recorded_decode;

static bool read_decode_line(const char *line, recorded_decode *d)
{
    char prog[64], kernel[32], limit[32];
    double median, lo, hi, pct;
    long nq, heads, runs;
    if (sscanf(line, "%63s %31s %ld %ld %ld %ld %ld %ld %lf %lf %lf %lf %lf %*s %31s", prog,
               kernel, &d->nk, &nq, &heads, &d->kv, &d->threads, &runs, &median, &lo, &hi,
               &d->gbs, &pct, limit) != 14 || strcmp(prog, CH08_PROGRAM) != 0) return false;
    d->torch = strncmp(kernel, "decode-torch-", 13) == 0;
    d->tiles = strncmp(kernel, "decode-tiles-", 13) == 0;
    d->bf16 = strstr(kernel, "bf16") != NULL;
    char *end;
    d->limit = strtod(limit, &end);
    if (*end != '\0' || end == limit) d->limit = NAN;
    return strncmp(kernel, "decode-", 7) == 0;
}
enum { MAX_RECORDED = 1024, MAX_RECORDS = 8 };
typedef struct {
    char when[64], commit[64], machine[160], isa[32];
    double peak_one, peak_all;
    double wake_ms, wake_min_ms, wake_max_ms;      /* a thread's start after idling, */
    double bound_ms, bound_min_ms, bound_max_ms;   /* placed by the scheduler; bound */
    size_t count, decodes;
    bench_result r[MAX_RECORDED];
    double peak[MAX_RECORDED];
    recorded_decode d[MAX_RECORDED];
} recorded_bench;
static bool read_result_line(const char *line, bench_result *b, double *pct)
{
    char prog[64];
    *b = (bench_result){ 0 };
    return sscanf(line, "%63s %15s %ld %ld %d %ld %d %lf %lf %lf %lf %lf", prog, b->kernel,
                  &b->n, &b->d, &b->causal, &b->threads, &b->t.runs, &b->t.median,
                  &b->t.fastest, &b->t.slowest, &b->gflops, pct) == 12
        && strcmp(prog, CH08_PROGRAM) == 0 && strncmp(b->kernel, "decode", 6) != 0;
}
static bool read_recorded(const char *path, recorded_bench *rb)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[1024];
    rb->count = rb->decodes = 0;
    snprintf(rb->when, sizeof rb->when, "(not recorded)");
    snprintf(rb->commit, sizeof rb->commit, "(none)");
    snprintf(rb->machine, sizeof rb->machine, "(none)");
    snprintf(rb->isa, sizeof rb->isa, "-");
    rb->peak_one = rb->peak_all = NAN;
    rb->wake_ms = rb->wake_min_ms = rb->wake_max_ms = NAN;
    rb->bound_ms = rb->bound_min_ms = rb->bound_max_ms = NAN;
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "# make bench: date %63s commit %63s", rb->when, rb->commit);
        if (strncmp(line, "# " CH08_PROGRAM ": machine ", 2 + strlen(CH08_PROGRAM) + 10) == 0)
            sscanf(line + 2 + strlen(CH08_PROGRAM) + 10, "%159[^;]; fused kernel %31[^;]", rb->machine,
                   rb->isa);
        sscanf(line, "# " CH08_PROGRAM ": fp32 FMA peak %lf GFLOP/s one core, %lf all", &rb->peak_one,
               &rb->peak_all);
        sscanf(line, "# " CH08_PROGRAM ": a thread started after 20 ms idle, its caller computing, "
               "begins in %lf ms (%lf-%lf ms) placed by the scheduler, %lf ms (%lf-%lf", &rb->wake_ms,
               &rb->wake_min_ms, &rb->wake_max_ms, &rb->bound_ms, &rb->bound_min_ms, &rb->bound_max_ms);
        if (rb->count < MAX_RECORDED
            && read_result_line(line, &rb->r[rb->count], &rb->peak[rb->count]))
            rb->count++;
        if (rb->decodes < MAX_RECORDED && read_decode_line(line, &rb->d[rb->decodes]))
            rb->decodes++;
    }
    fclose(f);
    return rb->count > 0 || rb->decodes > 0;
}
static void recorded_table(report *r, const recorded_bench *rb)
{
    static const char *const cols[] = { "kernel", "causal", "threads", "GFLOP/s",
                                        "% of peak", "x naive", "x PyTorch", NULL };
    table *t = report_table(r, "recorded",
                            "Recorded benchmark, n = 4096, d = 64, 8 heads", cols);
    size_t rows = 0;
    for (size_t i = 0; i < rb->count; i++) {
        const bench_result *b = &rb->r[i];
        if (b->n != 4096 || b->d != 64) continue;
        const bench_result *nv = find_result(rb->r, rb->count, "naive", b);
        const bench_result *tc = find_result(rb->r, rb->count, "torch", b);
        char xn[32] = "-", xt[32] = "-";
        if (nv) snprintf(xn, sizeof xn, "%.2fx", b->gflops / nv->gflops);
        if (tc) snprintf(xt, sizeof xt, "%.2fx", b->gflops / tc->gflops);
        table_rowf(t, "%s|%s|%ld|%.1f|%.0f%%|%s|%s", b->kernel, b->causal ? "yes" : "no",
                   b->threads, b->gflops, rb->peak[i], xn, xt);
        rows++;
    }
    if (rows == 0) table_rowf(t, "(not recorded)|-|-|-|-|-|-");
}
static double recorded_ratio(const recorded_bench *rb, const char *a, const char *b,
                             long threads, int causal_a, int causal_b)
{
    const bench_result like_a = { .n = 4096, .d = 64, .causal = causal_a, .threads = threads };
    const bench_result like_b = { .n = 4096, .d = 64, .causal = causal_b, .threads = threads };
    const bench_result *x = find_result(rb->r, rb->count, a, &like_a);
    const bench_result *y = find_result(rb->r, rb->count, b, &like_b);
    if (!x || !y) return NAN;
    return causal_a != causal_b ? y->t.median / x->t.median : x->gflops / y->gflops;
}
static void recorded_summary(report *r, const recorded_bench *rb)
{
    long all = 1;
    for (size_t i = 0; i < rb->count; i++) if (rb->r[i].threads > all) all = rb->r[i].threads;
    char text[768];
    snprintf(text, sizeof text, "In the recorded run, at n = 4096, d = 64, the fused kernel "
             "ran at %.2fx PyTorch's speed on one thread and %.2fx on %ld; at %.2fx and "
             "%.2fx the speed of naive attention on OpenBLAS; and with the causal mask it "
             "took %.2fx less time than without (one thread).",
             recorded_ratio(rb, "fused", "torch", 1, 0, 0),
             recorded_ratio(rb, "fused", "torch", all, 0, 0), all,
             recorded_ratio(rb, "fused", "naive", 1, 0, 0),
             recorded_ratio(rb, "fused", "naive", all, 0, 0),
             recorded_ratio(rb, "fused", "fused", 1, 1, 0));
    if (strstr(text, "nan")) strncat(text, " (nan: not in the record.)", sizeof text - strlen(text) - 1);
    report_fact(r, "recorded_summary", text);
}
typedef struct { int met, of; double worst; const bench_result *at; } goal_tally;

static void tally_goal(goal_tally *g, double ratio, double goal, const bench_result *at)
{
    if (!isfinite(ratio)) return;
    g->of++;
    if (ratio >= goal) g->met++;
    if (!g->at || ratio < g->worst) { g->worst = ratio; g->at = at; }
}
static void recorded_goals(report *r, const recorded_bench *rb)
{
    goal_tally torch = { 0 }, naive = { 0 }, causal = { 0 };
    for (size_t i = 0; i < rb->count; i++) {
        const bench_result *f = &rb->r[i], *x;
        if (strcmp(f->kernel, "fused") != 0) continue;
        if ((x = find_result(rb->r, rb->count, "torch", f))) tally_goal(&torch, f->gflops / x->gflops, 1.0, f);
        if ((x = find_result(rb->r, rb->count, "naive", f))) tally_goal(&naive, f->gflops / x->gflops, 2.5, f);
        const bench_result open = { .n = f->n, .d = f->d, .threads = f->threads, .causal = 0 };
        if (f->causal && (x = find_result(rb->r, rb->count, "fused", &open)))
            tally_goal(&causal, x->t.median / f->t.median, 1.8, f);
    }
    char text[1024] = "", part[256];
    const goal_tally *g[3] = { &torch, &naive, &causal };
    static const char *const what[3] = { "at least PyTorch's speed", "at least 2.5x naive attention",
                                         "a causal speed-up of at least 1.8x" };
    for (int k = 0; k < 3; k++) {
        const char *end = k < 2 ? "; " : ".";
        if (g[k]->of == 0) snprintf(part, sizeof part, "%s: not in the record%s", what[k], end);
        else snprintf(part, sizeof part, "%s in %d of %d configurations, the worst %.2fx (n = %ld, "
                      "d = %ld, %s, %ld thread%s)%s", what[k], g[k]->met, g[k]->of, g[k]->worst,
                      g[k]->at->n, g[k]->at->d, g[k]->at->causal ? "causal" : "no mask",
                      g[k]->at->threads, g[k]->at->threads == 1 ? "" : "s", end);
        strncat(text, part, sizeof text - strlen(text) - 1);
    }
    report_fact(r, "recorded_goals", text);
}
static void recorded_misses(report *r, const recorded_bench *rb)
{
    int missed = 0, on_one = 0;
    long last_n = 0;
    double longest = 0;
    for (size_t i = 0; i < rb->count; i++) {
        const bench_result *f = &rb->r[i], *x;
        if (strcmp(f->kernel, "fused") != 0) continue;
        if (!(x = find_result(rb->r, rb->count, "torch", f)) || f->gflops >= x->gflops) continue;
        missed++;
        on_one += f->threads == 1;
        if (f->n > last_n) last_n = f->n;
        if (f->t.median > longest) longest = f->t.median;
    }
    char text[640] = "";
    if (missed > 0 && on_one == 0 && isfinite(rb->bound_ms))
        snprintf(text, sizeof text, "Every configuration short of PyTorch's speed ran on more than one "
                 "thread, at n up to %ld, where a call lasted at most %.1f ms. On the recorded machine "
                 "a thread started after 20 ms of idling, while its caller computed, began after "
                 "%.2f ms (%.2f-%.2f ms) where the scheduler placed it, and after %.2f ms "
                 "(%.2f-%.2f ms) bound to an idle processor, as the kernel's threads are: %.0f%% of "
                 "that call.", last_n, 1e3 * longest, rb->wake_ms, rb->wake_min_ms, rb->wake_max_ms,
                 rb->bound_ms, rb->bound_min_ms, rb->bound_max_ms,
                 100 * rb->bound_ms / (1e3 * longest));
    else if (missed > 0)
        snprintf(text, sizeof text, "%d configuration%s fell short of PyTorch's speed, at n up to "
                 "%ld.", missed, missed == 1 ? "" : "s", last_n);
    report_fact(r, "recorded_misses", text);
}
typedef struct { int met, of; double worst; const recorded_decode *at; } decode_tally;

static void tally_decode(decode_tally *g, double ratio, double goal, const recorded_decode *at)
{
    if (!isfinite(ratio)) return;
    g->of++;
    if (ratio >= goal) g->met++;
    if (!g->at || ratio < g->worst) { g->worst = ratio; g->at = at; }
}

static const recorded_decode *peer_decode(const recorded_bench *rb, const recorded_decode *d,
                                          bool torch, bool tiles)
{
    for (size_t i = 0; i < rb->decodes; i++) {
        const recorded_decode *x = &rb->d[i];
        if (x->torch == torch && x->tiles == tiles && x->nk == d->nk && x->kv == d->kv
            && x->threads == d->threads && x->bf16 == d->bf16) return x;
    }
    return NULL;
}

static const recorded_decode *torch_decode(const recorded_bench *rb, const recorded_decode *d)
{
    return peer_decode(rb, d, true, false);
}
static const char *percent_range(char *out, size_t size, double lo, double hi)
{
    if (lrint(100 * lo) == lrint(100 * hi)) snprintf(out, size, "%.0f", 100 * lo);
    else snprintf(out, size, "%.0f-%.0f", 100 * lo, 100 * hi);
    return out;
}


static void decode_goal_words(char *out, size_t size, const decode_tally *g, const char *what,
                              const char *unit, double scale)
{
    if (g->of == 0) { snprintf(out, size, "%s: not in the record", what); return; }
    snprintf(out, size, "%s in %d of %d configurations, the worst %.*f%s (n_k = %ld, G = %ld, "
             "%s cache, %ld thread%s)", what, g->met, g->of, scale > 1 ? 0 : 2, scale * g->worst,
             unit, g->at->nk, g->at->kv, g->at->bf16 ? "bf16" : "fp32", g->at->threads,
             g->at->threads == 1 ? "" : "s");
}
static void recorded_decoding(report *r, const recorded_bench *rb)
{
    decode_tally torch = { 0 }, limit = { 0 };
    double torch_lo = INFINITY, torch_hi = 0, need_lo = INFINITY, need_hi = 0;
    for (size_t i = 0; i < rb->decodes; i++) {
        const recorded_decode *d = &rb->d[i], *x;
        if (d->torch || d->tiles || d->nk < 16384) continue;
        tally_decode(&limit, d->gbs / d->limit, 0.85, d);
        if (!(x = torch_decode(rb, d))) continue;
        tally_decode(&torch, d->gbs / x->gbs, 1.5, d);
        if (d->gbs >= 1.5 * x->gbs || !isfinite(d->limit)) continue;
        torch_lo = fmin(torch_lo, x->gbs / d->limit); torch_hi = fmax(torch_hi, x->gbs / d->limit);
        need_lo = fmin(need_lo, 1.5 * x->gbs / d->limit);
        need_hi = fmax(need_hi, 1.5 * x->gbs / d->limit);
    }
    char text[1024], a[256], b[256], c[256] = "";
    decode_goal_words(a, sizeof a, &torch, "at least 1.5x PyTorch's SDPA", "x", 1);
    decode_goal_words(b, sizeof b, &limit, "at least 85% of the limit", "%", 100);
    char t[32], n[32];
    if (need_hi > 0)
        snprintf(c, sizeof c, " Where 1.5x PyTorch was missed, PyTorch itself read at %s%% of the "
                 "limit, so 1.5x its speed would have needed %s%% of it.",
                 percent_range(t, sizeof t, torch_lo, torch_hi),
                 percent_range(n, sizeof n, need_lo, need_hi));
    snprintf(text, sizeof text, "In the record, at n_k of 16384 and more: %s; %s.%s", a, b, c);
    report_fact(r, "recorded_decoding", text);
}
static void recorded_tiles(report *r, const recorded_bench *rb)
{
    decode_tally torch = { 0 }, limit = { 0 };
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < rb->decodes; i++) {
        const recorded_decode *d = &rb->d[i], *x;
        if (!d->tiles || d->nk < 16384) continue;
        tally_decode(&limit, d->gbs / d->limit, 0.85, d);
        if ((x = torch_decode(rb, d))) tally_decode(&torch, d->gbs / x->gbs, 1.5, d);
        if ((x = peer_decode(rb, d, false, false))) lo = fmin(lo, d->gbs / x->gbs), hi = fmax(hi, d->gbs / x->gbs);
    }
    char text[1024], a[256], b[256];
    if (limit.of == 0) {
        report_fact(r, "recorded_tiles", "The record has no decoding on the tiles (its machine has no AMX, or it was made "
                    "before the tiles decoded).");
        return;
    }
    decode_goal_words(a, sizeof a, &torch, "at least 1.5x PyTorch's SDPA", "x", 1);
    decode_goal_words(b, sizeof b, &limit, "at least 85% of the limit", "%", 100);
    snprintf(text, sizeof text, "On the tiles of chapter 11, bf16 cache, at n_k of 16384 and more: "
             "%s; %s; %.2f-%.2f times the speed of chapter 8's own bf16 step.", a, b, lo, hi);
    report_fact(r, "recorded_tiles", text);
}
static void recorded_threads_note(report *r, const recorded_bench *rb)
{
    long all = 1;
    for (size_t i = 0; i < rb->count; i++) if (rb->r[i].threads > all) all = rb->r[i].threads;
    const bench_result one = { .n = 4096, .d = 64, .threads = 1 };
    const bench_result many = { .n = 4096, .d = 64, .threads = all };
    const bench_result *f1 = find_result(rb->r, rb->count, "fused", &one);
    const bench_result *fa = find_result(rb->r, rb->count, "fused", &many);
    const bench_result *n1 = find_result(rb->r, rb->count, "naive", &one);
    const bench_result *na = find_result(rb->r, rb->count, "naive", &many);
    char fused[64], naive[64], note[512] = "(not in the record)";
    if (f1 && fa && n1 && na && all > 1)
        snprintf(note, sizeof note, "at n = 4096, d = 64, on %s, the fused kernel on %ld threads "
                 "%s on one, and naive attention %s on one.", rb->machine, all,
                 ladder_compare_times(fused, sizeof fused, fa->t.median, f1->t.median),
                 ladder_compare_times(naive, sizeof naive, na->t.median, n1->t.median));
    report_fact(r, "recorded_threads_note", note);
}
static void recorded_thread_start(report *r, const recorded_bench *rb)
{
    char text[400] = "";
    if (isfinite(rb->wake_ms) && isfinite(rb->bound_ms))
        snprintf(text, sizeof text, "On the recorded machine (%s) a thread started after 20 ms "
                 "of idling, while its caller computed, began after %.2f ms (%.2f-%.2f ms) where "
                 "the scheduler placed it, and after %.2f ms (%.2f-%.2f ms) bound to an idle "
                 "processor.", rb->machine, rb->wake_ms, rb->wake_min_ms, rb->wake_max_ms,
                 rb->bound_ms, rb->bound_min_ms, rb->bound_max_ms);
    report_fact(r, "recorded_thread_start", text);
}
static void write_bench_data(const char *dir, const recorded_bench *rb)
{
    static const char *const kernels[] = { "naive", "tiled", "fused", "torch" };
    FILE *f = data_file(dir, "ch08_bench.dat");
    bool first = true;
    for (int k = 0; k < 4; k++)
        for (int all = 0; all <= 1; all++) {
            bool header = false;
            for (size_t i = 0; i < rb->count; i++) {
                const bench_result *b = &rb->r[i];
                if (strcmp(b->kernel, kernels[k]) || b->d != 64 || b->causal || (b->threads > 1) != all)
                    continue;
                if (!header)
                    fprintf(f, "%s\"%s, %s\" GFLOP/s\n", first ? "" : "\n\n", kernels[k],
                            all ? "all threads" : "1 thread");
                header = true;
                first = false;
                fprintf(f, "%ld %.3f\n", b->n, b->gflops);
            }
        }
    data_close(f);
}
static size_t read_records(const char *path, recorded_bench *rb, size_t max)
{
    static char names[MAX_RECORDS][LADDER_PATH_MAX];
    const size_t files = path ? ladder_recorded_files(path, names, MAX_RECORDS) : 0;
    size_t count = 0;
    for (size_t i = 0; i < files && count < max; i++) count += read_recorded(names[i], &rb[count]);
    return count;
}
static void machines_table(report *r, const recorded_bench *rb, size_t count)
{
    static const char *const cols[] = { "machine", "vectors", "recorded", "FMA peak 1 / all",
        "fused 1 / all", "x naive 1 / all", "x PyTorch 1 / all", NULL };
    table *t = report_table(r, "machines", "The recorded benchmarks, n = 4096, d = 64, no mask, "
                            "GFLOP/s", cols);
    for (size_t i = 0; i < count; i++) {
        const recorded_bench *b = &rb[i];
        long all = 1;
        for (size_t k = 0; k < b->count; k++) if (b->r[k].threads > all) all = b->r[k].threads;
        const bench_result one = { .n = 4096, .d = 64, .threads = 1 }, many = { .n = 4096, .d = 64,
                                                                               .threads = all };
        const bench_result *f1 = find_result(b->r, b->count, "fused", &one);
        const bench_result *fa = find_result(b->r, b->count, "fused", &many);
        table_rowf(t, "%s|%s|%.16s, %s|%.0f / %.0f|%.0f / %.0f|%.2fx / %.2fx|%.2fx / %.2fx", b->machine,
                   b->isa, b->when, b->commit, b->peak_one, b->peak_all, f1 ? f1->gflops : NAN,
                   fa ? fa->gflops : NAN, recorded_ratio(b, "fused", "naive", 1, 0, 0),
                   recorded_ratio(b, "fused", "naive", all, 0, 0),
                   recorded_ratio(b, "fused", "torch", 1, 0, 0),
                   recorded_ratio(b, "fused", "torch", all, 0, 0));
    }
    if (count == 0) table_rowf(t, "(not recorded)|-|-|-|-|-|-");
}
static void report_recorded(report *r, const ch08_options *o)
{
    recorded_bench *rb = fa_alloc(MAX_RECORDS * sizeof *rb);
    const size_t count = read_records(o->recorded, rb, MAX_RECORDS);
    size_t newest = 0;
    for (size_t i = 1; i < count; i++)
        if (strcmp(rb[i].when, rb[newest].when) > 0) newest = i;
    if (count == 0) read_recorded(NULL, &rb[0]);
    machines_table(r, rb, count);
    report_factf(r, "recorded_count", "%zu", count);
    const recorded_bench *b = &rb[newest];
    report_fact(r, "recorded_when", b->when);
    report_fact(r, "recorded_commit", b->commit);
    report_fact(r, "recorded_machine", b->machine);
    recorded_table(r, b);
    recorded_summary(r, b);
    recorded_goals(r, b);
    recorded_misses(r, b);
    recorded_decoding(r, b);
    recorded_tiles(r, b);
    recorded_threads_note(r, b);
    recorded_thread_start(r, b);
    if (o->data_dir) write_bench_data(o->data_dir, b);
    fa_free(rb);
}
enum { MEM_SEQ = 16384 };
static void report_memory(report *r, const ch08_options *o)
{
    attn_params p = attn_default(1, COUNT_HEADS, MEM_SEQ, MEM_SEQ, COUNT_DIM);
    const size_t bytes = floats_bytes(COUNT_HEADS * (size_t)MEM_SEQ * COUNT_DIM);
    float *t[4];
    for (int i = 0; i < 4; i++) t[i] = fa_alloc(bytes);
    const size_t before = fa_bytes_live();
    fa_reset_peak();
    fused_config cfg = config_of(o, (int)o->threads);
    cfg.count_only = true;
    attention_fused(&p, t[0], t[1], t[2], t[3], &cfg, NULL);
    char a[32];
    const double peak = (double)fa_bytes_peak(), tensors = 4.0 * (double)bytes;
    report_factf(r, "mem_seq", "%d", MEM_SEQ);
    report_fact(r, "mem_tensors", fmt_bytes(a, tensors));
    report_fact(r, "mem_peak", fmt_bytes(a, peak));
    report_factf(r, "mem_ratio", "%.4f", peak / tensors);
    report_factf(r, "mem_threads", "%ld", o->threads);
    report_fact(r, "mem_naive_scores", fmt_bytes(a, 4.0 * MEM_SEQ * (double)MEM_SEQ));
    report_factf(r, "mem_workspace_bytes", "%.0f", peak - (double)before);
    for (int i = 0; i < 4; i++) fa_free(t[i]);
}
static bool decode_mode(const ch08_options *o)
{
    return o->seq_q > 0 || o->seq_k > 0 || o->kv_heads > 0 || o->cache;
}

static decode_cache cache_of(const char *name)
{
    if (!name || strcmp(name, "fp32") == 0) return DECODE_FP32;
    if (strcmp(name, "bf16") != 0)
        die_usage(CH08_PROGRAM, "--cache must be fp32 or bf16, not '%s'", name);
    return DECODE_BF16;
}
static decode_params decode_params_of(const ch08_options *o, size_t nk, size_t kv_heads)
{
    const decode_params p = { .batch = 1, .heads = (size_t)o->heads, .kv_heads = kv_heads,
        .nq = o->seq_q > 0 ? (size_t)o->seq_q : 1, .nk = nk, .d = (size_t)o->dim,
        .scale = o->scale > 0 ? (float)o->scale : 1.0f / sqrtf((float)o->dim) };
    const char *problem = decode_params_problem(&p);
    if (problem) die_usage(CH08_PROGRAM, "--heads %zu with --kv-heads %zu: %s", p.heads,
                           p.kv_heads, problem);
    return p;
}

static decode_isa decode_isa_of(const ch08_options *o, size_t d)
{
    decode_isa isa = DECODE_ISA_AUTO;
    if (strcmp(o->isa, "avx2") == 0) isa = DECODE_ISA_AVX2;
    else if (strcmp(o->isa, "avx512") == 0) isa = DECODE_ISA_AVX512;
    else if (strcmp(o->isa, "portable") == 0) isa = DECODE_ISA_SCALAR;
    else if (strcmp(o->isa, "auto") != 0 && strcmp(o->isa, "tiles") != 0)
        die_usage(CH08_PROGRAM, "--isa must be auto, portable, avx2, avx512 or tiles, not '%s'",
                  o->isa);
    const char *problem = decode_isa_problem(decode_isa_chosen(isa, d), d);
    if (problem) die_usage(CH08_PROGRAM, "--isa %s with --dim %zu: %s", o->isa, d, problem);
    return isa;
}
static bool decode_tiles_here(char why[160])
{
    if (!amx_available(why)) return false;
    if (bf16_cpu_has_avx512bf16()) return true;
    snprintf(why, 160, "this CPU has AMX but no AVX512-BF16");
    return false;
}

static decode_piece_kernel *decode_piece_of(const ch08_options *o, const decode_params *p,
                                            decode_cache cache)
{
    if (strcmp(o->isa, "tiles") != 0) return NULL;
    char why[160];
    if (!decode_tiles_here(why)) die_usage(CH08_PROGRAM, "--isa tiles: %s", why);
    const char *problem = amx_decode_problem(p, cache);
    if (problem) die_usage(CH08_PROGRAM, "--isa tiles: %s", problem);
    return amx_decode_piece;
}
size_t decode_problem_bytes(const decode_params *p, bool bf16_too)
{
    const size_t nq = fa_mul(p->batch * p->heads * p->nq, p->d),
                 nk = fa_mul(p->batch * p->kv_heads * p->nk, p->d);
    return fa_mul(2 * nq + 2 * nk, sizeof(float)) + (bf16_too ? fa_mul(nk, 12) : 0);
}

decode_problem decode_problem_new(const decode_params *p, uint32_t seed, bool bf16_too)
{
    const size_t nq = p->batch * p->heads * p->nq * p->d, nk = p->batch * p->kv_heads * p->nk * p->d;
    decode_problem t = { .p = *p, .q = fa_alloc(nq * 4), .o = fa_alloc(nq * 4),
                         .k32 = fa_alloc(nk * 4), .v32 = fa_alloc(nk * 4) };
    mt19937 g;
    mt_seed(&g, seed);
    torch_randn(&g, t.q, nq); torch_randn(&g, t.k32, nk); torch_randn(&g, t.v32, nk);
    if (bf16_too) {
        t.k16 = fa_alloc(nk * 2); t.v16 = fa_alloc(nk * 2);
        t.kr = fa_alloc(nk * 4); t.vr = fa_alloc(nk * 4);
        for (size_t i = 0; i < nk; i++) {
            t.k16[i] = bf16_round(t.k32[i]); t.kr[i] = bf16_float(t.k16[i]);
            t.v16[i] = bf16_round(t.v32[i]); t.vr[i] = bf16_float(t.v16[i]);
        }
    }
    return t;
}
void decode_problem_free(decode_problem *t)
{
    fa_free(t->q); fa_free(t->o); fa_free(t->k32); fa_free(t->v32);
    if (t->k16) { fa_free(t->k16); fa_free(t->v16); fa_free(t->kr); fa_free(t->vr); }
}

void decode_run(decode_problem *t, decode_cache cache, const decode_config *cfg)
{
    const decode_config c = { .threads = cfg->threads, .isa = cfg->isa, .cache = cache,
                              .crew = cfg->crew, .piece = cfg->piece };
    if (cache == DECODE_BF16) attention_decode(&t->p, t->q, t->k16, t->v16, t->o, &c);
    else attention_decode(&t->p, t->q, t->k32, t->v32, t->o, &c);
}
void decode_reference(const decode_params *p, const float *q, const float *k, const float *v,
                      double *out)
{
    attn_params one = attn_default(1, 1, p->nq, p->nk, p->d);
    one.scale = p->scale;
    const size_t group = p->heads / p->kv_heads;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const size_t at_q = (b * p->heads + h) * p->nq * p->d,
                         at_k = (b * p->kv_heads + h / group) * p->nk * p->d;
            attention_reference(&one, q + at_q, k + at_k, v + at_k, out + at_q);
        }
}
double decode_bf16_bound(const decode_problem *t)
{
    const decode_params *p = &t->p;
    const size_t group = p->heads / p->kv_heads, d = p->d;
    double delta = 0, vmax = 0;
    for (size_t i = 0; i < p->batch * p->kv_heads * p->nk * d; i++)
        vmax = fmax(vmax, fabs(t->v32[i]));
    for (size_t row = 0; row < p->batch * p->heads * p->nq; row++) {
        const size_t b = row / (p->heads * p->nq), h = row / p->nq % p->heads;
        const float *q = t->q + row * d, *k = t->k32 + (b * p->kv_heads + h / group) * p->nk * d;
        for (size_t j = 0; j < p->nk; j++) {
            double sum = 0;
            for (size_t c = 0; c < d; c++) sum += fabs(q[c]) * fabs(k[j * d + c]);
            delta = fmax(delta, p->scale * 0x1p-8 * sum);
        }
    }
    return vmax * (0x1p-8 + expm1(2 * delta)) + 1e-5;
}
typedef struct { decode_problem *t; decode_cache cache; decode_config cfg; } decode_call;

static void decode_call_once(void *ctx)
{
    decode_call *c = ctx;
    decode_run(c->t, c->cache, &c->cfg);
}

static double dram_gbs(const ladder_profile *m, long threads)
{
    if (m->nlevels < 1) return NAN;
    const ladder_level *dram = &m->level[m->nlevels - 1];
    return threads == 1 ? dram->gbs_one : threads == m->threads ? dram->gbs_all : NAN;
}
static double limit_gbs(const decode_problem *t, decode_cache cache, int threads, int repeats)
{
    const bool half = cache == DECODE_BF16;
    const void *kv[2] = { half ? (const void *)t->k16 : (const void *)t->k32,
                          half ? (const void *)t->v16 : (const void *)t->v32 };
    return ladder_read_arrays_spread(kv, 2, decode_cache_bytes(&t->p, cache) / 2,
                                     threads, repeats).median;
}
typedef struct { spread s; double gbs, share, limit, limit_share; } decode_speed;

static decode_speed time_decode(decode_problem *t, decode_cache cache, const decode_config *cfg,
                                int repeats, const ladder_profile *m)
{
    decode_call c = { t, cache, *cfg };
    decode_speed r = { .s = time_spread(decode_call_once, &c, 1, repeats) };
    r.gbs = (double)decode_cache_bytes(&t->p, cache) / r.s.median / 1e9;
    r.share = r.gbs / dram_gbs(m, cfg->threads);
    r.limit = limit_gbs(t, cache, cfg->threads > 0 ? cfg->threads : 1, repeats);
    r.limit_share = r.gbs / r.limit;
    return r;
}
static void run_decode(const ch08_options *o, report *r)
{
    const decode_params p = decode_params_of(o, o->seq_k > 0 ? (size_t)o->seq_k : 4096,
                                             o->kv_heads > 0 ? (size_t)o->kv_heads : (size_t)o->heads);
    const decode_cache cache = cache_of(o->cache);
    const decode_config cfg = { .threads = (int)o->threads, .isa = decode_isa_of(o, p.d),
                                .cache = cache, .crew = o->crew,
                                .piece = decode_piece_of(o, &p, cache) };
    const size_t rows = fa_mul(p.heads * p.nq, p.d);
    fa_require(decode_problem_bytes(&p, cache == DECODE_BF16) + fa_mul(rows, 2 * sizeof(double) + 4)
               + attention_decode_bytes(&p, &cfg), "the decoding step's Q, cache, output and workspace");
    ladder_profile m;
    char err[256];
    if (ladder_profile_for(o->machine, o->data_dir, (int)o->threads, false, &m, err, sizeof err) < 0)
        die_usage(CH08_PROGRAM, "%s (run ./ch01_memory_ladder --data DIR first)", err);
    decode_problem t = decode_problem_new(&p, (uint32_t)o->seed, cache == DECODE_BF16);
    decode_run(&t, cache, &(decode_config){ .threads = 1, .isa = cfg.isa, .piece = cfg.piece });
    float *one = fa_alloc(rows * sizeof(float));
    memcpy(one, t.o, rows * sizeof(float));
    const decode_speed sp = time_decode(&t, cache, &cfg, (int)o->repeats, &m);
    const bool same = memcmp(one, t.o, rows * sizeof(float)) == 0;
    double *exact = fa_alloc(rows * sizeof(double)), *exact32 = fa_alloc(rows * sizeof(double));
    decode_reference(&p, t.q, cache == DECODE_BF16 ? t.kr : t.k32,
                     cache == DECODE_BF16 ? t.vr : t.v32, exact);
    decode_reference(&p, t.q, t.k32, t.v32, exact32);
    char text[64];
    report_factf(r, "decode_shape", "H = %zu, G = %zu, n_q = %zu, n_k = %zu, d = %zu", p.heads,
                 p.kv_heads, p.nq, p.nk, p.d);
    report_factf(r, "decode_cache", "%s, %.1f MiB of K and V", cache == DECODE_BF16 ? "bf16" : "fp32",
                 mib((double)decode_cache_bytes(&p, cache)));
    report_factf(r, "decode_copy", "%s, %ld threads", cfg.piece ? "AMX tiles (chapter 11)"
                 : decode_isa_name(decode_isa_chosen(cfg.isa, p.d)), o->threads);
    report_fact(r, "decode_seconds", fmt_spread(text, sp.s.median, sp.s.min, sp.s.max));
    if (isnan(sp.share))
        report_factf(r, "decode_gbs", "%.2f GB/s (chapter 1's DRAM read bandwidth for %ld threads "
                     "not measured)", sp.gbs, o->threads);
    else
        report_factf(r, "decode_gbs", "%.2f GB/s, %.0f%% of chapter 1's DRAM read bandwidth (%.2f GB/s)",
                     sp.gbs, 100 * sp.share, dram_gbs(&m, o->threads));
    if (isnan(sp.limit_share))
        report_fact(r, "decode_limit", "not measured: the cache is too small to cut among the threads");
    else
        report_factf(r, "decode_limit", "%.2f GB/s, a bare read of the same bytes on as many threads; "
                     "the step ran at %.0f%% of it", sp.limit, 100 * sp.limit_share);
    report_factf(r, "decode_error", "%.2e", max_abs_diff_fd(t.o, exact, rows));
    if (cache == DECODE_BF16 && !cfg.piece)
        report_factf(r, "decode_error_fp32_cache", "%.2e (bound %.2e)",
                     max_abs_diff_fd(t.o, exact32, rows), decode_bf16_bound(&t));
    else if (cache == DECODE_BF16)
        report_factf(r, "decode_error_fp32_cache", "%.2e (the tiles round Q and P to bf16 too)",
                     max_abs_diff_fd(t.o, exact32, rows));
    report_fact(r, "decode_bits_of_one_thread", same ? "yes" : "no");
    fa_free(one); fa_free(exact); fa_free(exact32);
    decode_problem_free(&t);
}
static decode_speed decode_row(table *tb, decode_problem *t, decode_cache cache, long threads,
                               const ch08_options *o, const ladder_profile *m, int *all_same,
                               double *widest)
{
    const size_t rows = t->p.heads * t->p.nq * t->p.d;
    const decode_config one = { .threads = 1, .isa = DECODE_ISA_AUTO };
    decode_run(t, cache, &one);
    float *first = fa_alloc(rows * sizeof(float));
    memcpy(first, t->o, rows * sizeof(float));
    const decode_config cfg = { .threads = (int)threads, .isa = decode_isa_of(o, t->p.d),
                                .crew = o->crew };
    const decode_speed sp = time_decode(t, cache, &cfg, (int)o->repeats, m);
    *all_same &= memcmp(first, t->o, rows * sizeof(float)) == 0;
    if (sp.s.max / sp.s.min > *widest) *widest = sp.s.max / sp.s.min;
    char text[64];
    table_rowf(tb, "%s|%zu|%ld|%.1f|%s|%.2f|%.0f%%|%.2f|%.0f%%", cache == DECODE_BF16 ? "bf16" : "fp32",
               t->p.kv_heads, threads, mib((double)decode_cache_bytes(&t->p, cache)),
               fmt_spread(text, 1e3 * sp.s.median, 1e3 * sp.s.min, 1e3 * sp.s.max), sp.gbs,
               100 * sp.share, sp.limit, 100 * sp.limit_share);
    fa_free(first);
    return sp;
}
static void decode_tiles_facts(report *r, decode_problem *t, const ch08_options *o,
                               const ladder_profile *m, const decode_speed *vectors)
{
    char why[160], text[64];
    if (!decode_tiles_here(why) || amx_decode_problem(&t->p, DECODE_BF16)) {
        report_factf(r, "decode_tiles_words", "This machine cannot run the step on the tiles (%s)",
                     decode_tiles_here(why) ? amx_decode_problem(&t->p, DECODE_BF16) : why);
        return;
    }
    const decode_config c = { .threads = 1, .crew = o->crew, .piece = amx_decode_piece };
    const decode_speed sp = time_decode(t, DECODE_BF16, &c, (int)o->repeats, m);
    report_factf(r, "decode_tiles_words", "On this machine's tiles the step with G = 1 and the "
                 "bf16 cache took %s ms on one thread, %.2f GB/s: %.0f%% of the limit measured "
                 "beside it (%.2f GB/s), and %.2f times the speed of chapter 8's bf16 step (%.0f%% "
                 "of its limit)", fmt_spread(text, 1e3 * sp.s.median, 1e3 * sp.s.min,
                 1e3 * sp.s.max), sp.gbs, 100 * sp.limit_share, sp.limit,
                 vectors->s.median / sp.s.median, 100 * vectors->limit_share);
}
static void decode_group_facts(report *r, const decode_params *p, const ladder_profile *m,
                               const decode_speed one[2]);

static void decode_table(report *r, const ch08_options *o, const ladder_profile *m)
{
    static const char *const cols[] = { "cache", "G", "threads", "K+V MiB", "median ms",
                                        "GB/s", "of DRAM", "limit GB/s", "of limit", NULL };
    table *tb = report_table(r, "decode", "Decoding: one query row, H heads, n_k keys", cols);
    const size_t nk = (size_t)o->seq * 32 < DECODE_MAX_KEYS ? (size_t)o->seq * 32 : DECODE_MAX_KEYS;
    int same = 1;
    double widest = 1;
    const ladder_sample before = ladder_sample_now();
    for (int gi = 0; gi < 2; gi++) {
        const decode_params p = decode_params_of(&(ch08_options){ .heads = o->heads,
            .dim = o->dim, .scale = o->scale }, nk, gi == 0 ? 1 : (size_t)o->heads);
        decode_problem t = decode_problem_new(&p, (uint32_t)o->seed, true);
        decode_speed one[2];                      /* fp32 and bf16, one thread */
        for (int c = 0; c < 2; c++)
            for (int ti = 0; ti < (o->threads > 1 ? 2 : 1); ti++) {
                const decode_speed sp = decode_row(tb, &t, c == 0 ? DECODE_FP32 : DECODE_BF16,
                                                   ti == 0 ? 1 : o->threads, o, m, &same, &widest);
                if (ti == 0) one[c] = sp;
            }
        if (gi == 0) decode_group_facts(r, &t.p, m, one);
        if (gi == 0) decode_tiles_facts(r, &t, o, m, &one[1]);
        if (gi == 1) decode_facts(r, &t, m);
        decode_problem_free(&t);
    }
    const ladder_noise n = ladder_noise_between(before, ladder_sample_now());
    char note[320];
    const bool busy = ladder_busy(n, widest, CH08_SPREAD_LIMIT);
    report_fact(r, "decode_busy", busy ? "yes" : "no");
    report_fact(r, "decode_noise_note", ladder_noise_note(note, sizeof note, "the decoding timings",
                                                         n, widest, busy));
    report_fact(r, "decode_bits_equal", same ? "the same bits" : "different bits");
}
double decode_intensity(const decode_params *p, int element_bytes)
{
    return 2.0 * (double)(p->heads * p->nq) / (double)(p->kv_heads * (size_t)element_bytes);
}
double decode_arithmetic_share(const decode_params *p, int element_bytes, double gbs,
                               double peak_gflops)
{
    return decode_intensity(p, element_bytes) * gbs / peak_gflops;
}
static void decode_group_facts(report *r, const decode_params *p, const ladder_profile *m,
                               const decode_speed one[2])
{
    const double peak = ladder_peak_for(m, 1), beta = one[0].limit;
    const double i32 = decode_intensity(p, 4);
    const double share32 = decode_arithmetic_share(p, 4, beta, peak),
                 share16 = decode_arithmetic_share(p, 2, one[1].limit, peak);
    char words[640];
    if (isnan(beta) || peak <= 0) {
        report_fact(r, "decode_group_words", "(the limit of the G = 1 cache was not measured.)");
        report_fact(r, "decode_arithmetic_shares", "not measured");
        return;
    }
    const bool heavy = share32 >= 1.0 / 3, short_of = one[0].limit_share < 0.85 || one[1].limit_share < 0.85;
    snprintf(words, sizeof words, "With G = 1 each row of the cache serves %zu query rows: %.0f "
             "operations a byte with the fp32 cache, %.0f with the bf16 one. A bare read of that cache "
             "(fp32) gave %.1f GB/s on one core and chapter 1's multiply-add peak is %.0f GFLOP/s, so the "
             "multiply-adds alone, at peak, would take %.0f%% and %.0f%% of the reading time, before "
             "the exponentials, the sums across lanes and the widening of bf16. %s",
             p->heads / p->kv_heads * p->nq, i32, 2 * i32, beta, peak, 100 * share32, 100 * share16,
             !short_of ? "Even so, both steps reached 85% of the limit."
             : heavy ? "The arithmetic shares the time with the reads, and one thread's steps stopped "
                       "short of the limit"
                     : "The reads should dominate, yet one thread's steps stopped short of the limit");
    if (short_of) {
        const size_t used = strlen(words);
        snprintf(words + used, sizeof words - used, " (%.0f%% and %.0f%% of it).",
                 100 * one[0].limit_share, 100 * one[1].limit_share);
    }
    report_fact(r, "decode_group_words", words);
    report_factf(r, "decode_arithmetic_shares", "%.0f%% of the reading time with the fp32 cache, "
                 "%.0f%% with the bf16 one", 100 * share32, 100 * share16);
}
static const char *speed_words(char *out, size_t size, const decode_speed *sp)
{
    int n = snprintf(out, size, "one thread read it at %.2f GB/s, %.0f%% of that bandwidth%s",
                     sp->gbs, 100 * sp->share, sp->share > 1.05 ? ", more than the DRAM could "
                     "give: at this size the cache stays in the processor's caches" : "");
    if (n > 0 && (size_t)n < size && !isnan(sp->limit))
        snprintf(out + n, size - (size_t)n, "; a bare read of the same bytes ran at %.2f GB/s, "
                 "and the step reached %.0f%% of it, %s", sp->limit, 100 * sp->limit_share,
                 sp->limit_share >= 0.85 ? "at the limit" : "short of the limit");
    return out;
}
static void decode_facts(report *r, decode_problem *t, const ladder_profile *m)
{
    const decode_params *p = &t->p;
    const double bytes = (double)decode_cache_bytes(p, DECODE_FP32), beta = dram_gbs(m, 1);
    report_factf(r, "decode_example", "H = %zu, G = %zu, n_q = %zu, n_k = %zu, d = %zu",
                 p->heads, p->kv_heads, p->nq, p->nk, p->d);
    report_factf(r, "decode_example_mib", "%.1f", mib(bytes));
    report_factf(r, "decode_dram_gbs", "%.2f", beta);
    report_factf(r, "decode_t_min_ms", "%.3f", 1e3 * bytes / beta / 1e9);
    const decode_speed sp = time_decode(t, DECODE_FP32, &(decode_config){ .threads = 1 }, 5, m);
    char words[512];
    report_fact(r, "decode_example_words", speed_words(words, sizeof words, &sp));
    const decode_speed half = time_decode(t, DECODE_BF16, &(decode_config){ .threads = 1 }, 5, m);
    char how[64];
    snprintf(words, sizeof words, "with the bf16 cache, half the bytes, one thread %s with the "
             "fp32 cache", ladder_compare_times(how, sizeof how, half.s.median, sp.s.median));
    report_fact(r, "decode_bf16_words", words);
    report_factf(r, "decode_span", "%d", DECODE_SPAN);
}
static void write_decode_split(const char *dir)
{
    const decode_params p = { .batch = 1, .heads = 1, .kv_heads = 1, .nq = 1,
                              .nk = 19 * DECODE_SPAN / 2, .d = 1, .scale = 1 };
    const size_t units = decode_units(&p);
    FILE *f = data_file(dir, "ch08_decode_split.dat");
    fprintf(f, "# threads span first_key last_key owner\n");
    for (int threads = 1; threads <= 4; threads++)
        for (int t = 0; t < threads; t++)
            for (size_t u = decode_first_unit(units, threads, t);
                 u < decode_first_unit(units, threads, t + 1); u++)
                fprintf(f, "%d %zu %zu %zu %d\n", threads, u, u * DECODE_SPAN,
                        u + 1 < units ? (u + 1) * DECODE_SPAN : p.nk, t);
    data_close(f);
}
typedef struct { long nk, kv, threads; int bf16; spread s; double limit; } decode_bench;

static size_t decode_bench_configs(const ch08_options *o, decode_bench *out, size_t max)
{
    static const long lengths[] = { 4096, 16384, 65536, 131072 };
    const long last = o->quick && o->decode_max_seq > 16384 ? 16384 : o->decode_max_seq;
    size_t count = 0;
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (long kv = 1; kv <= BENCH_HEADS && lengths[i] <= last; kv *= BENCH_HEADS)
            for (int bf16 = 0; bf16 <= 1; bf16++)
                for (int ti = 0; ti < (o->threads > 1 ? 2 : 1); ti++)
                    if (count < max)
                        out[count++] = (decode_bench){ .nk = lengths[i], .kv = kv,
                                                   .threads = ti ? o->threads : 1, .bf16 = bf16 };
    return count;
}
static size_t run_torch_decode(const ch08_options *o, decode_bench *cfg, size_t count,
                               decode_bench *out)
{
    char cmd[16384], line[512];
    size_t used = (size_t)snprintf(cmd, sizeof cmd, "'%s' tangled/ch08_torch_peer.py decode",
                                   o->python);
    for (size_t i = 0; i < count && used < sizeof cmd; i++)
        used += (size_t)snprintf(cmd + used, sizeof cmd - used, " 1,%ld,%d,%ld,64,%ld,5,1,%d",
                                 cfg[i].nk, BENCH_HEADS, cfg[i].kv, cfg[i].threads,
                                 cfg[i].bf16 ? 16 : 32);
    FILE *p = used < sizeof cmd ? popen(cmd, "r") : NULL;
    size_t got = 0;
    while (p && fgets(line, sizeof line, p) && got < count) {
        decode_bench b = { 0 };
        int bits, runs;
        if (sscanf(line, "decode %ld %ld %ld %d %d %lf %lf %lf", &b.nk, &b.kv, &b.threads,
                   &bits, &runs, &b.s.median, &b.s.min, &b.s.max) == 8) {
            b.bf16 = bits == 16;
            out[got++] = b;
        }
    }
    if (p) pclose(p);
    return got;
}
static void print_decode(const decode_bench *b, const char *who, const ladder_profile *m,
                         const decode_bench *torch, double limit)
{
    const decode_params p = { .batch = 1, .heads = BENCH_HEADS, .kv_heads = (size_t)b->kv,
                              .nq = 1, .nk = (size_t)b->nk, .d = 64 };
    const size_t bytes = decode_cache_bytes(&p, b->bf16 ? DECODE_BF16 : DECODE_FP32);
    const double gbs = (double)bytes / b->s.median / 1e9;
    char xt[32] = "-";
    if (torch) snprintf(xt, sizeof xt, "%.2f", torch->s.median / b->s.median);
    printf("%s decode-%s%s %ld 1 %d %ld %ld 5 %.6f %.6f %.6f %.2f %.1f %s %.2f %.1f\n", CH08_PROGRAM,
           who, b->bf16 ? "bf16" : "fp32", b->nk, BENCH_HEADS, b->kv, b->threads, b->s.median,
           b->s.min, b->s.max, gbs, 100 * gbs / dram_gbs(m, b->threads), xt, limit,
           100 * gbs / limit);
    fflush(stdout);
}
static const decode_bench *find_decode(const decode_bench *r, size_t count, const decode_bench *like)
{
    for (size_t i = 0; i < count; i++)
        if (r[i].nk == like->nk && r[i].kv == like->kv && r[i].threads == like->threads
            && r[i].bf16 == like->bf16)
            return &r[i];
    return NULL;
}
static void run_decode_bench(const ch08_options *o, const ladder_profile *m)
{
    static decode_bench cfg[64], torch[64];
    const size_t count = decode_bench_configs(o, cfg, 64);
    if (count == 0) return;
    printf("# %s: decoding, n_q = 1, %d query heads, d = 64; DRAM read bandwidth %.2f GB/s one "
           "core, %.2f all %ld (chapter 1)\n", CH08_PROGRAM, BENCH_HEADS, dram_gbs(m, 1),
           dram_gbs(m, o->threads), o->threads);
    printf("# columns: program kernel n_k n_q heads kv_heads threads runs median_s min_s max_s "
           "gbs pct_dram x_torch limit_gbs pct_limit\n");
    const size_t torch_count = o->python ? run_torch_decode(o, cfg, count, torch) : 0;
    char why[160];
    const bool tiles = decode_tiles_here(why);
    for (size_t i = 0; i < count; i++) {
        decode_bench *b = &cfg[i];
        const decode_params p = decode_params_of(&(ch08_options){ .heads = BENCH_HEADS, .dim = 64 },
                                                 (size_t)b->nk, (size_t)b->kv);
        decode_problem t = decode_problem_new(&p, 0, true);
        const decode_config c = { .threads = (int)b->threads, .crew = o->crew };
        const decode_speed sp = time_decode(&t, b->bf16 ? DECODE_BF16 : DECODE_FP32, &c, 5, m);
        b->s = sp.s;
        b->limit = sp.limit;
        fprintf(stderr, "bench: decode n_k=%ld G=%ld %s threads=%ld: %.4f s\n", b->nk, b->kv,
                b->bf16 ? "bf16" : "fp32", b->threads, b->s.median);
        const decode_bench *tc = find_decode(torch, torch_count, b);
        print_decode(b, "", m, tc, b->limit);
        if (tc) print_decode(tc, "torch-", m, NULL, b->limit);
        if (tiles && b->bf16 && b->kv == 1) {
            const decode_config ct = { .threads = (int)b->threads, .crew = o->crew, .piece = amx_decode_piece };
            decode_bench on_tiles = *b;
            on_tiles.s = time_decode(&t, DECODE_BF16, &ct, 5, m).s;
            print_decode(&on_tiles, "tiles-", m, tc, b->limit);
        }
        decode_problem_free(&t);
    }
}
static size_t ladder_bytes(const ch08_options *o)
{
    const attn_params p = ladder_params(o);
    const fused_config cfg = config_of(o, (int)o->threads);
    size_t beside = fa_mul(fa_mul(p.nq + p.nk, p.d) + p.nk, sizeof(double));
    for (int i = 0; i < RUNG_COUNT; i++) {
        const size_t b = kernel_bytes(RUNGS[i].kernel, &p, &cfg);
        if (b > beside) beside = b;
    }
    return fa_mul(4, floats_bytes(fa_mul(fa_mul(p.heads, p.nq), p.d))) + beside;
}
static size_t decode_receipt_bytes(const ch08_options *o)
{
    const size_t nk = (size_t)o->seq * 32 < DECODE_MAX_KEYS ? (size_t)o->seq * 32 : DECODE_MAX_KEYS;
    const decode_params p = { .batch = 1, .heads = (size_t)o->heads, .kv_heads = (size_t)o->heads,
                              .nq = 1, .nk = nk, .d = (size_t)o->dim };
    const decode_config cfg = { .threads = (int)o->threads };
    return decode_problem_bytes(&p, true) + attention_decode_bytes(&p, &cfg)
           + fa_mul(fa_mul(p.heads, p.d), sizeof(float));
}
static void run_receipts(const ch08_options *o, report *r)
{
    const size_t ladder = ladder_bytes(o), decode = decode_receipt_bytes(o);
    fa_require(ladder > decode ? ladder : decode,
               "the ladder's Q, K, V, O and workspace, or the decoding's cache");
    flops_table(r, (size_t)o->count_block);
    traffic_table(r, (size_t)o->count_block);
    cachegrind_table(r, o->data_dir);
    profile_table(r, o->data_dir);
    const ladder_profile machine = machine_of(o, r);
    ladder_table(r, o, &machine);
    decode_table(r, o, &machine);
    if (o->data_dir) write_decode_split(o->data_dir);
    report_factf(r, "register_tile_keys_avx2", "%d", 16);
    report_recorded(r, o);
    report_memory(r, o);
}
int main(int argc, char **argv)
{
    ch08_options o = ch08_defaults();
    parse_ch08_options(argc, argv, &o);
    fa_isa_cap(CH08_PROGRAM);      /* a wrong FA_ISA stops here */
    #ifndef main
    blas_use_known_kernels(argv);
    #endif
    if (o.traffic_run) { traffic_run(&o); return 0; }
    if (o.profile_run) { profile_run(o.profile_run); return 0; }
    o.crew = crew_open((int)o.threads, CH08_PROGRAM);
    if (o.bench) { run_bench(&o); crew_close(o.crew); return 0; }
    const bool files = o.q_path || o.k_path || o.v_path || o.out_path;
    if (files && decode_mode(&o))
        die_usage(CH08_PROGRAM, "decoding draws its own inputs: --seq-k, --seq-q, --kv-heads "
                  "and --cache do not go with --q, --k, --v or --out");
    report *r = report_new(CH08_PROGRAM, o.json);
    if (files) run_ch08_on_files(&o, r);
    else if (decode_mode(&o)) run_decode(&o, r);
    else run_receipts(&o, r);
    report_finish(r, stdout);
    crew_close(o.crew);
    return 0;
}
