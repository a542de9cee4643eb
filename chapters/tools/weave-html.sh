#!/bin/sh
# weave-html.sh BOOK.md OUT.html — the HTML book from noweb2md's Markdown.
#
#   sh chapters/tools/weave-html.sh .build/book.md book/index.html
#
# One page per part of the book (front matter, each chapter, each appendix,
# the indexes), cut at every level-1 heading, and OUT.html, the title page
# with the contents.  pandoc 2.17 writes the whole book as one HTML fragment
# (the filter book.lua numbers chapters, figures and tables as the PDF does
# and links chunk and identifier references); html-pages.py renders every
# formula with KaTeX in one node process, cuts the pages, points every link
# at its page and frames each page with the contents and previous / next
# links.  Next to the pages: book.css, KaTeX's stylesheet and fonts
# (libjs-katex, OUTDIR/katex/) and the SVG figures the Markdown names as
# fig/NAME (copied from the Markdown file's directory, .build/fig, into
# OUTDIR/fig).  No page needs JavaScript (a few inline lines only open a
# folded closing part that a link points into).  Fails (non-zero) when
# pandoc fails, a figure is missing or a formula does not parse.
# The title page shows the git commit (`git rev-parse --short HEAD`,
# "unknown" outside git) and the date of the build.
set -eu

if [ $# -ne 2 ]; then
    echo "usage: sh weave-html.sh BOOK.md OUT.html" >&2
    exit 2
fi
in=$1
out=$2
tools=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$(dirname "$in")" && pwd)
outdir=$(dirname "$out")
katex=${KATEX_DIR:-/usr/share/javascript/katex}

for f in katex.min.js katex.min.css fonts; do
    if [ ! -e "$katex/$f" ]; then
        echo "weave-html: error: $katex/$f not found (install libjs-katex)" >&2
        exit 1
    fi
done
if ! command -v node >/dev/null 2>&1; then
    echo "weave-html: error: node not found (install nodejs)" >&2
    exit 1
fi

mkdir -p "$outdir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pandoc "$in" -f markdown -t html5 \
    --katex \
    --reference-location=section \
    --highlight-style=pygments \
    --default-image-extension=svg \
    --resource-path="$srcdir:." \
    --lua-filter="$tools/book.lua" \
    -o "$work/body.html" || {
    echo "weave-html: error: pandoc failed for $in" >&2
    exit 1
}

version=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(date -u '+%-d %B %Y')

# Assets: KaTeX's stylesheet and fonts (the Debian files are symlinks: copy
# what they point at; the script is not needed), the stylesheet, the figures.
# Stale copies go first.
rm -rf "$outdir/katex" "$outdir/fig"
mkdir -p "$outdir/katex" "$outdir/fig"
cp -L "$katex/katex.min.css" "$outdir/katex/"
cp -rL "$katex/fonts" "$outdir/katex/fonts"
cp "$tools/book.css" "$outdir/book.css"
for f in "$srcdir"/fig/*.svg; do
    [ -e "$f" ] || continue
    cp "$f" "$outdir/fig/"
done

python3 "$tools/html-pages.py" --out "$outdir" --version "$version" --date "$date" \
    --katex "$katex/katex.min.js" "$work/body.html"
if [ "$(basename "$out")" != index.html ]; then
    cp "$outdir/index.html" "$out"
fi
