#!/bin/sh
# prove-graders.sh — a grader that cannot fail is worthless: run every
# exercise's grader against its solution (must pass), its starter (must
# fail) and its deliberately wrong variant (must fail).
#
#   sh chapters/tools/prove-graders.sh BUILD "CC CPPFLAGS CFLAGS" "LIBS" chapters/*.nw
#
# Make has built BUILD/bin/grade_N_k (the solution's grader), its object
# BUILD/obj/tests/grade_N_k.o and BUILD/libfa.a.  For each variant the file
# tests/ex_N_k.c is tangled again from the chapter with the solution chunk
# swapped (edition.py variant), compiled, and linked with the same grader.
# Prints ok / not ok lines; exit status 1 if any grader misbehaves.
set -u
build=$1; compile=$2; libs=$3; shift 3
tools=$(dirname "$0")
fail=0
chapter_object() {   # chapter_object N.k: the chapter's object for N, if any
    case "${1%%.*}" in
        *[!0-9]*) return ;;
    esac
    ls "$build/obj/tangled/ch$(printf %02d "${1%%.*}")"_*.chapter.o 2>/dev/null | head -n 1
}
say() { echo "$1"; case "$1" in "not ok"*) fail=1 ;; esac; }
python3 "$tools/exercises.py" code "$@" > "$build/grade-list.tmp" || exit 1
while read -r ex nw; do
    u=$(echo "$ex" | tr . _)
    bin=$build/bin/grade_$u
    if [ ! -x "$bin" ]; then say "not ok - $ex: no grader binary $bin"; continue; fi
    if "$bin" --jobs=1 > "$build/grade-$u.log" 2>&1; then
        say "ok - $ex: the solution passes its grader"
    else
        say "not ok - $ex: the solution fails its grader (see $build/grade-$u.log)"
    fi
    for variant in starter wrong; do
        dir=$build/grade/$u/$variant
        mkdir -p "$dir"
        python3 "$tools/edition.py" variant "$ex" "$variant" "$nw" > "$dir/chapter.nw" &&
        notangle -L -R"tests/ex_$u.c" "$dir/chapter.nw" > "$dir/ex_$u.c" || {
            say "not ok - $ex: cannot tangle the $variant"; continue; }
        # the grader's object, the chapter's object if any, the library
        objs="$build/obj/tests/grade_$u.o $(chapter_object "$ex") $build/libfa.a"
        if ! $compile -I"$build/L/tests" -c "$dir/ex_$u.c" -o "$dir/ex_$u.o" 2> "$dir/compile.log"; then
            say "not ok - $ex: the $variant does not compile (see $dir/compile.log)"; continue
        fi
        # shellcheck disable=SC2086
        if ! ${compile%% *} -o "$dir/grade" "$dir/ex_$u.o" $objs $libs 2> "$dir/link.log"; then
            say "not ok - $ex: the $variant does not link (see $dir/link.log)"; continue
        fi
        # FA_GRADE_SOURCE: the variant's file, for a grader that compiles it again (nvcc)
        if FA_GRADE_SOURCE="$dir/ex_$u.c" "$dir/grade" --jobs=1 > "$dir/run.log" 2>&1; then
            say "not ok - $ex: the grader passes the $variant (it cannot tell it from a solution)"
        else
            say "ok - $ex: the grader fails the $variant ($(grep -c '^\[FAIL\]' "$dir/run.log") checks)"
        fi
    done
done < "$build/grade-list.tmp"
rm -f "$build/grade-list.tmp"
exit $fail
