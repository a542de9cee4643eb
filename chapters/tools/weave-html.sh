#!/bin/sh
# weave-html.sh BOOK.md OUT.html — the HTML book from noweb2md's Markdown.
#
#   sh chapters/tools/weave-html.sh .build/book.md book/index.html
#
# Standalone HTML5 (pandoc 2.17) with a two-level table of contents, offline
# KaTeX (copied from libjs-katex into OUTDIR/katex/), highlighted code, the
# book's stylesheet (book.css, inlined) and the SVG figures the Markdown names
# as fig/NAME (copied from the Markdown file's directory, .build/fig, into
# OUTDIR/fig). Fails (non-zero) when pandoc fails or a figure is missing.
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

mkdir -p "$outdir"

# Assets: KaTeX (the Debian files are symlinks: copy what they point at),
# the stylesheet, the figures.  Stale copies go first.
rm -rf "$outdir/katex" "$outdir/fig"
mkdir -p "$outdir/katex" "$outdir/fig"
cp -L "$katex/katex.min.js" "$katex/katex.min.css" "$outdir/katex/"
cp -rL "$katex/fonts" "$outdir/katex/fonts"
for f in "$srcdir"/fig/*.svg; do
    [ -e "$f" ] || continue
    cp "$f" "$outdir/fig/"
done

tmp="$out.tmp"
css=$(mktemp)
trap 'rm -f "$tmp" "$css"' EXIT
# The stylesheet goes inline (after pandoc's own styles, so it wins).
{ echo '<style>'; cat "$tools/book.css"; echo '</style>'; } >"$css"
pandoc "$in" -f markdown -t html5 -s \
    --toc --toc-depth=2 \
    -M title="Flash Attention, Exactly" -M subtitle="A literate program in C and CUDA" -M lang=en \
    --katex=katex/ \
    -H "$css" \
    --highlight-style=pygments \
    --default-image-extension=svg \
    --resource-path="$srcdir:." \
    --lua-filter="$tools/book.lua" \
    -o "$tmp" || {
    echo "weave-html: error: pandoc failed for $in" >&2
    exit 1
}
mv "$tmp" "$out"
