/* ch06_memory.c — tangled from chapters/ch06_memory.nw. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "cpu/attention.h"
#include "ch06_memory.h"

enum {
    FP32_BYTES = 4,   /* float32 */
    BF16_BYTES = 2    /* bfloat16 */
};

typedef struct {
    size_t layers, heads, kv_heads, head_dim, elem_bytes, context;
} model_shape;

/* config.json of meta-llama/Llama-3.1-8B: num_hidden_layers 32, num_attention_heads 32,
   num_key_value_heads 8, hidden_size 4096 (head dim 4096 / 32 = 128),
   torch_dtype bfloat16, max_position_embeddings 131072 */
static const model_shape LLAMA_3_1_8B = { 32, 32, 8, 128, BF16_BYTES, 131072 };

size_t score_matrix_bytes(size_t heads, size_t n, size_t elem_bytes)
{
    return fa_mul(fa_mul(heads, fa_mul(n, n)), elem_bytes);
}

size_t qkvo_bytes(size_t heads, size_t n, size_t d, size_t elem_bytes)
{
    return fa_mul(4, fa_mul(fa_mul(heads, n), fa_mul(d, elem_bytes)));
}

size_t tile_bytes(size_t heads, size_t block_q, size_t block_k, size_t elem_bytes)
{
    return fa_mul(fa_mul(heads, block_q), fa_mul(block_k, elem_bytes));
}

size_t kv_cache_bytes_per_token(size_t layers, size_t kv_heads, size_t head_dim,
                                size_t elem_bytes)
{
    return fa_mul(fa_mul(2, layers), fa_mul(fa_mul(kv_heads, head_dim), elem_bytes));
}

static size_t model_kv_bytes(const model_shape *m, size_t n)
{
    size_t per_token = kv_cache_bytes_per_token(m->layers, m->kv_heads, m->head_dim,
                                                m->elem_bytes);
    return fa_mul(per_token, n);
}

static const double A100_DECIMAL = 80e9;                      /* "80 GB" read as 10^9 */
static const double A100_BINARY = 80.0 * 1024 * 1024 * 1024;  /* read as 2^30 */

double cards_exact(double bytes, double card_bytes) { return bytes / card_bytes; }

size_t cards_needed(double bytes, double card_bytes)
{
    return (size_t)ceil(bytes / card_bytes);
}

static void transpose_keys(const float *k, size_t nk, size_t d, float *keys_t)
{
    for (size_t j = 0; j < nk; j++)
        for (size_t c = 0; c < d; c++)
            keys_t[c * nk + j] = k[j * d + c];
}

static void score_row(const float *qi, const float *keys_t, size_t nk, size_t d,
                      float scale, float *row)
{
    memset(row, 0, nk * sizeof *row);
    attn_add_weighted_rows(row, qi, keys_t, d, nk);
    attn_scale_row(row, nk, scale);
}

static void softmax_in_place(float *row, size_t n)
{
    const float sum = attn_exp_row(row, n, block_max(row, n));
    for (size_t j = 0; j < n; j++) row[j] /= sum;
}

static void output_row(const float *probs, const float *v, size_t nk, size_t d,
                       float *out)
{
    memset(out, 0, d * sizeof *out);
    attn_add_weighted_rows(out, probs, v, nk, d);
}

typedef struct naive_job naive_job;
struct naive_job {
    const attn_params *p;
    const float *q, *keys_t, *v;   /* this head's queries, transposed keys, values */
    float *scores, *o;             /* this head's scores (then probabilities), output */
    size_t row0, row1;             /* rows row0 .. row1-1 */
    void (*pass)(const naive_job *);
};

static void score_rows(const naive_job *job)
{
    const attn_params *p = job->p;
    for (size_t i = job->row0; i < job->row1; i++) {
        float *row = job->scores + i * p->nk;
        score_row(job->q + i * p->d, job->keys_t, p->nk, p->d, p->scale, row);
        softmax_in_place(row, p->nk);
    }
}

