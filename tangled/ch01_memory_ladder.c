/* ch01_memory_ladder — the score matrix against the memory ladder, measured.
   Tangled from chapters/app_ladder.nw; edit that file, not this one. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"
#include "harness/ladder.h"
#include "ch01_memory_ladder.h"

static void report_traffic(report *r, attention_shape s, double tbs)
{
    char title[160], time_col[48];
    snprintf(title, sizeof title,
             "Naive attention, n = %zu, d = %zu, %zu heads, fp32",
             s.seq, s.dim, s.heads);
    snprintf(time_col, sizeof time_col, "ms at %.1f TB/s", tbs);
    const char *const columns[] = { "step", "reads", "writes", "bytes read",
                                    "bytes written", time_col, NULL };
    table *t = report_table(r, "traffic", title, columns);
    traffic_step steps[NAIVE_STEPS];
    naive_traffic(s, steps);
    double read_total = 0, write_total = 0;
    char rb[32], wb[32], ms[32];
    for (int i = 0; i < NAIVE_STEPS; i++) {
        const traffic_step *st = &steps[i];
        double bytes = st->read_bytes + st->write_bytes;
        table_rowf(t, "%s|%s|%s|%s|%s|%s", st->step, st->reads, st->writes,
                   fmt_bytes(rb, st->read_bytes), fmt_bytes(wb, st->write_bytes),
                   fmt_sig(ms, transfer_ms(bytes, tbs), 2));
        read_total += st->read_bytes;
        write_total += st->write_bytes;
    }
    table_rowf(t, "total|||%s|%s|%s", fmt_bytes(rb, read_total),
               fmt_bytes(wb, write_total),
               fmt_sig(ms, transfer_ms(read_total + write_total, tbs), 2));
    report_note(r, "The shape and its traffic, as the chapter quotes them:");
    report_factf(r, "seq", "%zu", s.seq);
    report_factf(r, "heads", "%zu", s.heads);
    report_factf(r, "dim", "%zu", s.dim);
    report_factf(r, "bytes_per_value", "%d", FLOAT_BYTES);
    char buf[32];
    double scores = score_bytes(s), operands = 4 * operand_bytes(s);
    double total = read_total + write_total, score_traffic = total - operands;
    report_fact(r, "score_bytes", fmt_bytes(buf, scores));
    report_fact(r, "score_bytes_exact", fmt_int(buf, (long long)scores));
    report_fact(r, "score_passes", fmt_int(buf, llround(score_traffic / scores)));
    report_fact(r, "operand_total", fmt_bytes(buf, operands));
    report_fact(r, "traffic_ratio",
                fmt_int(buf, llround(score_traffic / operands)));
    report_fact(r, "naive_ms", fmt_sig(buf, transfer_ms(total, tbs), 2));
}

static void report_sram_facts(report *r, attention_shape s, double tbs)
{
    const gpu_spec *a100 = &gpu_specs[0];
    double scores = score_bytes(s);
    char buf[32], note[200];
    snprintf(note, sizeof note, "The %s against the score matrix (share_* in "
             "percent,\ntimes_* as multiples, pass_ms for one pass at %.1f "
             "TB/s):", a100->name, tbs);
    report_note(r, note);
    double sm = sm_sram_bytes(a100), all = gpu_sram_bytes(a100);
    report_factf(r, "sm_sram", "%d KiB", a100->sram_kib);
    report_factf(r, "a100_sms", "%d", a100->sms);
    report_fact(r, "all_sram", fmt_bytes(buf, all));
    report_fact(r, "share_sm", fmt_sig(buf, 100 * sm / scores, 2));
    report_fact(r, "share_all", fmt_sig(buf, 100 * all / scores, 2));
    report_fact(r, "times_sm", fmt_int(buf, llround(scores / sm)));
    report_fact(r, "times_all", fmt_int(buf, llround(scores / all)));
    report_factf(r, "tbs", "%.1f", tbs);
    report_fact(r, "pass_ms", fmt_sig(buf, transfer_ms(scores, tbs), 2));
}

static void report_gpus(report *r, attention_shape s)
{
    static const char *const columns[] = { "GPU", "HBM GB", "HBM TB/s",
        "SMs", "SRAM/SM", "SRAM total", "S in SRAM", "one pass ms",
        "naive ms", NULL };
    report_note(r, "SRAM total = SMs x SRAM/SM; S in SRAM = the share of the "
                "score matrix\nthat all of it could hold; one pass ms = S read "
                "or written once;\nnaive ms = all of naive attention's traffic; "
                "both at the GPU's own HBM\nbandwidth.");
    table *t = report_table(r, "gpus", "Three GPUs against the score matrix",
                            columns);
    double scores = score_bytes(s), naive = naive_total_bytes(s);
    for (int i = 0; i < GPU_COUNT; i++) {
        const gpu_spec *g = &gpu_specs[i];
        char total[32], share[32], pass[32], all[32];
        fmt_sig(share, 100 * gpu_sram_bytes(g) / scores, 2);
        table_rowf(t, "%s|%g|%g|%d|%d KiB|%s|%s%%|%s|%s", g->name, g->hbm_gb,
                   g->hbm_tbs, g->sms, g->sram_kib,
                   fmt_bytes(total, gpu_sram_bytes(g)), share,
                   fmt_sig(pass, transfer_ms(scores, g->hbm_tbs), 2),
                   fmt_sig(all, transfer_ms(naive, g->hbm_tbs), 2));
    }
}

static void report_part(report *r, const char *title)
{
    char heading[256];
    size_t len = strlen(title) < 120 ? strlen(title) : 120;
    snprintf(heading, sizeof heading, "%.*s\n", (int)len, title);
    memset(heading + len + 1, '=', len);
    heading[2 * len + 1] = '\0';
    report_note(r, heading);
}

int main(int argc, char **argv)
{
    long seq = 8192, heads = 8, dim = 64, seed = 0, max_mib = 512, repeats = 5, attempts = 0;
    long threads = ladder_cpus();
    double tbs = 2.0;
    bool quick = false, json = false;
    const char *data_dir = NULL;
    const option opts[] = {
        { "seq", OPT_INT, &seq, 1, 1 << 24, "N",
          "sequence length n for the arithmetic" },
        { "heads", OPT_INT, &heads, 1, 4096, "H", "attention heads" },
        { "dim", OPT_INT, &dim, 1, 65536, "D", "head dimension d" },
        { "tbs", OPT_DOUBLE, &tbs, 0.001, 1000, "TB/S",
          "memory bandwidth in TB/s for the pass times" },
        { "threads", OPT_INT, &threads, 1, LADDER_MAX_THREADS, "T",
          "threads for the all-core runs (one per CPU we may use)" },
        { "repeats", OPT_INT, &repeats, 1, LADDER_MAX_REPEATS, "R",
          "timed repeats per measurement; the median is kept" },
        { "max-mib", OPT_INT, &max_mib, 1, 1 << 20, "M",
          "largest working set per core, MiB" },
        { "quick", OPT_FLAG, &quick, 0, 0, NULL,
          "a coarse, short sweep up to 64 MiB (for tests)" },
        { "seed", OPT_INT, &seed, 0, 4294967295.0, "S",
          "seed of the pointer chase's random cycle" },
        { "attempts", OPT_INT, &attempts, 0, 10, "A",
          "measure up to A times while the machine is busy (0: 3, or 1 with --quick)" },
        { "json", OPT_FLAG, &json, 0, 0, NULL, "print the receipts as JSON" },
        { "data", OPT_STRING, &data_dir, 0, 0, "DIR",
          "write " LADDER_CURVE_FILE " and " LADDER_MACHINE_FILE " into DIR" },
    };
    options_parse(argc, argv, "ch01_memory_ladder",
                  "The score matrix of naive attention against the memory "
                  "ladder, vendor figures for three GPUs and this machine "
                  "measured.", opts, sizeof opts / sizeof opts[0]);
    size_t max_bytes = (size_t)max_mib << 20;
    if (quick && max_bytes > SWEEP_DENSE_END)
        max_bytes = SWEEP_DENSE_END;
    ladder_plan plan = {
        .threads = (int)threads, .seed = (uint32_t)seed,
        .repeats = quick && repeats > 3 ? 3 : (int)repeats,
        .attempts = attempts > 0 ? (int)attempts : quick ? 1 : 3,
        .chase_steps = quick ? 1 << 14 : 1 << 16,
        .fma_iterations = quick ? 1 << 20 : 1 << 22 };
    plan_sizes(&plan, max_bytes, quick);
    if (plan.count == 0)
        die_usage("ch01_memory_ladder",
                  "--max-mib %ld leaves no working set to measure", max_mib);
    if ((double)max_bytes * (double)threads > 0.5 * (double)fa_physical_memory())
        die_usage("ch01_memory_ladder", "%ld MiB x %ld threads is more than "
                  "half of this machine's %zu MiB", max_mib, threads,
                  fa_physical_memory() >> 20);
    fa_require(fa_mul(max_bytes, (size_t)threads), "the probe buffers");
    report *r = report_new("ch01_memory_ladder", json);
    attention_shape shape = { (size_t)seq, (size_t)heads, (size_t)dim };
    report_part(r, "PART 1  The score matrix of naive attention: arithmetic, "
                "the same everywhere");
    report_traffic(r, shape, tbs);
    report_sram_facts(r, shape, tbs);
    report_gpus(r, shape);
    ladder_profile profile;
    measure_ladder_quietly(&plan, plan.attempts, &profile, true);
    report_part(r, "PART 2  This machine, measured: medians of repeated runs, "
                "its own numbers");
    report_machine(r, &profile, &plan);
    report_sweep(r, &profile);
    report_ladder(r, &profile);
    report_ladder_ratios(r, &profile);
    if (data_dir)
        ladder_write(data_dir, &profile);
    report_finish(r, stdout);
    return 0;
}

