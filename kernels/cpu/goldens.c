/* goldens.c — tangled from chapters/app_torch.nw; edit that file instead. */
#define _GNU_SOURCE
#include "cpu/goldens.h"
#include "cpu/attention.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef struct { size_t dims[4], count; int ndim, times; } draw_spec;

static char *next_field(char **cursor)
{
    return strtok_r(NULL, " \n", cursor);
}

static bool next_u64(char **cursor, int base, uint64_t *out)
{
    char *field = next_field(cursor), *end;
    if (field == NULL) return false;
    *out = strtoull(field, &end, base);
    return end != field && *end == '\0';
}
static bool parse_spec(const char *text, draw_spec *s)
{
    char *end;
    *s = (draw_spec){ .count = 1, .times = 1 };
    for (const char *c = text;; c = end + 1) {
        unsigned long n = strtoul(c, &end, 10);
        if (end == c || n == 0 || s->ndim == 4) return false;
        s->dims[s->ndim++] = n;
        s->count = fa_mul(s->count, n);
        if (*end != 'x') break;
    }
    if (*end == '*')
        s->times = (int)strtol(end + 1, &end, 10);
    return *end == '\0' && s->times >= 1 && s->times <= 3;
}
static float *draw(bool normal, uint32_t seed, const draw_spec *s, rng_path path)
{
    size_t total = fa_mul(s->count, (size_t)s->times);
    float *x = fa_alloc(fa_mul(total, sizeof *x));
    mt19937 g;
    mt_seed_path(&g, seed, path);
    for (int t = 0; t < s->times; t++)
        (normal ? torch_randn : torch_rand)(&g, x + (size_t)t * s->count, s->count);
    return x;
}

static uint32_t word_of(float x)
{
    uint32_t w;
    memcpy(&w, &x, sizeof w);
    return w;
}

static uint64_t checksum(const float *x, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (uint64_t)word_of(x[i]) * (2 * (uint64_t)i + 1);
    return sum;
}

static bool sample_matches(const float *x, size_t total, char **cursor)
{
    size_t n = total <= 64 ? total : 64;
    for (size_t i = 0; i < n; i++) {
        uint64_t w = 0;
        size_t at = total <= 64 || i < 32 ? i : total - 64 + i;
        if (!next_u64(cursor, 16, &w) || w != word_of(x[at])) return false;
    }
    return true;
}

static bool compare_full_draw(const char *goldens, size_t index, const float *x,
                              size_t total, golden_tally *t)
{
    char file[4096], err[256];
    tensor theirs;
    int stem = (int)(strlen(goldens) - (strlen(goldens) > 4 ? 4 : 0));
    snprintf(file, sizeof file, "%.*s_%zu.npy", stem, goldens, index);
    if (npy_read(file, &theirs, err, sizeof err) != 0) return false;
    bool same_size = tensor_count(&theirs) == total;
    for (size_t i = 0; same_size && i < total; i++)
        t->identical += word_of(x[i]) == word_of(theirs.data[i]);
    t->one_by_one += same_size ? total : 0;
    tensor_free(&theirs);
    return same_size;
}

static bool check_draw(bool normal, char **cursor, rng_path path, size_t index,
                       const char *full, golden_tally *t)
{
    uint64_t seed, count, sum;
    draw_spec s;
    char *spec;
    if (!next_u64(cursor, 10, &seed) || (spec = next_field(cursor)) == NULL
        || !parse_spec(spec, &s) || !next_u64(cursor, 10, &count)
        || !next_u64(cursor, 16, &sum) || count != s.count * (size_t)s.times)
        return false;
    float *x = draw(normal, (uint32_t)seed, &s, path);
    t->draws++;
    t->values += count;
    if (!(full && compare_full_draw(full, index, x, count, t))
        && checksum(x, count) == sum && sample_matches(x, count, cursor))
        t->identical += count;
    fa_free(x);
    return true;
}

typedef struct { attn_params p; float *q, *k, *v; size_t count; } golden_problem;

static bool golden_problem_new(char **cursor, rng_path path, golden_problem *g)
{
    uint64_t seed;
    draw_spec s;
    char *spec;
    if (!next_u64(cursor, 10, &seed) || (spec = next_field(cursor)) == NULL
        || !parse_spec(spec, &s) || s.ndim != 4 || s.times != 1)
        return false;
    g->p = attn_default(s.dims[0], s.dims[1], s.dims[2], s.dims[2], s.dims[3]);
    s.times = 3;
    g->q = draw(true, (uint32_t)seed, &s, path);
    g->k = g->q + s.count, g->v = g->k + s.count, g->count = s.count;
    return true;
}

