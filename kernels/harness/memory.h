/* memory.h — the counted allocator. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_MEMORY_H
#define FA_MEMORY_H
#include <stddef.h>
#include "harness/fail.h"
void  *fa_alloc(size_t bytes);
void   fa_free(void *p);                 /* NULL is fine */
size_t fa_bytes_live(void);
size_t fa_bytes_peak(void);
void   fa_reset_peak(void);              /* peak := live */
size_t fa_physical_memory(void);         /* bytes of RAM; 0 if unknown */
/* the least of MemAvailable, the room left under the cgroup's memory limit
   and under RLIMIT_AS; SIZE_MAX if none of them is known */
size_t fa_memory_available(void);
/* exits 2 with the figures unless BYTES fit in fa_memory_available() */
void   fa_require(size_t bytes, const char *what);
size_t process_peak_rss(void);           /* VmHWM in bytes; 0 if unknown */
size_t fa_mul(size_t a, size_t b);       /* a*b, or exit 2 on overflow */

#endif
