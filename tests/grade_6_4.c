#include <criterion/criterion.h>
#include "ex_6_4.h"

Test(grade_6_4, cover, .description = "the parts cover every row once, in order")
{
    for (size_t n = 0; n <= 100; n++)
        for (size_t parts = 1; parts <= 12; parts++) {
            size_t next = 0;
            for (size_t t = 0; t < parts; t++) {
                size_t r0, r1;
                ex_balanced_rows(n, parts, t, &r0, &r1);
                cr_assert(r0 == next && r1 >= r0, "hint: part %zu of %zu for %zu rows "
                          "starts at %zu, not %zu", t, parts, n, r0, next);
                next = r1;
            }
            cr_assert_eq(next, n, "hint: %zu parts end at row %zu of %zu", parts, next, n);
        }
}
Test(grade_6_4, balance, .description = "no two parts differ by more than one row")
{
    for (size_t n = 0; n <= 100; n++)
        for (size_t parts = 1; parts <= 12; parts++) {
            size_t least = n, most = 0;
            for (size_t t = 0; t < parts; t++) {
                size_t r0, r1;
                ex_balanced_rows(n, parts, t, &r0, &r1);
                least = r1 - r0 < least ? r1 - r0 : least;
                most = r1 - r0 > most ? r1 - r0 : most;
            }
            cr_assert(most - least <= 1, "hint: %zu rows on %zu parts: from %zu to %zu rows; "
                      "give the first n %% T parts one more", n, parts, least, most);
        }
}
