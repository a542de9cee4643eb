/* test_harness.c — Criterion tests for kernels/harness/harness.c.
   Tangled from chapters/harness.nw; edit that file, not this one. */
#define _GNU_SOURCE
#include "harness/harness.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>   /* program_invocation_short_name */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness_tests.h"
Test(memory, blocks_are_aligned_and_zeroed)
{
    size_t sizes[] = { 0, 1, 63, 64, 65, 1000, 1 << 20 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        unsigned char *used = fa_alloc(sizes[k]);
        memset(used, 0xA5, sizes[k]);
        fa_free(used);
        unsigned char *p = fa_alloc(sizes[k]);
        cr_assert(p != NULL);
        cr_assert_eq((uintptr_t)p % 64, 0);
        for (size_t i = 0; i < sizes[k]; i++)
            cr_assert_eq(p[i], 0);
        fa_free(p);
    }
    fa_free(NULL);
    cr_assert_eq(fa_bytes_live(), 0);
}

Test(memory, live_and_peak_count_requested_bytes)
{
    void *a = fa_alloc(1000), *b = fa_alloc(2000);
    cr_assert_eq(fa_bytes_live(), 3000);
    cr_assert_eq(fa_bytes_peak(), 3000);
    fa_free(a);
    cr_assert_eq(fa_bytes_live(), 2000);
    cr_assert_eq(fa_bytes_peak(), 3000);
    fa_reset_peak();
    cr_assert_eq(fa_bytes_peak(), 2000);
    fa_free(b);
    cr_assert_eq(fa_bytes_live(), 0);
    cr_assert_eq(fa_bytes_peak(), 2000);
}

static void allocate_too_much(void *ctx)
{
    (void)ctx;
    fa_alloc(fa_physical_memory() + 1);
}

Test(memory, a_request_beyond_physical_memory_is_refused)
{
    char need[32], line[128];
    captured c = run_captured(allocate_too_much, NULL);
    fmt_bytes(need, (double)fa_physical_memory() + 1);
    snprintf(line, sizeof line, "%s: error: this needs %s more but only ",
             program_invocation_short_name, need);
    cr_assert_eq(c.status, 2);
    cr_assert(strncmp(c.err, line, strlen(line)) == 0, "%s", c.err);
    cr_assert(strstr(c.err, " of memory is available\n") != NULL, "%s", c.err);
    cr_assert(strchr(c.err, '\n') == c.err + strlen(c.err) - 1, "%s", c.err);
}

static void multiply_too_much(void *ctx)
{
    (void)ctx;
    fa_mul(SIZE_MAX / 2, 3);
}

Test(memory, size_overflow_exits_2)
{
    cr_assert_eq(fa_mul(3, 5), 15);
    cr_assert_eq(fa_mul(0, SIZE_MAX), 0);
    captured c = run_captured(multiply_too_much, NULL);
    cr_assert_eq(c.status, 2);
    cr_assert(strstr(c.err, "too large") != NULL, "%s", c.err);
}

Test(memory, the_process_peak_sees_allocated_blocks)
{
    cr_assert(fa_physical_memory() > 0);
    size_t bytes = (size_t)64 << 20;
    void *p = fa_alloc(bytes);
    size_t peak = process_peak_rss();
    fa_free(p);
    cr_assert(peak >= bytes, "VmHWM %zu bytes", peak);
}

Test(tensor, new_tensor_has_its_shape_and_zeros)
{
    size_t shape[3] = { 2, 3, 5 };
    tensor t = tensor_new(3, shape);
    cr_assert_eq(t.ndim, 3);
    cr_assert_eq(t.shape[2], 5);
    cr_assert_eq(t.shape[3], 1);
    cr_assert_eq(tensor_count(&t), 30);
    cr_assert_eq(fa_bytes_live(), 30 * sizeof(float));
    for (size_t i = 0; i < 30; i++)
        cr_assert(t.data[i] == 0.0f);
    tensor_free(&t);
    cr_assert(t.data == NULL);
    cr_assert_eq(fa_bytes_live(), 0);
}

Test(format, numbers_have_four_decimals_or_three_significant)
{
    char b[32];
    cr_assert_str_eq(fmt_num(b, 1.60653), "1.6065");
    cr_assert_str_eq(fmt_num(b, 0.0), "0.0000");
    cr_assert_str_eq(fmt_num(b, -0.0), "0.0000");
    cr_assert_str_eq(fmt_num(b, 0.001), "0.0010");
    cr_assert_str_eq(fmt_num(b, 1e-4), "1.000e-04");
    cr_assert_str_eq(fmt_num(b, -2.5e-7), "-2.500e-07");
    cr_assert_str_eq(fmt_num(b, 999999.0), "999999.0000");
    cr_assert_str_eq(fmt_num(b, 1e6), "1.000e+06");
}