static void output_rows(const naive_job *job)
{
    const attn_params *p = job->p;
    for (size_t i = job->row0; i < job->row1; i++)
        output_row(job->scores + i * p->nk, job->v, p->nk, p->d, job->o + i * p->d);
}

enum { MAX_THREADS = 64 };

static void *run_job(void *arg)
{
    const naive_job *job = arg;
    job->pass(job);
    return NULL;
}

static void split_rows(naive_job job, size_t threads)
{
    pthread_t tid[MAX_THREADS];
    naive_job part[MAX_THREADS];
    bool started[MAX_THREADS] = { false };
    const size_t nq = job.p->nq, per = (nq + threads - 1) / threads;
    for (size_t t = 0; t < threads; t++) {
        part[t] = job;
        part[t].row0 = t * per < nq ? t * per : nq;
        part[t].row1 = (t + 1) * per < nq ? (t + 1) * per : nq;
        started[t] = t > 0 && pthread_create(&tid[t], NULL, run_job, &part[t]) == 0;
    }
    for (size_t t = 0; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else part[t].pass(&part[t]);
    }
}

void naive_all_heads(const attn_params *p, const float *q, const float *k,
                     const float *v, float *o, size_t threads)
{
    const size_t heads = p->batch * p->heads, nq = p->nq, nk = p->nk, d = p->d;
    float *scores = fa_alloc(fa_mul(fa_mul(heads, nq), fa_mul(nk, sizeof(float))));
    float *keys_t = fa_alloc(fa_mul(nk, fa_mul(d, sizeof(float))));
    for (size_t h = 0; h < heads; h++) {
        transpose_keys(k + h * nk * d, nk, d, keys_t);
        split_rows((naive_job){ .p = p, .q = q + h * nq * d, .keys_t = keys_t,
                                .scores = scores + h * nq * nk, .pass = score_rows },
                   threads);
    }
    fa_free(keys_t);
    for (size_t h = 0; h < heads; h++)
        split_rows((naive_job){ .p = p, .v = v + h * nk * d,
                                .scores = scores + h * nq * nk, .o = o + h * nq * d,
                                .pass = output_rows },
                   threads);
    fa_free(scores);
}

typedef struct { float *q, *k, *v, *o; } qkvo;

static qkvo qkvo_new(const attn_params *p, uint32_t seed)
{
    const size_t nq = fa_mul(p->batch * p->heads, fa_mul(p->nq, p->d));
    const size_t nk = fa_mul(p->batch * p->heads, fa_mul(p->nk, p->d));
    qkvo t = { fa_alloc(fa_mul(nq, sizeof(float))), fa_alloc(fa_mul(nk, sizeof(float))),
               fa_alloc(fa_mul(nk, sizeof(float))),
               fa_alloc(fa_mul(nq, sizeof(float))) };
    attn_draw_inputs(p, seed, t.q, t.k, t.v);
    return t;
}

static void qkvo_free(qkvo *t)
{
    fa_free(t->q); fa_free(t->k); fa_free(t->v); fa_free(t->o);
}

static size_t tiled_first_rows(const attn_params *p, const qkvo *t, size_t rows)
{
    attn_stats st = { 0 };
    if (rows == 0 || rows >= p->nq) {
        attention_tiled(p, t->q, t->k, t->v, t->o, &st);
        return st.peak_tile_bytes;
    }
    attn_params part = *p;
    part.batch = part.heads = 1;
    part.nq = rows;
    for (size_t h = 0; h < p->batch * p->heads; h++)
        attention_tiled(&part, t->q + h * p->nq * p->d, t->k + h * p->nk * p->d,
                        t->v + h * p->nk * p->d, t->o + h * p->nq * p->d, &st);
    return st.peak_tile_bytes;
}

