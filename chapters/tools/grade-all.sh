#!/bin/sh
# grade-all.sh — grade a whole class: every code exercise of every
# submission, each in isolation, one CSV row per student and exercise.
#
#   sh chapters/tools/grade-all.sh BUILD "CC CPPFLAGS CFLAGS" "LIBS" SUBMISSIONS OUT.csv chapters/*.nw
#   (make grade-all SUBMISSIONS=DIR [GRADE_CSV=FILE] [GRADE_EXERCISES="4.4 5.3"]
#                   [GRADE_SECONDS=60] [GRADE_MIB=4096])
#
# SUBMISSIONS is a folder holding one entry per student: a folder (a copy
# of the student edition, or only its chapters/) or a tarball (.tar.gz,
# .tgz, .tar) of one.  The student's name is the entry's name, without the
# tarball's extension.  For each code exercise N.k, the student's file
# tests/ex_N_k.c is tangled from the student's own chapter, compiled, and
# linked with OUR grader, chapter objects and library (make has built them
# in BUILD from our chapters): a student's edits to a grader, a header or
# the library do not count.  Compiling and grading run under a time limit
# (GRADE_SECONDS per step), a memory limit (ulimit -v GRADE_MIB) and, where
# the machine allows a network namespace (unshare -n), without a network.
#
# OUT.csv: student,exercise,checks_passed,checks,points,out_of,reason —
# the grader's checks passed and its checks; the points earned, out_of
# (the points the grader gives: a code exercise's all, a project's grader
# share, from its heading and rubric) times the checks passed over the
# checks, to two decimals; reason one line: "all checks pass", the first
# failing check and its hint, "does not compile: ...", "stopped after S s",
# "crashed", or why the submission could not be read.  After each
# student's rows, a row with exercise "total": the sums of the four
# numbers, and the points more that are read by hand.  A submission that
# fails in any way gets its rows and the run goes on; the exit status is 0
# unless the tool itself could not run.
set -u
build=$1; compile=$2; libs=$3; subs=$4; out=$5; shift 5
tools=$(dirname "$0")
seconds=${GRADE_SECONDS:-60}
mib=${GRADE_MIB:-4096}
prog=grade-all
die() { echo "$prog: $*" >&2; exit 2; }
[ -d "$subs" ] || die "SUBMISSIONS=$subs is not a folder"
command -v notangle > /dev/null || die "notangle is not installed"

# ---- isolation: what this machine allows
# A PID namespace besides (unshare -p -f --kill-child) makes the time
# limit final: when it strikes, every process the grader started dies with
# it, Criterion's workers included, which otherwise outlive their parent.
netns=""
for try in "unshare -n -p -f --kill-child" "unshare -rn -p -f --kill-child" "unshare -n" "unshare -rn"; do
    # shellcheck disable=SC2086
    if $try true 2> /dev/null; then netns=$try; break; fi
done
case "$netns" in
    "") echo "$prog: no network namespace here (unshare refused): graders run with the network" >&2 ;;
    *-p*) ;;
    *) echo "$prog: no PID namespace here: a grader cut off by the time limit may leave workers behind" >&2 ;;
esac
# jail CMD...: run CMD with the limits, its output to stdout
jail() {
    # shellcheck disable=SC2086
    ( ulimit -v $((mib * 1024)) 2> /dev/null; ulimit -c 0
      exec timeout -k 5 "$seconds" $netns "$@" )
}

# ---- the exercises to grade, and each grader's number of checks
work=$(mktemp -d "${TMPDIR:-/tmp}/grade-all.XXXXXX") || die "cannot make a scratch folder"
trap 'rm -rf "$work"' EXIT INT TERM
python3 "$tools/exercises.py" code "$@" > "$work/list" || die "cannot list the exercises"
python3 "$tools/exercises.py" points "$@" > "$work/points" || die "cannot list the exercises' points"
if [ -n "${GRADE_EXERCISES:-}" ]; then
    for ex in $GRADE_EXERCISES; do
        grep -q "^$ex " "$work/list" || die "GRADE_EXERCISES: $ex is not a code exercise"
    done
    awk -v want=" $GRADE_EXERCISES " 'index(want, " " $1 " ")' "$work/list" > "$work/list.tmp"
    mv "$work/list.tmp" "$work/list"