Test(format, percentages_round_half_to_even)
{
    char b[32];
    cr_assert_str_eq(fmt_pct(b, 0.375), "38%");
    cr_assert_str_eq(fmt_pct(b, 0.125), "12%");
    cr_assert_str_eq(fmt_pct(b, 0.625), "62%");
    cr_assert_str_eq(fmt_pct(b, 0.47), "47%");
    cr_assert_str_eq(fmt_pct(b, 120.0 / 256.0), "47%");
    cr_assert_str_eq(fmt_pct(b, 28.0 / 64.0), "44%");
    cr_assert_str_eq(fmt_pct(b, 0.0), "0%");
    cr_assert_str_eq(fmt_pct(b, 1.0), "100%");
}

Test(format, integers_get_thousands_separators)
{
    char b[32];
    cr_assert_str_eq(fmt_int(b, 0), "0");
    cr_assert_str_eq(fmt_int(b, 999), "999");
    cr_assert_str_eq(fmt_int(b, 1000), "1,000");
    cr_assert_str_eq(fmt_int(b, 1320), "1,320");
    cr_assert_str_eq(fmt_int(b, -1234567), "-1,234,567");
    cr_assert_str_eq(fmt_int(b, -9223372036854775807LL - 1),
                     "-9,223,372,036,854,775,808");
}

Test(format, bytes_are_mib_gib_or_tib)
{
    char b[32];
    double mib = 1024.0 * 1024.0;
    cr_assert_str_eq(fmt_bytes(b, 0), "0.0 MiB");
    cr_assert_str_eq(fmt_bytes(b, 0.5 * mib), "0.5 MiB");
    cr_assert_str_eq(fmt_bytes(b, 512 * mib), "512.0 MiB");
    cr_assert_str_eq(fmt_bytes(b, 2048 * mib), "2.0 GiB");
    cr_assert_str_eq(fmt_bytes(b, 512 * 1024 * mib), "512.0 GiB");
    cr_assert_str_eq(fmt_bytes(b, 3.0 * 1024 * 1024 * mib), "3.0 TiB");
}

Test(formats, measured_values_carry_their_range)
{
    char buf[64];
    cr_expect_str_eq(fmt_sig(buf, 266.2184, 2), "270");
    cr_expect_str_eq(fmt_sig(buf, 0.8912, 2), "0.89");
    cr_expect_str_eq(fmt_spread(buf, 266.2, 251.0, 281.0), "270 (250–280)");
    cr_expect_str_eq(fmt_spread(buf, 15.19, 15.17, 15.2), "15.2 (15.2–15.2)");
    cr_expect_str_eq(fmt_spread(buf, NAN, 1, 2), "-");
    double x[] = { 3, 1, 2, 9 };
    spread s = spread_of(x, 4);
    cr_expect(s.median == 2.5 && s.min == 1 && s.max == 9);
}

static void print_sample_report(void *ctx)
{
    report *r = report_new("demo", ctx != NULL);
    report_fact(r, "ell_1", "1.6065");
    report_factf(r, "blocks", "%d", 31);
    const char *columns[] = { "block", "tiles", "share", NULL };
    table *t = report_table(r, "skip", "Causal skipping", columns);
    table_rowf(t, "%d|%s|%s", 128, "136", "47%");
    const char *row[] = { "4×4", "10", "\"q\"\\" };
    table_row(t, row);
    report_note(r, "a note\twith a tab");
    report_finish(r, stdout);
}

static const char sample_text[] =
    "ell_1   1.6065\n"
    "blocks  31\n"
    "\n"
    "Causal skipping\n"
    "block  tiles  share\n"
    "-----  -----  -----\n"
    "  128    136    47%\n"
    "  4×4     10   \"q\"\\\n"
    "\n"
    "a note\twith a tab\n";

Test(report, text_keeps_order_and_aligns_columns)
{
    captured c = run_captured(print_sample_report, NULL);
    cr_assert_eq(c.status, 0);
    cr_assert_str_eq(c.out, sample_text);
}

