#!/bin/sh
# cli_bad_input.sh — every chapter program against hostile input.
# Tangled from chapters/app_robustness.nw; edit that file, not this one.
set -u
bin=$(cd "${FA_BIN:-.}" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cases=0; failures=0
verdict() {   # verdict NAME PROBLEM: PROBLEM empty means the case passed
    cases=$((cases + 1))
    if [ -z "$2" ]; then echo "ok - $1"
    else echo "not ok - $1: $2"; failures=$((failures + 1)); fi
}
byte() { printf "\\$(printf %03o "$1")"; }
npy() {   # npy FILE MAJOR HEADER DATA_BYTES
    n=$((${#3} + 1))
    { printf '\223NUMPY'; byte "$2"; byte 0
      byte $((n % 256)); byte $((n / 256 % 256))
      [ "$2" -ge 2 ] && { byte $((n / 65536 % 256)); byte $((n / 16777216)); }
      printf '%s\n' "$3"; head -c "$4" /dev/zero; } > "$fixtures/$1"
}
good() {  # good SHAPE [DESCR] [ORDER]: a header as NumPy writes it, less its newline
    printf "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }        " \
        "${2:-<f4}" "${3:-False}" "$1"
}
fixtures=$scratch/fixtures
mkdir -p "$fixtures/data" "$fixtures/saved"
"$bin/ch04_tiled" --seq 8 --heads 1 --dim 4 --save "$fixtures" > /dev/null ||
    { echo "not ok - cannot make the fixtures"; exit 1; }
for f in data/ch01_ladder.dat data/ch01_machine.txt data/ch02_rebase.dat \
         data/ch02_firing.dat data/ch03_logits.dat data/ch03_limits.dat \
         data/ch03_block_error.dat data/ch04_blocks.dat data/ch05_error.dat \
         data/ch06_measured.dat data/ch06_formulas.dat data/ch07_tilemap.dat \
         data/ch10_errors.dat data/ch12_packed.dat data/ch12_similarity.dat \
         out.npy saved/q.npy saved/k.npy saved/v.npy; do
    echo old > "$fixtures/$f"
done
echo plain > "$fixtures/plain"
mkfifo "$fixtures/pipe"
cp "$fixtures/q.npy" "$fixtures/dout.npy"
ln -s k.npy "$fixtures/klink.npy"
ln -s klink.npy "$fixtures/klink2.npy"
ln "$fixtures/v.npy" "$fixtures/vhard.npy"
echo old > "$fixtures/readonly.npy"; chmod 444 "$fixtures/readonly.npy"
echo old > "$fixtures/private.npy"; chmod 600 "$fixtures/private.npy"
echo old > "$fixtures/saved/o.npy"; ln "$fixtures/saved/o.npy" "$fixtures/saved/o_old.npy"
ln -s saved/o.npy "$fixtures/olink.npy"; ln -s saved/new.npy "$fixtures/dangling.npy"
mkdir "$fixtures/rosaved"
for f in q k v dout; do echo old > "$fixtures/rosaved/$f.npy"; done
chmod 444 "$fixtures/rosaved/k.npy"
npy truncated.npy 1 "$(good '(1, 1, 8, 4)')" 100
npy extra.npy 1 "$(good '(1, 1, 8, 4)')" 129
npy f8.npy 1 "$(good '(1, 1, 8, 4)' '<f8')" 256
npy big_endian.npy 1 "$(good '(1, 1, 8, 4)' '>f4')" 128
npy fortran.npy 1 "$(good '(1, 1, 8, 4)' '<f4' True)" 128
npy five_dims.npy 1 "$(good '(1, 1, 1, 8, 4)')" 128
npy version4.npy 4 "$(good '(1, 1, 8, 4)')" 128
npy unknown_key.npy 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 8, 4), 'x': 1}" 128
npy q3.npy 1 "$(good '(1, 8, 4)')" 128
npy k_d5.npy 1 "$(good '(1, 1, 8, 5)')" 160
npy v_longer.npy 1 "$(good '(1, 1, 9, 4)')" 144
npy q1.npy 1 "$(good '(32,)')" 128
printf 'not a numpy file at all' > "$fixtures/bad_magic.npy"
# a shell variable cannot hold a NUL byte: write an X, then let sed replace it
npy nul_descr.npy 1 "{'descr': '<f4X', 'fortran_order': False, 'shape': (1, 1, 8, 4), }" 128
npy nul_key.npy 1 "{'descrX': '<f4', 'fortran_order': False, 'shape': (1, 1, 8, 4), }" 128
for f in nul_descr nul_key; do
    sed 's/X/\x00/' "$fixtures/$f.npy" > "$fixtures/$f.tmp" && mv "$fixtures/$f.tmp" "$fixtures/$f.npy"
done
npy leading_zero.npy 1 "$(good '(1, 1, 08, 4)')" 128
for c in vtab:v formfeed:f return:r; do
    npy ${c%:*}.npy 1 "{'descr':$(printf "\\${c#*:}")'<f4', 'fortran_order': False, 'shape': (1, 1, 8, 4), }" 128
done
npy huge_header.npy 2 "$(good '(1, 1, 8, 4)')$(printf '%70000s' '')" 128
{ head -c 8 "$fixtures/q.npy"; byte $(( $(od -An -tu2 -j8 -N2 "$fixtures/q.npy") - 1 )); byte 0
  tail -c +11 "$fixtures/q.npy"; } > "$fixtures/short_length.npy"
snapshot() {   # snapshot DIR: print a description of everything in DIR
    (cd "$1" && find . -printf '%y %m %s %p\n' | sort &&
     find . -type f -exec cksum {} + | sort)
}
stdout=default; limit=:; expect_not=; expect=; progress=
refuse() {   # refuse NAME PROGRAM ARGS...
    name=$1; shift
    work=$scratch/work; rm -rf "$work"; cp -a "$fixtures" "$work"
    before=$(snapshot "$work")
    prog=$1; shift
    (
        cd "$work" || exit 99
        trap '' XFSZ
        eval "$limit"
        case $stdout in
            default) timeout 60 "$bin/$prog" "$@" 2>&1 > "$scratch/stdout" ;;
            closed)  timeout 60 "$bin/$prog" "$@" 2>&1 >&- ;;
            *)       timeout 60 "$bin/$prog" "$@" 2>&1 > "$stdout" ;;
        esac
        rc=$?
        ulimit -S -f unlimited
        echo "$rc" > "$scratch/rc"
    ) | cat > "$scratch/stderr"
    rc=$(cat "$scratch/rc")
    after=$(snapshot "$work")
    if [ -n "$progress" ]; then
        grep -E -v "$progress" "$scratch/stderr" > "$scratch/errors"
        mv "$scratch/errors" "$scratch/stderr"
    fi
    lines=$(wc -l < "$scratch/stderr")
    controls=$(tr -d '\n' < "$scratch/stderr" | tr -d '[:print:]' | wc -c)
    problem=
    if [ "$rc" -ne 2 ]; then problem="status $rc"
    elif [ "$lines" -ne 1 ] || [ "$(tail -c 1 "$scratch/stderr" | od -An -c | tr -d ' ')" != '\n' ]
    then problem="$lines lines on stderr"
    elif [ "$controls" -ne 0 ]; then problem="control characters on stderr"
    elif [ -n "$expect_not" ] && grep -q -- "$expect_not" "$scratch/stderr"
    then problem="the message says '$expect_not'"
    elif [ -n "$expect" ] && ! grep -q -- "$expect" "$scratch/stderr"
    then problem="the message does not say '$expect'"
    elif [ "$before" != "$after" ]; then problem="files changed"
    fi
    verdict "$name" "$problem"
    stdout=default; limit=:; expect_not=; expect=; progress=
}
. "$(dirname "$0")/quick_sizes.sh"
for p in $programs; do
    set -- $(quick $p); prog=$1; shift
    size=--seq; [ $p = ch02 ] && size=--block; [ $p = ch12 ] && size=--batch
    refuse "$p unknown option" $prog "$@" --bogus 1
    refuse "$p $size not a number" $prog "$@" $size 12abc
    refuse "$p $size zero" $prog "$@" $size 0
    refuse "$p $size negative" $prog "$@" $size -5
    refuse "$p $size of 23 digits" $prog "$@" $size 99999999999999999999999
    refuse "$p newline in a value" $prog "$@" $size "$(printf '1\n2')"
    refuse "$p $size with a space after the number" $prog "$@" $size "8 "
    refuse "$p $size with a space before the number" $prog "$@" $size " 8"
    refuse "$p escape in an option" $prog "$@" "--$(printf '\033[2J')"
    measuring=; [ $p = ch01 ] && measuring='^ch01_memory_ladder: (writing|read |chase |.*FMA: )'
    refuse "$p --data ''" $prog "$@" --data ''
    progress=$measuring; expect="^$prog: error: "
    refuse "$p --data under a plain file, named" $prog "$@" --data plain/figures
    limit='ulimit -S -f 0'; stdout=/dev/null; progress=$measuring
    refuse "$p --data on a full disk" $prog "$@" --data data
    stdout=/dev/full; progress=$measuring
    refuse "$p stdout is /dev/full" $prog "$@"
    stdout=/dev/full; progress=$measuring
    refuse "$p --json to /dev/full" $prog "$@" --json
    stdout=closed
    refuse "$p stdout closed" $prog "$@"
