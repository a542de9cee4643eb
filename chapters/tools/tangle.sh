#!/bin/sh
# tangle.sh — write every file a chapter defines, and lint the chunk names.
#
#   chapters/tools/tangle.sh OUT_MK LDIR chapters/*.nw
#
# A root chunk whose name is a repository path (kernels/cpu/attention.c,
# tangled/ch04_tiled.c, tests/test_ch04_tiled.c, figures/ch04_tiles.gp ...)
# is written twice: readable, at that path (committed), and with #line
# directives under LDIR (what the compiler sees, so errors point at the .nw).
# Files are replaced only when their text changes (cpif), so make rebuilds
# only what really changed. Any other root is an error: it is almost always
# a misspelled chunk name (the library's files live in kernels/harness/,
# kernels/cpu/ and kernels/gpu/). Undefined chunks are errors too (notangle exits 2).
# OUT_MK receives make variables listing what was tangled, and link rules.
set -eu
out_mk=$1; ldir=$2; shift 2
status=0
tmp_mk=$(mktemp)
trap 'rm -f "$tmp_mk" "$tmp_mk".*' EXIT
: > "$tmp_mk.seen"

note() { printf '%s\n' "$*" >&2; }

write_if_changed() {   # write_if_changed TARGET (text on stdin)
    mkdir -p "$(dirname "$1")"
    cpif "$1"
    chmod 644 "$1"
}

for nw in "$@"; do
    chapter=$(basename "$nw" .nw)
    noroots "$nw" | sed -e 's/^<<//' -e 's/>>$//' > "$tmp_mk.roots"
    while IFS= read -r root; do
        case "$root" in
            tangled/*|tests/*|figures/*) ;;
            kernels/harness/*|kernels/cpu/*|kernels/gpu/*) ;;
            "starter "*|"wrong "*) continue ;;  # an exercise's starter or wrong variant (edition.py)
            *) note "$nw: stray root chunk <<$root>> (a misspelled chunk name, or a file outside tangled/ kernels/{harness,cpu,gpu}/ tests/ figures/)"
               status=1; continue ;;
        esac
        if grep -qx "$root" "$tmp_mk.seen"; then
            note "$nw: <<$root>> is also defined by another chapter"; status=1; continue
        fi
        echo "$root" >> "$tmp_mk.seen"
        if ! notangle -R"$root" "$nw" > "$tmp_mk.body"; then
            note "$nw: cannot tangle <<$root>>"; status=1; continue
        fi
        write_if_changed "$root" < "$tmp_mk.body"
        case "$root" in
            *.c|*.h|*.cu|*.cuh)
                notangle -L -R"$root" "$nw" | write_if_changed "$ldir/$root" ;;
            *.sh) chmod 755 "$root" ;;
        esac
        echo "ROOTS_$chapter += $root" >> "$tmp_mk"
        echo "ROOTS += $root" >> "$tmp_mk"
    done < "$tmp_mk.roots"
    echo "CHAPTERS += $chapter" >> "$tmp_mk"
done
rm -f "$tmp_mk.body" "$tmp_mk.roots"
[ "$status" -eq 0 ] || exit "$status"
mkdir -p "$(dirname "$out_mk")"
cp "$tmp_mk" "$out_mk"