path_memory measure_path(path_kind kind, const attn_params *p, uint32_t seed,
                         size_t threads, size_t tiled_rows)
{
    path_memory m = { .rss_start = process_peak_rss() };
    const size_t before = fa_bytes_live();
    qkvo t = qkvo_new(p, seed);
    m.inputs = fa_bytes_live() - before;
    fa_reset_peak();
    double start = now_seconds();
    if (kind == NAIVE_PATH)
        naive_all_heads(p, t.q, t.k, t.v, t.o, threads);
    else
        m.tile_stats = tiled_first_rows(p, &t, tiled_rows);
    m.seconds = now_seconds() - start;
    m.rss_peak = process_peak_rss();
    m.fa_peak = fa_bytes_peak() - before;
    qkvo_free(&t);
    return m;
}

static bool write_all(int fd, const void *buf, size_t bytes)
{
    const char *at = buf;
    while (bytes > 0) {
        ssize_t n = write(fd, at, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        at += n;
        bytes -= (size_t)n;
    }
    return true;
}

static bool read_all(int fd, void *buf, size_t bytes)
{
    char *at = buf;
    while (bytes > 0) {
        ssize_t n = read(fd, at, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        at += n;
        bytes -= (size_t)n;
    }
    return true;
}

path_memory measure_in_fresh_process(path_kind kind, const attn_params *p,
                                     uint32_t seed, size_t threads, size_t tiled_rows)
{
    int fd[2];
    fflush(stdout);
    fflush(stderr);
    pid_t pid = pipe(fd) == 0 ? fork() : -1;
    if (pid < 0) { perror("ch06_memory: cannot start a measuring process"); exit(2); }
    if (pid == 0) {
        close(fd[0]);
        path_memory m = measure_path(kind, p, seed, threads, tiled_rows);
        _exit(write_all(fd[1], &m, sizeof m) ? 0 : 3);
    }
    close(fd[1]);
    path_memory m;
    bool complete = read_all(fd[0], &m, sizeof m);
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "ch06_memory: the measurement at n = %zu failed\n", p->nq);
        exit(2);
    }
    return m;
}

typedef struct {
    long seq, heads, dim, block, threads, tiled_rows, seed;
    bool json;
    const char *data, *rng_name;
    rng_path rng;           /* from rng_name, once the options are read */
} ch06_settings;

enum { MEASURED_SIZES = 4 };
static const size_t SIZE_DIVISORS[MEASURED_SIZES] = { 8, 4, 2, 1 };

typedef struct {
    size_t n;
    path_memory naive, tiled;
} memory_row;

static size_t block_at(const ch06_settings *s, size_t n)
{
    return (size_t)s->block < n ? (size_t)s->block : n;
}

static attn_params problem_at(const ch06_settings *s, size_t n)
{
    attn_params p = attn_default(1, (size_t)s->heads, n, n, (size_t)s->dim);
    p.block_q = p.block_k = block_at(s, n);
    p.rng = s->rng;
    return p;
}

static void refuse_what_cannot_fit(const ch06_settings *s, size_t n)
{
    size_t heads = (size_t)s->heads, d = (size_t)s->dim;
    size_t need = score_matrix_bytes(heads, n, FP32_BYTES)
                + qkvo_bytes(heads, n, d, FP32_BYTES);
    char what[64];
    snprintf(what, sizeof what, "the naive path at n = %zu", n);
    fa_require(need, what);
}

memory_row measure_row(const ch06_settings *s, size_t n)
{
    attn_params p = problem_at(s, n);
    uint32_t seed = (uint32_t)s->seed;
    size_t scores = score_matrix_bytes((size_t)s->heads, n, FP32_BYTES);
    char a[32];
    if (scores > 1073741824)
        fprintf(stderr, "ch06_memory: measuring n = %zu (%s of scores)\n", n,
                fmt_bytes(a, (double)scores));
    memory_row row = { .n = n };
    row.naive = measure_in_fresh_process(NAIVE_PATH, &p, seed, (size_t)s->threads, 0);
    row.tiled = measure_in_fresh_process(TILED_PATH, &p, seed, (size_t)s->threads,
                                         (size_t)s->tiled_rows);
    return row;
}