fi
checks_of() {   # checks_of BIN: how many checks the grader holds
    "$1" --list 2> /dev/null | awk '/^[^ ]*: [0-9]+ tests?$/ { n += $2 } END { print n + 0 }'
}
chapter_object() {   # as in prove-graders.sh
    case "${1%%.*}" in *[!0-9]*) return ;; esac
    ls "$build/obj/tangled/ch$(printf %02d "${1%%.*}")"_*.chapter.o 2> /dev/null | head -n 1
}
points_of() {   # points_of EX: the points EX's grader gives
    awk -v ex="$1" '$1 == ex { print $3; found = 1 } END { if (!found) print 0 }' "$work/points"
}
share() {   # share PASSED CHECKS OUT_OF: the points earned, to two decimals
    awk -v p="$1" -v c="$2" -v o="$3" 'BEGIN {
        s = sprintf("%.2f", c > 0 ? o * p / c : 0); sub(/\.?0+$/, "", s); print s }'
}
csv() {   # csv FIELD...: one CSV row, every field quoted
    sep=""
    for f in "$@"; do
        printf '%s"%s"' "$sep" "$(printf '%s' "$f" | tr '\n\r' '  ' | sed 's/"/""/g')"
        sep=","
    done
    printf '\n'
}

# ---- one submission: unpack it, find its chapters
unpack() {   # unpack ENTRY DIR: prints the chapters folder, or fails with a reason
    entry=$1; dir=$2
    mkdir -p "$dir"
    if [ -d "$entry" ]; then
        cp -R "$entry/." "$dir/" 2> /dev/null || { echo "cannot copy the folder"; return 1; }
    else
        case "$entry" in
            *.tar.gz|*.tgz|*.tar) ;;
            *) echo "neither a folder nor a tarball (.tar.gz, .tgz, .tar)"; return 1 ;;
        esac
        if ! msg=$(jail tar -xf "$entry" -C "$dir" --no-same-owner --no-same-permissions 2>&1); then
            echo "not a readable tarball ($(echo "$msg" | head -n 1))"; return 1
        fi
    fi
    found=$(find "$dir" -maxdepth 3 -type d -name chapters | sort | head -n 1)
    if [ -z "$found" ]; then echo "no chapters/ folder in it"; return 1; fi
    echo "$found"
}

