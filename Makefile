# Flash Attention, Exactly — the book machine.
#
#   make          install missing tools (as root), tangle, build the chapter
#                 programs, run them for receipts, draw figures, weave the books
#   make check    every Criterion test, every command-line test, the tangle check
#   make help     the other targets
#
# Everything under .build/ is scratch; tangled/ kernels/ tests/ figures/ are
# tangled from chapters/ and committed; book/ is the woven output.

SHELL       := /bin/sh
.DELETE_ON_ERROR:
.SUFFIXES:

B           := .build
ifeq ($(origin CC),default)
CC          := gcc
endif
CSTD        := -std=c17 -Wall -Wextra -Werror
# -fvect-cost-model=dynamic: at -O2, GCC 12 vectorizes a loop of unknown
# length only with this cost model; results are bit-identical either way.
OPT         ?= -O2 -march=native -fvect-cost-model=dynamic
CPPFLAGS    := -I$(B)/L/kernels -I/usr/include/x86_64-linux-gnu/openblas-pthread
CFLAGS      := $(CSTD) $(OPT) -g -MMD -MP
LDLIBS      := -Wl,--as-needed -lopenblas -lpthread -lm
TEST_LDLIBS := -lcriterion $(LDLIBS)

# Book order: front matter, chapters, the harness appendix, back matter.
NW          := $(wildcard chapters/front.nw) $(sort $(wildcard chapters/ch*.nw)) \
               $(wildcard chapters/harness.nw) $(wildcard chapters/back.nw)
TOOLS       := chapters/tools

.PHONY: all tangle programs receipts figures html pdf check check-tangle \
        check-unit check-cli clean help deps

all: html pdf

help:
	@echo "make            build everything: programs, receipts, figures, book/index.html, book/flash-attention.pdf"
	@echo "make tangle     regenerate tangled/ kernels/ tests/ figures/ from chapters/ (and lint chunk names)"
	@echo "make programs   only the chapter programs (./ch02_online_softmax ...)"
	@echo "make receipts   run the programs; their output lands in $(B)/receipts/"
	@echo "make html | pdf one of the two books"
	@echo "make check      unit tests (Criterion), command-line tests, tangle check"
	@echo "make clean      remove everything built"

# ---------------------------------------------------------------- tools
$(B)/deps.stamp: $(TOOLS)/deps.sh
	@mkdir -p $(B)
	$(TOOLS)/deps.sh
	@touch $@
deps: $(B)/deps.stamp

# ---------------------------------------------------------------- tangle
# roots.mk is remade (and make restarts) whenever a chapter changes; it lists
# what every chapter defines. Unchanged files keep their timestamps.
$(B)/roots.mk: $(NW) $(TOOLS)/tangle.sh | $(B)/deps.stamp
	$(TOOLS)/tangle.sh $@ $(B)/L $(NW)

ifneq ($(filter-out clean help,$(or $(MAKECMDGOALS),all)),)
include $(B)/roots.mk
endif

tangle: $(B)/roots.mk

KERNEL_SRC  := $(filter kernels/%.c,$(ROOTS))
PROGRAMS    := $(patsubst tangled/%.c,%,$(filter tangled/%.c,$(ROOTS)))
UNIT_TESTS  := $(patsubst tests/%.c,%,$(filter tests/test_%.c,$(ROOTS)))
CLI_TESTS   := $(filter tests/cli_%.sh,$(ROOTS))
FIGURE_GP   := $(filter figures/%.gp,$(ROOTS))
FIGURES     := $(patsubst figures/%.gp,%,$(FIGURE_GP))

# ---------------------------------------------------------------- compile
# The compile line is recorded; objects depend on the record, so that
# `make OPT=...` rebuilds everything while a plain `make` rebuilds nothing.
COMPILE     := $(CC) $(CPPFLAGS) $(CFLAGS) | $(OPT)
$(B)/flags.txt: FORCE
	@mkdir -p $(B)
	@echo '$(COMPILE)' | cmp -s - $@ || echo '$(COMPILE)' > $@

# Sources are compiled from their #line-annotated copies under $(B)/L, so
# every diagnostic names a chapters/*.nw line.
$(B)/obj/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# A chapter's driver once more, with main renamed, for its tests to link.
$(B)/obj/%.chapter.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Dmain=chapter_main -c $< -o $@

$(B)/libfa.a: $(KERNEL_SRC:%.c=$(B)/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

programs: $(PROGRAMS)

define program_rule
$(1): $(B)/obj/tangled/$(1).o $(B)/libfa.a
	$$(CC) $$(OPT) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rule,$(p))))

# test_chNN_slug links chapter chNN_slug's functions as well.
define test_rule
$(B)/bin/$(1): $(B)/obj/tests/$(1).o $(if $(filter tangled/$(1:test_%=%).c,$(ROOTS)),$(B)/obj/tangled/$(1:test_%=%).chapter.o) $(B)/libfa.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(OPT) -o $$@ $$^ $$(TEST_LDLIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call test_rule,$(t))))

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- receipts
# One run per program: JSON on stdout (its "text" member is the text output),
# figure data under $(B)/data.
receipts: $(PROGRAMS:%=$(B)/receipts/%.json) $(PROGRAMS:%=$(B)/receipts/%.txt)

