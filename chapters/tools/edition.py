#!/usr/bin/env python3
"""edition.py: the editions of a chapter, as filtered copies of its noweb source.

    python3 chapters/tools/edition.py book       OUTDIR chapters/*.nw
    python3 chapters/tools/edition.py student    OUTDIR chapters/*.nw
    python3 chapters/tools/edition.py instructor OUTDIR chapters/*.nw
    python3 chapters/tools/edition.py solutions  OUTDIR chapters/*.nw
    python3 chapters/tools/edition.py variant N.k starter|wrong IN.nw > OUT.nw

A coding exercise N.k is written in its chapter as

    <<tests/ex_N_k.c>>=          the file the student works in; it expands
    ... <<solution N.k: NAME>>   the solution chunk
    <<starter N.k: NAME>>=       what the student is handed (compiles, fails)
    ::: {.solution}              instructor-only prose and chunks:
    <<solution N.k: NAME>>=        the solution
    <<wrong N.k: NAME>>=           a deliberately wrong variant
    :::

The editions:

  instructor  everything: starters, solutions and wrong variants (the fences
              of the solution divs are dropped, their content kept).
  book        the default book (and student) edition: every `::: {.solution}`
  student     div is removed, and every reference to a solution chunk is
              turned into a reference to the starter of the same name, so
              the code a student tangles is the starter.
  solutions   only the Exercises section of each chapter (its last
              `## Exercises` heading to the end; the projects' appendix
              whole), solutions included, under the chapter's own title,
              for the instructor's solutions PDF.
  variant     one exercise's solution references replaced by its starter or
              its wrong variant (for proving the grader, see prove-graders.sh).

Files are written to OUTDIR under their own base names, and rewritten only
when their bytes change.  A solution or wrong chunk outside a solution div
is left out with a warning (its prose stays: put it in a div).
Python 3 standard library only.
"""

import os
import re
import sys

PROG = "edition"
DEF = re.compile(r"^<<(.*)>>=\s*$")
SOLUTION_REF = re.compile(r"<<solution ([0-9A-Z]+\.[0-9]+): ([^>]*)>>(?!=)")
DIV_OPEN = re.compile(r"^:::+\s*\{[^}]*\.solution\b[^}]*\}\s*$")
DIV_ANY_OPEN = re.compile(r"^:::+\s*(\{.*\}|\S+)\s*$")
DIV_CLOSE = re.compile(r"^:::+\s*$")
HIDDEN = re.compile(r"^(solution|wrong) ")
PROJECT = re.compile(r"^### Project ")


def die(msg):
    sys.stderr.write("%s: error: %s\n" % (PROG, msg))
    sys.exit(1)


def drop_solution_divs(lines, path):
    """The lines outside every ::: {.solution} div; nested divs are counted.
    A solution or wrong chunk found outside a div is dropped too (up to its
    closing @ line), with a warning: it must never reach the student."""
    out, depth, start, skipping = [], 0, 0, False
    for n, line in enumerate(lines, 1):
        if skipping:
            if line.startswith("@") and (len(line) == 1 or line[1] in " \t\n"):
                skipping = False
                out.append("@\n")   # its %def names go with it
                continue
            elif DEF.match(line):
                skipping = False
            else:
                continue
        if depth == 0:
            if DIV_OPEN.match(line):
                depth, start = 1, n
                continue
            name = DEF.match(line)
            if name and HIDDEN.match(name.group(1)):
                sys.stderr.write("%s: warning: %s:%d: <<%s>> is outside a ::: {.solution} "
                                 "div; left out, its prose is not\n" % (PROG, path, n, name.group(1)))
                skipping = True
                continue
            out.append(line)
        elif DIV_CLOSE.match(line):
            depth -= 1
        elif DIV_ANY_OPEN.match(line):
            depth += 1
    if depth:
        die("%s:%d: ::: {.solution} div is never closed" % (path, start))
    return out


def unwrap_solution_divs(lines):
    """The lines without the fences of ::: {.solution} divs, their content kept
    (the weave's filter works on top-level blocks: chunks must not be nested)."""
    out, stack = [], []
    for line in lines:
        if DIV_OPEN.match(line):
            stack.append(True)
            continue
        if stack and DIV_CLOSE.match(line):
            if stack.pop():
                continue
        elif stack and DIV_ANY_OPEN.match(line):
            stack.append(False)
        out.append(line)
    return out


def use_chunk(lines, kind, exercise=None):
    """References <<solution N.k: X>> become <<KIND N.k: X>> (one exercise or all)."""
    def repl(m):
        if exercise is not None and m.group(1) != exercise:
            return m.group(0)
        return "<<%s %s: %s>>" % (kind, m.group(1), m.group(2))
    return [line if DEF.match(line) else SOLUTION_REF.sub(repl, line)
            for line in lines]


def exercises_section(lines, path):
    """The chapter's title line and its Exercises section; the projects'
    appendix, which is all exercises, whole."""
    title = next((l for l in lines if l.startswith("# ")), None)
    starts = [i for i, l in enumerate(lines) if l.rstrip() == "## Exercises"]
    if title is not None and not starts and any(PROJECT.match(l) for l in lines):
        starts = [lines.index(title)]
    if title is None or not starts:
        return []
    heading = re.sub(r"\s*\{#([^}]*)\}\s*$", r" {#\1-solutions}", title.rstrip())
    return [heading + "\n", "\n"] + lines[starts[-1] + 1:]


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def edition(mode, path, lines):
    if mode in ("book", "student"):
        return use_chunk(drop_solution_divs(lines, path), "starter")
    if mode == "instructor":
        return unwrap_solution_divs(lines)
    if mode == "solutions":
        return unwrap_solution_divs(exercises_section(lines, path))
    die("unknown edition %r" % mode)


def main(argv):
    if len(argv) == 4 and argv[0] == "variant":
        exercise, kind, path = argv[1], argv[2], argv[3]
        if kind not in ("starter", "wrong"):
            die("variant is starter or wrong, not %r" % kind)
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
        sys.stdout.write("".join(use_chunk(lines, kind, exercise)))
        return 0
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    mode, outdir, files = argv[0], argv[1], argv[2:]
    os.makedirs(outdir, exist_ok=True)
    for path in files:
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
        out = edition(mode, path, lines)
        if out or mode != "solutions":
            write_if_changed(os.path.join(outdir, os.path.basename(path)), "".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
