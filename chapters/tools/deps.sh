#!/bin/sh
# deps.sh — make sure the tools the book needs are installed.
# As root, missing Debian packages are installed with apt-get; otherwise the
# exact install line is printed and the build stops.
set -u
PACKAGES="noweb pandoc libcriterion-dev gnuplot-nox texlive-latex-recommended \
texlive-latex-extra texlive-xetex texlive-fonts-recommended lmodern fonts-dejavu-core libjs-katex \
libopenblas-dev valgrind python3 gcc make"
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_file() { [ -e "$1" ] || missing="$missing $2"; }
need notangle noweb
need pandoc pandoc
need gnuplot gnuplot-nox
need xelatex texlive-xetex
need python3 python3
need gcc gcc
need valgrind valgrind
need_file /usr/include/criterion/criterion.h libcriterion-dev
need_file /usr/share/javascript/katex/katex.min.js libjs-katex
need_file /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h libopenblas-dev
need_file /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf fonts-dejavu-core
kpsewhich fvextra.sty >/dev/null 2>&1 || missing="$missing texlive-latex-extra"
kpsewhich lmodern.sty >/dev/null 2>&1 || missing="$missing lmodern"
kpsewhich pzdr.tfm >/dev/null 2>&1 || missing="$missing texlive-fonts-recommended"
[ -z "$missing" ] && exit 0
line="apt-get install -y --no-install-recommends $PACKAGES"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $PACKAGES >&2 && exit 0
    echo "deps: apt-get failed; run: $line" >&2
    exit 1
fi
echo "deps: missing:$missing" >&2
echo "deps: run as root:  $line" >&2
exit 1