done
qkv="--q q.npy --k k.npy --v v.npy"
refuse "ch04 --out is --q" ch04_tiled $qkv --out q.npy
refuse "ch04 --out is ./k.npy" ch04_tiled $qkv --out ./k.npy
refuse "ch04 --out is a named pipe" ch04_tiled $qkv --out pipe
refuse "ch04 --out is a directory" ch04_tiled $qkv --out data
refuse "ch04 --q is a named pipe" ch04_tiled --q pipe --k k.npy --v v.npy --out o.npy
refuse "ch04 --out ''" ch04_tiled $qkv --out ''
refuse "ch04 --k missing" ch04_tiled --q q.npy --v v.npy --out o.npy
refuse "ch04 --q does not exist" ch04_tiled --q nothing.npy --k k.npy --v v.npy --out o.npy
limit='ulimit -S -f 0'
refuse "ch04 --out on a full disk" ch04_tiled $qkv --out out.npy
for f in truncated extra f8 big_endian fortran five_dims version4 unknown_key \
         bad_magic nul_descr nul_key leading_zero vtab formfeed return huge_header; do
    expect="$f.npy: "
    refuse "ch04 --q $f.npy" ch04_tiled --q $f.npy --k k.npy --v v.npy --out o.npy
done
expect_not='extra data'
refuse "ch04 header length one short" ch04_tiled --q short_length.npy \
    --k k.npy --v v.npy --out o.npy
