# machine-kind.sh PROFILE — the kind of machine that chapter 1's profile
# (ch01_machine.txt) describes, as a slug for a file name: the processor's
# model name, the widest vector instructions of chapter 1's probe and the CPU
# count, e.g. "intel-xeon-processor-avx-512-2cpu". make bench keeps one
# recorded file per kind: chapters/recorded/bench-KIND.txt.
model=$(sed -n 's/^cpu_model = //p' "$1")
isa=$(sed -n 's/^fma_isa = //p' "$1")
cpus=$(sed -n 's/^cpus = //p' "$1")
printf '%s %s %scpu\n' "$model" "$isa" "$cpus" | tr 'A-Z' 'a-z' |
    sed 's/([a-z]*)//g; s/[^a-z0-9][^a-z0-9]*/-/g; s/^-//; s/-$//'
