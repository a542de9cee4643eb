/* Tests of the ladder's instruments. Tangled from chapters/app_ladder.nw. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"
#include "harness/ladder.h"

Test(ladder, sizes_parse_as_sysfs_writes_them)
{
    cr_expect_eq(ladder_parse_size("48K"), 49152);
    cr_expect_eq(ladder_parse_size("2048K"), 2097152);
    cr_expect_eq(ladder_parse_size("260M"), (size_t)260 << 20);
    cr_expect_eq(ladder_parse_size("512"), 512);
    cr_expect_eq(ladder_parse_size("K"), 0);
    char buf[32];
    cr_expect_str_eq(ladder_format_size(buf, 49152), "48 KiB");
    cr_expect_str_eq(ladder_format_size(buf, (size_t)3 << 29), "1.5 GiB");
}

Test(ladder, median_ignores_one_outlier)
{
    double odd[5] = { 3, 1, 1000, 2, 2.5 }, even[4] = { 4, 1, 3, 2 };
    cr_expect(ladder_median(odd, 5) == 2.5);
    cr_expect(ladder_median(even, 4) == 2.5);
    cr_expect(isnan(ladder_median(odd, 0)));
}

Test(ladder, fma_kernel_computes_what_fmaf_computes)
{
    float out[LADDER_FMA_CHAINS];
    ladder_fma_chains(1000, out);
    for (int k = 0; k < LADDER_FMA_CHAINS; k++) {
        float x = LADDER_FMA_START(k);
        for (int i = 0; i < 1000; i++)
            x = fmaf(x, LADDER_FMA_MUL, LADDER_FMA_ADD);
        cr_expect(out[k] == x, "chain %d: %.9g vs %.9g", k, out[k], x);
    }
}

Test(ladder, fma_flops_count_every_lane_of_every_chain)
{
    const char *isa = ladder_fma_isa();
    int lanes = strcmp(isa, "AVX-512") == 0 ? 16
              : strcmp(isa, "AVX2+FMA") == 0 ? 8 : 1;
    cr_expect_eq(ladder_fma_lanes(), lanes, "%s", isa);
    cr_expect(ladder_fma_flops(1000, 3) == 1000.0 * LADDER_FMA_CHAINS * lanes * 2 * 3);
    cr_expect(ladder_fma_flops(1, 1) == 2.0 * LADDER_FMA_CHAINS * lanes);
}

Test(ladder, fma_rate_is_positive_and_finite)
{
    double g = ladder_fma_gflops(1, 1 << 18, 3);
    cr_expect(isfinite(g) && g > 0, "%g GFLOP/s", g);
}

Test(ladder, reading_arrays_refuses_what_it_cannot_cut_and_never_outruns_a_core)
{
    unsigned char *a = aligned_alloc(64, 1 << 20), *b = aligned_alloc(64, 1 << 20);
    memset(a, 1, 1 << 20); memset(b, 2, 1 << 20);
    const void *both[2] = { a, b }, *shifted[2] = { a + 8, b };
    cr_expect(isnan(ladder_read_arrays_spread(shifted, 2, 4096, 1, 3).median));
    cr_expect(isnan(ladder_read_arrays_spread(both, 2, 256, 2, 3).median));
    const double gbs = ladder_read_arrays_spread(both, 2, 1 << 20, 1, 3).median;
    cr_expect(isfinite(gbs) && gbs > 0 && gbs < 768, "%g GB/s", gbs);
    free(a); free(b);
}

Test(ladder, the_chase_visits_every_line_once)
{
    ladder_buffer b = ladder_buffer_new(64 * 1000, 1);
    mt19937 g;
    mt_seed(&g, 7);
    double ns = ladder_chase_ns(&b, 64 * 1000, 1000, 3, &g);
    cr_expect(isfinite(ns) && ns > 0);
    const uintptr_t *start = (const uintptr_t *)b.base, *p = start;
    for (int step = 1; step <= 1000; step++) {
        p = (const uintptr_t *)*p;
        cr_expect(step == 1000 ? p == start : p != start, "step %d", step);
    }
    ladder_buffer_free(&b);
}

Test(ladder, levels_are_read_well_inside_each_cache)
{
    ladder_profile p = { .nlevels = 4 };
    size_t caps[4] = { 48 << 10, 2 << 20, (size_t)260 << 20, 0 };
    for (int k = 0; k < 4; k++)
        p.level[k] = (ladder_level){ .capacity = caps[k] };
    for (size_t s = 4 << 10; s <= (size_t)1 << 30; s *= s < (64 << 20) ? 2 : 4)
        p.point[p.npoints++] = (ladder_point){ s, (double)s, 0, 0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
    ladder_pick_levels(&p);
    size_t want[4] = { 8 << 10, 512 << 10, 16 << 20, (size_t)1 << 30 };
    for (int k = 0; k < 4; k++) {
        cr_expect_eq(p.level[k].probe, want[k], "level %d", k);
        cr_expect(p.level[k].gbs_one == (double)want[k]);
    }
}

static void probe_sizes(size_t sizes[3])
{
    ladder_level caches[LADDER_MAX_LEVELS];
    int n = ladder_caches(caches, LADDER_MAX_LEVELS);
    sizes[0] = n > 0 ? caches[0].capacity / 4 : 16 << 10;
    sizes[1] = n > 1 ? caches[1].capacity / 4 : 256 << 10;
    sizes[2] = 64 << 20;
    if (sizes[0] < (4 << 10) || sizes[1] <= 2 * sizes[0]
        || sizes[1] >= sizes[2]) {
        sizes[0] = 16 << 10;
        sizes[1] = 256 << 10;
    }
}

enum { SHAPE_REPEATS = 5, SHAPE_MAX_THREADS = 4 };
static const double NOISE_ALLOWANCE = 1.25;  /* next level's GB/s, at most */
static const double L1_OVER_FAR = 2;         /* L1 GB/s over 64 MiB's       */
static const double LATENCY_CLIMB = 8;       /* 64 MiB's ns over L1's       */

