#!/bin/sh
# deps.sh — make sure the tools the book needs are installed.
# As root, missing Debian packages are installed with apt-get; otherwise the
# exact install line is printed and the build stops.
# Chapter 10's nvcc: from PATH, /usr/local/cuda, or else NVIDIA's pinned wheels
# installed into a build-local virtual environment ($CUDA_VENV); when that
# cannot be done (no network), the build goes on without CUDA.
# Chapter 10's cuobjdump and nvdisasm (make check-sass): beside nvcc, on PATH, or
# else NVIDIA's pinned wheels in $SASS_VENV; without them check-sass skips.
set -u
CUDA_VENV=${CUDA_VENV:-.build/cuda-venv}
CUDA_WHEELS="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.88 \
nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85"
SASS_VENV=${SASS_VENV:-.build/sass-venv}
SASS_WHEELS="nvidia-cuda-cuobjdump==13.2.51 nvidia-cuda-nvdisasm==13.2.51"
PACKAGES="noweb pandoc nodejs libcriterion-dev gnuplot-nox texlive-latex-recommended \
texlive-latex-extra texlive-xetex texlive-fonts-recommended lmodern fonts-dejavu-core libjs-katex \
libopenblas-dev libicu-dev python3 gcc make clang libclang-rt-14-dev valgrind libopenmpi-dev openmpi-bin"
missing=""
need() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_file() { [ -e "$1" ] || missing="$missing $2"; }
need notangle noweb
need pandoc pandoc
need gnuplot gnuplot-nox
need xelatex texlive-xetex
need python3 python3
need gcc gcc
need clang clang
need valgrind valgrind
need mpicc libopenmpi-dev   # chapter 13: Open MPI's compiler wrapper and headers
need mpirun openmpi-bin
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
    || missing="$missing libclang-rt-14-dev"
need_file /usr/include/criterion/criterion.h libcriterion-dev
need_file /usr/share/javascript/katex/katex.min.js libjs-katex
need node nodejs   # renders the maths of the HTML book at build time
need pdftotext poppler-utils   # make check reads the reader's PDF as text (check-pdf.sh)
need_file /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h libopenblas-dev
need_file /usr/include/unicode/uchar.h libicu-dev   # chapter 12: Unicode's properties for the tokenizer
need_file /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf fonts-dejavu-core
kpsewhich fvextra.sty >/dev/null 2>&1 || missing="$missing texlive-latex-extra"
kpsewhich lmodern.sty >/dev/null 2>&1 || missing="$missing lmodern"
kpsewhich pzdr.tfm >/dev/null 2>&1 || missing="$missing texlive-fonts-recommended"
have_nvcc() {
    command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
        ls "$CUDA_VENV"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc >/dev/null 2>&1
}
have_cuobjdump() {
    command -v cuobjdump >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/cuobjdump ] ||
        ls "$SASS_VENV"/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump >/dev/null 2>&1
}
if ! have_cuobjdump; then
    PACKAGES="$PACKAGES python3-venv"
    python3 -c 'import ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
fi
if ! have_nvcc; then   # the wheels need a venv and nvcc a C++ compiler
    PACKAGES="$PACKAGES python3-venv g++"
    python3 -c 'import ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
    need g++ g++
fi
cuda_wheels() {
    have_nvcc && return 0
    echo "deps: no nvcc: installing NVIDIA's CUDA compiler wheels into $CUDA_VENV" >&2
    if python3 -m venv "$CUDA_VENV" >&2 &&
        "$CUDA_VENV/bin/pip" install -q --timeout 30 --retries 1 $CUDA_WHEELS >&2; then
        return 0
    fi
    rm -rf "$CUDA_VENV"
    echo "deps: the CUDA wheels could not be installed; chapter 10 builds without CUDA" >&2
}
sass_wheels() {   # a newer cuobjdump reads nvcc 13.0's sm_80 and sm_90 code
    have_cuobjdump && return 0
    echo "deps: no cuobjdump: installing NVIDIA's cuobjdump and nvdisasm wheels into $SASS_VENV" >&2
    if python3 -m venv "$SASS_VENV" >&2 &&
        "$SASS_VENV/bin/pip" install -q --timeout 30 --retries 1 $SASS_WHEELS >&2; then
        return 0
    fi
    rm -rf "$SASS_VENV"
    echo "deps: the cuobjdump wheels could not be installed; make check-sass skips" >&2
}
[ -z "$missing" ] && { cuda_wheels; sass_wheels; exit 0; }
line="apt-get install -y --no-install-recommends $PACKAGES"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $PACKAGES >&2 &&
        { cuda_wheels; sass_wheels; exit 0; }
    echo "deps: apt-get failed; run: $line" >&2
    exit 1
fi
echo "deps: missing:$missing" >&2
echo "deps: run as root:  $line" >&2
exit 1
