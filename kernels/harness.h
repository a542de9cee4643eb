/* harness.h — every service of the harness in one include.
   Tangled from chapters/harness.nw; edit that file instead. */
#ifndef HARNESS_H
#define HARNESS_H
#include "printf_check.h"
#include "fail.h"
#include "format.h"
#include "random.h"
#include "memory.h"
#include "tensor.h"
#include "npy.h"
#include "report.h"
#include "options.h"
#include "timing.h"
#include "datafile.h"
#include "test_support.h"
#endif
