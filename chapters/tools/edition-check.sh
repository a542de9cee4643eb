#!/bin/sh
# edition-check.sh MAIN EDITION — make check in an edition built on MAIN's
# build (edition-build.sh), running the checks whose inputs the edition
# changes and naming the rest, whose inputs are MAIN's byte for byte:
#   - the tangle check and the checks that read the chapters themselves
#     (notation, chapter shape, prose) always run: the edition's chapters
#     are its own;
#   - a unit test runs when its binary differs from MAIN's;
#   - the command-line tests run when a program or the script differs;
#   - the book's checks run when its woven book differs.
# A test whose binary and data are MAIN's gives MAIN's result, and MAIN's
# make check ran it. First, the edition's tangled tree must be MAIN's but
# for the exercises' own files (tests/ex_N_k.c), which the graders check.
#
#   sh chapters/tools/edition-check.sh . dist/flash-attention-student
set -u
[ $# -eq 2 ] || { echo "usage: edition-check.sh MAIN EDITION" >&2; exit 2; }
main=$(cd "$1" && pwd) && ed=$(cd "$2" && pwd) || exit 2
[ -f "$ed/.build/book.md" ] || { echo "edition-check.sh: $ed is not built (edition-build.sh first)" >&2; exit 2; }
fail=0

# The tangled trees: the same files, the same bytes, exercises excepted.
differ=$(cd "$main" && for d in tangled kernels tests figures; do
    (cd "$main" && find "$d" -type f); (cd "$ed" && find "$d" -type f); done | sort -u |
    while IFS= read -r f; do
        case "$f" in tests/ex_*.c) continue ;; esac
        cmp -s "$main/$f" "$ed/$f" || echo "$f"
    done)
if [ -n "$differ" ]; then
    echo "$differ" | sed 's/^/  differs: /'
    echo "not ok - the edition's tangled files are the main build's but for the exercises' own"; fail=1
else
    echo "ok - the edition's tangled files are the main build's but for the exercises' own"
fi

# The checks to run in the edition.
logs="tangle.log cli_notation.log cli_chapter_shape.log cli_prose.log"
same=0
for bin in "$ed"/.build/bin/test_*; do
    t=${bin##*/}
    if cmp -s "$bin" "$main/.build/bin/$t"; then same=$((same + 1)); else logs="$logs $t.log"; fi
done
progs_differ=
for p in $(cd "$main" && ls tangled/*.c | sed 's|tangled/||; s|\.c$||'); do
    [ -f "$main/$p" ] || continue
    cmp -s "$main/$p" "$ed/$p" || progs_differ="$progs_differ $p"
done
for s in "$ed"/tests/cli_*.sh; do
    c=${s##*/}; c=${c%.sh}
    case " $logs " in *" $c.log "*) continue ;; esac
    if [ -n "$progs_differ" ] || ! cmp -s "$s" "$main/tests/$c.sh"; then logs="$logs $c.log"
    else same=$((same + 1)); fi
done
if cmp -s "$main/.build/book.md" "$ed/.build/book.md"; then same=$((same + 2))
else logs="$logs html.log pdf.log"; fi
[ -z "$progs_differ" ] || echo "edition-check: programs that differ from the main build's:$progs_differ"
echo "edition-check: $same checks have the main build's inputs byte for byte (make check ran them there);" \
     "running here: $logs"

targets=
for l in $logs; do
    case "$l" in tangle.log) targets="$targets check-tangle" ;; *) targets="$targets .build/check/$l" ;; esac
done
make -C "$ed" --no-print-directory -k -j2 $targets || true
sh "$ed/chapters/tools/summary.sh" "$ed/.build/check" $logs || fail=1
exit $fail
