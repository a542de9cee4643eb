#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include "harness/harness.h"
#include "cpu/online_softmax.h"
#include "ch02_online_softmax.h"

static const float walkthrough_logits[6] = { 0.4f, 0.9f, 0.5f, 1.8f, 0.6f, 0.7f };
enum { WALKTHROUGH_N = 6, WALKTHROUGH_BLOCK = 2 };

enum { DEMO_ROWS = 4, DEMO_COLS = 2048 };

size_t stream_row(const float *x, size_t n, size_t block, stream_step steps[])
{
    online_stats s = online_start();
    size_t blocks = 0;
    for (size_t first = 0; first < n; first += block, blocks++) {
        size_t count = n - first < block ? n - first : block;
        float before = s.max;
        float c = online_absorb(&s, x + first, count);
        steps[blocks] = (stream_step){ first, count, block_max(x + first, count),
                                       s.max, c, s.sum, s.max > before };
    }
    return blocks;
}
firing_summary summarize_firings(const stream_step steps[], size_t blocks)
{
    firing_summary f = { 0, 1.0f };
    for (size_t b = 1; b < blocks; b++)
        if (steps[b].raised) {
            f.fired++;
            f.deepest = fminf(f.deepest, steps[b].correction);
        }
    return f;
}
double harmonic_number(size_t count)
{
    double h = 0.0;
    for (size_t t = count; t >= 1; t--)
        h += 1.0 / (double)t;
    return h;
}
bool is_last_firing(const stream_step steps[], size_t blocks, size_t b)
{
    for (size_t later = b + 1; later < blocks; later++)
        if (steps[later].raised)
            return false;
    return true;
}

void append_block_name(char *names, size_t size, size_t b, bool last)
{
    size_t used = strlen(names);
    const char *sep = used == 0 ? "" : last ? " and " : ", ";
    snprintf(names + used, size - used, "%s%zu", sep, b);
}

static const char *walkthrough_title(size_t block)
{
    static const char *const titles[] = { "Six logits in blocks of one",
        "Six logits in blocks of two", "Six logits in blocks of three",
        "Six logits in blocks of four", "Six logits in blocks of five",
        "Six logits in one block of six" };
    return titles[block - 1];
}
static void report_walkthrough(report *r, const stream_step steps[], size_t blocks)
{
    static const char *const columns[] = { "block", "logits", "block max",
        "running max", "correction", "ℓ", NULL };
    table *t = report_table(r, "walkthrough", walkthrough_title(steps[0].count), columns);
    for (size_t b = 0; b < blocks; b++) {
        char logits[64] = "", bm[32], rm[32], c[32], l[32];
        for (size_t j = 0; j < steps[b].count; j++)
            snprintf(logits + strlen(logits), sizeof logits - strlen(logits), "%s%.1f",
                     j ? " " : "", walkthrough_logits[steps[b].first + j]);
        table_rowf(t, "%zu|%s|%s|%s|%s|%s", b + 1, logits,
                   fmt_num(bm, steps[b].block_max), fmt_num(rm, steps[b].running_max),
                   b == 0 ? "-" : fmt_num(c, steps[b].correction), fmt_num(l, steps[b].sum));
    }
    for (size_t b = 0; b < blocks; b++) {
        char key[32], label[48], buf[32];
        if (b > 0) {
            snprintf(key, sizeof key, "correction_%zu", b + 1);
            snprintf(label, sizeof label, "correction at block %zu", b + 1);
            report_fact_labeled(r, key, label, fmt_num(buf, steps[b].correction));
        }
        snprintf(key, sizeof key, "ell_%zu", b + 1);
        snprintf(label, sizeof label, "ℓ after block %zu", b + 1);
        report_fact_labeled(r, key, label, fmt_num(buf, steps[b].sum));
    }
}

static void report_rebase_checks(report *r, const stream_step steps[], size_t blocks)
{
    const float *x = walkthrough_logits;
    char buf[32];
    if (blocks > 1) {   /* one block of six has nothing to rebase */
        float multiplied = steps[0].sum * steps[1].correction;
        float recomputed = sum_exp_below(x, steps[0].count, steps[1].running_max);
        report_fact_labeled(r, "rebase_multiply", "rebased", fmt_num(buf, multiplied));
        report_fact_labeled(r, "rebase_recompute", "recomputed", fmt_num(buf, recomputed));
    }
    float one_shot = sum_exp_below(x, WALKTHROUGH_N, block_max(x, WALKTHROUGH_N));
    report_fact_labeled(r, "streamed", "streamed sum", fmt_num(buf, steps[blocks - 1].sum));
    report_fact_labeled(r, "one_shot", "one-shot sum", fmt_num(buf, one_shot));
}