static bool read_words(char **cursor, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t w = 0;
        uint32_t w32;
        if (!next_u64(cursor, 16, &w)) return false;
        w32 = (uint32_t)w;
        memcpy(&out[i], &w32, sizeof w32);
    }
    return true;
}

static void compare_attention(golden_problem *g, const float *theirs, golden_tally *t)
{
    float *ours = fa_alloc(fa_mul(g->count, sizeof(float)));
    double *exact = fa_alloc(fa_mul(g->count, sizeof(double))), gap = 0;
    attention_tiled(&g->p, g->q, g->k, g->v, ours, NULL);
    attention_reference(&g->p, g->q, g->k, g->v, exact);
    for (size_t i = 0; i < g->count; i++)
        gap = fmax(gap, fabs((double)ours[i] - theirs[i]));
    t->sdpa_vs_ours = fmax(t->sdpa_vs_ours, gap);
    t->sdpa_vs_exact = fmax(t->sdpa_vs_exact, max_abs_diff_fd(theirs, exact, g->count));
    t->sdpa_cases++;
    t->sdpa_values += g->count;
    fa_free(ours);
    fa_free(exact);
}

static bool check_sdpa(char **cursor, rng_path path, golden_tally *t)
{
    golden_problem g;
    uint64_t causal = 0, count = 0;
    if (!golden_problem_new(cursor, path, &g)) return false;
    float *theirs = fa_alloc(fa_mul(g.count, sizeof(float)));
    bool ok = next_u64(cursor, 10, &causal) && next_u64(cursor, 10, &count)
              && count == g.count && read_words(cursor, theirs, g.count);
    g.p.causal = causal != 0;
    if (ok) compare_attention(&g, theirs, t);
    fa_free(theirs);
    fa_free(g.q);
    return ok;
}

static double our_window_figure(golden_problem *g, long w)
{
    double *exact = fa_alloc(fa_mul(g->count, sizeof(double)));
    float *ours = fa_alloc(fa_mul(g->count, sizeof(float)));
    g->p.causal = true;
    attention_reference(&g->p, g->q, g->k, g->v, exact);
    g->p.window = w;
    attention_tiled(&g->p, g->q, g->k, g->v, ours, NULL);
    double figure = max_abs_diff_fd(ours, exact, g->count);
    fa_free(exact);
    fa_free(ours);
    return figure;
}

static bool check_window(char **cursor, rng_path path, golden_tally *t)
{
    golden_problem g;
    uint64_t w = 0;
    char *value = NULL, *end = NULL;
    if (t->windows == GOLDEN_MAX_WINDOWS || !golden_problem_new(cursor, path, &g))
        return false;
    bool ok = next_u64(cursor, 10, &w) && (value = next_field(cursor)) != NULL;
    double torch = ok ? strtod(value, &end) : 0;
    if ((ok = ok && end != value && *end == '\0'))
        {
            t->window_w[t->windows] = (long)w;
            t->window_torch[t->windows] = torch;
            t->window_ours[t->windows++] = our_window_figure(&g, (long)w);
        }
    fa_free(g.q);
    return ok;
}

static bool check_line(char *line, rng_path path, size_t *draw_index,
                       const char *full, golden_tally *t)
{
    char *cursor, *kind = strtok_r(line, " \n", &cursor);
    if (kind == NULL || kind[0] == '#') return true;
    if (strcmp(kind, "randn") == 0 || strcmp(kind, "rand") == 0)
        return check_draw(kind[4] == 'n', &cursor, path, (*draw_index)++, full, t);
    if (strcmp(kind, "sdpa") == 0) return check_sdpa(&cursor, path, t);
    if (strcmp(kind, "window") == 0) return check_window(&cursor, path, t);
    return false;
}

static bool check_lines(FILE *f, const char *file, rng_path path, bool full,
                        golden_tally *t, char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0, number = 0, draw_index = 0;
    bool ok = true;
    while (ok && getline(&line, &cap, f) > 0)
        if (!(ok = check_line(line, path, &draw_index, full ? file : NULL, t)))
            snprintf(err, errlen, "%s:%zu: not a goldens line", file, number + 1);
        else number++;
    free(line);
    return ok;
}

bool goldens_check(const char *file, rng_path path, bool full,
                   golden_tally *t, char *err, size_t errlen)
{
    FILE *f = fopen(file, "r");
    *t = (golden_tally){ 0 };
    if (f == NULL) {
        snprintf(err, errlen, "cannot open %s", file);
        return false;
    }
    bool ok = check_lines(f, file, path, full, t, err, errlen);
    fclose(f);
    return ok;
}

