/* Exercise 8.6: the counts of the fused kernel without a mask, in
   closed form, for any lengths and block sizes. */
#ifndef EX_8_6_H
#define EX_8_6_H
#include "cpu/attention.h"
#include "cpu/fused.h"
attn_counts fused_counts_closed_form(const attn_params *p);
#endif
