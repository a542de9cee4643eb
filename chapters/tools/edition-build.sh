#!/bin/sh
# edition-build.sh MAIN EDITION — build an edition (the folder `make
# student` writes) on top of MAIN's finished build, the way `make` rebuilds
# after an edit: every file the edition holds unchanged from MAIN takes
# MAIN's time stamp, MAIN's build products (.build, the programs, the woven
# book) are copied with theirs, and `make` in the edition then rebuilds
# exactly what the edition changes (its chapters, the exercises' files and
# the graders built from them), through the Makefile's own dependencies.
#
# The machine's measurements are MAIN's, so the edition's woven book must
# come out byte for byte the same Markdown as MAIN's: a difference is a
# solution or a starter leaking into the reader's text, and fails.
#
#   sh chapters/tools/edition-build.sh . dist/flash-attention-student
#   (run by .ci/run after make check-student)
set -eu
[ $# -eq 2 ] || { echo "usage: edition-build.sh MAIN EDITION" >&2; exit 2; }
main=$(cd "$1" && pwd) && ed=$(cd "$2" && pwd) || exit 2
[ -f "$main/.build/book.md" ] || { echo "edition-build.sh: $main has no finished build (run make there first)" >&2; exit 2; }
[ -f "$ed/Makefile" ] || { echo "edition-build.sh: $ed is not an edition (no Makefile)" >&2; exit 2; }

# Unchanged sources take MAIN's time; changed ones keep their later one.
same=0; changed=0
tmp=$(mktemp) && trap 'rm -f "$tmp"' EXIT
(cd "$ed" && find . -path ./.build -prune -o -type f -print) > "$tmp"
while IFS= read -r f; do
    if [ -f "$main/$f" ] && cmp -s "$main/$f" "$ed/$f"; then
        touch -r "$main/$f" "$ed/$f"; same=$((same + 1))
    else
        changed=$((changed + 1))
    fi
done < "$tmp"
echo "edition-build: $same files as in $main, $changed of the edition's own"

# MAIN's build products, time stamps kept (the checks' logs excepted).
rm -rf "$ed/.build"
git -C "$main" ls-files --others --ignored --exclude-standard --directory |
    grep -v '^dist/' > "$tmp"
while IFS= read -r p; do
    p=${p%/}
    mkdir -p "$ed/$(dirname "$p")"
    cp -a "$main/$p" "$ed/$p"
done < "$tmp"
rm -rf "$ed/.build/check" "$ed/.build/ci-times.txt"

make -C "$ed" -j2
if cmp -s "$main/.build/book.md" "$ed/.build/book.md"; then
    echo "ok - the edition's woven book is the main build's, byte for byte"
else
    diff "$main/.build/book.md" "$ed/.build/book.md" | head -n 20
    echo "not ok - the edition's woven book differs from the main build's"
    exit 1
fi
