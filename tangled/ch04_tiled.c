/* ch04_tiled — tiled attention on .npy tensors or on seeded inputs.
   Tangled from chapters/ch04_tiled.nw. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ch04_tiled.h"

static void report_file_run(report *r, const ch04_options *o, const attn_params *p,
                            const tensor *q, const tensor *k, const attn_stats *st);
static const char *mask_text(const attn_params *p, char buf[96]);
static void reference_output(const attn_params *p, const tensor *q, const tensor *k,
                             const tensor *v, tensor *out);
static void fact_count(report *r, const char *key, const char *label, const char *mask,
                       size_t count);

static size_t min_block(size_t n);
static size_t ch04_seeded_bytes(const attn_params *p);
static void save_inputs(const char *dir, const tensor qkv[3]);
static void reserve_seeded_outputs(const ch04_options *o);
static void write_seeded_output(const ch04_options *o, const attn_params *p,
                                const tensor qkv[3]);
static void report_seeded_runs(report *r, const ch04_options *o, const attn_params *p,
                               const ch04_run runs[CH04_RUNS]);
static void report_run_tables(report *r, const attn_params *p,
                              const ch04_run runs[CH04_RUNS]);
static void add_run_row(table *t, const ch04_run *run);
static void explain_run_columns(report *r, const attn_params *p);
static void report_seeded_facts(report *r, const ch04_options *o, const attn_params *p,
                                const ch04_run runs[CH04_RUNS]);
static void write_blocks_data(const char *dir, const ch04_run runs[CH04_RUNS]);
static void write_walk_data(const char *dir, const attn_params *p,
                            const tensor qkv[3]);

ch04_options ch04_defaults(void)
{
    return (ch04_options){ .block_q = 64, .block_k = 64, .seed = 0, .batch = 1,
                           .heads = 4, .seq = 1000, .seq_k = 0, .dim = 64,
                           .rng = "scalar" };
}

static void parse_ch04_options(int argc, char **argv, ch04_options *o)
{
    const option opts[] = {
        { "q", OPT_STRING, &o->q_path, 0, 0, "FILE",
          "queries: .npy float32 (n,d), (h,n,d) or (b,h,n,d)" },
        { "k", OPT_STRING, &o->k_path, 0, 0, "FILE", "keys: same leading shape and d as --q" },
        { "v", OPT_STRING, &o->v_path, 0, 0, "FILE", "values: the shape of --k" },
        { "out", OPT_STRING, &o->out_path, 0, 0, "FILE",
          "write the output (.npy, the shape of --q)" },
        { "reference", OPT_FLAG, &o->reference, 0, 0, NULL,
          "output the double-precision reference instead" },
        { "causal", OPT_FLAG, &o->causal, 0, 0, NULL, "causal mask, top-left aligned" },
        { "window", OPT_INT, &o->window, 0, 1e9, "W",
          "sliding window of W keys (implies causal)" },
        { "block-q", OPT_INT, &o->block_q, 1, CH04_MAX_BLOCK, "N", "query rows per tile" },
        { "block-k", OPT_INT, &o->block_k, 1, CH04_MAX_BLOCK, "N", "key rows per tile" },
        { "scale", OPT_DOUBLE, &o->scale, 0, 1e12, "S", "score scale (0: 1/sqrt(d))" },
        { "seed", OPT_INT, &o->seed, 0, 4294967295.0, "N", "seed of the generated Q, K, V" },
        { "batch", OPT_INT, &o->batch, 1, 64, "B", "batch size" },
        { "heads", OPT_INT, &o->heads, 1, 64, "H", "heads" },
        { "seq", OPT_INT, &o->seq, 1, 16384, "N", "query length" },
        { "seq-k", OPT_INT, &o->seq_k, 0, 16384, "N", "key length (0: as --seq)" },
        { "dim", OPT_INT, &o->dim, 1, 1024, "D", "head dimension" },
        { "save", OPT_STRING, &o->save_dir, 0, 0, "DIR",
          "write the generated q.npy k.npy v.npy to DIR" },
        RNG_OPTION(&o->rng),
        { "json", OPT_FLAG, &o->json, 0, 0, NULL, "print the report as JSON" },
        { "data", OPT_STRING, &o->data_dir, 0, 0, "DIR",
          "write DIR/ch04_blocks.dat and the walk of one query block" },
    };
    options_parse(argc, argv, PROGRAM,
                  "tiled attention on .npy tensors or seeded inputs",
                  opts, sizeof opts / sizeof opts[0]);
}

static attn_stats compute_output(const ch04_options *o, const attn_params *p,
                                 const tensor *q, const tensor *k, const tensor *v,
                                 tensor *out)
{
    attn_stats st = { 0 };
    if (o->reference) reference_output(p, q, k, v, out);
    else attention_tiled(p, q->data, k->data, v->data, out->data, &st);
    return st;
}

static void reference_output(const attn_params *p, const tensor *q, const tensor *k,
                             const tensor *v, tensor *out)
{
    const size_t count = tensor_count(out);
    double *exact = fa_alloc(fa_mul(count, sizeof(double)));
    attention_reference(p, q->data, k->data, v->data, exact);
    for (size_t i = 0; i < count; i++) out->data[i] = (float)exact[i];
    fa_free(exact);
}

static void run_on_files(const ch04_options *o, report *r)
{
    if (!o->q_path || !o->k_path || !o->v_path || !o->out_path)
        die_usage(PROGRAM, "--q, --k, --v and --out go together");
    npy_reserve_outputs_or_exit(PROGRAM, &o->out_path, 1,
                                (const char *const[]){ o->q_path, o->k_path, o->v_path }, 3);
    tensor q = npy_read_or_exit(PROGRAM, o->q_path),
           k = npy_read_or_exit(PROGRAM, o->k_path),
           v = npy_read_or_exit(PROGRAM, o->v_path);
    attn_params p = attn_params_from_tensors(PROGRAM, &q, &k, &v);
    attn_apply_options(&p, o->causal, o->window, o->block_q, o->block_k, o->scale);
    tensor out = tensor_new(q.ndim, q.shape);
    const attn_stats st = compute_output(o, &p, &q, &k, &v, &out);
    npy_write_or_exit(PROGRAM, o->out_path, &out);
    report_file_run(r, o, &p, &q, &k, &st);
    tensor_free(&q); tensor_free(&k); tensor_free(&v); tensor_free(&out);
}

static void report_file_run(report *r, const ch04_options *o, const attn_params *p,
                            const tensor *q, const tensor *k, const attn_stats *st)
{
    char a[96];
    report_fact_labeled(r, "q_shape", "Q", shape_text(q, a));
    report_fact_labeled(r, "k_shape", "K and V", shape_text(k, a));
    report_fact_labeled(r, "kernel", "kernel",
                        o->reference ? "reference (double)" : "tiled");
    report_fact_labeled(r, "mask", "mask", mask_text(p, a));
    snprintf(a, sizeof a, "%zu x %zu", p->block_q, p->block_k);
    report_fact_labeled(r, "tile", "tile", a);
    fact_count(r, "tiles_visited", "tiles visited", "", st->tiles_computed);
    fact_count(r, "peak_tile_bytes", "tile bytes", "", st->peak_tile_bytes);
    report_fact_labeled(r, "output", "output written to", o->out_path);
}

static const char *mask_text(const attn_params *p, char buf[96])
{
    if (p->window > 0) snprintf(buf, 96, "window %ld", p->window);
    else snprintf(buf, 96, "%s", p->causal ? "causal" : "none");
    return buf;
}

void ch04_draw_inputs(const attn_params *p, uint32_t seed, tensor qkv[3])
{
    const size_t q_shape[4] = { p->batch, p->heads, p->nq, p->d };
    const size_t kv_shape[4] = { p->batch, p->heads, p->nk, p->d };
    qkv[0] = tensor_new(4, q_shape);
    qkv[1] = tensor_new(4, kv_shape);
    qkv[2] = tensor_new(4, kv_shape);
    attn_draw_inputs(p, seed, qkv[0].data, qkv[1].data, qkv[2].data);
}

static void tile_shapes(const ch04_options *o, const attn_params *p,
                        size_t shapes[CH04_SHAPES][2])
{
    const size_t fixed[CH04_SHAPES - 1][2] = {
        { 16, 16 }, { 128, 32 }, { 48, 300 },
        { min_block(p->nq), min_block(p->nk) } };
    shapes[0][0] = (size_t)o->block_q;
    shapes[0][1] = (size_t)o->block_k;
    for (int s = 1; s < CH04_SHAPES; s++) {
        shapes[s][0] = fixed[s - 1][0];
        shapes[s][1] = fixed[s - 1][1];
    }
}

static size_t min_block(size_t n) { return n < CH04_MAX_BLOCK ? n : CH04_MAX_BLOCK; }

static void measure_mask(attn_params p, const tensor qkv[3],
                         size_t shapes[CH04_SHAPES][2], ch04_run runs[CH04_SHAPES])
{
    const size_t count = tensor_count(&qkv[0]);
    double *exact = fa_alloc(fa_mul(count, sizeof(double)));
    float *out = fa_alloc(fa_mul(count, sizeof(float)));
    attention_reference(&p, qkv[0].data, qkv[1].data, qkv[2].data, exact);
    for (int s = 0; s < CH04_SHAPES; s++) {
        p.block_q = shapes[s][0];
        p.block_k = shapes[s][1];
        runs[s] = (ch04_run){ .block_q = p.block_q, .block_k = p.block_k, .masked = p.causal };
        attention_tiled(&p, qkv[0].data, qkv[1].data, qkv[2].data, out, &runs[s].stats);
        runs[s].max_error = max_abs_diff_fd(out, exact, count);
    }
    fa_free(out);
    fa_free(exact);
}

void ch04_measure(const ch04_options *o, const attn_params *p, const tensor qkv[3],
                  ch04_run runs[CH04_RUNS])
{
    size_t shapes[CH04_SHAPES][2];
    attn_params plain = *p, masked = *p;
    tile_shapes(o, p, shapes);
    plain.causal = false;
    plain.window = 0;
    masked.causal = true;
    measure_mask(plain, qkv, shapes, runs);
    measure_mask(masked, qkv, shapes, runs + CH04_SHAPES);
}

attn_params ch04_seeded_params(const ch04_options *o)
{
    const size_t nk = (size_t)(o->seq_k > 0 ? o->seq_k : o->seq);
    attn_params p = attn_default((size_t)o->batch, (size_t)o->heads, (size_t)o->seq, nk,
                                 (size_t)o->dim);
    attn_apply_options(&p, o->causal, o->window, o->block_q, o->block_k, o->scale);
    p.rng = rng_path_named(PROGRAM, o->rng);
    return p;
}

static size_t ch04_seeded_bytes(const attn_params *p)
{
    const size_t problems = fa_mul(p->batch, p->heads);
    const size_t q = fa_mul(fa_mul(problems, p->nq), p->d);
    const size_t kv = fa_mul(fa_mul(problems, p->nk), p->d);
    const size_t rows = min_block(p->nq), cols = min_block(p->nk);
    return fa_mul(q, sizeof(float) * 2 + sizeof(double)) + fa_mul(kv, 2 * sizeof(float))
         + fa_mul(fa_mul(p->nk, p->d + 1), sizeof(double))
         + fa_mul(fa_mul(rows, cols) + fa_mul(rows + cols, p->d), sizeof(float));
}

static void run_on_seeded_inputs(const ch04_options *o, report *r)
{
    reserve_seeded_outputs(o);
    const attn_params p = ch04_seeded_params(o);
    tensor qkv[3];
    ch04_run runs[CH04_RUNS];
    fa_require(ch04_seeded_bytes(&p), "the seeded run");
    ch04_draw_inputs(&p, (uint32_t)o->seed, qkv);
    if (o->save_dir) save_inputs(o->save_dir, qkv);
    ch04_measure(o, &p, qkv, runs);
    report_seeded_runs(r, o, &p, runs);
    if (o->data_dir) write_blocks_data(o->data_dir, runs);
    if (o->data_dir) write_walk_data(o->data_dir, &p, qkv);
    if (o->out_path) write_seeded_output(o, &p, qkv);
    for (int t = 0; t < 3; t++) tensor_free(&qkv[t]);
}

static void save_paths(const char *dir, char paths[3][4096])
{
    static const char *const names[3] = { "q.npy", "k.npy", "v.npy" };
    for (int t = 0; t < 3; t++)
        snprintf(paths[t], sizeof paths[t], "%s/%s", dir, names[t]);
}

static void save_inputs(const char *dir, const tensor qkv[3])
{
    char paths[3][4096];
    save_paths(dir, paths);
    npy_write_all_or_exit(PROGRAM, 3, (const char *const[]){ paths[0], paths[1], paths[2] },
                          (const tensor *const[]){ &qkv[0], &qkv[1], &qkv[2] });
}

static void reserve_seeded_outputs(const ch04_options *o)
{
    char paths[3][4096];
    const char *outputs[4] = { o->out_path, NULL, NULL, NULL };
    if (o->save_dir) {
        data_directory(o->save_dir);           /* creates DIR, or exits with a reason */
        save_paths(o->save_dir, paths);
        for (int t = 0; t < 3; t++) outputs[1 + t] = paths[t];
    }
    npy_reserve_outputs_or_exit(PROGRAM, outputs, 4, NULL, 0);
}

