/* ch07_causal_skip.c — tangled from chapters/ch07_causal_skip.nw. */
#include <stdbool.h>
#include <stdio.h>
#include "harness/harness.h"
#include "cpu/attention.h"
#include "ch07_causal_skip.h"

/* the tile of query rows q0..q1 and key columns k0..k1, inclusive */
tile_state causal_tile_state(size_t q0, size_t q1, size_t k0, size_t k1)
{
    if (k0 > q1) return TILE_SKIPPED;
    if (k1 <= q0) return TILE_FULL;
    return TILE_DIAGONAL;
}

static size_t min_count(size_t a, size_t b) { return a < b ? a : b; }

tile_counts count_causal_tiles(size_t nq, size_t nk, size_t block_q, size_t block_k)
{
    tile_counts c = { 0 };
    for (size_t q0 = 0; q0 < nq; q0 += block_q) {
        const size_t rows = min_count(block_q, nq - q0);
        for (size_t k0 = 0; k0 < nk; k0 += block_k) {
            const size_t cols = min_count(block_k, nk - k0);
            const tile_state s = causal_tile_state(q0, q0 + rows - 1, k0, k0 + cols - 1);
            c.total++;
            if (s == TILE_SKIPPED) { c.skipped++; continue; }
            c.computed++;
            c.diagonal += s == TILE_DIAGONAL;
            c.scores += rows * cols;
        }
    }
    return c;
}

size_t blocks_of(size_t n, size_t block) { return (n + block - 1) / block; }

double skipped_fraction_closed_form(size_t T)
{
    return (double)(T - 1) / (2.0 * (double)T);
}

bool closed_form_holds(tile_counts c, size_t T)
{
    return 2 * T * c.skipped == (T - 1) * c.total;
}

double flop_ratio_closed_form(size_t T)   /* (T+1)/(2T): share of the scores computed */
{
    return (double)(T + 1) / (2.0 * (double)T);
}

attn_stats run_causal_kernel(size_t n, size_t heads, size_t d, size_t block,
                             uint32_t seed, rng_path rng)
{
    attn_params p = attn_default(1, heads, n, n, d);
    p.causal = true;
    p.rng = rng;
    p.block_q = p.block_k = block;
    size_t count = fa_mul(heads, fa_mul(n, d));
    float *q = fa_alloc(fa_mul(count, 4)), *k = fa_alloc(fa_mul(count, 4));
    float *v = fa_alloc(fa_mul(count, 4)), *o = fa_alloc(fa_mul(count, 4));
    attn_draw_inputs(&p, seed, q, k, v);
    attn_stats st = { 0 };
    attention_tiled(&p, q, k, v, o, &st);
    fa_free(q); fa_free(k); fa_free(v); fa_free(o);
    return st;
}

bool kernel_agrees(attn_stats st, tile_counts c, size_t heads)
{
    return st.tiles_total == c.total * heads
        && st.tiles_computed == c.computed * heads
        && st.tiles_skipped == c.skipped * heads
        && st.tiles_masked == c.diagonal * heads;
}

typedef struct {
    long seq, heads, dim, map_block, seed;
    bool json;
    const char *data, *rng_name;
    rng_path rng;           /* from rng_name, once the options are read */
} ch07_settings;

static const size_t BLOCKS[] = { 128, 256, 512 };
enum { BLOCK_COUNT = sizeof BLOCKS / sizeof BLOCKS[0] };

static void counts_row(table *t, size_t n, size_t block)
{
    tile_counts c = count_causal_tiles(n, n, block, block);
    char tiles[32], pct[32], frac[32], closed[32];
    fmt_pct(pct, (double)c.skipped / (double)c.total);
    fmt_num(frac, (double)c.scores / ((double)n * (double)n));
    fmt_num(closed, flop_ratio_closed_form(blocks_of(n, block)));
    table_rowf(t, "%zu|%s|%zu|%zu|%s|%zu|%s|%s", block,
               fmt_int(tiles, (long long)c.total), c.computed, c.skipped, pct,
               c.diagonal, frac, closed);
}

static void counts_table(report *r, size_t n)
{
    static const char *const columns[] = { "block", "tiles", "computed", "skipped",
                                           "skipped %", "diagonal", "scores computed",
                                           "(T+1)/(2T)", NULL };
    table *t = report_table(r, "causal", "Causal tiles per head", columns);
    for (size_t i = 0; i < BLOCK_COUNT; i++)
        counts_row(t, n, BLOCKS[i]);
}

