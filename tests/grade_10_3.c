#include <criterion/criterion.h>
#include "gpu/gpu_emu.h"
#include "ex_10_3.h"

static void launch_four_blocks(float out[4], float want[4], emu_counts *counts)
{
    static float in[4 * 128];
    ex_block_sum_args args = { in, out };
    for (int i = 0; i < 4 * 128; i++) { in[i] = (float)(i % 7 - 3); want[i / 128] += in[i]; }
    emu_launch((emu_dim3){ 4, 1, 1 }, (emu_dim3){ 128, 1, 1 }, ex_block_sum_kernel,
               &args, counts);
}
Test(grade_10_3, block_sums, .description = "four blocks of 128 values, summed")
{
    float out[4] = { 0 }, want[4] = { 0 };
    emu_counts counts = { 0 };
    launch_four_blocks(out, want, &counts);
    for (int b = 0; b < 4; b++)
        cr_expect(out[b] == want[b], "hint: block %d sums to %g, not %g: a barrier missing?",
                  b, (double)out[b], (double)want[b]);
}
Test(grade_10_3, block_meetings, .description = "eight meetings per block")
{
    float out[4] = { 0 }, want[4] = { 0 };
    emu_counts counts = { 0 };
    launch_four_blocks(out, want, &counts);
    cr_expect(counts.block_barriers == 4 * 8,
              "hint: one meeting after the load and one per halving, 8 per block (got %zu)",
              counts.block_barriers);
}