expect_not='batch or heads'
refuse "ch04 --q 3-d, --k 2-d" ch04_tiled --q q3.npy --k k.npy --v v.npy --out o.npy
refuse "ch04 --k with another d" ch04_tiled --q q.npy --k k_d5.npy --v k_d5.npy --out o.npy
refuse "ch04 --v longer than --k" ch04_tiled --q q.npy --k k.npy --v v_longer.npy --out o.npy
refuse "ch04 --q of one dimension" ch04_tiled --q q1.npy --k k.npy --v v.npy --out o.npy
refuse "ch04 --block-q 0" ch04_tiled $qkv --out o.npy --block-q 0
refuse "ch04 --block-k 5000" ch04_tiled $qkv --out o.npy --block-k 5000
refuse "ch04 --window -1" ch04_tiled $qkv --out o.npy --window -1
refuse "ch04 --scale nan" ch04_tiled $qkv --out o.npy --scale nan
refuse "ch04 --save ''" ch04_tiled --seq 8 --heads 1 --dim 4 --save ''
limit='ulimit -S -f 2'; stdout=/dev/null
refuse "ch04 --save is all or none" ch04_tiled --seq 8 --seq-k 200 \
    --heads 1 --dim 4 --save saved
qkv="--q q.npy --k k.npy --v v.npy"; dout="--dout dout.npy"
refuse "ch08 --out is ./q.npy" ch08_fused_timing $qkv --out ./q.npy
refuse "ch08 --out is a symbolic link to --k" ch08_fused_timing $qkv --out klink.npy
refuse "ch08 --out is a hard link to --v" ch08_fused_timing $qkv --out vhard.npy
refuse "ch09 --dv is --dout" ch09_backward $qkv $dout --out o.npy --dq dq.npy --dk dk.npy --dv dout.npy
refuse "ch09 --dq is a symbolic link to --k" ch09_backward $qkv $dout --out o.npy --dq klink.npy \
    --dk dk.npy --dv dv.npy
refuse "ch09 --out is a hard link to --v" ch09_backward $qkv $dout --out vhard.npy --dq dq.npy \
    --dk dk.npy --dv dv.npy
refuse "ch10 --out is ./q.npy" ch10_gpu --device cpu $qkv --out ./q.npy
refuse "ch10 --out is a symbolic link to --k" ch10_gpu --device cpu $qkv --out klink.npy
refuse "ch10 --backward --dk is a hard link to --v" ch10_gpu --device cpu --backward $qkv $dout \
    --out o.npy --dq dq.npy --dk vhard.npy --dv dv.npy
