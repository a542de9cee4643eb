/* harness.h — every service of the harness in one include.
   Tangled from chapters/harness.nw; edit that file instead. */
#ifndef HARNESS_H
#define HARNESS_H
#include "harness/printf_check.h"
#include "harness/fail.h"
#include "harness/format.h"
#include "harness/random.h"
#include "harness/memory.h"
#include "harness/tensor.h"
#include "harness/npy.h"
#include "harness/report.h"
#include "harness/options.h"
#include "harness/timing.h"
#include "harness/datafile.h"
#include "harness/test_support.h"
#endif
