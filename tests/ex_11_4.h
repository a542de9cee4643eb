/* Exercise 11.4: the bf16 rounding of VCVTNEPS2BF16. */
#ifndef EX_11_4_H
#define EX_11_4_H
#include <stdint.h>
uint16_t ex_bf16_round(float x);
#endif