static void write_seeded_output(const ch04_options *o, const attn_params *p,
                                const tensor qkv[3])
{
    tensor out = tensor_new(4, qkv[0].shape);
    compute_output(o, p, &qkv[0], &qkv[1], &qkv[2], &out);
    npy_write_or_exit(PROGRAM, o->out_path, &out);
    tensor_free(&out);
}

static void report_seeded_runs(report *r, const ch04_options *o, const attn_params *p,
                               const ch04_run runs[CH04_RUNS])
{
    report_run_tables(r, p, runs);
    explain_run_columns(r, p);
    report_seeded_facts(r, o, p, runs);
}

static void report_run_tables(report *r, const attn_params *p,
                              const ch04_run runs[CH04_RUNS])
{
    static const char *const plain_columns[] = { "tile", "tiles visited", "tile bytes",
                                                 "max error", NULL };
    static const char *const masked_columns[] = { "tile", "tiles visited", "skipped",
                                                  "on the edge", "max error", NULL };
    char title[128], mask[96];
    attn_params masked = *p;
    masked.causal = true;
    snprintf(title, sizeof title, "Five tile shapes, mask: %s",
             mask_text(&masked, mask));
    table *plain = report_table(r, "blocks", "Five tile shapes, no mask", plain_columns);
    table *edge = report_table(r, "blocks_masked", title, masked_columns);
    for (int i = 0; i < CH04_SHAPES; i++) {
        add_run_row(plain, &runs[i]);
        add_run_row(edge, &runs[CH04_SHAPES + i]);
    }
}