# ---- one exercise of one submission: prints "points|reason"
grade_one() {   # grade_one EX CHAPTERS_DIR NW SCRATCH
    ex=$1; chapters=$2; nw=$3; dir=$4
    u=$(echo "$ex" | tr . _)
    mine="$chapters/$(basename "$nw")"
    mkdir -p "$dir"
    [ -f "$mine" ] || { echo "0|no $(basename "$nw") in the submission"; return; }
    if ! notangle -L -R"tests/ex_$u.c" "$mine" > "$dir/ex_$u.c" 2> "$dir/tangle.log"; then
        echo "0|cannot tangle tests/ex_$u.c from the submission's $(basename "$nw"): $(head -n 1 "$dir/tangle.log")"; return
    fi
    # shellcheck disable=SC2086
    if ! jail $compile -I"$build/L/tests" -c "$dir/ex_$u.c" -o "$dir/ex_$u.o" > "$dir/compile.log" 2>&1; then
        why=$(grep -m 1 -E 'error|Killed|Terminated' "$dir/compile.log" || head -n 1 "$dir/compile.log")
        echo "0|does not compile: $why"; return
    fi
    # shellcheck disable=SC2086
    if ! ${compile%% *} -o "$dir/grade" "$dir/ex_$u.o" "$build/obj/tests/grade_$u.o" \
            $(chapter_object "$ex") "$build/libfa.a" $libs > "$dir/link.log" 2>&1; then
        echo "0|does not link: $(grep -m 1 -E 'undefined|multiple|error' "$dir/link.log")"; return
    fi
    jail env FA_GRADE_SOURCE="$dir/ex_$u.c" sh "$tools/grade.sh" "$dir/grade" "$ex" > "$dir/grade.log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "0|stopped after $seconds s (the time limit): a loop that never ends?"; return
    fi
    last=$(grep "^exercise $ex: [0-9]* of [0-9]* checks pass" "$dir/grade.log" | tail -n 1)
    if [ -z "$last" ]; then
        echo "0|the grader printed no result (crashed or out of memory): $(tail -n 1 "$dir/grade.log")"; return
    fi
    points=$(echo "$last" | sed 's/^exercise [^:]*: \([0-9]*\) of.*/\1/')
    case "$last" in
        *"-- done") echo "$points|all checks pass" ;;
        *) fail=$(grep -m 1 "^exercise $ex: FAIL" "$dir/grade.log" | sed "s/^exercise $ex: FAIL  //")
           hint=$(awk -v ex="$ex" 'f && /^ +/ { sub(/^ +/, ""); print; exit } $0 ~ "^exercise " ex ": FAIL" { f = 1 }' "$dir/grade.log")
           echo "$points|FAIL $fail${hint:+ -- $hint}" ;;
    esac
}

# ---- the class
# the points read by hand: every exercise's but what the graders give
hand=$(python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
import exercises as X
es = [e for r in X.collect(sys.argv[2:]) if r[1] is not None for e in r[3]]
print(sum(e["points"] - X.program_points(e) for e in es))' "$tools" "$@") || die "cannot count the points"
tmp_out="$out.tmp.$$"
csv student exercise checks_passed checks points out_of reason > "$tmp_out" || die "cannot write $out"
n=0
for entry in "$subs"/*; do
    [ -e "$entry" ] || continue
    name=$(basename "$entry"); name=${name%.tar.gz}; name=${name%.tgz}; name=${name%.tar}
    n=$((n + 1))
    echo "$prog: $name" >&2
    sdir="$work/s$n"
    if chapters=$(unpack "$entry" "$sdir/files"); then bad=""; else bad=$chapters; fi
    while read -r ex nw; do
        u=$(echo "$ex" | tr . _)
        total=$(checks_of "$build/bin/grade_$u")
        worth=$(points_of "$ex")
        if [ -n "$bad" ]; then
            csv "$name" "$ex" 0 "$total" 0 "$worth" "submission not graded: $bad" >> "$tmp_out"; continue
        fi
        result=$(grade_one "$ex" "$chapters" "$nw" "$sdir/$u")
        passed=${result%%|*}
        csv "$name" "$ex" "$passed" "$total" "$(share "$passed" "$total" "$worth")" "$worth" \
            "${result#*|}" >> "$tmp_out"
    done < "$work/list"
    awk -F'","' -v who="$(csv "$name" | tr -d '\n')" -v hand="$hand" '
        $1 "\"" == who { c += $3; t += $4; p += $5; o += $6 }
        END { s = sprintf("%.2f", p); sub(/\.?0+$/, "", s)
              printf "%s,\"total\",\"%d\",\"%d\",\"%s\",\"%d\",\"%s\"\n", who, c, t, s, o,
                     "graded by program; " hand " points more are read by hand" }' \
        "$tmp_out" >> "$tmp_out.total" && cat "$tmp_out.total" >> "$tmp_out"; rm -f "$tmp_out.total"
    rm -rf "$sdir"
done
mv "$tmp_out" "$out"
echo "$prog: $n submissions, $(($(wc -l < "$out") - 1)) rows in $out" >&2
