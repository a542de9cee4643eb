#!/bin/sh
# gpu_run.sh — all of chapter 10's GPU work in one run, on a machine with a CUDA
# device: build with its nvcc, the GPU tests, compute-sanitizer on a small case, the
# benchmark and PyTorch's SDPA. Results go under $OUT (default .build/gpu-run).
# Exits 0 only when the build, every GPU test, both sanitizers and every benchmark
# point's check passed. Run from the repository root. Tangled from chapters/app_gpu_run.nw.
set -u
out=${OUT:-.build/gpu-run}
build=${GPU_RUN_BUILT:-${GPU_RUN_BUILD:-.build/gpu-run-build}}
cuda_tool() {   # cuda_tool NAME: the path of a CUDA tool, or status 1
    for c in ${CUDA_HOME:+"$CUDA_HOME/bin/$1"} "$(command -v "$1" 2>/dev/null)" \
             "/usr/local/cuda/bin/$1" .build/cuda-venv/lib/python3*/site-packages/nvidia/cu*/bin/"$1" \
             .build/sass-venv/lib/python3*/site-packages/nvidia/cu*/bin/"$1"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

nvcc=$(cuda_tool nvcc) || nvcc=nvcc
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
    nvflags="-std=c++17 -O3 -gencode arch=compute_80,code=sm_80
             -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra --resource-usage"
    { "$nvcc" $nvflags -Werror all-warnings -Ikernels -c kernels/gpu/gpu_cuda.cu \
          -o $build/gpu_cuda.main.o ||
      { echo "gpu_run: WARNING: nvcc -Werror failed; compiling without it";
        "$nvcc" $nvflags -Ikernels -c kernels/gpu/gpu_cuda.cu -o $build/gpu_cuda.main.o; }; } ||
        exit 1
    for f in kernels/*/*.c; do
        o=$build/$(basename "$f" .c).o
        gcc $cflags -c "$f" -o "$o" || echo "gpu_run: $f left out: it does not compile here"
    done
    ar rcs $build/libfa.a $build/*.o &&
    gcc $cflags -c tangled/ch10_gpu.c -o $build/ch10_gpu.main.o &&
    gcc $cflags -c tests/gpu_check_ch10.c -o $build/gpu_check_ch10.main.o &&
    libs="-L$cuda_home/lib64 -Wl,-rpath,$cuda_home/lib64 -lcudart -lstdc++ $blas -lpthread -lm"
    gcc -o $build/ch10_gpu $build/ch10_gpu.main.o $build/gpu_cuda.main.o $build/libfa.a $libs &&
    gcc -o $build/gpu_check_ch10 $build/gpu_check_ch10.main.o $build/gpu_cuda.main.o \
        $build/libfa.a $libs
    exit $?
fi
mkdir -p "$out" "$build"
failed=""
say() { echo "gpu_run: $*" | tee -a "$out/summary.txt"; }
step() {   # step NAME SECONDS LOG COMMAND...: run with a time limit, record the status
    name=$1; limit=$2; log=$3; shift 3
    start=$(date +%s)
    timeout "$limit" "$@" > "$log" 2>&1; status=$?
    say "$name: status $status in $(($(date +%s) - start)) s"
    [ "$status" -eq 0 ] || failed="$failed, $name"
    return $status
}

: > "$out/summary.txt"
say "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "nvcc $nvcc: $("$nvcc" --version 2>&1 | grep -o "release.*")"
say "gcc $(gcc -dumpfullversion), python $(python3 --version 2>&1)"

if [ -n "${GPU_RUN_BUILT:-}" ]; then
    say "build: the programs already built in $build"
else
    step build 100 "$out/build.txt" sh "$0" --build ||
        { say "FAILED: the build; see build.txt"; exit 1; }
    if grep -E '[1-9][0-9]* bytes spill' "$out/build.txt" > "$out/spills.txt"; then
        sed 's/^/gpu_run: SPILLS: /' "$out/spills.txt" | tee -a "$out/summary.txt"
        failed="$failed, spills"
    fi
fi
if ! info=$($build/ch10_gpu --cuda-info); then
    say "FAILED: no CUDA device: $info; stopping before the GPU steps"
    exit 1
fi
say "device: $info"

step "GPU tests" 90 "$out/check.txt" $build/gpu_check_ch10
grep -c '^ok' "$out/check.txt" | sed 's/^/gpu_run: checks passed: /' | tee -a "$out/summary.txt"
grep '^not ok' "$out/check.txt" | tee -a "$out/summary.txt"
small="--device cuda --heads 2 --seq 100 --seq-k 70 --dim 64"
if sanitizer=$(cuda_tool compute-sanitizer); then
    say "compute-sanitizer: $sanitizer"
    for tool in memcheck racecheck; do
        step $tool 40 "$out/$tool.txt" "$sanitizer" --tool $tool --error-exitcode 3 \
            $build/ch10_gpu $small
    done
    cat "$out/memcheck.txt" "$out/racecheck.txt" > "$out/sanitizer.txt"
    rm -f "$out/memcheck.txt" "$out/racecheck.txt"
else
    say "memcheck, racecheck: not run: no compute-sanitizer in \$CUDA_HOME/bin, on PATH or in a wheel"
    failed="$failed, sanitizer"
fi

rm -f "$out/bench.json"
step bench 150 "$out/bench.progress" sh -c '"$@" > "$0"' "$out/bench-report.json" \
    $build/ch10_gpu --bench --repeats 3 --json --data "$out" --points "$out/bench.json" &&
    python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))["text"])' \
        "$out/bench-report.json" | tee -a "$out/summary.txt"
say "bench: $(wc -l < "$out/bench.json" 2>/dev/null || echo 0) point(s) in bench.json"
timeout 60 python3 tests/ch10_sdpa.py --out "$out/ch10_sdpa.dat" > "$out/sdpa.log" 2>&1 &&
    say "PyTorch SDPA: measured" || say "PyTorch SDPA: not measured (the peer; nothing failed)"
cat "$out/sdpa.log" >> "$out/summary.txt"; rm -f "$out/sdpa.log"
if [ -n "$failed" ]; then
    say "FAILED:${failed#,}; results in $out"
    exit 1
fi
say "passed; results in $out"
