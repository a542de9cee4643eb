#!/usr/bin/env python3
"""book-metrics: the reading path in numbers, for one built tree or two.

    python3 chapters/tools/book-metrics.py .                 # this tree
    python3 chapters/tools/book-metrics.py --before /tmp/old .   # before / after

A TREE is a checkout that has been built (`make`): the script reads its
chapters/*.nw, the PDF's table of contents and log (.build/pdf-aux/book.toc,
book.log) and the HTML pages (book/*.html).  It prints Markdown tables:

* PDF pages per part of the book (preface, chapters, appendices, back
  matter), from the table of contents and the page count in the log;
* what each chapter's MAIN TEXT is made of, in non-blank lines: prose, and
  code classified as algorithm, plumbing or tests (see classify()); the
  main text is everything before the first closing section (`## The
  program`, `## The tests`, and the older `## Tests`, `## Testing the
  claims`, or `## Exercises`); the whole text is everything before
  `## Exercises`;
* the HTML pages' weights: bytes of every page, the largest, the total
  (HTML only: the stylesheet, KaTeX's fonts and the figures are shared).

Not part of `make check`: `make metrics` runs it on this tree, and
METRICS_BEFORE=DIR adds a built older checkout for comparison.
Python 3 standard library only.
"""

import argparse
import os
import re
import sys

DEF = re.compile(r"^<<(.+)>>=\s*$")
USE = re.compile(r"(?<!@)<<(.+?)>>(?!=)")
CLOSING = re.compile(r"^## (The program|The tests|Tests|Testing the claims|Exercises)\s*(\{.*\})?$")
HARNESS_FILES = re.compile(r"^kernels/harness/")
# Chunk names that say they are plumbing: the program's options, main,
# includes and declarations, its report (tables, facts, notes), the data
# of its figures, drawing and allocating inputs, refusals of bad input.
# (Figure scripts reach figures/ roots and are plumbing by their root.)
PLUMBING_NAME = re.compile(
    r"option|main\b|main program|report|fact|table|\bnote|print|include|header|"
    r"declare|json|usage|refuse|\bdata\b|\bname the (logits|settings|facts)|"
    r"parse|format|column|list sizes|state the|the results of|"
    r"\bdraw\b.*\b(logits|inputs|q, k)|allocate|free the|^tangled/", re.I)
# Code that says it is plumbing, whatever the chunk is called ("functions
# of ch04_tiled" continues one name through a whole program).
PLUMBING_CODE = re.compile(
    r"\breport_|\btable_row|options_parse|\bOPT_[A-Z]+|printf\s*\(|\bdata_file\b|"
    r"\bdata_close\b|\bint main\s*\(|\bfmt_(num|int|spread)\b|\bdie_usage\b")
# For a chunk of a kernel (kernels/, not the harness) only these do.
KERNEL_PLUMBING_NAME = re.compile(r"include|declare|header", re.I)


def read_nw(path):
    """Chunks and documentation of one .nw: a list of (kind, name, lines)."""
    parts, doc, code, name = [], [], None, None
    with open(path, encoding="utf-8") as fh:
        for line in fh.read().split("\n"):
            m = DEF.match(line)
            if code is None and m:
                if doc:
                    parts.append(("doc", None, doc))
                doc, code, name = [], [], m.group(1)
            elif code is not None and (line == "@" or line.startswith("@ ")):
                parts.append(("code", name, code))
                code = None
            elif code is not None:
                if m:   # a chunk starts right after another without @
                    parts.append(("code", name, code))
                    code, name = [], m.group(1)
                else:
                    code.append(line)
            else:
                doc.append(line)
    if code is not None:
        parts.append(("code", name, code))
    if doc:
        parts.append(("doc", None, doc))
    return parts


def roots_of(all_parts):
    """For every chunk name, the set of file roots that (transitively) use it."""
    users = {}
    defined = set()
    for parts in all_parts.values():
        for kind, name, lines in parts:
            if kind != "code":
                continue
            defined.add(name)
            for line in lines:
                for used in USE.findall(line):
                    users.setdefault(used, set()).add(name)
    memo = {}

    def roots(name, seen=()):
        if name in memo:
            return memo[name]
        out = set()
        if "/" in name and "." in name and " " not in name:
            out.add(name)
        for u in users.get(name, ()):
            if u not in seen:
                out |= roots(u, seen + (name,))
        memo[name] = out
        return out
    return {n: roots(n) for n in defined}


