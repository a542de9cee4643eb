#include <criterion/criterion.h>
#include "../tangled/ch13_ring.h"
#include "ex_13_4.h"
Test(grade_13_4, spans, .description = "both spans equal the chapter's zigzag for n <= 50, P <= 6")
{
    for (size_t n = 1; n <= 50; n++)
        for (int P = 1; P <= 6; P++)
            for (int r = 0; r < P; r++) {
                size_t lo[2], hi[2];
                zigzag_spans(n, P, r, lo, hi);
                const row_set s = ring_rows(RING_ZIGZAG, n, P, r);
                for (int i = 0; i < 2; i++)
                    cr_assert(lo[i] == s.span[i].lo && hi[i] == s.span[i].hi,
                              "hint: n %zu, P %d, rank %d, span %d: chunk k of 2P is "
                              "rows n*k/(2P) to n*(k+1)/(2P)", n, P, r, i);
            }
}
