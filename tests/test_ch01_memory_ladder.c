/* Tests of chapter 1. Tangled from chapters/ch01_memory_ladder.nw. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"
#include "harness/ladder.h"
#include "../tangled/ch01_memory_ladder.h"

static const attention_shape demo_shape = { 8192, 8, 64 };
static const gpu_spec *const a100_spec = &gpu_specs[0];

Test(ch01, vendor_figures_are_the_datasheets)
{
    const gpu_spec *a = &gpu_specs[0], *h = &gpu_specs[1], *h2 = &gpu_specs[2];
    cr_expect(a->hbm_gb == 80 && a->hbm_tbs == 2.039);
    cr_expect(a->sms == 108 && a->sram_kib == 192);
    cr_expect(h->hbm_gb == 80 && h->hbm_tbs == 3.35);
    cr_expect(h->sms == 132 && h->sram_kib == 256);
    cr_expect(h2->hbm_gb == 141 && h2->hbm_tbs == 4.8);
    cr_expect(h2->sms == 132 && h2->sram_kib == 256);
}

Test(ch01, the_gpus_against_the_score_matrix)
{
    static const char *const share[] = { "0.99", "1.6", "1.6" },
        *const pass[] = { "1.1", "0.64", "0.45" },
        *const naive[] = { "4.2", "2.6", "1.8" };
    double s = score_bytes(demo_shape), all = naive_total_bytes(demo_shape);
    char buf[32];
    for (int i = 0; i < 3; i++) {
        const gpu_spec *g = &gpu_specs[i];
        cr_expect_str_eq(fmt_sig(buf, 100 * gpu_sram_bytes(g) / s, 2),
                         share[i]);
        cr_expect_str_eq(fmt_sig(buf, transfer_ms(s, g->hbm_tbs), 2), pass[i]);
        cr_expect_str_eq(fmt_sig(buf, transfer_ms(all, g->hbm_tbs), 2),
                         naive[i]);
    }
}

Test(ch01, score_matrix_is_2_gib)
{
    char buf[32];
    cr_expect(score_bytes(demo_shape) == 2147483648.0);
    cr_expect_str_eq(fmt_bytes(buf, score_bytes(demo_shape)), "2.0 GiB");
}

Test(ch01, sram_holds_a_sliver_of_it)
{
    char buf[32];
    double s = score_bytes(demo_shape);
    double sm = sm_sram_bytes(a100_spec), all = gpu_sram_bytes(a100_spec);
    cr_expect_str_eq(fmt_sig(buf, 100 * sm / s, 2), "0.0092");
    cr_expect_str_eq(fmt_sig(buf, 100 * all / s, 2), "0.99");
    cr_expect_str_eq(fmt_bytes(buf, all), "20.2 MiB");
    cr_expect_eq(llround(s / sm), 10923);
    cr_expect_eq(llround(s / all), 101);
}

Test(ch01, one_pass_takes_1_1_ms)
{
    char buf[32];
    double ms = transfer_ms(score_bytes(demo_shape), 2.0);
    cr_expect_str_eq(fmt_sig(buf, ms, 2), "1.1");
    cr_expect(fabs(ms - 1.1) < 0.05);
}

Test(ch01, naive_traffic_moves_the_scores_four_times)
{
    traffic_step st[NAIVE_STEPS];
    naive_traffic(demo_shape, st);
    double s = score_bytes(demo_shape), op = operand_bytes(demo_shape);
    cr_expect(op == 16.0 * 1024 * 1024);
    cr_expect(st[0].read_bytes == 2 * op && st[0].write_bytes == s);
    cr_expect(st[1].read_bytes == s && st[1].write_bytes == s);
    cr_expect(st[2].read_bytes == s + op && st[2].write_bytes == op);
    double total = 0;
    for (int i = 0; i < NAIVE_STEPS; i++)
        total += st[i].read_bytes + st[i].write_bytes;
    cr_expect(total == 4 * s + 4 * op);
    cr_expect(naive_total_bytes(demo_shape) == total);
    cr_expect(total / (4 * op) - 1 == 128.0);
    char buf[32];
    cr_expect_str_eq(fmt_sig(buf, transfer_ms(total, 2.0), 2), "4.3");
}

static void swallow_output(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

Test(ch01, a_quick_run_writes_the_ladder, .init = swallow_output)
{
    char dir[] = "/tmp/ch01_run_XXXXXX", err[256];
    cr_assert(mkdtemp(dir) != NULL);
    char *argv[] = { "ch01_memory_ladder", "--quick", "--json", "--data", dir,
                     NULL };
    cr_assert_eq(chapter_main(5, argv), 0);
    ladder_profile p;
    cr_assert_eq(ladder_read(dir, &p, err, sizeof err), 0, "%s", err);
    cr_expect_eq(p.npoints, 7);
    cr_expect(p.fma_gflops_all > 0 && p.nlevels >= 1);
    cr_expect_str_eq(p.level[p.nlevels - 1].name, "DRAM");
}

