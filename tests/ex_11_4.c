#include <string.h>
#include "ex_11_4.h"

uint16_t ex_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t exponent = (u >> 23) & 0xffu;
    if (exponent == 0) return (uint16_t)((u >> 16) & 0x8000u);       /* zero or denormal */
    if (exponent == 0xff)                                             /* inf, or a quiet NaN */
        return (uint16_t)((u >> 16) | ((u & 0x7fffffu) ? 0x40u : 0u));
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