static const char sample_json[] =
    "{\n"
    "  \"program\": \"demo\",\n"
    "  \"facts\": {\n"
    "    \"ell_1\": \"1.6065\",\n"
    "    \"blocks\": \"31\"\n"
    "  },\n"
    "  \"tables\": {\n"
    "    \"skip\": {\"title\": \"Causal skipping\",\n"
    "      \"columns\": [\"block\", \"tiles\", \"share\"],\n"
    "      \"rows\": [\n"
    "        [\"128\", \"136\", \"47%\"],\n"
    "        [\"4×4\", \"10\", \"\\\"q\\\"\\\\\"]\n"
    "      ]}\n"
    "  },\n"
    "  \"text\": \"ell_1   1.6065\\nblocks  31\\n\\nCausal skipping\\n"
    "block  tiles  share\\n-----  -----  -----\\n  128    136    47%\\n"
    "  4×4     10   \\\"q\\\"\\\\\\n\\na note\\u0009with a tab\\n\"\n"
    "}\n";

Test(report, json_is_one_escaped_object)
{
    captured c = run_captured(print_sample_report, (void *)"json");
    cr_assert_eq(c.status, 0);
    cr_assert_str_eq(c.out, sample_json);
}

static void print_empty_and_replaced(void *ctx)
{
    report *r = report_new("p\n", true);
    (void)ctx;
    report_fact(r, "k", "old");
    report_fact(r, "k", "new\x01");
    report_finish(r, stdout);
}

Test(report, a_fact_set_twice_keeps_the_last_value)
{
    captured c = run_captured(print_empty_and_replaced, NULL);
    cr_assert_str_eq(c.out,
        "{\n  \"program\": \"p\\n\",\n  \"facts\": {\n    \"k\": \"new\\u0001\"\n"
        "  },\n  \"tables\": {},\n  \"text\": \"k  new\\u0001\\n\"\n}\n");
}

typedef struct { bool json, labels; } sample_style;

static void print_labeled_report(void *ctx)
{
    const sample_style *style = ctx;
    report *r = report_new("demo", style->json);
    report_fact_labeled(r, "ell_1", style->labels ? "ℓ after block 1" : NULL, "1.6065");
    report_factf(r, "blocks", "%d", 31);
    report_fact_labeled(r, "n", style->labels ? "length" : NULL, "old");
    report_fact(r, "n", "8");
    report_finish(r, stdout);
}

Test(report, a_label_replaces_the_key_in_the_text)
{
    sample_style with = { false, true }, without = { false, false };
    captured labeled = run_captured(print_labeled_report, &with);
    captured plain = run_captured(print_labeled_report, &without);
    cr_assert_str_eq(labeled.out,
        "ℓ after block 1: 1.6065\n"
        "blocks           31\n"
        "length:          8\n");
    cr_assert_str_eq(plain.out, "ell_1   1.6065\nblocks  31\nn       8\n");
}

Test(report, a_label_leaves_the_json_facts_alone)
{
    sample_style with = { true, true }, without = { true, false };
    captured labeled = run_captured(print_labeled_report, &with);
    captured plain = run_captured(print_labeled_report, &without);
    const char *facts = "{\n  \"program\": \"demo\",\n  \"facts\": {\n"
        "    \"ell_1\": \"1.6065\",\n    \"blocks\": \"31\",\n    \"n\": \"8\"\n"
        "  },\n  \"tables\": {},\n  \"text\": ";
    cr_assert(strncmp(labeled.out, facts, strlen(facts)) == 0, "%s", labeled.out);
    cr_assert(strncmp(plain.out, facts, strlen(facts)) == 0, "%s", plain.out);
    cr_assert_str_eq(labeled.out + strlen(facts),
                     "\"ℓ after block 1: 1.6065\\nblocks           31\\n"
                     "length:          8\\n\"\n}\n");
}

static void add_a_short_row(void *ctx)
{
    (void)ctx;
    report *r = report_new("demo", false);
    const char *columns[] = { "a", "b", NULL };
    table_rowf(report_table(r, "t", "T", columns), "%d", 1);
}

Test(report, a_row_with_the_wrong_cell_count_is_a_bug)
{
    captured c = run_captured(add_a_short_row, NULL);
    cr_assert_eq(c.status, -1);
    cr_assert(strstr(c.err, "wrong number of cells") != NULL, "%s", c.err);
}

typedef struct { int argc; const char *argv[6]; } arguments;

static void parse_and_print(void *ctx)
{
    arguments *a = ctx;
    long seq = 1024;
    double scale = 0.125;
    bool json = false;
    const char *out = NULL;
    const option opts[] = {
        { "seq", OPT_INT, &seq, 1, 65536, "N", "sequence length" },
        { "scale", OPT_DOUBLE, &scale, 0, 0, "S", "softmax scale" },
        { "json", OPT_FLAG, &json, 0, 0, NULL, "print JSON" },
        { "out", OPT_STRING, &out, 0, 0, "FILE", "output .npy" },
    };
    options_parse(a->argc, (char **)a->argv, "prog", "Tiled attention.", opts, 4);
    printf("seq=%ld scale=%g json=%d out=%s\n", seq, scale, json, out ? out : "-");
}

