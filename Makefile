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
        check-unit check-cli clean help deps bench

all: html pdf

help:
	@echo "make            build everything: programs, receipts, figures, book/index.html, book/flash-attention.pdf"
	@echo "make tangle     regenerate tangled/ kernels/ tests/ figures/ from chapters/ (and lint chunk names)"
	@echo "make programs   only the chapter programs (./ch02_online_softmax ...)"
	@echo "make receipts   run the programs; their output lands in $(B)/receipts/"
	@echo "make html | pdf one of the two books"
	@echo "make check      unit tests (Criterion), command-line tests, tangle check"
	@echo "make bench      the benchmark of chapters 8 on (minutes): results in chapters/recorded/bench.txt;"
	@echo "                PYTHON=/path/to/python adds PyTorch as a peer, BENCH_ARGS=--quick a short sweep"
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

-include $(shell find $(B)/obj $(B)/avx2 -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- receipts
# One run per program: JSON on stdout (its "text" member is the text output),
# figure data under $(B)/data.
receipts: $(PROGRAMS:%=$(B)/receipts/%.json) $(PROGRAMS:%=$(B)/receipts/%.txt)

$(B)/receipts/%.json: %
	@mkdir -p $(dir $@) $(B)/data
	./$* --json --data $(B)/data > $@.$$$$.tmp && mv $@.$$$$.tmp $@

$(B)/receipts/%.txt: $(B)/receipts/%.json
	python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' $< > $@.$$$$.tmp && mv $@.$$$$.tmp $@

# ---------------------------------------------------------------- chapter 8's measurements
# Chapter 8 reads chapter 1's measured machine, the traffic cachegrind measured,
# and the recorded benchmark. Valgrind cannot run AVX-512 code, so cachegrind
# runs a copy of the program built for AVX2, on a fixed simulated cache.
AVX2_OPT    := -O2 -mavx2 -mfma -fvect-cost-model=dynamic
CG_GEOMETRY := --D1=32768,8,64 --LL=2097152,16,64
BENCH_FILE  := chapters/recorded/bench.txt
ifneq ($(filter ch08_fused_timing,$(PROGRAMS)),)
$(B)/receipts/ch08_fused_timing.json: $(B)/data/ch08_cachegrind_naive.txt \
    $(B)/data/ch08_cachegrind_fused.txt $(B)/receipts/ch01_memory_ladder.json $(wildcard $(BENCH_FILE))
endif

$(B)/avx2/obj/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(AVX2_OPT) -g -MMD -MP -c $< -o $@

$(B)/avx2/ch08_fused_timing: $(B)/avx2/obj/tangled/ch08_fused_timing.o $(KERNEL_SRC:%.c=$(B)/avx2/obj/%.o)
	$(CC) $(AVX2_OPT) -o $@ $^ $(LDLIBS)

$(B)/data/ch08_cachegrind_%.txt: $(B)/avx2/ch08_fused_timing
	@mkdir -p $(B)/data
	@echo "# $(CG_GEOMETRY)" > $@.tmp
	OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 valgrind --tool=cachegrind \
	  --cache-sim=yes $(CG_GEOMETRY) --cachegrind-out-file=/dev/null \
	  $< --traffic-run $* --isa avx2 2>> $@.tmp && mv $@.tmp $@

# make bench: every benchmarking program's --bench, one results file.
BENCH_PROGRAMS := $(filter ch08_% ch09_% ch10_%,$(PROGRAMS))
bench: $(BENCH_PROGRAMS)
	@mkdir -p $(dir $(BENCH_FILE))
	@{ echo "# make bench: date $$(date -u +%Y-%m-%dT%H:%MZ) commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo +changes)"; \
	  for p in $(BENCH_PROGRAMS); do \
	    echo "bench: ./$$p --bench $(BENCH_ARGS)" >&2; \
	    ./$$p --bench $(BENCH_ARGS) $(if $(PYTHON),--python $(PYTHON)) || exit 1; \
	  done; } > $(BENCH_FILE).tmp
	@mv $(BENCH_FILE).tmp $(BENCH_FILE)
	@echo "bench: results in $(BENCH_FILE)" >&2

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