refuse "ch11 --out is a symbolic link to --k" ch11_amx $qkv --out klink.npy
refuse "ch11 --out is a hard link to --v" ch11_amx $qkv --out vhard.npy
refuse "ch09 --dq and --dk are one new file" ch09_backward $qkv $dout --out o.npy \
    --dq g.npy --dk ./g.npy --dv dv.npy
refuse "ch09 --out and --dv are one old file" ch09_backward $qkv $dout --out out.npy \
    --dq dq.npy --dk dk.npy --dv ./out.npy
refuse "ch10 --backward --dq and --dk are one file" ch10_gpu --device cpu --backward $qkv $dout \
    --out o.npy --dq g.npy --dk ./g.npy --dv dv.npy
for last in /dev/full data pipe long; do
    target=$last; [ $last = long ] && target=$(printf '%0300d' 0).npy
    refuse "ch09 --dv is $last: no output replaced" ch09_backward $qkv $dout \
        --out out.npy --dq saved/q.npy --dk saved/k.npy --dv $target
    refuse "ch10 --backward --dv is $last: no output replaced" ch10_gpu --device cpu \
        --backward $qkv $dout --out out.npy --dq saved/q.npy --dk saved/k.npy --dv $target
done
refuse "ch10 --data with files" ch10_gpu --device cpu $qkv --out o.npy --data data
writers="ch04 ch08 ch09 ch10 ch10b ch11 ch13 ch13b"
writes() {   # writes NAME Q: the program NAME with --q Q, ending in its --out option
    rest="--k k.npy --v v.npy"; grads="--dout dout.npy --dq dq.npy --dk dk.npy --dv dv.npy"
    case $1 in
        ch04)  echo "ch04_tiled --q $2 $rest --out" ;;
        ch08)  echo "ch08_fused_timing --q $2 $rest --out" ;;
        ch09)  echo "ch09_backward --q $2 $rest $grads --out" ;;
        ch10)  echo "ch10_gpu --device cpu --q $2 $rest --out" ;;
        ch10b) echo "ch10_gpu --device cpu --backward --q $2 $rest $grads --out" ;;
        ch11)  echo "ch11_amx --kernel emulated --q $2 $rest --out" ;;
        ch13)  echo "ch13_ring --q $2 $rest --out" ;;
        ch13b) echo "ch13_ring --backward --q $2 $rest $grads --out" ;;
    esac
}
for w in $writers; do
    expect="missing/o.npy: cannot create"
    refuse "$w --out in a missing directory, before any input" $(writes $w nothing.npy) missing/o.npy
    expect="data: not a regular file"
    refuse "$w --out is a directory, before any input" $(writes $w nothing.npy) data
    expect="readonly.npy: not writable"
    refuse "$w --out of mode 0444 is refused" $(writes $w q.npy) readonly.npy
    expect="readonly.npy: not writable"
    refuse "$w --out of mode 0444, before any input" $(writes $w nothing.npy) readonly.npy
done
expect="rosaved/k.npy: not writable"
refuse "ch04 --save with a read-only k.npy" ch04_tiled --seq 8 --heads 1 --dim 4 --save rosaved
expect="rosaved/k.npy: not writable"
refuse "ch09 --save with a read-only k.npy" ch09_backward --seq 8 --heads 1 --dim 4 --save rosaved
is_npy() { [ "$(head -c 6 "$1" | tail -c 5)" = NUMPY ]; }
accept() {   # accept NAME CHECK PROGRAM ARGS...
    name=$1; check=$2; shift 2
    work=$scratch/work; rm -rf "$work"; cp -a "$fixtures" "$work"
    prog=$1; shift
    (cd "$work" && eval "$limit" && timeout 60 "$bin/$prog" "$@" > /dev/null 2> "$scratch/stderr")
    rc=$?; limit=:
    problem=
    if [ "$rc" -ne 0 ]; then problem="status $rc: $(head -c 200 "$scratch/stderr" | tr -d '\n')"
    elif ! (cd "$work" && eval "$check"); then problem="not so: $check"
    elif [ -n "$(find "$work" -name '*.tmp.*')" ]; then problem="a temporary file left behind"
    fi
    verdict "$name" "$problem"
}
for w in $writers; do
    accept "$w --out of mode 0600 keeps its mode" \
        'is_npy private.npy && [ "$(stat -c %a private.npy)" = 600 ]' $(writes $w q.npy) private.npy
    accept "$w --out through a symbolic link, atomically" \
        '[ -L olink.npy ] && is_npy saved/o.npy && [ "$(cat saved/o_old.npy)" = old ]' \
        $(writes $w q.npy) olink.npy
    accept "$w --out through a link to no file yet" \
        '[ -L dangling.npy ] && is_npy saved/new.npy' $(writes $w q.npy) dangling.npy
