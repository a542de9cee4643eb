#include <criterion/criterion.h>
#include <string.h>
#include "cpu/bf16.h"
#include "ex_11_4.h"

static void check_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    cr_assert_eq(ex_bf16_round(x), bf16_round(x), "hint: float bits %08x should give %04x, not %04x",
                 u, bf16_round(x), ex_bf16_round(x));
}

Test(grade_11_4, special, .description = "zeros, denormals, infinities, NaNs, the largest floats")
{
    static const uint32_t cases[] = { 0, 0x80000000u, 1, 0x807fffffu, 0x7f800000u, 0xff800000u,
                                      0x7f800001u, 0xffc00000u, 0x7f7fffffu, 0xff7f8000u };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_bits(cases[i]);
}

Test(grade_11_4, ties, .description = "halfway cases round to the even kept bit")
{
    for (uint32_t hi = 0x3f80; hi < 0x3f90; hi++) check_bits(hi << 16 | 0x8000u);
}

Test(grade_11_4, everything, .description = "65,537 bit patterns spread over all floats")
{
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65521) check_bits((uint32_t)u);
}