static void memory_table_row(table *t, const ch06_settings *s, const memory_row *row)
{
    size_t h = (size_t)s->heads, n = row->n, d = (size_t)s->dim, b = block_at(s, n);
    size_t score = score_matrix_bytes(h, n, FP32_BYTES);
    size_t inputs = qkvo_bytes(h, n, d, FP32_BYTES);
    char c[7][32];
    table_rowf(t, "%zu|%s|%s|%s|%s|%s|%s|%s", n, fmt_bytes(c[0], (double)score),
               fmt_bytes(c[1], (double)(score + inputs)),
               fmt_bytes(c[2], (double)row->naive.fa_peak),
               fmt_bytes(c[3], (double)row->naive.rss_peak),
               fmt_bytes(c[4], (double)tile_bytes(h, b, b, FP32_BYTES)),
               fmt_bytes(c[5], (double)(row->tiled.fa_peak - row->tiled.inputs)),
               fmt_bytes(c[6], (double)row->tiled.rss_peak));
}

static void memory_table(report *r, const ch06_settings *s, const memory_row *rows,
                         size_t count)
{
    static const char *const columns[] = {
        "n", "scores", "+ Q,K,V,O", "naive, allocator", "naive, process",
        "tiles, all heads", "tiled residual", "tiled, process", NULL };
    char title[160] = "Memory of the naive and the tiled path, measured";
    if (s->tiled_rows > 0 && s->tiled_rows < s->seq)
        snprintf(title + strlen(title), sizeof title - strlen(title),
                 " (tiled path: the first %ld query rows of each head)", s->tiled_rows);
    table *t = report_table(r, "memory", title, columns);
    for (size_t i = 0; i < count; i++)
        memory_table_row(t, s, &rows[i]);
}

static size_t tiled_residual(const memory_row *row)
{
    return row->tiled.fa_peak - row->tiled.inputs;
}

static bool same_residual_everywhere(const memory_row *rows, size_t count)
{
    for (size_t i = 1; i < count; i++)
        if (tiled_residual(&rows[i]) != tiled_residual(&rows[0])) return false;
    return true;
}

static void residual_facts(report *r, const ch06_settings *s, const memory_row *rows,
                           size_t count)
{
    size_t residual = tiled_residual(&rows[0]), b = (size_t)s->block;
    size_t all_heads = tile_bytes((size_t)s->heads, b, b, FP32_BYTES);
    bool same = same_residual_everywhere(rows, count);
    char a[32];
    report_fact(r, "tiled_residual", fmt_bytes(a, (double)residual));
    report_fact(r, "tiled_residual_bytes", fmt_int(a, (long long)residual));
    report_fact(r, "tiled_residual_same", same ? "yes" : "no");
    report_fact(r, "tile_stats_bytes", fmt_int(a, (long long)rows[0].tiled.tile_stats));
    report_fact(r, "residual_over_tiles",
                fmt_num(a, (double)residual / (double)all_heads));
}

