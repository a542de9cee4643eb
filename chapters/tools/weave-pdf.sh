#!/bin/sh
# weave-pdf.sh [--reader PROGRAM.aux] BOOK.md OUT.pdf — a PDF volume from
# noweb2md's Markdown.
#
#   sh chapters/tools/weave-pdf.sh .build/book.md book/flash-attention-program.pdf
#   sh chapters/tools/weave-pdf.sh --reader .build/pdf-aux/book.aux \
#       .build/book.md book/flash-attention.pdf
#
# Two volumes are woven from the same Markdown.  Without --reader: the
# complete program, every chunk and both indexes.  With --reader: the
# reader's book, without the chapters' "The program" and "The tests", the
# sections marked {.complete} and the indexes (book.lua); a reference to
# what it leaves out prints the page of the complete volume, read from that
# volume's PROGRAM.aux (so the complete volume is woven first).
#
# pandoc 2.17 writes LaTeX (book class; chapters are '#' headings and only
# chapters are numbered, so chunk labels 2.7 and chapter 2 agree; DejaVu
# fonts; the filter book.lua and the preamble latex-header.tex), then xelatex
# runs until cross references settle.  Figures are read as fig/NAME.pdf from
# the Markdown file's folder (.build/fig).  The auxiliary files and the last
# log are kept in .build/pdf-aux/ so that a rebuild usually needs one run.
# Fails (non-zero) when pandoc or xelatex fails or a figure is missing;
# glyphs missing from the fonts and undefined references are listed as
# warnings on stderr.  WEAVE_PDF_VERBOSE=1 reports the number of runs.
set -eu