static void add_run_row(table *t, const ch04_run *run)
{
    const attn_stats *st = &run->stats;
    char tile[48], visited[32], err[32], a[32], b[32];
    snprintf(tile, sizeof tile, "%zu x %zu", run->block_q, run->block_k);
    fmt_int(visited, (long long)st->tiles_computed);
    fmt_num(err, run->max_error);
    if (!run->masked)
        table_rowf(t, "%s|%s|%s|%s", tile, visited,
                   fmt_int(a, (long long)st->peak_tile_bytes), err);
    else
        table_rowf(t, "%s|%s|%s|%s|%s", tile, visited,
                   fmt_int(a, (long long)st->tiles_skipped),
                   fmt_int(b, (long long)st->tiles_masked), err);
}

static void explain_run_columns(report *r, const attn_params *p)
{
    char outputs[32], line[160];
    fmt_int(outputs, (long long)(p->batch * p->heads * p->nq * p->d));
    report_note(r, "tile:         query rows x key rows");
    report_note(r, "tile bytes:   its scores, and a running max and sum per query row");
    report_note(r, "skipped:      tiles the mask hides entirely, never computed");
    report_note(r, "on the edge:  tiles the mask cuts through, masked entry by entry");
    snprintf(line, sizeof line, "max error:    largest |O - O_ref| over all %s outputs, "
             "O_ref in float64", outputs);
    report_note(r, line);
}