static void measured_facts(report *r, const ch06_settings *s, const memory_row *rows,
                           size_t count)
{
    const memory_row *last = &rows[count - 1];
    size_t h = (size_t)s->heads, n = last->n, d = (size_t)s->dim;
    size_t analytic = score_matrix_bytes(h, n, FP32_BYTES)
                    + qkvo_bytes(h, n, d, FP32_BYTES);
    char a[32];
    report_note(r, "The largest length: the naive peak against the formula, the\n"
                   "resident sets, the times, and the tiled residual (what the\n"
                   "tiled kernel allocated for itself):");
    report_fact(r, "naive_peak_bytes", fmt_int(a, (long long)last->naive.fa_peak));
    report_fact(r, "analytic_bytes", fmt_int(a, (long long)analytic));
    report_fact(r, "naive_over_analytic",
                fmt_num(a, (double)last->naive.fa_peak / (double)analytic));
    report_fact(r, "naive_rss", fmt_bytes(a, (double)last->naive.rss_peak));
    report_fact(r, "rss_start", fmt_bytes(a, (double)last->naive.rss_start));
    report_fact(r, "tiled_rss", fmt_bytes(a, (double)last->tiled.rss_peak));
    size_t rows_run = n;
    if (s->tiled_rows > 0 && (size_t)s->tiled_rows < n) rows_run = (size_t)s->tiled_rows;
    char time[32];
    report_fact(r, "naive_seconds", fmt_sig(time, last->naive.seconds, 2));
    report_fact(r, "tiled_seconds", fmt_sig(time, last->tiled.seconds, 2));
    report_fact(r, "tiled_full_seconds",
                fmt_sig(time, last->tiled.seconds * (double)n / (double)rows_run, 2));
    residual_facts(r, s, rows, count);
}

/* from twice the largest measured length to Llama 3.1 8B's context */
static const size_t EXTRAPOLATED[] = { 8192, 16384, 32768, 131072 };
enum { EXTRAPOLATED_SIZES = sizeof EXTRAPOLATED / sizeof EXTRAPOLATED[0] };

static void extrapolation_table(report *r, const ch06_settings *s)
{
    static const char *const columns[] = { "n", "measured shape, fp32",
                                           "Llama 3.1 8B, bf16", NULL };
    const model_shape *m = &LLAMA_3_1_8B;
    table *t = report_table(r, "extrapolation",
                            "Score matrix of one layer, one sequence", columns);
    for (size_t i = 0; i < EXTRAPOLATED_SIZES; i++) {
        size_t n = EXTRAPOLATED[i];
        double ours = (double)score_matrix_bytes((size_t)s->heads, n, FP32_BYTES);
        double llama = (double)score_matrix_bytes(m->heads, n, m->elem_bytes);
        char a[32], b[32];
        table_rowf(t, "%zu|%s|%s", n, fmt_bytes(a, ours), fmt_bytes(b, llama));
    }
}

static void model_facts(report *r, const model_shape *m)
{
    char a[32];
    report_note(r, "Llama 3.1 8B's shape, its score matrix at the full context, and\n"
                   "the A100 80 GB cards that would hold it, 80 GB read both ways:");
    report_factf(r, "llama_layers", "%zu", m->layers);
    report_factf(r, "llama_heads", "%zu", m->heads);
    report_factf(r, "llama_kv_heads", "%zu", m->kv_heads);
    report_factf(r, "llama_head_dim", "%zu", m->head_dim);
    report_fact(r, "llama_context", fmt_int(a, (long long)m->context));
    report_factf(r, "gqa_factor", "%zu", m->heads / m->kv_heads);
}

static void extrapolated_facts(report *r)
{
    const model_shape *m = &LLAMA_3_1_8B;
    double bytes = (double)score_matrix_bytes(m->heads, m->context, m->elem_bytes);
    char a[32];
    model_facts(r, m);
    report_fact(r, "llama_score_context", fmt_bytes(a, bytes));
    report_fact(r, "llama_score_context_bytes", fmt_int(a, (long long)bytes));
    report_fact(r, "a100_decimal_bytes", fmt_int(a, (long long)A100_DECIMAL));
    report_fact(r, "a100_binary_bytes", fmt_int(a, (long long)A100_BINARY));
    report_fact(r, "a100_binary_mib", fmt_int(a, (long long)(A100_BINARY / 1048576)));
    report_fact(r, "cards_decimal_exact", fmt_num(a, cards_exact(bytes, A100_DECIMAL)));
    report_factf(r, "cards_decimal", "%zu", cards_needed(bytes, A100_DECIMAL));
    report_fact(r, "cards_binary_exact", fmt_num(a, cards_exact(bytes, A100_BINARY)));
    report_factf(r, "cards_binary", "%zu", cards_needed(bytes, A100_BINARY));
}

