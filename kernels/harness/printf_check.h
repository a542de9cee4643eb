/* printf_check.h — the printf-checking attribute.
   Tangled from chapters/harness.nw; edit that file instead. */
#ifndef FA_PRINTF_CHECK_H
#define FA_PRINTF_CHECK_H
#if defined(__GNUC__)
#define HARNESS_PRINTF(fmt_index, first_arg) \
    __attribute__((format(printf, fmt_index, first_arg)))
#else
#define HARNESS_PRINTF(fmt_index, first_arg)
#endif

#endif