static void report_firings(report *r, const stream_step steps[], size_t blocks)
{
    static const char *const columns[] = { "block", "block max", "max before",
        "max after", "correction", NULL };
    table *t = report_table(r, "firing", "Blocks of row 0 that raise the running maximum", columns);
    char names[256] = "";
    for (size_t b = 1; b < blocks; b++)
        if (steps[b].raised) {
            char bm[32], before[32], after[32], c[32];
            table_rowf(t, "%zu|%s|%s|%s|%s", b, fmt_num(bm, steps[b].block_max),
                       fmt_num(before, steps[b - 1].running_max),
                       fmt_num(after, steps[b].running_max), fmt_num(c, steps[b].correction));
            append_block_name(names, sizeof names, b, is_last_firing(steps, blocks, b));
        }
    firing_summary f = summarize_firings(steps, blocks);
    char buf[32];
    report_fact_labeled(r, "fire_count", "blocks that raise the max",
                        fmt_int(buf, (long long)f.fired));
    report_fact_labeled(r, "blocks_after_first", "blocks after the first",
                        fmt_int(buf, (long long)blocks - 1));
    report_fact_labeled(r, "quiet_blocks", "blocks that cost nothing",
                        fmt_int(buf, (long long)(blocks - 1 - f.fired)));
    report_fact_labeled(r, "fire_blocks", "blocks that fire", names);
    report_fact_labeled(r, "deepest_correction", "deepest correction",
                        fmt_num(buf, f.deepest));
    snprintf(buf, sizeof buf, "%.3f", f.deepest);
    report_fact_labeled(r, "deepest_correction_3dp", "deepest, 3 decimals", buf);
    report_fact_labeled(r, "blocks", "blocks in the row", fmt_int(buf, (long long)blocks));
    report_fact_labeled(r, "records", "records, first block included",
                        fmt_int(buf, (long long)f.fired + 1));
    report_fact_labeled(r, "expected_records", "records expected, H_T",
                        fmt_num(buf, harmonic_number(blocks)));
}

static void write_rebase_data(const char *dir, const stream_step steps[], size_t blocks)
{
    FILE *f = data_file(dir, "ch02_rebase.dat");
    fprintf(f, "# block  e^(x_j - m) for x_1..x_6 (0 when not yet seen)\n");
    for (size_t b = 0; b < blocks; b++) {
        fprintf(f, "%zu", b + 1);
        for (size_t j = 0; j < WALKTHROUGH_N; j++)
            fprintf(f, " %.6f", j < steps[b].first + steps[b].count
                    ? expf(walkthrough_logits[j] - steps[b].running_max) : 0.0f);
        fprintf(f, "\n");
    }
    data_close(f);
}

static void write_firing_data(const char *dir, const stream_step steps[], size_t blocks)
{
    FILE *f = data_file(dir, "ch02_firing.dat");
    fprintf(f, "# block  block_max  running_max  correction  raised\n");
    for (size_t b = 0; b < blocks; b++)
        fprintf(f, "%zu %.6f %.6f %.6f %d\n", b, steps[b].block_max,
                steps[b].running_max, b == 0 ? 1.0f : steps[b].correction,
                b > 0 && steps[b].raised);
    data_close(f);
}

static float *reference_logits(unsigned long seed, rng_path path)
{
    size_t count = (size_t)DEMO_ROWS * DEMO_COLS;
    float *logits = fa_alloc(count * sizeof *logits);
    mt19937 g;
    mt_seed_path(&g, (uint32_t)seed, path);
    torch_randn(&g, logits, count);
    for (size_t i = 0; i < count; i++)
        logits[i] *= 8.0f;
    return logits;
}

void run_walkthrough(report *r, size_t block, const char *data_dir)
{
    stream_step walk[WALKTHROUGH_N];
    size_t walk_blocks = stream_row(walkthrough_logits, WALKTHROUGH_N, block, walk);
    report_walkthrough(r, walk, walk_blocks);
    report_rebase_checks(r, walk, walk_blocks);
    if (data_dir)
        write_rebase_data(data_dir, walk, walk_blocks);
}
int main(int argc, char **argv)
{
    long seed = 0, row = 0, block = 64;
    bool json = false;
    const char *data_dir = NULL, *rng = "scalar";
    const option opts[] = {
        { "seed",  OPT_INT,    &seed,     0, 4294967295.0, "S", "torch.manual_seed for the logits" },
        RNG_OPTION(&rng),
        { "row",   OPT_INT,    &row,      0, DEMO_ROWS - 1, "R", "row of randn(4, 2048) * 8 to stream" },
        { "block", OPT_INT,    &block,    1, DEMO_COLS,    "B", "block size of the stream" },
        { "json",  OPT_FLAG,   &json,     0, 0, NULL, "print the receipts as JSON" },
        { "data",  OPT_STRING, &data_dir, 0, 0, "DIR", "write the figures' data files into DIR" },
    };
    options_parse(argc, argv, "ch02_online_softmax",
                  "Online softmax: the running max, the running sum and the one-multiply rebase.",
                  opts, sizeof opts / sizeof opts[0]);
    report *r = report_new("ch02_online_softmax", json);
    run_walkthrough(r, WALKTHROUGH_BLOCK, data_dir);
    float *logits = reference_logits((unsigned long)seed, rng_path_named("ch02_online_softmax", rng));
    size_t max_blocks = (DEMO_COLS + (size_t)block - 1) / (size_t)block;
    stream_step *steps = fa_alloc(max_blocks * sizeof *steps);
    size_t blocks = stream_row(logits + (size_t)row * DEMO_COLS, DEMO_COLS, (size_t)block, steps);
    report_firings(r, steps, blocks);
    if (data_dir)
        write_firing_data(data_dir, steps, blocks);
    fa_free(steps);
    fa_free(logits);
    report_finish(r, stdout);
    return 0;
}
