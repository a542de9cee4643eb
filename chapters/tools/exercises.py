#!/usr/bin/env python3
"""exercises.py: the book's exercises, read from their headings.

    python3 chapters/tools/exercises.py receipts OUTDIR chapters/*.nw
    python3 chapters/tools/exercises.py check chapters/*.nw
    python3 chapters/tools/exercises.py code chapters/*.nw

Every exercise is written in the book's one format,

    ### Exercise N.k · KIND · ①|②|③ {#ex-N-k}

    *Practises:* what it practises. *Checked by:* how it is checked.

with KIND one of concept, predict-then-run, code.  N is the chapter's number
(chNN_ files) or A (the harness appendix).

  receipts  writes OUTDIR/exercises.json and exercises.txt in the shape of a
            chapter program's receipts: table "all" (one row per exercise)
            (exercise, kind, difficulty, time, practises) and facts (counts per
            kind, totals), for the instructors' page.
  check     prints "ok - ..." / "not ok - ..." per rule (make check-exercises):
            3-6 exercises per chapter numbered 1..k, at least one
            predict-then-run that runs the chapter's program and one code
            exercise, and for every code exercise a grader tests/grade_N_k.c,
            a file tests/ex_N_k.c, a starter, a solution and a wrong variant.
  code      prints "N.k FILE" for each code exercise (for prove-graders.sh).
Python 3 standard library only.
"""

import json
import os
import re
import sys

KINDS = ("concept", "predict-then-run", "code")
MARKS = {"①": "easy", "②": "medium", "③": "hard"}
# Time to allow, in minutes, by kind and difficulty (the instructors' page
# states this rule; the table applies it).
MINUTES = {"concept": (10, 20, 45), "predict-then-run": (15, 30, 60),
           "code": (20, 45, 90)}
HEAD = re.compile(r"^### Exercise (\w+)\.(\d+) · (\S+) · (\S) \{#ex-(\w+)-(\d+)\}\s*$")
LOOSE_HEAD = re.compile(r"^###\s+Exercise\b")
PRACTISES = re.compile(r"^\*Practises:\*\s*(.*?)\s*\*Checked by:\*\s*(.*)$")


def chapter_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    m = re.match(r"ch(\d+)_", stem)
    if m:
        return str(int(m.group(1))), stem
    if stem == "harness":
        return "A", None
    return None, None


