/* test_ch13_ring.c — chapter 13's layouts, pieces and ring order against
   brute force. Tangled from chapters/ch13_ring.nw. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/test_support.h"
#include "../tangled/ch13_ring.h"

static int owners_of(ring_layout layout, size_t n, int ranks, size_t row)
{
    int owners = 0;
    for (int r = 0; r < ranks; r++) {
        const row_set s = ring_rows(layout, n, ranks, r);
        for (int i = 0; i < s.count; i++) owners += row >= s.span[i].lo && row < s.span[i].hi;
    }
    return owners;
}
static void mark_pieces(row_span a, row_span b, bool causal, unsigned char cover[40][40])
{
    ring_piece pc[3];
    const int n = ring_pieces(a, b, causal, pc);
    for (int p = 0; p < n; p++)
        for (size_t i = pc[p].q0; i < pc[p].q1; i++)
            for (size_t j = pc[p].k0; j < pc[p].k1; j++)
                if (!pc[p].causal || j <= i) cover[i][j]++;
}
Test(ring, every_row_has_one_owner_and_one_local_place)
{
    for (int layout = RING_PLAIN; layout <= RING_ZIGZAG; layout++)
        for (int ranks = 1; ranks <= 5; ranks++)
            for (size_t n = 0; n <= 41; n++) {
                for (size_t row = 0; row < n; row++)
                    cr_assert_eq(owners_of((ring_layout)layout, n, ranks, row), 1,
                                 "layout %d P %d n %zu row %zu", layout, ranks, n, row);
                for (int r = 0; r < ranks; r++) {
                    const row_set s = ring_rows((ring_layout)layout, n, ranks, r);
                    bool seen[64] = { false };
                    for (int i = 0; i < s.count; i++)
                        for (size_t row = s.span[i].lo; row < s.span[i].hi; row++) {
                            const size_t at = local_row(&s, i, row);
                            cr_assert(at < s.rows && !seen[at], "layout %d P %d n %zu row %zu", layout, ranks, n, row);
                            seen[at] = true;
                        }
                }
            }
}
Test(ring, every_slice_visits_every_rank_once)
{
    for (int ranks = 1; ranks <= 7; ranks++)
        for (int rank = 0; rank < ranks; rank++) {
            int met[7] = { 0 };
            cr_expect_eq(ring_source(rank, ranks, 0), rank);
            for (int step = 0; step < ranks; step++) met[ring_source(rank, ranks, step)]++;
            for (int r = 0; r < ranks; r++) cr_expect_eq(met[r], 1, "P %d rank %d meets %d", ranks, rank, r);
        }
}
Test(ring, pieces_cover_every_visible_pair_once)
{
    for (int causal = 0; causal <= 1; causal++)
        for (size_t alo = 0; alo < 40; alo += 3)
            for (size_t ahi = alo; ahi <= 40; ahi += 5)
                for (size_t blo = 0; blo < 40; blo += 4)
                    for (size_t bhi = blo; bhi <= 40; bhi += 3) {
                        unsigned char cover[40][40];
                        memset(cover, 0, sizeof cover);
                        mark_pieces((row_span){ alo, ahi }, (row_span){ blo, bhi }, causal, cover);
                        for (size_t i = 0; i < 40; i++)
                            for (size_t j = 0; j < 40; j++) {
                                const bool want = i >= alo && i < ahi && j >= blo && j < bhi && (!causal || j <= i);
                                cr_assert_eq(cover[i][j], want ? 1 : 0, "causal %d a [%zu, %zu) b [%zu, %zu): (%zu, %zu) x%d",
                                             causal, alo, ahi, blo, bhi, i, j, cover[i][j]);
                            }
                    }
}
Test(ring, zigzag_balances_the_causal_work)
{
    const size_t n = 96;
    for (int ranks = 1; ranks <= 4; ranks++) {
        double total = 0;
        for (int r = 0; r < ranks; r++) {
            const double zig = ring_rank_pairs(RING_ZIGZAG, n, n, true, ranks, r);
            cr_expect_eq(zig, (double)n * (n + 1) / 2 / ranks, "P %d rank %d: %g", ranks, r, zig);
            total += ring_rank_pairs(RING_PLAIN, n, n, true, ranks, r);
        }
        cr_expect_eq(total, (double)n * (n + 1) / 2, "P %d", ranks);
        const double last = ring_rank_pairs(RING_PLAIN, n, n, true, ranks, ranks - 1);
        cr_expect_float_eq(last / (total / ranks), (2.0 * ranks - 1) / ranks, 0.05, "P %d", ranks);
    }
}
Test(ring, each_rank_draws_the_rows_of_the_whole)
{
    enum { N = 23, D = 3, H = 2 };
    float whole[H * N * D], part[H * N * D];
    const row_set all = ring_rows(RING_PLAIN, N, 1, 0);
    draw_rows(7, 1, &all, H, N, D, whole);
    const row_set s = ring_rows(RING_ZIGZAG, N, 3, 1);
    draw_rows(7, 1, &s, H, N, D, part);
    size_t at = 0;
    for (size_t h = 0; h < H; h++)
        for (int i = 0; i < s.count; i++)
            for (size_t row = s.span[i].lo; row < s.span[i].hi; row++)
                for (size_t c = 0; c < D; c++, at++)
                    cr_expect_eq(part[at], whole[(h * N + row) * D + c], "head %zu row %zu", h, row);
}
static const char *const record =
    "# make bench: date 2026-01-02T03:04Z commit abc1234\n"
    "# machine: cpu_model = Some CPU\n"
    "# machine: cpus = 2\n"
    "ch12_real_model 128 1024 1 3 0.4 0.4 0.4 0.1 0.7 0.2 0.2 0.50\n"
    "ch13_ring overlap sm 2 2048 64 4 ring 0 0.030 0.029 0.002 90 1.05 33.8 20.4 70.00 1.40 100\n"
    "ch13_ring overlap tcp 2 2048 64 4 ring 0 0.035 0.030 0.002 0 1.10 34.1 20.4 60.00 1.00 120\n"
    "ch13_ring overlap tcp 2 512 64 4 ring 0 0.003 0.003 0.001 0 1.10 18.0 5.1 40.00 2.00 40\n"
    "ch13_ring overlap sm 4 4096 64 4 ring 1 0.068 0.085 0.004 100 1.364 37.0 20.4 40 1.39 58\n"
    "ch13_ring overlap sm 4 4096 64 4 zigzag 1 0.064 0.076 0.006 100 1.029 37.1 20.2 33 1.07 63\n"
    "ch13_ring overlap sm 1 1024 128 64 ring 0 0.45 0.40 0 0 1.000 600.0 611.4 86 0.00 0\n"
    "ch13_ring overlap sm 2 1024 128 64 ring 0 0.30 0.30 0.02 100 1.070 300.0 305.8 59 1.64 73\n"
    "ch13_ring overlap sm 4 1024 128 64 ring 0 0.38 0.35 0.05 55 1.012 150.0 152.9 24 0.97 50\n"
    "# cap 600000 KiB, P = 1: ch13_ring: error: needs 612.6 MiB, only 381.7 MiB\n"
    "# cap 600000 KiB, P = 1: exit 2\n"
    "# cap 600000 KiB, P = 4: exit 0\n";
Test(ring, the_recorded_bench_is_read_and_said)
{
    char path[32], overlap[1024], imb[512], mem[512];
    cr_assert(temp_file_with(record, path));
    ring_recorded rec;
    cr_assert(ring_read_recorded(path, &rec));
    unlink(path);
    cr_assert_eq(rec.count, 8);
    cr_assert_eq(rec.cpus, 2);
    cr_assert_str_eq(rec.machine, "Some CPU");
    cr_assert_str_eq(rec.refusal, "needs 612.6 MiB, only 381.7 MiB");
    cr_assert(rec.capped_exit[0] == 2 && rec.capped_exit[1] == 0);
    ring_recorded_sentences(&rec, overlap, imb, mem, sizeof imb);
    cr_assert(strstr(overlap, "at 1024 rows per rank, the ring hid 90% of its transfers on shared "
                              "memory and 0% over TCP"), "%s", overlap);
    cr_assert(strstr(overlap, "is met on one transport only"), "%s", overlap);
    cr_assert(strstr(imb, "1.36 with the plain ring and 1.03 with the zigzag"), "%s", imb);
    cr_assert(strstr(mem, "600 MiB with one rank, 300 MiB with two (0.50 of one) and 150 MiB with "
                          "four (0.25)"), "%s", mem);
    cr_assert(!ring_read_recorded("/nonexistent/record", &rec));
}