static bool kernel_row(table *t, const ch07_settings *s, size_t block)
{
    const size_t n = (size_t)s->seq, heads = (size_t)s->heads;
    attn_stats st = run_causal_kernel(n, heads, (size_t)s->dim, block,
                                      (uint32_t)s->seed, s->rng);
    bool agrees = kernel_agrees(st, count_causal_tiles(n, n, block, block), heads);
    char tiles[32];
    table_rowf(t, "%zu|%s|%zu|%zu|%zu|%s", block,
               fmt_int(tiles, (long long)st.tiles_total), st.tiles_computed,
               st.tiles_skipped, st.tiles_masked, agrees ? "yes" : "no");
    return agrees;
}

static bool kernel_table(report *r, const ch07_settings *s)
{
    static const char *const columns[] = { "block", "tiles", "computed", "skipped",
                                           "masked", "agrees", NULL };
    table *t = report_table(r, "kernel",
                            "attention_tiled with the causal mask, all heads", columns);
    bool all = true;
    for (size_t i = 0; i < BLOCK_COUNT; i++)
        all = kernel_row(t, s, BLOCKS[i]) && all;
    return all;
}

typedef struct { size_t n, block; } size_pair;
enum { LONG_N = 131072, LONG_BLOCK = 128 };   /* 128k tokens */
static const size_pair CHECKED[] = {
    { 2048, 64 }, { 2048, 100 }, { 2048, 300 }, { 2048, 1000 }, { 2048, 2048 },
    { 1000, 7 }, { 65, 64 }, { 4096, 128 }, { LONG_N, LONG_BLOCK }, { 1, 1 },
};
enum { CHECKED_COUNT = sizeof CHECKED / sizeof CHECKED[0] };

static bool closed_form_row(table *t, size_t n, size_t block)
{
    size_t T = blocks_of(n, block);
    tile_counts c = count_causal_tiles(n, n, block, block);
    bool holds = closed_form_holds(c, T);
    char sk[32], total[32], f1[32], f2[32];
    table_rowf(t, "%zu|%zu|%zu|%s|%s|%s|%s|%s", n, block, T,
               fmt_int(sk, (long long)c.skipped), fmt_int(total, (long long)c.total),
               fmt_num(f1, (double)c.skipped / (double)c.total),
               fmt_num(f2, skipped_fraction_closed_form(T)), holds ? "yes" : "no");
    return holds;
}

static bool closed_form_table(report *r)
{
    static const char *const columns[] = { "n", "block", "T", "skipped", "total",
                                           "skipped / total", "(T-1)/(2T)", "equal",
                                           NULL };
    table *t = report_table(r, "closed_form", "Skipped fraction: count and closed form",
                            columns);
    bool all = true;
    for (size_t i = 0; i < CHECKED_COUNT; i++)
        all = closed_form_row(t, CHECKED[i].n, CHECKED[i].block) && all;
    return all;
}

static void write_tile_map(const char *dir, size_t n, size_t block)
{
    FILE *f = data_file(dir, "ch07_tilemap.dat");
    fprintf(f, "# n = %zu, block = %zu; query_block key_block state"
               " (0 full, 1 diagonal, 2 skipped)\n", n, block);
    for (size_t a = 0; a * block < n; a++)
        for (size_t b = 0; b * block < n; b++) {
            size_t q1 = min_count((a + 1) * block, n) - 1;
            size_t k1 = min_count((b + 1) * block, n) - 1;
            tile_state state = causal_tile_state(a * block, q1, b * block, k1);
            fprintf(f, "%zu %zu %d\n", a, b, (int)state);
        }
    data_close(f);
}

