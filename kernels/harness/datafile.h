/* datafile.h — data files for the figures. Tangled from chapters/harness.nw; edit that file. */
#ifndef FA_DATAFILE_H
#define FA_DATAFILE_H
#include <stdio.h>
/* opens DIR/NAME for writing (through a temporary file), creating DIR and
   its parents; exits 2 with a message on failure */
FILE *data_file(const char *dir, const char *name);
/* closes a data file and renames it into place; exits 2 on any failure */
void  data_close(FILE *f);
/* creates DIR and its parents, like mkdir -p; exits 2 on failure */
void  data_directory(const char *dir);

/* prints "PROGRAM: error: cannot WHAT PATH: reason" and exits 2 */
void data_fail(const char *what, const char *path);
#endif
