#!/bin/sh
# gpu_run.sh — all of chapter 10's GPU work in one run, on a machine with a CUDA
# device: build with its nvcc, the GPU tests, compute-sanitizer on a small case, the
# benchmark and PyTorch's SDPA. Results go under $OUT (default .build/gpu-run).
# Run from the repository root. Tangled from chapters/ch10_gpu.nw.
set -u
out=${OUT:-.build/gpu-run}
build=.build/gpu-run-build
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ "${1:-}" = --build ]; then
    cflags="-std=c17 -Wall -Wextra -O2 -march=native -Ikernels
            -I/usr/include/x86_64-linux-gnu/openblas-pthread"
    cuda_home=$(dirname "$(dirname "$nvcc")")
    rm -f $build/*.o $build/libfa.a
    if printf '#include <cblas.h>\nint main(void) { return (int)cblas_sdot(0, 0, 1, 0, 1); }\n' |
            gcc $cflags -x c - -lopenblas -o $build/blas_probe 2>/dev/null; then
        blas=-lopenblas
    else
        echo "gpu_run: no OpenBLAS here: plain loops in its place (tests/cblas_fallback)"
        blas=
        cflags="-Itests/cblas_fallback $cflags"
        gcc $cflags -c tests/cblas_fallback/cblas.c -o $build/cblas_fallback.o || exit 1
    fi
    for f in kernels/*.c; do
        o=$build/$(basename "$f" .c).o
        gcc $cflags -c "$f" -o "$o" || echo "gpu_run: $f left out: it does not compile here"
    done
    ar rcs $build/libfa.a $build/*.o &&
    gcc $cflags -c tangled/ch10_gpu.c -o $build/ch10_gpu.main.o &&
    gcc $cflags -c tests/gpu_check_ch10.c -o $build/gpu_check_ch10.main.o &&
    nvflags="-std=c++17 -O3 -gencode arch=compute_80,code=sm_80
             -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra --resource-usage"
    { "$nvcc" $nvflags -Werror all-warnings -Ikernels -c kernels/gpu_cuda.cu \
          -o $build/gpu_cuda.main.o ||
      { echo "gpu_run: WARNING: nvcc -Werror failed; compiling without it";
        "$nvcc" $nvflags -Ikernels -c kernels/gpu_cuda.cu -o $build/gpu_cuda.main.o; }; } &&
    libs="-L$cuda_home/lib64 -Wl,-rpath,$cuda_home/lib64 -lcudart -lstdc++ $blas -lpthread -lm"
    gcc -o $build/ch10_gpu $build/ch10_gpu.main.o $build/gpu_cuda.main.o $build/libfa.a $libs &&
    gcc -o $build/gpu_check_ch10 $build/gpu_check_ch10.main.o $build/gpu_cuda.main.o \
        $build/libfa.a $libs
    exit $?
fi
mkdir -p "$out" "$build"
say() { echo "gpu_run: $*" | tee -a "$out/summary.txt"; }
step() {   # step NAME SECONDS LOG COMMAND...: run with a time limit, record the status
    name=$1; limit=$2; log=$3; shift 3
    start=$(date +%s)
    timeout "$limit" "$@" > "$log" 2>&1; status=$?
    say "$name: status $status in $(($(date +%s) - start)) s"
    return $status
}

: > "$out/summary.txt"
say "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "nvcc $("$nvcc" --version | grep -o "release.*")"
say "gcc $(gcc -dumpfullversion), python $(python3 --version 2>&1)"

step build 100 "$out/build.txt" sh "$0" --build || { say "the build failed: see build.txt"; exit 1; }
grep -E '[1-9][0-9]* bytes spill' "$out/build.txt" | sed 's/^/gpu_run: SPILLS: /' | tee -a "$out/summary.txt"
if ! info=$($build/ch10_gpu --cuda-info); then
    say "no CUDA device: $info; stopping before the GPU steps"
    exit 1
fi
say "device: $info"

step "GPU tests" 90 "$out/check.txt" $build/gpu_check_ch10
grep -c '^ok' "$out/check.txt" | sed 's/^/gpu_run: checks passed: /' | tee -a "$out/summary.txt"
grep '^not ok' "$out/check.txt" | tee -a "$out/summary.txt"
small="--device cuda --heads 2 --seq 100 --seq-k 70 --dim 64"
{ step memcheck 40 "$out/memcheck.txt" compute-sanitizer --tool memcheck \
      --error-exitcode 3 $build/ch10_gpu $small
  step racecheck 40 "$out/racecheck.txt" compute-sanitizer --tool racecheck \
      --error-exitcode 3 $build/ch10_gpu $small; } || true
cat "$out/memcheck.txt" "$out/racecheck.txt" > "$out/sanitizer.txt"
rm -f "$out/memcheck.txt" "$out/racecheck.txt"

step bench 150 "$out/bench.progress" sh -c '"$@" > "$0"' "$out/bench.json" \
    $build/ch10_gpu --bench --repeats 3 --json --data "$out" &&
    python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' \
        "$out/bench.json" | tee -a "$out/summary.txt"
step "PyTorch SDPA" 60 "$out/sdpa.log" python3 tests/ch10_sdpa.py --out "$out/ch10_sdpa.dat"
cat "$out/sdpa.log" >> "$out/summary.txt"; rm -f "$out/sdpa.log"
say "done; results in $out"