def classify(name, roots, lines=()):
    """algorithm / plumbing / tests / other for one chunk.

    Tests: every root it reaches is under tests/.  A chunk of a kernel
    (kernels/ outside the harness's files) is algorithm unless its name says
    include, declare or header.  Any other chunk is plumbing when its name
    says so (PLUMBING_NAME), when its code calls the report, the options,
    printf or the data files (PLUMBING_CODE), or when it reaches only
    figure scripts or the harness's files, and algorithm otherwise: the chapter programs' own
    computations and measurements.
    A chunk no root reaches (an exercise's solution, say) is other."""
    if not roots:
        return "other"
    if all(r.startswith("tests/") for r in roots):
        return "tests"
    code_roots = [r for r in roots if not r.startswith("tests/")]
    if any(r.startswith("kernels/") and not HARNESS_FILES.match(r) for r in code_roots):
        return "plumbing" if KERNEL_PLUMBING_NAME.search(name) else "algorithm"
    if PLUMBING_NAME.search(name) or any(PLUMBING_CODE.search(l) for l in lines):
        return "plumbing"
    if all(r.startswith("figures/") or HARNESS_FILES.match(r) for r in code_roots):
        return "plumbing"
    return "algorithm"


def nonblank(lines):
    return sum(1 for l in lines if l.strip())


def composition(parts, roots, main_only):
    """Non-blank lines of prose and of each class of code, in the main text
    (or the whole chapter without its exercises)."""
    count = {"prose": 0, "algorithm": 0, "plumbing": 0, "tests": 0, "other": 0}
    chunks = {"algorithm": 0, "plumbing": 0, "tests": 0, "other": 0}
    for kind, name, lines in parts:
        if kind == "doc":
            stop = None
            for i, line in enumerate(lines):
                if line.startswith("## Exercises") or (main_only and CLOSING.match(line)):
                    stop = i
                    break
            if stop is not None:
                count["prose"] += nonblank(lines[:stop])
                return count, chunks
            count["prose"] += nonblank(l for l in lines if not l.startswith("@ %def"))
        else:
            c = classify(name, roots.get(name, set()), lines)
            count[c] += nonblank(lines)
            chunks[c] += 1
    return count, chunks


def book_files(tree):
    d = os.path.join(tree, "chapters")
    names = sorted(os.listdir(d))
    order = (["front.nw"] + [n for n in names if re.match(r"ch\d+.*\.nw$", n)]
             + ["harness.nw"] + [n for n in names if n.startswith("app_") and n.endswith(".nw")]
             + ["back.nw"])
    return [os.path.join(d, n) for n in order if os.path.exists(os.path.join(d, n))]


TOC = re.compile(r"\\contentsline \{chapter\}\{(?:\\numberline \{([^}]*)\})?(.*?)\}\{(\d+)\}")
TOC_LINE = re.compile(r"\\contentsline \{(chapter|section)\}\{(?:\\numberline \{([^}]*)\})?(.*?)\}\{(\d+)\}")
CLOSING_TITLE = re.compile(r"^(The program|The tests|Tests|Testing the claims|Exercises)$")


