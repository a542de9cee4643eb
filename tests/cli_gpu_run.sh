#!/bin/sh
# cli_gpu_run.sh — tests/gpu_run.sh's verdict, with stand-ins for nvcc, the GPU
# programs and compute-sanitizer (run from the repository root; no GPU needed).
# Tangled from chapters/app_gpu_run.nw.
set -u
. tests/shell_helpers.sh
mkdir -p "$tmp/cuda/bin" "$tmp/bin" "$tmp/path"
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "release 0.0, stand-in"; exit 0; }\n'\
'echo "stand-in nvcc: error" >&2; exit 1\n' > "$tmp/cuda/bin/nvcc"
printf '#!/bin/sh\nshift 4\nexec "$@"\n' > "$tmp/path/compute-sanitizer"   # --tool T --error-exitcode 3
cat > "$tmp/bin/ch10_gpu" <<'STAND_IN'
#!/bin/sh
case "$*" in
*--cuda-info*) echo "stand-in GPU, sm_90"; exit 0 ;;
*--bench*) points=$(echo "$*" | sed 's/.*--points \([^ ]*\).*/\1/')
    echo '{"d": 64, "N": 1024, "ok": true}' >> "$points"
    echo '{"d": 64, "N": 2048, "ok": true}' >> "$points"
    [ "${BENCH_FAILS:-0}" = 1 ] && { echo '{"text": "out of bounds"}'; exit 1; }
    echo '{"text": "bench ok"}' ;;
esac
exit 0
STAND_IN
printf '#!/bin/sh\necho "ok 1 - a"\n[ "${GPU_TESTS_FAIL:-0}" = 1 ] && '\
'{ echo "not ok 2 - b"; exit 1; }\necho "ok 2 - b"\n' > "$tmp/bin/gpu_check_ch10"
chmod +x "$tmp/cuda/bin/nvcc" "$tmp/path/compute-sanitizer" "$tmp/bin/ch10_gpu" \
    "$tmp/bin/gpu_check_ch10"
cp "$tmp/path/compute-sanitizer" "$tmp/cuda/bin/"
run() {   # run NAME ENV...: gpu_run.sh with the stand-ins; its status in $status
    name=$1; shift
    env OUT="$tmp/$name" GPU_RUN_BUILD="$tmp/build" "$@" sh tests/gpu_run.sh \
        > "$tmp/$name.log" 2>&1; status=$?
}
said() { grep -q "$2" "$tmp/$1/summary.txt"; }   # said RUN TEXT

run nvcc_fails CUDA_HOME="$tmp/cuda"
check "a failing nvcc (found in \$CUDA_HOME/bin) fails the run" \
    sh -c "[ $status -ne 0 ] && grep -q '$tmp/cuda/bin/nvcc' '$tmp/nvcc_fails/summary.txt' &&
           grep -q 'FAILED: the build' '$tmp/nvcc_fails/summary.txt'"
run passes CUDA_HOME="$tmp/cuda" GPU_RUN_BUILT="$tmp/bin"
check "with every step passing the run passes, compute-sanitizer from \$CUDA_HOME/bin" \
    sh -c "[ $status -eq 0 ] && grep -q 'compute-sanitizer: $tmp/cuda/bin' '$tmp/passes/summary.txt'"
run tests_fail CUDA_HOME="$tmp/cuda" GPU_RUN_BUILT="$tmp/bin" GPU_TESTS_FAIL=1
check "a failing GPU test fails the run" \
    sh -c "[ $status -ne 0 ] && grep -q 'FAILED: GPU tests' '$tmp/tests_fail/summary.txt'"
run bench_fails CUDA_HOME="$tmp/cuda" GPU_RUN_BUILT="$tmp/bin" BENCH_FAILS=1
check "a benchmark out of bounds fails the run and keeps its points" \
    sh -c "[ $status -ne 0 ] && grep -q 'FAILED: bench' '$tmp/bench_fails/summary.txt' &&
           [ \$(wc -l < '$tmp/bench_fails/bench.json') -eq 2 ]"
run on_path CUDA_HOME="$tmp/none" PATH="$tmp/path:$PATH" GPU_RUN_BUILT="$tmp/bin"
check "compute-sanitizer is found on PATH" \
    sh -c "[ $status -eq 0 ] && grep -q 'compute-sanitizer: $tmp/path' '$tmp/on_path/summary.txt'"
run no_sanitizer CUDA_HOME="$tmp/none" GPU_RUN_BUILT="$tmp/bin"
if grep -q 'compute-sanitizer: /' "$tmp/no_sanitizer/summary.txt"; then
    ok "# skip: this machine has a compute-sanitizer of its own"
else
    check "a run without compute-sanitizer fails" \
        sh -c "[ $status -ne 0 ] && grep -q 'FAILED:.*sanitizer' '$tmp/no_sanitizer/summary.txt'"
fi
finish gpu_run.sh