static void kv_cache_row(table *t, const model_shape *m, size_t n)
{
    double kv = (double)model_kv_bytes(m, n);
    double score = (double)score_matrix_bytes(m->heads, n, m->elem_bytes);
    char a[32], b[32];
    table_rowf(t, "%zu|%s|%s|%.0fx", n, fmt_bytes(a, kv), fmt_bytes(b, score),
               score / kv);
}

static void kv_cache_table(report *r)
{
    static const char *const columns[] = { "n", "KV cache, all layers",
                                           "score matrix, one layer",
                                           "score / KV cache", NULL };
    table *t = report_table(r, "kv_cache",
                            "Llama 3.1 8B (bf16): KV cache and score matrix", columns);
    for (size_t i = 0; i < EXTRAPOLATED_SIZES; i++)
        kv_cache_row(t, &LLAMA_3_1_8B, EXTRAPOLATED[i]);
}

static void kv_cache_facts(report *r)
{
    const model_shape *m = &LLAMA_3_1_8B;
    size_t per_token = model_kv_bytes(m, 1);
    double kv = (double)model_kv_bytes(m, m->context);
    double score = (double)score_matrix_bytes(m->heads, m->context, m->elem_bytes);
    char a[32];
    report_note(r, "Llama 3.1 8B's KV cache, per token and at the full context:");
    report_fact(r, "kv_per_token_bytes", fmt_int(a, (long long)per_token));
    report_factf(r, "kv_per_token_kib", "%zu", per_token / 1024);
    report_fact(r, "kv_context", fmt_bytes(a, kv));
    report_factf(r, "score_over_kv_context", "%.0f", score / kv);
    report_factf(r, "score_kv_divisor", "%zu", per_token / (m->heads * m->elem_bytes));
}

static const double MIB = 1024.0 * 1024.0;

static void write_measured(const char *dir, const memory_row *rows, size_t count)
{
    FILE *f = data_file(dir, "ch06_measured.dat");
    fprintf(f, "# n naive_fa_peak naive_process_peak tiled_fa_peak tiled_process_peak"
               " (MiB)\n");
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%zu %.6f %.6f %.6f %.6f\n", rows[i].n, rows[i].naive.fa_peak / MIB,
                rows[i].naive.rss_peak / MIB, rows[i].tiled.fa_peak / MIB,
                rows[i].tiled.rss_peak / MIB);
    data_close(f);
}

static void formula_line(FILE *f, const ch06_settings *s, size_t n)
{
    size_t h = (size_t)s->heads, d = (size_t)s->dim, b = (size_t)s->block;
    const model_shape *m = &LLAMA_3_1_8B;
    fprintf(f, "%zu %.6f %.6f %.6f %.6f %.6f\n", n,
            score_matrix_bytes(h, n, FP32_BYTES) / MIB,
            score_matrix_bytes(m->heads, n, m->elem_bytes) / MIB,
            qkvo_bytes(h, n, d, FP32_BYTES) / MIB,
            tile_bytes(h, b, b, FP32_BYTES) / MIB, model_kv_bytes(m, n) / MIB);
}

static void write_formulas(const char *dir, const ch06_settings *s, size_t smallest)
{
    FILE *f = data_file(dir, "ch06_formulas.dat");
    fprintf(f, "# n score_fp32 score_llama_bf16 qkvo_fp32 tile_all_heads kv_llama"
               " (MiB)\n");
    for (size_t n = smallest; n <= 131072; n *= 2)
        formula_line(f, s, n);
    data_close(f);
}