static void report_seeded_facts(report *r, const ch04_options *o, const attn_params *p,
                                const ch04_run runs[CH04_RUNS])
{
    char b[96];
    const ch04_run *asked = &runs[p->causal ? CH04_SHAPES : 0];
    double worst = 0.0;
    for (int i = 0; i < CH04_RUNS; i++) worst = fmax(worst, runs[i].max_error);
    snprintf(b, sizeof b, "(%zu, %zu, %zu, %zu)", p->batch, p->heads, p->nq, p->d);
    report_fact_labeled(r, "shape", "Q (batch, heads, N, d)", b);
    snprintf(b, sizeof b, "%zu", p->nk);
    report_fact_labeled(r, "keys", "keys per head", b);
    snprintf(b, sizeof b, "%ld", o->seed);
    report_fact_labeled(r, "seed", "seed", b);
    report_fact_labeled(r, "mask", "mask", mask_text(p, b));
    snprintf(b, sizeof b, "%zu x %zu", asked->block_q, asked->block_k);
    report_fact_labeled(r, "tile", "tile", b);
    const attn_stats *edge = &runs[CH04_SHAPES].stats;
    attn_params masked = *p;
    masked.causal = true;
    mask_text(&masked, b);
    fact_count(r, "tiles_total", "tiles in all", "", asked->stats.tiles_total);
    fact_count(r, "tiles_visited", "tiles visited", "", asked->stats.tiles_computed);
    fact_count(r, "peak_tile_bytes", "tile bytes", "", asked->stats.peak_tile_bytes);
    fact_count(r, "masked_tiles_visited", "tiles visited, mask", b, edge->tiles_computed);
    fact_count(r, "masked_tiles_skipped", "tiles skipped, mask", b, edge->tiles_skipped);
    fact_count(r, "masked_tiles_on_edge", "tiles on the edge, mask", b, edge->tiles_masked);
    report_fact_labeled(r, "max_error", "max error", fmt_num(b, asked->max_error));
    report_fact_labeled(r, "worst_error", "worst of all ten runs", fmt_num(b, worst));
}