def plain(s):
    """Markdown to plain text for a table cell."""
    s = re.sub(r"\[\[(.*?)\]\]", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = s.replace("*", "").replace("`", "").replace("$", "")
    return re.sub(r"\s+", " ", s).strip().rstrip(".")


def read(path):
    """(exercises, problems, text) of one file; an exercise is a dict."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    found, problems = [], []
    for n, line in enumerate(lines):
        if not LOOSE_HEAD.match(line):
            continue
        m = HEAD.match(line)
        if not m:
            problems.append("%s:%d: heading not in the book's format: %s"
                            % (path, n + 1, line.strip()))
            continue
        chap, num, kind, mark, achap, anum = m.groups()
        para, k = [], n + 1
        while k < len(lines) and not lines[k].strip():
            k += 1
        while k < len(lines) and lines[k].strip():
            para.append(lines[k].strip())
            k += 1
        pm = PRACTISES.match(" ".join(para))
        ex = {"id": "%s.%s" % (chap, num), "chapter": chap, "number": int(num),
              "kind": kind, "mark": mark, "line": n + 1,
              "practises": plain(pm.group(1)) if pm else "",
              "checked": plain(pm.group(2)) if pm else "",
              "body": "".join(lines[n + 1:k + 40])}
        if (achap, anum) != (chap, num):
            problems.append("%s:%d: anchor #ex-%s-%s for Exercise %s" % (path, n + 1, achap, anum, ex["id"]))
        if kind not in KINDS:
            problems.append("%s:%d: kind %r is not one of %s" % (path, n + 1, kind, ", ".join(KINDS)))
        if mark not in MARKS:
            problems.append("%s:%d: difficulty %r is not one of ①②③" % (path, n + 1, mark))
        if not pm:
            problems.append("%s:%d: no '*Practises:* ... *Checked by:* ...' paragraph" % (path, n + 1))
        found.append(ex)
    return found, problems, "".join(lines)


def minutes(ex):
    table = MINUTES.get(ex["kind"])
    level = "①②③".find(ex["mark"])
    return table[level] if table and level >= 0 else 0


def fmt_minutes(m):
    return "%d min" % m if m < 60 else ("%d h" % (m // 60) if m % 60 == 0 else "%d h %d min" % (m // 60, m % 60))


def check_chapter(path, exs, text, program):
    chap, stem = chapter_of(path)
    out = []

    def rule(ok, what):
        out.append(("ok - " if ok else "not ok - ") + what)
    n = len(exs)
    rule(3 <= n <= 6, "%s: %d exercises (3 to 6)" % (path, n))
    rule([e["number"] for e in exs] == list(range(1, n + 1))
         and all(e["chapter"] == chap for e in exs),
         "%s: exercises numbered %s.1 to %s.%d" % (path, chap, chap, n))
    runs = [e for e in exs if e["kind"] == "predict-then-run"
            and (program is None or program in e["body"])]
    rule(bool(runs), "%s: a predict-then-run exercise that runs %s"
         % (path, "./" + program if program else "the chapter's code"))
    code = [e for e in exs if e["kind"] == "code"]
    rule(bool(code), "%s: a code exercise" % path)
    for e in code:
        u = e["id"].replace(".", "_")
        for what, pattern in (
                ("grader <<tests/grade_%s.c>>" % u, r"^<<tests/grade_%s\.c>>=" % u),
                ("file <<tests/ex_%s.c>>" % u, r"^<<tests/ex_%s\.c>>=" % u),
                ("starter", r"^<<starter %s: " % re.escape(e["id"])),
                ("solution", r"^<<solution %s: " % re.escape(e["id"])),
                ("wrong variant", r"^<<wrong %s: " % re.escape(e["id"]))):
            rule(re.search(pattern, text, re.M) is not None,
                 "%s: exercise %s has a %s" % (path, e["id"], what))
    return out


def collect(files):
    result = []
    for path in files:
        chap, stem = chapter_of(path)
        exs, problems, text = read(path)
        result.append((path, chap, stem, exs, problems, text))
    return result


def receipts(outdir, files):
    rows, facts = [], {}
    counts = {k: 0 for k in KINDS}
    total_minutes = 0
    for path, chap, stem, exs, problems, text in collect(files):
        for e in exs:
            counts[e["kind"]] = counts.get(e["kind"], 0) + 1
            total_minutes += minutes(e)
            rows.append([e["id"], e["kind"], "%s %s" % (e["mark"], MARKS.get(e["mark"], "?")),
                         fmt_minutes(minutes(e)), e["practises"]])
    facts["total"] = str(len(rows))
    for k in KINDS:
        facts[k.replace("-", "_")] = str(counts[k])
    facts["hours"] = "%.0f" % (total_minutes / 60)
    facts["chapters"] = str(len({r[0].split(".")[0] for r in rows}))
    table = {"title": "Every exercise of the book",
             "columns": ["exercise", "kind", "difficulty", "time", "practises"],
             "rows": rows}
    text = ["Exercises: %s (%s concept, %s predict-then-run, %s code), about %s hours"
            % (facts["total"], facts["concept"], facts["predict_then_run"], facts["code"], facts["hours"])]
    for r in rows:
        text.append("  %-5s %-17s %-10s %-9s %s" % tuple(r[:5]))
    os.makedirs(outdir, exist_ok=True)
    data = {"program": "exercises", "facts": facts, "tables": {"all": table},
            "text": "\n".join(text) + "\n"}
    for name, body in (("exercises.json", json.dumps(data, ensure_ascii=False, indent=1) + "\n"),
                       ("exercises.txt", data["text"])):
        tmp = os.path.join(outdir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, os.path.join(outdir, name))


def check(files):
    failed = 0
    for path, chap, stem, exs, problems, text in collect(files):
        for p in problems:
            print("not ok - " + p)
            failed += 1
        if chap is None:
            if exs:
                print("not ok - %s: exercises outside a chapter" % path)
                failed += 1
            continue
        for line in check_chapter(path, exs, text, stem):
            print(line)
            failed += line.startswith("not ok")
    return 1 if failed else 0


def code(files):
    for path, chap, stem, exs, problems, text in collect(files):
        for e in exs:
            if e["kind"] == "code":
                print(e["id"], path)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "receipts":
        receipts(argv[1], argv[2:])
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1:])
    if len(argv) >= 2 and argv[0] == "code":
        return code(argv[1:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