static captured parse(const char *a1, const char *a2, const char *a3, const char *a4)
{
    arguments a = { 1, { "prog", a1, a2, a3, a4, NULL } };
    while (a.argc < 5 && a.argv[a.argc] != NULL)
        a.argc++;
    return run_captured(parse_and_print, &a);
}

static void expect_usage_error(captured c, const char *line)
{
    cr_assert_eq(c.status, 2);
    cr_assert_str_eq(c.err, line);
    cr_assert_str_eq(c.out, "");
}

Test(options, values_come_separate_or_after_an_equals_sign)
{
    captured c = parse("--seq", "5", "--json", "--scale=0.5");
    cr_assert_eq(c.status, 0, "%s", c.err);
    cr_assert_str_eq(c.out, "seq=5 scale=0.5 json=1 out=-\n");
    c = parse("--out=o.npy", "--seq=65536", NULL, NULL);
    cr_assert_str_eq(c.out, "seq=65536 scale=0.125 json=0 out=o.npy\n");
    c = parse(NULL, NULL, NULL, NULL);
    cr_assert_str_eq(c.out, "seq=1024 scale=0.125 json=0 out=-\n");
}

Test(options, help_prints_usage_and_exits_0)
{
    captured c = parse("--seq", "0", "--help", NULL);
    cr_assert_eq(c.status, 0);
    cr_assert_str_eq(c.out,
        "usage: prog [options]\n"
        "Tiled attention.\n"
        "\n"
        "options:\n"
        "  --seq N     sequence length [1 to 65536; default 1024]\n"
        "  --scale S   softmax scale [default 0.125]\n"
        "  --json      print JSON\n"
        "  --out FILE  output .npy\n"
        "  --help      show this help and exit\n");
}

Test(options, mistakes_exit_2_with_one_line)
{
    expect_usage_error(parse("--foo", NULL, NULL, NULL),
                       "prog: error: unknown option '--foo'\n");
    expect_usage_error(parse("--foo=3", NULL, NULL, NULL),
                       "prog: error: unknown option '--foo'\n");
    expect_usage_error(parse("--seq", NULL, NULL, NULL),
                       "prog: error: option --seq needs a value\n");
    expect_usage_error(parse("--seq", "--json", NULL, NULL),
                       "prog: error: option --seq needs a value\n");
    expect_usage_error(parse("--seq", "abc", NULL, NULL),
                       "prog: error: 'abc' is not a number for --seq\n");
    expect_usage_error(parse("--seq=12x", NULL, NULL, NULL),
                       "prog: error: '12x' is not a number for --seq\n");
}

Test(options, ranges_flags_and_positionals_are_checked)
{
    expect_usage_error(parse("--seq", "0", NULL, NULL),
                       "prog: error: --seq must be between 1 and 65536 (got 0)\n");
    expect_usage_error(parse("--seq", "99999999999999999999", NULL, NULL),
                       "prog: error: --seq must be between 1 and 65536 "
                       "(got 99999999999999999999)\n");
    expect_usage_error(parse("--scale", "nan", NULL, NULL),
                       "prog: error: 'nan' is not a number for --scale\n");
    expect_usage_error(parse("--json=yes", NULL, NULL, NULL),
                       "prog: error: option --json takes no value\n");
    expect_usage_error(parse("q.npy", NULL, NULL, NULL),
                       "prog: error: unexpected argument 'q.npy'\n");
}

Test(isa_cap, parses_the_three_names_and_nothing_else)
{
    fa_isa cap = FA_ISA_SCALAR;
    cr_assert(fa_isa_parse(NULL, &cap) && cap == FA_ISA_AVX512);
    cr_assert(fa_isa_parse("", &cap) && cap == FA_ISA_AVX512);
    for (int i = FA_ISA_SCALAR; i <= FA_ISA_AVX512; i++) {
        cr_assert(fa_isa_parse(fa_isa_name((fa_isa)i), &cap));
        cr_assert_eq(cap, (fa_isa)i);
    }
    cr_assert_not(fa_isa_parse("AVX2", &cap));
    cr_assert_not(fa_isa_parse("sse", &cap));
    cr_assert_not(fa_isa_parse("avx2 ", &cap));
}