Test(ladder, bandwidth_never_rises_down_the_ladder)
{
    if (getenv("FA_SAN") != NULL)
        cr_skip_test("bandwidth ratios are not the machine's under the sanitizers");
    double load = 0.0;
    FILE *loadavg = fopen("/proc/loadavg", "r");
    if (loadavg != NULL) {
        if (fscanf(loadavg, "%lf", &load) != 1)
            load = 0.0;
        fclose(loadavg);
    }
    if (load > ladder_cpus())
        cr_skip_test("load %.1f on %d CPUs: too busy to measure the ladder's shape",
                     load, ladder_cpus());
    size_t sizes[3];
    probe_sizes(sizes);
    int most = ladder_cpus() < SHAPE_MAX_THREADS ? ladder_cpus()
                                                 : SHAPE_MAX_THREADS;
    int teams[2] = { 1, most };
    ladder_buffer b = ladder_buffer_new(sizes[2], most);
    for (int team = 0; team < (most > 1 ? 2 : 1); team++) {
        int t = teams[team];
        double bw[3];
        for (int i = 0; i < 3; i++)
            bw[i] = ladder_read_spread(&b, sizes[i], t, SHAPE_REPEATS).max;
        cr_expect(bw[1] <= NOISE_ALLOWANCE * bw[0], "%d threads: %g GB/s above %g",
                  t, bw[1], bw[0]);
        cr_expect(bw[2] <= NOISE_ALLOWANCE * bw[1], "%d threads: %g GB/s above %g",
                  t, bw[2], bw[1]);
        cr_expect(bw[0] >= L1_OVER_FAR * bw[2], "%d threads: L1 %g GB/s vs 64 MiB %g",
                  t, bw[0], bw[2]);
    }
    ladder_buffer_free(&b);
}

