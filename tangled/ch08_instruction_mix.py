"""ch08_instruction_mix.py - the instructions a callgrind run executed
(--dump-instr=yes --compress-pos=no), sorted into kinds by the mnemonics
objdump gives for the program. Tangled from chapters/app_timing.nw.
Usage: python3 ch08_instruction_mix.py RUN CALLGRIND_FILE PROGRAM
Prints: RUN KIND COUNT   (one line per kind)."""
import collections, re, subprocess, sys
def code_of(program):
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", program],
                          capture_output=True, text=True, check=True).stdout
    code = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m:
            code[int(m.group(1), 16)] = (m.group(2), m.group(3))
    return code

def counts_of(path):
    counts, after_call = collections.Counter(), False
    for line in open(path):
        if after_call:                      # a call's inclusive cost: not ours
            after_call = False
            continue
        after_call = line.startswith("calls=")
        m = re.match(r"^0x([0-9a-f]+) \S+ (\d+)$", line)
        if m:
            counts[int(m.group(1), 16)] += int(m.group(2))
    return counts
def kind(instruction):
    if instruction is None:
        return "libraries"
    op, args = instruction
    if re.match(r"vfn?m(add|sub)", op):
        return "multiply-add"
    if op.startswith("vbroadcast"):
        return "load"
    if op.startswith("vmov") and "(" in args:
        return "store" if "(" in args.rsplit(",", 1)[-1] else "load"
    return "other-vector" if op.startswith("v") else "scalar"
run, counts_file, program = sys.argv[1:4]
code, mix = code_of(program), collections.Counter()
for address, count in counts_of(counts_file).items():
    mix[kind(code.get(address))] += count
for k, c in sorted(mix.items()):
    print(run, k, c)