def pdf_pages(tree):
    """[(label, pages, title, main)] for every chapter-level entry of the
    PDF's contents; MAIN is the pages before its first closing section (The
    program, The tests, Tests, Testing the claims or Exercises), counting
    the page that section starts on, or None when it has none."""
    aux = os.path.join(tree, ".build", "pdf-aux")
    try:
        toc = open(os.path.join(aux, "book.toc"), encoding="utf-8", errors="replace").read()
        log = open(os.path.join(aux, "book.log"), encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    total = re.search(r"Output written on .*?\((\d+) pages", log)
    entries = []
    for level, num, title, page in TOC_LINE.findall(toc):
        if level == "chapter":
            entries.append([num or title, int(page), ("%s %s" % (num, title)).strip(), None])
        elif entries and entries[-1][3] is None and CLOSING_TITLE.match(title):
            entries[-1][3] = int(page) - entries[-1][1] + 1
    out = []
    for k, (label, start, title, main) in enumerate(entries):
        end = entries[k + 1][1] - 1 if k + 1 < len(entries) else (int(total.group(1)) if total else start)
        out.append((label, end - start + 1, title, main))
    if total:
        out.append(("whole book", int(total.group(1)), "whole book", None))
    return out


def html_weights(tree):
    d = os.path.join(tree, "book")
    if not os.path.isdir(d):
        return {}
    return {n: os.path.getsize(os.path.join(d, n)) for n in sorted(os.listdir(d))
            if n.endswith(".html")}


def measure(tree):
    files = book_files(tree)
    parts = {f: read_nw(f) for f in files}
    roots = roots_of(parts)
    comp = {}
    for f in files:
        base = os.path.basename(f)
        if not re.match(r"ch\d+", base):
            continue
        has_program = any(kind == "doc" and any(CLOSING.match(l) and "Exercises" not in l
                                                for l in lines)
                          for kind, _, lines in parts[f])
        comp[base.split("_")[0]] = (composition(parts[f], roots, True),
                                    composition(parts[f], roots, False), has_program)
    return {"comp": comp, "pdf": pdf_pages(tree), "html": html_weights(tree)}


def pct(a, b):
    return "%d%%" % round(100.0 * a / b) if b else "–"


def shares(count):
    total = sum(count.values())
    code = count["algorithm"] + count["plumbing"] + count["tests"] + count["other"]
    return total, code


def print_pdf(before, after):
    print("### PDF pages per part\n")
    print("Main text: the pages up to the one where the part's first closing "
          "section (The program, The tests, Tests, Testing the claims, Exercises) "
          "starts.\n")
    dash = lambda v: "–" if v is None else str(v)
    if before:
        print("| part | before | after | main text before | main text after |")
        print("| --- | ---: | ---: | ---: | ---: |")
        b = {label: (pages, main) for label, pages, _, main in before}
        for label, pages, title, main in after:
            bp, bm = b.get(label, (None, None))
            print("| %s | %s | %d | %s | %s |" % (title, dash(bp), pages, dash(bm), dash(main)))
        for label, pages, title, main in before:
            if label not in b or label not in {l for l, _, _, _ in after}:
                print("| %s | %d | – | %s | – |" % (title, pages, dash(main)))
    else:
        print("| part | pages | main text |\n| --- | ---: | ---: |")
        for label, pages, title, main in after:
            print("| %s | %d | %s |" % (title, pages, dash(main)))
    print()


def comp_row(ch, count, chunks, note=""):
    total, code = shares(count)
    return ("| %s%s | %d | %s | %s | %s | %s | %s |"
            % (ch, note, total, pct(count["prose"], total), pct(count["algorithm"], total),
               pct(count["plumbing"], total), pct(count["tests"], total),
               pct(count["algorithm"], count["algorithm"] + count["plumbing"])))


def print_comp(title, m, which):
    print("### %s\n" % title)
    print("| chapter | lines | prose | algorithm code | plumbing | tests | algorithm / (algorithm + plumbing) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for ch, (main, whole, has_program) in sorted(m["comp"].items()):
        count, chunks = main if which == "main" else whole
        note = "" if has_program or which == "whole" else " (no closing parts)"
        print(comp_row(ch, count, chunks, note))
    print()


def print_html(before, after):
    print("### HTML page weights (bytes)\n")
    for label, w in (("before", before), ("after", after)):
        if not w:
            continue
        largest = max(w, key=w.get)
        print("%s: %d page%s, total %s bytes, largest %s (%s bytes), median %s bytes\n"
              % (label, len(w), "" if len(w) == 1 else "s", format(sum(w.values()), ","),
                 largest, format(w[largest], ","),
                 format(sorted(w.values())[len(w) // 2], ",")))
    if after and len(after) > 1:
        print("| page | bytes |\n| --- | ---: |")
        for n, b in after.items():
            print("| %s | %s |" % (n, format(b, ",")))
        print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="an older built checkout to compare with")
    ap.add_argument("tree", nargs="?", default=".", help="the built checkout (default .)")
    args = ap.parse_args(argv)
    after = measure(args.tree)
    before = measure(args.before) if args.before else None
    print_pdf(before["pdf"] if before else None, after["pdf"])
    if before:
        print_comp("Before: each chapter's text without its exercises (lines)", before, "whole")
        print_comp("Before: each chapter's text up to its first closing section (lines)",
                   before, "main")
        print_comp("After: each chapter's main text, before The program (lines)", after, "main")
        print_comp("After: each chapter's whole text without its exercises (lines)", after, "whole")
    else:
        print_comp("Each chapter's main text, before The program (lines)", after, "main")
        print_comp("Each chapter's whole text without its exercises (lines)", after, "whole")
    print_html(before["html"] if before else None, after["html"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