$(B)/receipts/%.json: %
	@mkdir -p $(dir $@) $(B)/data
	./$* --json --data $(B)/data > $@.$$$$.tmp && mv $@.$$$$.tmp $@

$(B)/receipts/%.txt: $(B)/receipts/%.json
	python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' $< > $@.$$$$.tmp && mv $@.$$$$.tmp $@

# ---------------------------------------------------------------- figures
# figures/chNN_name.gp draws from the data its chapter's program wrote.
chapter_of = $(firstword $(filter $(firstword $(subst _, ,$(1)))_%,$(PROGRAMS)))
define figure_rule
$(B)/fig/$(1).svg: figures/$(1).gp $(B)/receipts/$(call chapter_of,$(1)).json
	@mkdir -p $(B)/fig
	gnuplot -e "data='$(B)/data'; out='$(B)/fig/$(1)'; term='svg'" $$<
$(B)/fig/$(1).pdf: figures/$(1).gp $(B)/receipts/$(call chapter_of,$(1)).json
	@mkdir -p $(B)/fig
	gnuplot -e "data='$(B)/data'; out='$(B)/fig/$(1)'; term='pdf'" $$<
endef
$(foreach f,$(FIGURES),$(eval $(call figure_rule,$(f))))

figures: $(FIGURES:%=$(B)/fig/%.svg) $(FIGURES:%=$(B)/fig/%.pdf)

# ---------------------------------------------------------------- weave
$(B)/book.md: $(NW) $(TOOLS)/noweb2md.py $(PROGRAMS:%=$(B)/receipts/%.json) $(PROGRAMS:%=$(B)/receipts/%.txt)
	python3 $(TOOLS)/noweb2md.py --receipts $(B)/receipts -o $@ $(NW)

html: book/index.html
pdf: book/flash-attention.pdf

