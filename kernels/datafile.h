/* datafile.h — data files for the figures. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_DATAFILE_H
#define FA_DATAFILE_H
#include <stdio.h>
/* opens DIR/NAME for writing, creating DIR and its parents;
   exits 2 with a message on failure */
FILE *data_file(const char *dir, const char *name);

/* prints "error: cannot WHAT PATH: reason" and exits 2 */
void data_fail(const char *what, const char *path);
#endif
