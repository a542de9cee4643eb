/* ch02_online_softmax.h — the step record, the firing summary and the
   functions the tests call. Tangled from chapters/ch02_online_softmax.nw. */
#ifndef CH02_ONLINE_SOFTMAX_H
#define CH02_ONLINE_SOFTMAX_H
#include <stdbool.h>
#include <stddef.h>
#include "harness/harness.h"
typedef struct {
    size_t first, count;      /* which logits the block holds      */
    float  block_max;         /* the block's own largest logit      */
    float  running_max;       /* m after the block                 */
    float  correction;        /* e^(m_before - m_after)            */
    float  sum;               /* l after the block                 */
    bool   raised;            /* did the block raise the maximum?  */
} stream_step;
typedef struct {
    size_t fired;          /* blocks after the first that raised the max */
    float  deepest;        /* the smallest correction among them         */
} firing_summary;
size_t stream_row(const float *x, size_t n, size_t block, stream_step steps[]);
firing_summary summarize_firings(const stream_step steps[], size_t blocks);
double harmonic_number(size_t count);
void run_walkthrough(report *r, size_t block, const char *data_dir);
#endif