static void print_widest_under(void *value)
{
    setenv("FA_ISA", value, 1);
    printf("%s", fa_isa_name(fa_isa_widest("prog")));
}

static fa_isa widest_on_cpu(void)
{
    return fa_isa_on_cpu(FA_ISA_AVX512) ? FA_ISA_AVX512
         : fa_isa_on_cpu(FA_ISA_AVX2) ? FA_ISA_AVX2 : FA_ISA_SCALAR;
}

Test(isa_cap, the_widest_path_never_exceeds_the_cap_or_the_processor)
{
    static const char *const values[] = { "", "scalar", "avx2", "avx512" };
    for (int i = 0; i < 4; i++) {
        captured c = run_captured(print_widest_under, (void *)values[i]);
        fa_isa cap, want = widest_on_cpu();
        cr_assert(fa_isa_parse(values[i], &cap));
        if (want > cap) want = cap;
        cr_assert_eq(c.status, 0);
        cr_assert_str_eq(c.out, fa_isa_name(want), "FA_ISA='%s'", values[i]);
    }
}

Test(isa_cap, an_unknown_value_is_a_usage_error)
{
    captured c = run_captured(print_widest_under, (void *)"avx1024");
    cr_assert_eq(c.status, 2);
    cr_assert_str_eq(c.err, "prog: error: FA_ISA must be scalar, avx2 or avx512, "
                            "not 'avx1024'\n");
    cr_assert_str_eq(c.out, "");
}

typedef struct { int calls; double now; } call_counter;

static const long step_ms[7] = { 1, 1, 200, 3, 1, 4, 2 };

static void step_by_call(void *ctx)
{
    call_counter *c = ctx;
    c->now += step_ms[c->calls++ % 7] / 1000.0;
}

static double counter_clock(void *ctx) { return ((call_counter *)ctx)->now; }

Test(timing, the_median_ignores_one_slow_run)
{
    call_counter c = { 0, 0.0 };
    const spread s = time_spread_on(counter_clock, step_by_call, &c, 2, 5);
    cr_assert_eq(c.calls, 7);
    cr_assert(fabs(s.median - 0.003) < 1e-12, "median %.17g", s.median);
    cr_assert(fabs(s.min - 0.001) < 1e-12 && fabs(s.max - 0.200) < 1e-12,
              "min %.17g, max %.17g", s.min, s.max);
}

Test(data, data_files_create_their_directories)
{
    scratch_dir s = scratch_new();
    char dir[128], path[192];
    snprintf(dir, sizeof dir, "%s/a/b", s.dir);
    FILE *f = data_file(dir, "ch00_x.dat");
    fprintf(f, "1 2\n");
    data_close(f);
    snprintf(path, sizeof path, "%s/ch00_x.dat", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 4);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(rmdir(dir), 0);
    snprintf(dir, sizeof dir, "%s/a", s.dir);
    cr_assert_eq(rmdir(dir), 0);
    scratch_remove(&s);
}

static void open_under_a_file(void *ctx)
{
    data_file((const char *)ctx, "x.dat");
}

Test(data, an_impossible_directory_exits_2)
{
    captured c = run_captured(open_under_a_file, (void *)"/dev/null/figures");
    cr_assert_eq(c.status, 2);
    char line[128];
    snprintf(line, sizeof line, "%s: error: cannot create the directory /dev/null/figures: "
             "Not a directory\n", program_invocation_short_name);
    cr_assert_str_eq(c.err, line);
}
static int print_two_facts(int argc, char **argv)
{
    (void)argc, (void)argv;
    report *r = report_new("demo", true);
    report_fact(r, "ell", "1.6065");
    report_fact(r, "quoted", "say \"hi\"");
    report_finish(r, stdout);
    return 0;
}

Test(support, captures_a_program_and_finds_its_facts)
{
    char *json = capture_stdout_of(print_two_facts, 0, NULL);
    cr_assert_not_null(strstr(json, "\"program\": \"demo\""), "%s", json);
    char *ell = json_fact(json, "ell"), *quoted = json_fact(json, "quoted");
    cr_assert_str_eq(ell, "1.6065");
    cr_assert_str_eq(quoted, "say \"hi\"");
    cr_assert_null(json_fact(json, "el"));
    cr_assert_null(json_fact(json, "missing"));
    cr_assert(json_fact_is(json, "ell", "1.6065"));
    cr_assert(json_fact_is(json, "ell", "1.606") == false);
    cr_assert(json_fact_is(json, "missing", "") == false);
    free(ell), free(quoted), free(json);
}