Test(ladder, latency_climbs_from_l1_to_64_mib)
{
    if (getenv("FA_SAN") != NULL)
        cr_skip_test("bandwidth ratios are not the machine's under the sanitizers");
    double load = 0.0;
    FILE *loadavg = fopen("/proc/loadavg", "r");
    if (loadavg != NULL) {
        if (fscanf(loadavg, "%lf", &load) != 1)
            load = 0.0;
        fclose(loadavg);
    }
    if (load > ladder_cpus())
        cr_skip_test("load %.1f on %d CPUs: too busy to measure the ladder's shape",
                     load, ladder_cpus());
    size_t sizes[3];
    probe_sizes(sizes);
    ladder_buffer b = ladder_buffer_new(sizes[2], 1);
    mt19937 g;
    mt_seed(&g, 0);
    double l1 = ladder_chase_ns(&b, sizes[0], 1 << 16, SHAPE_REPEATS, &g);
    double far = ladder_chase_ns(&b, sizes[2], 1 << 16, SHAPE_REPEATS, &g);
    cr_expect(l1 > 0 && far >= LATENCY_CLIMB * l1, "L1 %g ns, 64 MiB %g ns",
              l1, far);
    ladder_buffer_free(&b);
}

static ladder_profile sample_profile(void)
{
    ladder_profile p = {
        .cpu_model = "Test CPU @ 1.00GHz", .cpus = 3, .threads = 2,
        .nominal_mhz = 999.5, .max_mhz = 0.1, .virtual_machine = 1,
        .fma_isa = "AVX-512", .fma_lanes = 16, .fma_gflops_one = 1.0 / 3,
        .fma_gflops_all = 2.0 / 3, .fma_one_range = { 1.0 / 3, 0.25, 0.5 },
        .fma_all_range = { 2.0 / 3, 0.5, 0.75 }, .load_before = 1.5, .load_after = NAN,
        .others_cpu = 0.125, .busy = 1, .attempts = 2, .nlevels = 2, .npoints = 3 };
    p.level[0] = (ladder_level){ "L1d", 49152, 8192, 250.125, 490.5, 1.75,
                                 { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
    p.level[1] = (ladder_level){ "DRAM", 0, 0, NAN, NAN, NAN, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
    for (int i = 0; i < 3; i++)
        p.point[i] = (ladder_point){ (size_t)4096 << i, 100.0 / (i + 1),
                                     0.1 * i, i ? 3.25 * i : NAN,
                                     { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } };
    return p;
}

static bool same_number(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

static bool same_level(const ladder_level *a, const ladder_level *b)
{
    return strcmp(a->name, b->name) == 0 && a->capacity == b->capacity
        && a->probe == b->probe && same_number(a->gbs_one, b->gbs_one)
        && same_number(a->gbs_all, b->gbs_all)
        && same_number(a->latency_ns, b->latency_ns);
}

static bool same_point(const ladder_point *a, const ladder_point *b)
{
    return a->bytes == b->bytes && same_number(a->gbs_one, b->gbs_one)
        && same_number(a->gbs_all, b->gbs_all)
        && same_number(a->latency_ns, b->latency_ns);
}

Test(ladder, data_files_read_back_exactly)
{
    char dir[] = "/tmp/ch01_ladder_XXXXXX", err[256];
    cr_assert(mkdtemp(dir) != NULL);
    ladder_profile w = sample_profile(), r;
    ladder_write(dir, &w);
    cr_assert_eq(ladder_read(dir, &r, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(r.cpu_model, w.cpu_model);
    cr_expect_str_eq(r.fma_isa, w.fma_isa);
    cr_expect(r.cpus == 3 && r.threads == 2 && r.fma_lanes == 16);
    cr_expect(r.nominal_mhz == 999.5 && r.max_mhz == 0.1);
    cr_expect(r.virtual_machine == 1);
    cr_expect(r.fma_gflops_one == w.fma_gflops_one);
    cr_expect(r.fma_gflops_all == w.fma_gflops_all);
    cr_expect(r.fma_one_range.min == 0.25 && r.fma_one_range.max == 0.5);
    cr_expect(r.fma_all_range.min == 0.5 && r.fma_all_range.max == 0.75);
    cr_expect(r.fma_one_range.median == w.fma_gflops_one);
    cr_expect(r.load_before == 1.5 && isnan(r.load_after) && r.others_cpu == 0.125);
    cr_expect(r.busy == 1 && r.attempts == 2);
    cr_assert_eq(r.nlevels, 2);
    for (int k = 0; k < 2; k++)
        cr_expect(same_level(&r.level[k], &w.level[k]), "level %d", k);
    cr_assert_eq(r.npoints, 3);
    for (int i = 0; i < 3; i++)
        cr_expect(same_point(&r.point[i], &w.point[i]), "point %d", i);
}

static void write_sample(char *dir)
{
    ladder_profile w = sample_profile();
    cr_assert(mkdtemp(dir) != NULL);
    ladder_write(dir, &w);
}

static void damage_machine_file(const char *dir, const char *sed_script)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sed -i '%s' %s/%s", sed_script, dir,
             LADDER_MACHINE_FILE);
    cr_assert_eq(system(cmd), 0);
}

Test(ladder, a_missing_file_is_refused_by_name)
{
    char dir[] = "/tmp/ch01_ladder_XXXXXX", err[256];
    ladder_profile r;
    cr_assert(mkdtemp(dir) != NULL);
    cr_expect_eq(ladder_read(dir, &r, err, sizeof err), -1);
    cr_expect(strstr(err, LADDER_MACHINE_FILE) != NULL, "%s", err);
}

Test(ladder, a_missing_key_is_refused_by_name)
{
    char dir[] = "/tmp/ch01_ladder_XXXXXX", err[256];
    ladder_profile r;
    write_sample(dir);
    damage_machine_file(dir, "s/^fma_gflops_all/fma_gflops_ALL/");
    cr_expect_eq(ladder_read(dir, &r, err, sizeof err), -1);
    cr_expect(strstr(err, "missing key fma_gflops_all") != NULL, "%s", err);
}

static int line_starting(const char *dir, const char *prefix)
{
    char path[4096], line[512];
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_MACHINE_FILE);
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "%s", path);
    int found = 0;
    for (int n = 1; !found && fgets(line, sizeof line, f); n++)
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            found = n;
    fclose(f);
    cr_assert(found > 0, "no line starts with %s", prefix);
    return found;
}

static void expect_refused_at(const char *dir, int line)
{
    char err[256], where[64];
    ladder_profile r;
    cr_expect_eq(ladder_read(dir, &r, err, sizeof err), -1);
    snprintf(where, sizeof where, "%s:%d: ", LADDER_MACHINE_FILE, line);
    cr_expect(strstr(err, where) != NULL, "%s, not at %s", err, where);
}

Test(ladder, a_bad_number_is_refused_with_its_line)
{
    char dir[] = "/tmp/ch01_ladder_XXXXXX";
    write_sample(dir);
    damage_machine_file(dir, "s/^cpus = 3/cpus = three/");
    expect_refused_at(dir, line_starting(dir, "cpus = "));
}

Test(ladder, a_short_level_line_is_refused_with_its_line)
{
    char dir[] = "/tmp/ch01_ladder_XXXXXX";
    write_sample(dir);
    damage_machine_file(dir, "/^level0 = /s/ [^ ]*$//");
    expect_refused_at(dir, line_starting(dir, "level0 = "));
}

Test(ladder, others_share_is_the_work_not_ours_over_the_span)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const ladder_sample a = { .wall = 10, .busy = 100, .self = 1, .load = 0.5 };
    const ladder_sample b = { .wall = 12, .busy = 103, .self = 2, .load = 0.75 };
    const ladder_noise n = ladder_noise_between(a, b);
    const double want = 2.0 / (2.0 * (double)cpus);
    cr_expect(fabs(n.others - (want > 1 ? 1 : want)) < 1e-12, "others %g", n.others);
    cr_expect(n.load_before == 0.5 && n.load_after == 0.75);
    const ladder_sample c = { .wall = 12, .busy = 100.5, .self = 2 };
    cr_expect(ladder_noise_between(a, c).others == 0, "a share below zero is clamped");
}

Test(ladder, busy_by_either_witness)
{
    const ladder_noise quiet = { 0, 0, 0.10 }, loud = { 0, 0, 0.11 }, unknown = { 0, 0, NAN };
    cr_expect(ladder_busy(quiet, 1.10, 1.10) == false);
    cr_expect(ladder_busy(loud, 1.0, 1.10));
    cr_expect(ladder_busy(quiet, 1.11, 1.10));
    cr_expect(ladder_busy(unknown, 1.0, 1.10) == false);
    cr_expect(ladder_busy(unknown, 1.2, 1.10));
}

Test(ladder, the_noise_note_names_the_spread)
{
    char buf[400];
    const ladder_noise n = { 0.5, 0.5, 0.01 };
    ladder_noise_note(buf, sizeof buf, "the timings", n, 1.40, true);
    cr_expect(strstr(buf, "took 1% of") != NULL, "%s", buf);
    cr_expect(strstr(buf, "spread up to 1.40x: these numbers come from a busy machine") != NULL,
              "%s", buf);
    ladder_noise_note(buf, sizeof buf, "the timings", n, NAN, false);
    cr_expect(strstr(buf, "spread") == NULL && strstr(buf, "was quiet") != NULL, "%s", buf);
}

Test(ladder, two_times_in_words)
{
    char buf[64];
    cr_expect_str_eq(ladder_compare_times(buf, sizeof buf, 1.0, 2.0), "ran 2.00 times as fast as");
    cr_expect_str_eq(ladder_compare_times(buf, sizeof buf, 2.0, 1.0),
                     "took 2.00 times as long as");
    cr_expect_str_eq(ladder_compare_times(buf, sizeof buf, 1.0, 1.04),
                     "ran about as fast (1.04 times) as");
    cr_expect_str_eq(ladder_compare_times(buf, sizeof buf, 1.04, 1.0),
                     "ran about as fast (0.96 times) as");
}

Test(ladder, a_profile_is_read_from_the_file_named)
{
    char dir[] = "/tmp/ch01_profile_XXXXXX", path[64], err[256];
    ladder_profile w = sample_profile(), r;
    cr_assert(mkdtemp(dir) != NULL);
    ladder_write(dir, &w);
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_MACHINE_FILE);
    cr_expect_eq(ladder_profile_for(path, NULL, 2, true, &r, err, sizeof err), 0, "%s", err);
    cr_expect(r.fma_gflops_all == w.fma_gflops_all && r.nlevels == 2);
    setenv("FA_MACHINE", path, 1);
    cr_expect_eq(ladder_profile_for(NULL, NULL, 2, true, &r, err, sizeof err), 0, "%s", err);
    cr_expect(r.fma_gflops_one == w.fma_gflops_one);
    setenv("FA_MACHINE", "/nonexistent/ch01_machine.txt", 1);
    cr_expect_eq(ladder_profile_for(NULL, dir, 2, false, &r, err, sizeof err), -1);
    unsetenv("FA_MACHINE");
    cr_expect_eq(ladder_profile_for(NULL, dir, 2, false, &r, err, sizeof err), 0, "%s", err);
    cr_expect(r.fma_gflops_all == w.fma_gflops_all);
    cr_expect(ladder_peak_for(&w, 1) == w.fma_gflops_one);
    cr_expect(ladder_peak_for(&w, 2) == w.fma_gflops_all);
    cr_expect(isnan(ladder_peak_for(&w, 3)));
    char text[64];
    cr_expect_str_eq(ladder_peak_text(text, &r, 3), "-");
    cr_expect_str_eq(ladder_peak_text(text, &r, 2), fmt_spread((char[64]){ 0 }, 2.0 / 3, 0.5, 0.75));
}

Test(ladder, without_a_profile_the_peak_is_measured_now)
{
    char err[256];
    ladder_profile r;
    unsetenv("FA_MACHINE");
    cr_assert_eq(ladder_profile_for(NULL, NULL, 1, false, &r, err, sizeof err), 1);
    cr_expect(r.fma_gflops_one > 0 && r.fma_gflops_all > 0 && r.threads == 1);
    cr_expect(r.attempts == 1 && r.nlevels == 0 && r.cpu_model[0] != '\0');
}