static void fact_count(report *r, const char *key, const char *label, const char *mask,
                         size_t count)
{
    char value[32], words[160];
    snprintf(words, sizeof words, "%s%s%s", label, *mask ? " " : "", mask);
    report_fact_labeled(r, key, words, fmt_int(value, (long long)count));
}

static void write_blocks_data(const char *dir, const ch04_run runs[CH04_RUNS])
{
    FILE *f = data_file(dir, "ch04_blocks.dat");
    fprintf(f, "# block_q block_k masked tiles visited skipped edge tile_bytes "
               "max_error\n");
    for (int i = 0; i < CH04_RUNS; i++) {
        const attn_stats *st = &runs[i].stats;
        fprintf(f, "%zu %zu %d %zu %zu %zu %zu %zu %.6e\n", runs[i].block_q,
                runs[i].block_k, runs[i].masked, st->tiles_total, st->tiles_computed,
                st->tiles_skipped, st->tiles_masked, st->peak_tile_bytes,
                runs[i].max_error);
    }
    data_close(f);
}

static float walk_score(const float *q, const float *k, size_t d, float scale)
{
    float s = 0.0f;
    for (size_t c = 0; c < d; c++) s += q[c] * k[c];
    return s * scale;
}

size_t ch04_walk(const attn_params *p, const float *q, const float *k,
                 const float *v, ch04_walk_step *steps)
{
    const size_t blocks_q = (p->nq + p->block_q - 1) / p->block_q;
    const size_t row = p->block_q * (blocks_q > CH04_WALK_BLOCK ? CH04_WALK_BLOCK
                                                               : blocks_q - 1);
    float *scores = fa_alloc(fa_mul(p->block_k, sizeof(float)));
    float *acc = fa_alloc(fa_mul(p->d, sizeof(float)));
    float m = -INFINITY, l = 0.0f;
    for (size_t k0 = 0, b = 0; k0 < p->nk; k0 += p->block_k, b++) {
        const size_t cols = p->nk - k0 < p->block_k ? p->nk - k0 : p->block_k;
        for (size_t j = 0; j < cols; j++)
            scores[j] = walk_score(q + row * p->d, k + (k0 + j) * p->d, p->d, p->scale);
        const float m_old = m;
        attn_online_update(1, cols, p->d, scores, v + k0 * p->d, &m, &l, acc);
        steps[b] = (ch04_walk_step){ .key_block = b, .m = m, .l = l,
                                     .alpha = expf(m_old - m), .acc0 = acc[0] };
    }
    fa_free(scores);
    fa_free(acc);
    return row;
}

static void write_walk_data(const char *dir, const attn_params *p,
                            const tensor qkv[3])
{
    const size_t blocks_q = (p->nq + p->block_q - 1) / p->block_q;
    const size_t blocks_k = (p->nk + p->block_k - 1) / p->block_k;
    ch04_walk_step *steps = fa_alloc(fa_mul(blocks_k, sizeof *steps));
    const size_t row = ch04_walk(p, qkv[0].data, qkv[1].data, qkv[2].data, steps);
    FILE *f = data_file(dir, "ch04_walk_tiles.dat");
    fprintf(f, "# query_block key_block walking\n");
    for (size_t b = 0; b < blocks_q; b++)
        for (size_t c = 0; c < blocks_k; c++)
            fprintf(f, "%zu %zu %d\n", b, c, b == row / p->block_q);
    data_close(f);
    f = data_file(dir, "ch04_walk.dat");
    fprintf(f, "# query row %zu (query block %zu): key_block m l alpha acc0\n",
            row, row / p->block_q);
    for (size_t b = 0; b < blocks_k; b++)
        fprintf(f, "%zu %.9g %.9g %.9g %.9g\n", steps[b].key_block, steps[b].m,
                steps[b].l, steps[b].alpha, steps[b].acc0);
    data_close(f);
    fa_free(steps);
}

int main(int argc, char **argv)
{
    ch04_options o = ch04_defaults();
    parse_ch04_options(argc, argv, &o);
    report *r = report_new(PROGRAM, o.json);
    if (o.q_path || o.k_path || o.v_path) run_on_files(&o, r);
    else run_on_seeded_inputs(&o, r);
    report_finish(r, stdout);
    return 0;
}