static ch06_settings read_settings(int argc, char **argv)
{
    ch06_settings s = { .seq = 4096, .heads = 8, .dim = 64, .block = 128, .threads = 2,
                        .tiled_rows = 128, .seed = 0, .rng_name = "scalar" };
    const option opts[] = {
        { "seq", OPT_INT, &s.seq, 8, 1048576, "N", "largest length; also N/2, N/4, N/8" },
        { "heads", OPT_INT, &s.heads, 1, 1024, "H", "heads" },
        { "dim", OPT_INT, &s.dim, 1, 1024, "D", "head dimension" },
        { "block", OPT_INT, &s.block, 1, 65536, "B", "tile size of the tiled kernel" },
        { "threads", OPT_INT, &s.threads, 1, MAX_THREADS, "T",
          "threads of the naive driver" },
        { "tiled-rows", OPT_INT, &s.tiled_rows, 0, 1048576, "R",
          "query rows per head for the tiled kernel, 0 = all" },
        { "seed", OPT_INT, &s.seed, 0, 4294967295.0, "S", "random seed" },
        RNG_OPTION(&s.rng_name),
        { "json", OPT_FLAG, &s.json, 0, 0, NULL, "print JSON" },
        { "data", OPT_STRING, &s.data, 0, 0, "DIR", "write the figure data into DIR" },
    };
    options_parse(argc, argv, "ch06_memory",
                  "Measure the memory of naive and tiled attention; "
                  "extrapolate to 128k tokens.",
                  opts, sizeof opts / sizeof opts[0]);
    s.rng = rng_path_named("ch06_memory", s.rng_name);
    return s;
}

static void settings_facts(report *r, const ch06_settings *s, const memory_row *rows,
                           size_t count)
{
    char a[32];
    size_t n = rows[count - 1].n, h = (size_t)s->heads, d = (size_t)s->dim;
    size_t b = (size_t)s->block;
    char note[192] = "Memory of naive and tiled attention, measured; the tiled path runs\n"
                     "every query row.";
    if (s->tiled_rows > 0 && s->tiled_rows < s->seq)
        snprintf(note, sizeof note, "Memory of naive and tiled attention, measured. The"
                 " tiled path runs only\nthe first %ld query rows of each head;"
                 " --tiled-rows 0 runs them all.", s->tiled_rows);
    report_note(r, note);
    report_factf(r, "heads", "%ld", s->heads);
    report_factf(r, "dim", "%ld", s->dim);
    report_factf(r, "block", "%ld", s->block);
    report_factf(r, "threads", "%ld", s->threads);
    report_factf(r, "largest_n", "%zu", n);
    report_factf(r, "sizes", "%zu, %zu, %zu and %zu", rows[0].n, rows[1].n, rows[2].n,
                 rows[3].n);
    report_fact(r, "tiled_rows", s->tiled_rows == 0 ? "all" : fmt_int(a, s->tiled_rows));
    report_factf(r, "naive_gflop", "%.1f",
                 4.0 * (double)h * (double)n * (double)n * (double)d / 1e9);
    report_fact(r, "tile_all_heads",
                fmt_bytes(a, (double)tile_bytes(h, b, b, FP32_BYTES)));
}

int main(int argc, char **argv)
{
    ch06_settings s = read_settings(argc, argv);
    memory_row rows[MEASURED_SIZES];
    for (size_t i = 0; i < MEASURED_SIZES; i++)
        refuse_what_cannot_fit(&s, (size_t)s.seq / SIZE_DIVISORS[i]);
    for (size_t i = 0; i < MEASURED_SIZES; i++)
        rows[i] = measure_row(&s, (size_t)s.seq / SIZE_DIVISORS[i]);
    report *r = report_new("ch06_memory", s.json);
    settings_facts(r, &s, rows, MEASURED_SIZES);
    memory_table(r, &s, rows, MEASURED_SIZES);
    measured_facts(r, &s, rows, MEASURED_SIZES);
    extrapolation_table(r, &s);
    extrapolated_facts(r);
    kv_cache_table(r);
    kv_cache_facts(r);
    if (s.data != NULL) {
        write_measured(s.data, rows, MEASURED_SIZES);
        write_formulas(s.data, &s, rows[0].n);
    }
    report_finish(r, stdout);
    return 0;
}
