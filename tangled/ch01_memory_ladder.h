/* ch01_memory_ladder.h — chapter 1's arithmetic and its program, for the
   program and its tests. Tangled from chapters/app_ladder.nw. */
#ifndef CH01_MEMORY_LADDER_H
#define CH01_MEMORY_LADDER_H
#include "cpu/score_traffic.h"
int chapter_main(int argc, char **argv);   /* main, as the tests see it */
#endif
