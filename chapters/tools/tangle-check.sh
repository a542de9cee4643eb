#!/bin/sh
# tangle-check.sh — do the committed tangled files match chapters/?
# Tangles every chapter into a scratch directory and compares file by file.
set -u
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
repo=$(pwd)
ln -s "$repo/chapters" "$scratch/chapters"
if ! (cd "$scratch" && sh chapters/tools/tangle.sh roots.mk L "$@"); then
    echo "not ok - chapters/ do not tangle cleanly"
    exit 1
fi
fail=0; count=0
for f in $(sed -n 's/^ROOTS += //p' "$scratch/roots.mk"); do
    count=$((count + 1))
    if cmp -s "$scratch/$f" "$f"; then
        echo "ok - $f matches chapters/"
    else
        echo "not ok - $f differs from what chapters/ tangles to (run make tangle)"
        fail=1
    fi
done
for f in $(git ls-files tangled kernels tests figures 2>/dev/null); do
    case $f in tests/fuzz_corpus/*) continue ;; esac   # the fuzzer's data, not code
    # PyTorch's numbers, written by tests/goldens/make_goldens.py: data, not tangled
    case "$f" in tests/goldens/*.txt) continue ;; esac
    grep -qx "ROOTS += $f" "$scratch/roots.mk" || {
        echo "not ok - $f is committed but no chapter defines it"; fail=1; }
done
exit $fail