done
refuse "ch08 --out is a link to a link to --k" ch08_fused_timing --q q.npy --k k.npy \
    --v v.npy --out klink2.npy
limit='export FA_ISA=avx2'; expect='--kernel emulated is its model'
refuse "ch11 --kernel amx without AMX is refused" ch11_amx $qkv --out o.npy --kernel amx
limit='export FA_ISA=avx2'; expect='--kernel emulated-avx512bf16 is its model'
refuse "ch11 --kernel avx512bf16 without it is refused" ch11_amx $qkv --out o.npy \
    --kernel avx512bf16
limit='export FA_ISA=avx2'
accept "ch11 --kernel auto without AMX picks the model" \
    'is_npy o.npy && grep -q "running emulated" "$scratch/stderr"' ch11_amx $qkv --out o.npy
"$bin/ch11_amx" --help > "$scratch/help" 2>&1
missing=; for k in auto amx avx512bf16 emulated emulated-avx512bf16; do
    grep -q -- "$k[ ,)]" "$scratch/help" || missing="$missing $k"; done
verdict "ch11 --help names every engine and model" "${missing:+missing:$missing}"
real=$bin/.build/model; models=$scratch/models
for m in truncated lying shape config tokenizer; do
    mkdir -p "$models/$m"
    ln -s "$real/config.json" "$real/tokenizer.json" "$real/model.safetensors" "$models/$m/"
done
rm "$models/truncated/model.safetensors" "$models/lying/model.safetensors" "$models/shape/model.safetensors"
head -c 1000000 "$real/model.safetensors" > "$models/truncated/model.safetensors"
{ printf '\377\377\377\377\000\000\000\000'; head -c 100 /dev/zero; } > "$models/lying/model.safetensors"
cp "$real/model.safetensors" "$models/shape/model.safetensors"
at=$(head -c 12000 "$models/shape/model.safetensors" | grep -obUa '"shape":\[384,384\]' | head -n 1 | cut -d: -f1)
printf '"shape":[192,768]' | dd of="$models/shape/model.safetensors" bs=1 seek="$at" conv=notrunc 2> /dev/null
rm "$models/config/config.json" "$models/tokenizer/tokenizer.json"
sed 's/"hidden_size": 384/"hidden_size": 768/' "$real/config.json" > "$models/config/config.json"
head -c 3000 "$real/tokenizer.json" > "$models/tokenizer/tokenizer.json"
expect="past the data"; refuse "ch12 truncated model.safetensors" ch12_real_model --model "$models/truncated" x
expect="over the limit"; refuse "ch12 a header length that lies" ch12_real_model --model "$models/lying" x
expect="config.json says"; refuse "ch12 a tensor of another shape" ch12_real_model --model "$models/shape" x
expect="hidden_size is 768"; refuse "ch12 config.json of another model" ch12_real_model --model "$models/config" x
expect="tokenizer.json"; refuse "ch12 truncated tokenizer.json" ch12_real_model --model "$models/tokenizer" x
printf 'good\ncaf\303\251 \303(\n' > "$fixtures/bad_utf8.txt"
expect="line 2: invalid UTF-8 at byte 6"; refuse "ch12 --file not UTF-8" ch12_real_model --file bad_utf8.txt --out e.npy
expect="invalid UTF-8 at byte 1"; refuse "ch12 a sentence not UTF-8" ch12_real_model "$(printf 'a\377')"
refuse "ch12 --out is --file" ch12_real_model --file bad_utf8.txt --out bad_utf8.txt
refuse "ch12 --out is a directory" ch12_real_model --file bad_utf8.txt --out data
refuse "ch12 --file does not exist" ch12_real_model --file nothing.txt --out e.npy
refuse "ch12 --out without --file" ch12_real_model --out e.npy
refuse "ch12 --attention sparse" ch12_real_model --attention sparse x
limit='export FA_ISA=scalar'; expect="--attention fused needs AVX2"
refuse "ch12 --attention fused under FA_ISA=scalar" ch12_real_model x
forward="--q q.npy --k k.npy --v v.npy --out o.npy"
backward="$forward --dout dout.npy --dq dq.npy --dk dk.npy --dv dv.npy"
unusual() {   # unusual CASE forward|backward PROGRAM ARGS...: chapter 4's rules kept
    which=$1; files=$2; shift 2
    dir=$scratch/unusual; rm -rf "$dir"; mkdir -p "$dir"
    mask=$(python3 "$(dirname "$0")/unusual_data.py" write $which "$dir")
    [ $files = forward ] && files=$forward || files=$backward
    if ! (cd "$dir" && timeout 60 "$bin/$@" $files $mask > /dev/null 2> stderr); then
        problem="status not 0: $(head -c 200 "$dir/stderr" | tr -d '\n')"
    else
        problem=$(python3 "$(dirname "$0")/unusual_data.py" check $which "$dir")
    fi
    verdict "$* on $which" "$problem"
}
for which in nan_query overflowing_scores nan_key infinite_key nan_hidden_value \
             infinite_hidden_value overflowing_sum nan_dout; do
    if [ $which != nan_dout ]; then
        unusual $which forward ch04_tiled
        for kernel in fused naive tiled; do
            unusual $which forward ch08_fused_timing --kernel $kernel
        done
        unusual $which forward ch08_fused_timing --kernel fused --isa avx2
        for kernel in naive fused tc; do
            unusual $which forward ch10_gpu --device cpu --kernel $kernel
        done
        for kernel in emulated auto; do
            unusual $which forward ch11_amx --kernel $kernel
        done
    fi
    unusual $which backward ch09_backward
    unusual $which backward ch10_gpu --device cpu --backward