static ch07_settings read_skip_settings(int argc, char **argv)
{
    ch07_settings s = { .seq = 2048, .heads = 2, .dim = 64, .map_block = 256,
                        .seed = 0, .rng_name = "scalar" };
    const option opts[] = {
        { "seq", OPT_INT, &s.seq, 1, 65536, "N", "sequence length" },
        { "heads", OPT_INT, &s.heads, 1, 64, "H", "heads of the kernel run" },
        { "dim", OPT_INT, &s.dim, 1, 1024, "D", "head dimension of the kernel run" },
        { "map-block", OPT_INT, &s.map_block, 1, 65536, "B", "block size of the tile map" },
        { "seed", OPT_INT, &s.seed, 0, 4294967295.0, "S", "random seed" },
        RNG_OPTION(&s.rng_name),
        { "json", OPT_FLAG, &s.json, 0, 0, NULL, "print JSON" },
        { "data", OPT_STRING, &s.data, 0, 0, "DIR", "write the tile map into DIR" },
    };
    options_parse(argc, argv, "ch07_causal_skip",
                  "Count the tiles a causal mask lets the tiled kernel skip.",
                  opts, sizeof opts / sizeof opts[0]);
    s.rng = rng_path_named("ch07_causal_skip", s.rng_name);
    return s;
}

static void skip_settings_facts(report *r, const ch07_settings *s)
{
    report_note(r, "Tiles a causal mask lets a tiled kernel skip.\n"
                   "Settings: sequence length, heads and head dimension of the\n"
                   "kernel run, block size of the tile map.");
    report_factf(r, "seq", "%ld", s->seq);
    report_factf(r, "heads", "%ld", s->heads);
    report_factf(r, "dim", "%ld", s->dim);
    report_factf(r, "map_block", "%ld", s->map_block);
}

static void indexed_fact(report *r, const char *name, size_t i, const char *value)
{
    char key[32];
    snprintf(key, sizeof key, "%s_%zu", name, i);
    report_fact(r, key, value);
}

static void count_facts(report *r, size_t n)
{
    char v[32];
    report_note(r, "The counts of the table by line (_0, _1, _2); exact_ratio is the\n"
                   "share of the scores the mask itself keeps, (n+1)/(2n).");
    for (size_t i = 0; i < BLOCK_COUNT; i++) {
        tile_counts c = count_causal_tiles(n, n, BLOCKS[i], BLOCKS[i]);
        indexed_fact(r, "block", i, fmt_int(v, (long long)BLOCKS[i]));
        indexed_fact(r, "T", i, fmt_int(v, (long long)blocks_of(n, BLOCKS[i])));
        indexed_fact(r, "computed", i, fmt_int(v, (long long)c.computed));
        indexed_fact(r, "skipped", i, fmt_int(v, (long long)c.skipped));
        indexed_fact(r, "pct", i, fmt_pct(v, (double)c.skipped / (double)c.total));
    }
    report_fact(r, "exact_ratio", fmt_num(v, (double)(n + 1) / (2.0 * (double)n)));
}

static void closed_form_facts(report *r, bool holds)
{
    char a[32];
    tile_counts c = count_causal_tiles(LONG_N, LONG_N, LONG_BLOCK, LONG_BLOCK);
    report_fact(r, "closed_form_holds", holds ? "yes" : "no");
    report_fact(r, "long_n", fmt_int(a, LONG_N));
    report_fact(r, "long_block", fmt_int(a, LONG_BLOCK));
    report_fact(r, "tiles_128k", fmt_int(a, (long long)c.total));
    report_fact(r, "long_fraction", fmt_num(a, (double)c.skipped / (double)c.total));
}

int main(int argc, char **argv)
{
    ch07_settings s = read_skip_settings(argc, argv);
    const size_t values = fa_mul((size_t)s.heads, fa_mul((size_t)s.seq, (size_t)s.dim));
    const size_t widest = BLOCKS[BLOCK_COUNT - 1] < (size_t)s.seq
                        ? BLOCKS[BLOCK_COUNT - 1] : (size_t)s.seq;
    fa_require(fa_mul(values, 4 * sizeof(float))
                   + fa_mul(fa_mul(widest, widest + 2 * (size_t)s.dim + 2), sizeof(float)),
               "the kernel runs' Q, K, V and O");
    report *r = report_new("ch07_causal_skip", s.json);
    skip_settings_facts(r, &s);
    counts_table(r, (size_t)s.seq);
    count_facts(r, (size_t)s.seq);
    report_fact(r, "kernel_agrees", kernel_table(r, &s) ? "yes" : "no");
    closed_form_facts(r, closed_form_table(r));
    if (s.data != NULL)
        write_tile_map(s.data, (size_t)s.seq, (size_t)s.map_block);
    report_finish(r, stdout);
    return 0;
}