volume=program
other_aux=
if [ $# -ge 2 ] && [ "$1" = --reader ]; then
    volume=reader
    other_aux=$2
    shift 2
fi
if [ $# -ne 2 ]; then
    echo "usage: sh weave-pdf.sh [--reader PROGRAM.aux] BOOK.md OUT.pdf" >&2
    exit 2
fi
in=$1
out=$2
tools=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$(dirname "$in")" && pwd)
outdir=$(dirname "$out")
mkdir -p "$outdir"

font() {  # font FAMILY: true if fontconfig knows it
    fc-list -q ":family=$1" 2>/dev/null
}
for f in "DejaVu Serif" "DejaVu Sans" "DejaVu Sans Mono"; do
    if ! font "$f"; then
        echo "weave-pdf: error: font '$f' not found (install fonts-dejavu-core)" >&2
        exit 1
    fi
done
mathfont=
if font "DejaVu Math TeX Gyre"; then
    mathfont="DejaVu Math TeX Gyre"
fi

work=$(mktemp -d)
stub=
trap 'rm -rf "$work"; [ -z "$stub" ] || rm -rf "$stub"' EXIT

# hyperref under xelatex always loads the metric of ZapfDingbats (pzdr, from
# texlive-fonts-recommended) though the book never uses it; without that
# package, give TeX an empty stand-in metric instead of failing.
if [ -z "$(kpsewhich pzdr.tfm 2>/dev/null)" ]; then
    stub=$(mktemp -d)
    printf '(FAMILY PZDR)\n(DESIGNSIZE R 10.0)\n(FONTDIMEN\n (SPACE R 0.278)\n (QUAD R 1.0)\n )\n(CHARACTER O 40 (CHARWD R 0.278))\n' >"$stub/pzdr.pl"
    pltotf "$stub/pzdr.pl" "$stub/pzdr.tfm" >/dev/null
    TFMFONTS="$stub:${TFMFONTS:-}"
    export TFMFONTS
fi

# The title page names the git commit the book was built from and the date.
version=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
printf '\\renewcommand\\nwversion{%s}\n' "$version" >"$work/version.tex"

# 1. Markdown -> LaTeX (pandoc, with the book's filter and preamble).
set -- "$in" -f markdown -t latex -s \
    --top-level-division=chapter -N -V secnumdepth=0 \
    --toc --toc-depth=2 \
    -M title="Flash Attention, Exactly" \
    -M date="$(date -u '+%-d %B %Y')" -V hyperrefoptions=bookmarksnumbered \
    -V documentclass=book -V classoption=oneside -V fontsize=10pt \
    -V geometry=a4paper -V geometry=top=25mm -V geometry=bottom=25mm \
    -V geometry=left=27mm -V geometry=right=27mm \
    -V geometry=marginparwidth=21mm -V geometry=marginparsep=2.5mm \
    -V mainfont="DejaVu Serif" -V sansfont="DejaVu Sans" \
    -V monofont="DejaVu Sans Mono" -V monofontoptions=Scale=0.92 \
    -V colorlinks=true -V linkcolor=NavyBlue -V urlcolor=NavyBlue \
    -V toccolor=black \
    --pdf-engine=xelatex \
    --highlight-style=pygments \
    --default-image-extension=pdf \
    --resource-path="$srcdir:." \
    --lua-filter="$tools/book.lua" \
    -H "$tools/latex-header.tex" -H "$work/version.tex"
if [ -n "$mathfont" ]; then
    set -- "$@" -V mathfont="$mathfont"
fi
if [ "$volume" = reader ]; then
    # the complete volume is expected next to this one, under its own name
    other_pdf=$(basename "$out" .pdf)-program.pdf
    set -- "$@" -M subtitle="A literate program in C and CUDA, for CPU cores, their AMX matrix units and GPUs" \
        -M nwvolume=reader -M nwother="$other_aux" -M nwotherpdf="$other_pdf"
else
    set -- "$@" -M subtitle="The complete program: every chunk, its tests and the harness"
fi
if ! pandoc "$@" -o "$work/book.tex" 2>"$work/pandoc.err"; then
    cat "$work/pandoc.err" >&2
    echo "weave-pdf: error: pandoc failed for $in" >&2
    exit 1
fi
if [ -s "$work/pandoc.err" ]; then
    sed 's/^/weave-pdf: /' "$work/pandoc.err" >&2
fi

# 2. LaTeX -> PDF.  xelatex runs until its auxiliary files (cross references,
# contents, bookmarks) stop changing: two runs from scratch.  The auxiliary
# files are kept in the Markdown's folder (.build/pdf-aux) between builds, so
# a rebuild whose page numbers did not move needs only one run.
# Figures (fig/NAME.pdf) are found through TEXINPUTS in the Markdown's folder.
TEXINPUTS="$srcdir:$(pwd):${TEXINPUTS:-}"
export TEXINPUTS
cache="$srcdir/pdf-aux"
if [ "$volume" = reader ]; then cache="$srcdir/pdf-aux-reader"; fi
run_tex() {  # run_tex: one xelatex run; 1 on failure
    xelatex -halt-on-error -interaction=nonstopmode -file-line-error \
        -output-directory="$work" "$work/book.tex" >"$work/run.out" 2>&1
}
tex_failed() {
    mkdir -p "$cache"
    cp "$work/book.tex" "$cache/book.tex"
    cp "$work/book.log" "$cache/book.log" 2>/dev/null || true
    grep -A4 -E '^(!|.*:[0-9]+: )' "$work/book.log" | sed "s|$work/|$cache/|" >&2 ||
        tail -20 "$work/run.out" >&2
    echo "weave-pdf: error: xelatex failed; see $cache/book.tex and book.log" >&2
    exit 1
}
for x in aux toc out; do
    if [ -f "$cache/book.$x" ]; then cp "$cache/book.$x" "$work/book.$x"; fi
done
runs=0
while :; do
    for x in aux toc out; do
        rm -f "$work/prev.$x"
        if [ -f "$work/book.$x" ]; then cp "$work/book.$x" "$work/prev.$x"; fi
    done
    if ! run_tex; then
        if [ "$runs" -eq 0 ] && [ -f "$work/prev.aux" ]; then
            # perhaps stale auxiliary files: start from scratch once
            rm -f "$work"/book.aux "$work"/book.toc "$work"/book.out "$work"/prev.*
            run_tex || tex_failed
        else
            tex_failed
        fi
    fi
    runs=$((runs + 1))
    settled=yes
    for x in aux toc out; do
        if [ -f "$work/book.$x" ] || [ -f "$work/prev.$x" ]; then
            cmp -s "$work/book.$x" "$work/prev.$x" || settled=no
        fi
    done
    if [ "$settled" = yes ] || [ "$runs" -ge 4 ]; then
        break
    fi
done
mkdir -p "$cache"
for x in aux toc out log tex; do   # the log and the LaTeX too, for whoever wants to read them
    if [ -f "$work/book.$x" ]; then cp "$work/book.$x" "$cache/book.$x"; fi
done
if [ -n "${WEAVE_PDF_VERBOSE:-}" ]; then
    echo "weave-pdf: $runs xelatex run(s)" >&2
fi
# Glyphs missing from the fonts would print as nothing: say which.
grep 'Missing character' "$work/book.log" | sort | uniq -c | sed 's/^ */weave-pdf: warning: /' >&2 || true
grep -E '^LaTeX Warning: (Reference|Hyper reference|Citation)' "$work/book.log" | sort -u | sed 's/^/weave-pdf: /' >&2 || true
grep -i 'xdvipdfmx:warning' "$work/run.out" | sort -u | sed 's/^/weave-pdf: /' >&2 || true

# The page count of every part, from the pages latex-header.tex wrote to the
# .aux (\nwpartpage{ID}{first page}, and {end}{last page}).
sed -n 's/^\\nwpartpage{\([^}]*\)}{\([0-9]*\)}$/\1 \2/p' "$work/book.aux" | awk '
    { id[NR] = $1; page[NR] = $2 }
    END {
        for (i = 1; i < NR; i++) {
            last = (id[i + 1] == "end") ? page[i + 1] : page[i + 1] - 1
            printf "weave-pdf: %-22s pages %3d-%3d: %3d\n", id[i], page[i], last, last - page[i] + 1
        }
    }' >&2
pages=$(sed -n 's/^\\nwpartpage{end}{\([0-9]*\)}$/\1/p' "$work/book.aux")
echo "weave-pdf: $out: $pages pages ($volume volume)" >&2
# Lines wider than the text (make check fails on them: check-pdf.sh).
over=$(sh "$tools/check-pdf.sh" --count "$work/book.log")
echo "weave-pdf: $out: $over line(s) over the margin" >&2

cp "$work/book.pdf" "$out.tmp"
mv "$out.tmp" "$out"