done
peak_mib() {   # peak_mib: the peak resident set of the last case, in MiB
    python3 -c 'import resource; print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)'
}
huge() {   # huge NAME PROGRAM ARGS...: refused, named, and refused before allocating
    name=$1; shift
    limit='ulimit -S -v 4194304'; stdout=/dev/null; expect="^$1: error: "
    refuse "$name" "$@"
    peak=$( (cd "$scratch" && limit='ulimit -S -v 4194304' &&
             eval "$limit" && python3 -c 'import subprocess, resource, sys
try: subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
except subprocess.TimeoutExpired: pass
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$bin/$@") )
    problem=; [ "${peak:-9999}" -lt 256 ] || problem="peak resident set ${peak:-?} MiB"
    verdict "$name: refused before allocating" "$problem"
}
if [ "${FA_SAN:-0}" != 1 ]; then
    huge "ch01 probe buffers of 2 x 3 GiB" ch01_memory_ladder --max-mib 3072 --threads 2
    huge "ch03 65536 rows of 8192" ch03_compose --rows 65536 --cols 8192
    huge "ch04 1 GiB tensors" ch04_tiled --batch 64 --heads 64 --seq 1024 --dim 64
    huge "ch05 1 GiB tensors" ch05_exact --batch 16 --heads 64 --seq 4096 --dim 64
    huge "ch06 n = 32768" ch06_memory --seq 32768 --heads 1 --dim 64
    huge "ch07 1 GiB tensors" ch07_causal_skip --seq 65536 --heads 64 --dim 64
    huge "ch08 1 GiB tensors" ch08_fused_timing --seq 16384 --heads 64 --dim 256
    huge "ch09 1 GiB tensors" ch09_backward --seq 16384 --heads 64 --dim 256
    huge "ch09 n = 16384, four heads" ch09_backward --seq 16384 --heads 4
    huge "ch10 256 heads of n = 16384" ch10_gpu --device cpu --batch 16 --heads 16 --seq 16384 --dim 64
    big=$scratch/big; mkdir -p "$big"
    npy big.npy 1 "$(good '(16, 16, 24576, 64)')" 0
    for t in q k v dout; do
        cp "$fixtures/big.npy" "$big/$t.npy"
        truncate -s +1610612736 "$big/$t.npy"
    done
    rm "$fixtures/big.npy"
    bigqkv="--q $big/q.npy --k $big/k.npy --v $big/v.npy"
    huge "ch08 inputs of 3 x 1.5 GiB" ch08_fused_timing $bigqkv --out o.npy
    huge "ch09 inputs of 4 x 1.5 GiB" ch09_backward $bigqkv --dout $big/dout.npy \
        --out o.npy --dq dq.npy --dk dk.npy --dv dv.npy
    huge "ch10 inputs of 3 x 1.5 GiB" ch10_gpu --device cpu $bigqkv --out o.npy
    huge "ch11 inputs of 3 x 1.5 GiB" ch11_amx $bigqkv --out o.npy
fi
echo "$cases bad-input cases, $failures failed"
[ "$failures" -eq 0 ]