book/index.html: $(B)/book.md $(FIGURES:%=$(B)/fig/%.svg) $(TOOLS)/weave-html.sh $(wildcard $(TOOLS)/*.css $(TOOLS)/*.lua)
	sh $(TOOLS)/weave-html.sh $< $@

book/flash-attention.pdf: $(B)/book.md $(FIGURES:%=$(B)/fig/%.pdf) $(TOOLS)/weave-pdf.sh $(wildcard $(TOOLS)/*.tex $(TOOLS)/*.lua)
	sh $(TOOLS)/weave-pdf.sh $< $@

# ---------------------------------------------------------------- check
check: check-tangle check-unit check-cli
	@sh $(TOOLS)/summary.sh $(B)/check

# Unit tests run one binary per make job; each leaves a log for the summary.
check-unit: $(UNIT_TESTS:%=$(B)/check/%.log)
$(B)/check/%.log: $(B)/bin/% FORCE
	@mkdir -p $(B)/check
	@echo "== $*"
	@$< --jobs=1 > $@.tmp 2>&1; rc=$$?; cat $@.tmp; mv $@.tmp $@; exit $$rc

check-cli: $(CLI_TESTS:tests/%.sh=$(B)/check/%.log)
$(B)/check/cli_%.log: tests/cli_%.sh $(PROGRAMS) FORCE
	@mkdir -p $(B)/check
	@echo "== cli_$*"
	@sh $< > $@.tmp 2>&1; rc=$$?; cat $@.tmp; mv $@.tmp $@; exit $$rc

# The committed tangled files must be exactly what chapters/ tangles to.
check-tangle: | $(B)/deps.stamp
	@mkdir -p $(B)/check
	@sh $(TOOLS)/tangle-check.sh $(NW) > $(B)/check/tangle.log.tmp 2>&1; rc=$$?; \
	  cat $(B)/check/tangle.log.tmp; mv $(B)/check/tangle.log.tmp $(B)/check/tangle.log; exit $$rc

FORCE:

clean:
	rm -rf $(B) book/index.html book/flash-attention.pdf book/katex book/fig $(PROGRAMS) \
	  $(patsubst tangled/%.c,%,$(wildcard tangled/*.c))

# ================================================================ CUDA (chapter 10)
# Everything CUDA is in this block. nvcc comes from PATH or /usr/local/cuda/bin
# (make NVCC=/path/to/nvcc chooses one; make NVCC= builds without CUDA). Without
# it the .cu files are skipped, ./ch10_gpu links the weak stand-ins of
# kernels/gpu_cuda_absent.c and runs its kernels on the CPU emulation, and
# check-gpu and bench-gpu say so and do nothing.
#   make check-gpu   the kernels on the CUDA device against the float64 reference
#   make bench-gpu   TFLOP/s on the device, and PyTorch's SDPA beside them
#   make check-tsan  the emulated kernel tests under ThreadSanitizer (part of check)
ifeq ($(origin NVCC),undefined)
NVCC        := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
endif
CUDA_HOME   := $(patsubst %/bin/nvcc,%,$(NVCC))
NVCC_ARCH   := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCCFLAGS   := -std=c++17 -O3 $(NVCC_ARCH) -Xcompiler -Wall,-Wextra -Werror all-warnings \
               --resource-usage
CU_SRC      := $(filter kernels/%.cu,$(ROOTS))
CUDA_OBJ    := $(if $(NVCC),$(CU_SRC:%.cu=$(B)/cuda/%.o))
PYTHON      ?= python3
ifneq ($(NVCC),)
CUDA_LIBS   := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
else
CUDA_LIBS   :=
$(info cuda: no nvcc on PATH or in /usr/local/cuda/bin: CUDA objects skipped, ./ch10_gpu runs its kernels on the CPU emulation)
endif

.PHONY: check-gpu bench-gpu check-tsan

# nvcc's resource report (registers, shared memory, stack, spills per kernel
# and architecture) is kept beside the object; a kernel that spills fails.
$(B)/cuda/%.o: $(B)/L/%.cu $(filter %.h %.cuh,$(ROOTS:%=$(B)/L/%)) | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -I$(B)/L/kernels -c $< -o $@ 2> $(@:.o=.usage) \
	  || { cat $(@:.o=.usage); rm -f $@; exit 1; }
	@if grep -E '[1-9][0-9]* bytes spill (stores|loads)' $(@:.o=.usage); then \
	  echo "$<: a kernel spills registers (see $(@:.o=.usage))"; rm -f $@; exit 1; fi

ch10_gpu: $(CUDA_OBJ)
ch10_gpu: LDLIBS += $(CUDA_LIBS)

# The GPU tests print ok / not ok lines (no Criterion: the GPU machine has none).
$(B)/bin/gpu_check_ch10: $(B)/obj/tests/gpu_check_ch10.o $(CUDA_OBJ) $(B)/libfa.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $^ $(LDLIBS) $(CUDA_LIBS)

check-gpu: $(B)/bin/gpu_check_ch10 ch10_gpu
	@mkdir -p $(B)/check-gpu
	@if info=$$(./ch10_gpu --cuda-info); then echo "check-gpu: on $$info"; \
	  $(B)/bin/gpu_check_ch10 > $(B)/check-gpu/gpu_check_ch10.log 2>&1; rc=$$?; \
	  cat $(B)/check-gpu/gpu_check_ch10.log; sh $(TOOLS)/summary.sh $(B)/check-gpu || rc=1; exit $$rc; \
	else echo "check-gpu: skipped: $$info"; fi

bench-gpu: ch10_gpu
	@mkdir -p $(B)/bench-gpu
	@if info=$$(./ch10_gpu --cuda-info); then echo "bench-gpu: on $$info"; \
	  ./ch10_gpu --bench --json --data $(B)/bench-gpu > $(B)/bench-gpu/ch10_bench.json || exit 1; \
	  $(PYTHON) -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' \
	    $(B)/bench-gpu/ch10_bench.json; \
	  $(PYTHON) tests/ch10_sdpa.py --out $(B)/bench-gpu/ch10_sdpa.dat \
	    || echo "bench-gpu: PyTorch's SDPA not measured (no PyTorch with CUDA here)"; \
	else echo "bench-gpu: skipped: $$info"; fi

# The emulated kernels once more, every file compiled with ThreadSanitizer: a
# missing __syncthreads or a racing shuffle is reported as a data race, and
# the run fails. (Criterion cannot run under ThreadSanitizer: its shared
# arena collides with the sanitizer's memory map; the program itself is run.)
TSAN_FLAGS  := -fsanitize=thread -O1 -g
$(B)/tsan/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(TSAN_FLAGS) -MMD -MP -c $< -o $@
$(B)/tsan/ch10_gpu: $(B)/tsan/tangled/ch10_gpu.o $(KERNEL_SRC:%.c=$(B)/tsan/%.o)
	$(CC) $(TSAN_FLAGS) -o $@ $^ $(LDLIBS)

-include $(shell find $(B)/tsan -name '*.d' 2>/dev/null)

check-tsan: $(B)/check/tsan_ch10_gpu.log
$(B)/check/tsan_ch10_gpu.log: $(B)/tsan/ch10_gpu FORCE
	@mkdir -p $(B)/check
	@echo "== ch10_gpu's emulated kernels under ThreadSanitizer"
	@for args in "--heads 2 --seq 37 --seq-k 45 --dim 16" "--seq 20 --dim 3"; do \
	  if TSAN_OPTIONS="halt_on_error=1 exitcode=66" $< --device cpu $$args > $@.out 2>&1; \
	  then echo "ok - no data race: ch10_gpu $$args"; \
	  else cat $@.out; echo "not ok - ThreadSanitizer: ch10_gpu $$args"; fi; \
	done > $@.tmp; rm -f $@.out; cat $@.tmp; mv $@.tmp $@; ! grep -q '^not ok' $@
check: check-tsan
