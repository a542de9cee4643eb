#!/usr/bin/env python3
"""exercises.py: the book's exercises, read from their headings.

    python3 chapters/tools/exercises.py receipts OUTDIR chapters/*.nw
    python3 chapters/tools/exercises.py check chapters/*.nw
    python3 chapters/tools/exercises.py code chapters/*.nw
    python3 chapters/tools/exercises.py runs OUTDIR chapters/*.nw

Every exercise is written in the book's one format,

    ### Exercise N.k · KIND · ①|②|③ {#ex-N-k}

    *Practises:* what it practises. *Checked by:* how it is checked.

with KIND one of concept, predict-then-run, code.  N is the chapter's number
(chNN_ files) or A (the harness appendix).

  receipts  writes OUTDIR/exercises.json and exercises.txt in the shape of a
            chapter program's receipts: table "all" (one row per exercise)
            (exercise, kind, difficulty, time, practises), table "chapters"
            (per chapter: counts by kind and by difficulty, time) and facts
            (counts per kind, totals, time_N per chapter N), for the
            instructors' page.
  check     prints "ok - ..." / "not ok - ..." per rule (make check-exercises):
            3-6 exercises per chapter numbered 1..k, at least one
            predict-then-run that runs the chapter's program and one code
            exercise, and for every code exercise a grader tests/grade_N_k.c,
            a file tests/ex_N_k.c, a starter, a solution and a wrong variant;
            and for every exercise an answer: a `::: {.solution}` div after
            its heading that starts a paragraph with **Answer N.k.** (or
            **Solution N.k.** for a code exercise); a predict-then-run
            answer splices at least one receipt ({{prog.key}}), the numbers
            a run printed, and every answer run it names is declared.
  code      prints "N.k FILE" for each code exercise (for prove-graders.sh).
  runs      runs every answer run and writes its receipts, OUTDIR/NAME.json
            and NAME.txt, for the instructor edition.  An answer declares a
            run on a line of its own inside its solution div,

                <!-- answer-run NAME: ./PROGRAM ARGS... -->
                <!-- answer-run NAME exit S: ./PROGRAM ARGS... -->

            NAME is ex_N_k or ex_N_k_x (letters, digits, _); the run is
            ./PROGRAM --json ARGS, from the repository root, and must exit
            with status S (0 unless given); its answer splices {{NAME.key}},
            and {{NAME.exit_status}} and {{NAME.stderr_last}} (the last
            line on stderr) besides the program's own facts.  A run is repeated only when its command
            or its program changed.
Python 3 standard library only.
"""

import json
import os
import re
import sys

KINDS = ("concept", "predict-then-run", "code", "project")
MARKS = {"①": "easy", "②": "medium", "③": "hard"}
# Time to allow, in minutes, by kind and difficulty (the instructors' page
# states this rule; the table applies it).
MINUTES = {"concept": (10, 20, 45), "predict-then-run": (15, 30, 60),
           "code": (20, 45, 90), "project": (480, 900, 1200)}
GRADED = ("code", "project")   # kinds with a starter, a grader, a solution and a wrong variant
HEAD = re.compile(r"^### (?:Exercise|Project) (\w+)\.(\d+) · (\S+) · (\S) \{#ex-(\w+)-(\d+)\}\s*$")
LOOSE_HEAD = re.compile(r"^###\s+(Exercise|Project)\b")
PRACTISES = re.compile(r"^\*Practises:\*\s*(.*?)\s*\*Checked by:\*\s*(.*)$")
ANSWER = re.compile(r"^\*\*(Answer|Solution) (\w+\.\d+)\.\*\*")
SOLUTION_OPEN = re.compile(r"^:::+\s*\{[^}]*\.solution\b[^}]*\}\s*$")
DIV_CLOSE = re.compile(r"^:::+\s*$")
DIV_OPEN = re.compile(r"^:::+\s*(\{.*\}|\S+)\s*$")
RUN = re.compile(r"^<!-- answer-run (ex_[A-Za-z0-9_]+)(?: exit (\d+))?: \./([a-z0-9_]+)((?: [^ ]+)*) -->\s*$")
SPLICE = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_\-]*)\.([A-Za-z0-9_][A-Za-z0-9_.\-]*)\}\}")


def chapter_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    m = re.match(r"ch(\d+)_", stem)
    if m:
        return str(int(m.group(1))), stem
    if stem == "harness":
        return "A", None
    if stem == "app_projects":
        return "P", None
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
    heads = [n for n, line in enumerate(lines) if LOOSE_HEAD.match(line)]
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
        end = next((h for h in heads if h > n), len(lines))
        ex["answer"], ex["runs"] = answer_of(lines[n + 1:end])
        ex["section"] = "".join(lines[n + 1:end])
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


def answer_of(section):
    """(text, runs) of the solution divs in an exercise's section: the text
    of the first paragraph opening with **Answer N.k.** or **Solution
    N.k.** and of everything after it in the divs, and the answer runs
    (name, program, args) declared there."""
    depth, inside, runs = 0, [], []
    for line in section:
        if depth == 0:
            if SOLUTION_OPEN.match(line):
                depth = 1
            continue
        if DIV_CLOSE.match(line):
            depth -= 1
            continue
        if DIV_OPEN.match(line):
            depth += 1
        m = RUN.match(line)
        if m:
            runs.append((m.group(1), m.group(3), m.group(4).split(), int(m.group(2) or 0)))
            continue
        inside.append(line)
    start = next((i for i, l in enumerate(inside) if ANSWER.match(l)), None)
    if start is None:
        return None, runs
    return "".join(inside[start:]), runs


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
    if chap == "P":
        return check_projects(path, exs, text)
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
    rule(all(e["kind"] != "project" for e in exs), "%s: no project among the exercises" % path)
    out += check_answers(path, exs)
    out += check_graded(path, code, text)
    return out


def check_answers(path, exs):
    """Every exercise's answer; a predict-then-run answer's runs."""
    out = []

    def rule(ok, what):
        out.append(("ok - " if ok else "not ok - ") + what)
    for e in exs:
        m = ANSWER.match(e["answer"] or "")
        word = "Solution" if e["kind"] in GRADED else "Answer"
        rule(m is not None and m.group(2) == e["id"] and m.group(1) == word,
             "%s: exercise %s has an answer (**%s %s.** in a solution div)"
             % (path, e["id"], word, e["id"]))
        if e["kind"] != "predict-then-run" or not m:
            continue
        splices = SPLICE.findall(e["answer"])
        rule(bool(splices), "%s: answer %s splices the numbers a run printed ({{prog.key}})"
             % (path, e["id"]))
        declared = {r[0] for r in e["runs"]}
        for prog, key in splices:
            if prog.startswith("ex_"):
                rule(prog in declared, "%s: answer %s declares its run %s" % (path, e["id"], prog))
        for name, program, args, status in e["runs"]:
            rule(program.startswith("ch") and name.startswith("ex_" + e["id"].replace(".", "_")),
                 "%s: answer run %s of exercise %s runs a chapter program (./%s)"
                 % (path, name, e["id"], program))
    return out


def check_graded(path, code, text):
    """A code exercise's or a project's five pieces."""
    out = []

    def rule(ok, what):
        out.append(("ok - " if ok else "not ok - ") + what)
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


def check_projects(path, exs, text):
    """The projects' appendix: 1 to 4 projects P.1.., each of kind project,
    with a rubric, its five pieces and a solution."""
    out = []

    def rule(ok, what):
        out.append(("ok - " if ok else "not ok - ") + what)
    rule(1 <= len(exs) <= 4, "%s: %d projects (1 to 4)" % (path, len(exs)))
    rule([e["number"] for e in exs] == list(range(1, len(exs) + 1)),
         "%s: projects numbered P.1 to P.%d" % (path, len(exs)))
    for e in exs:
        rule(e["kind"] == "project", "%s: %s is of kind project" % (path, e["id"]))
        rule("*Rubric:*" in e["section"], "%s: project %s has a rubric (*Rubric:* ...)"
             % (path, e["id"]))
    out += check_answers(path, exs)
    out += check_graded(path, exs, text)
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
            if e["kind"] == "project":
                facts["time_" + e["id"].replace(".", "_")] = fmt_minutes(minutes(e))
            else:
                total_minutes += minutes(e)
            rows.append([e["id"], e["kind"], "%s %s" % (e["mark"], MARKS.get(e["mark"], "?")),
                         fmt_minutes(minutes(e)), e["practises"]])
    per = {}
    for path, chap, stem, exs, problems, text in collect(files):
        for e in exs:
            c = per.setdefault(e["chapter"], {"n": 0, "minutes": 0, "kind": {}, "mark": {}})
            c["n"] += 1
            c["minutes"] += minutes(e)
            c["kind"][e["kind"]] = c["kind"].get(e["kind"], 0) + 1
            c["mark"][e["mark"]] = c["mark"].get(e["mark"], 0) + 1
    chapter_rows = []
    for chap, c in per.items():
        facts["time_" + chap] = fmt_minutes(c["minutes"])
        chapter_rows.append([chap, str(c["n"])] + [str(c["kind"].get(k, 0)) for k in KINDS]
                            + [str(c["mark"].get(m, 0)) for m in "①②③"] + [fmt_minutes(c["minutes"])])
    facts["total"] = str(len(rows) - counts["project"])
    for k in KINDS:
        facts[k.replace("-", "_")] = str(counts[k])
    facts["hours"] = "%.0f" % (total_minutes / 60)
    facts["chapters"] = str(len({r[0].split(".")[0] for r in rows}))
    table = {"title": "Every exercise of the book",
             "columns": ["exercise", "kind", "difficulty", "time", "practises"],
             "rows": rows}
    by_chapter = {"title": "Exercises per chapter, by kind and difficulty",
                  "columns": ["chapter", "exercises", "concept", "predict-then-run", "code",
                              "project", "① easy", "② medium", "③ hard", "time"],
                  "rows": chapter_rows}
    text = ["Exercises: %s (%s concept, %s predict-then-run, %s code), about %s hours"
            % (facts["total"], facts["concept"], facts["predict_then_run"], facts["code"], facts["hours"])]
    for r in rows:
        text.append("  %-5s %-17s %-10s %-9s %s" % tuple(r[:5]))
    os.makedirs(outdir, exist_ok=True)
    text.append("")
    for r in chapter_rows:
        text.append("  chapter %-3s %s exercises: %s concept, %s predict-then-run, %s code, "
                    "%s project; %s easy, %s medium, %s hard; %s" % tuple(r))
    data = {"program": "exercises", "facts": facts,
            "tables": {"all": table, "chapters": by_chapter},
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
            if e["kind"] in GRADED:
                print(e["id"], path)
    return 0


def runs(outdir, files):
    """Run every answer run whose receipts are missing or older than its
    program, or whose command changed; write OUTDIR/NAME.json and .txt."""
    import subprocess
    os.makedirs(outdir, exist_ok=True)
    failed = 0
    for path, chap, stem, exs, problems, text in collect(files):
        for e in exs:
            for name, program, args, status in e["runs"]:
                cmd = ["./" + program, "--json"] + args
                out = os.path.join(outdir, name + ".json")
                stamp = os.path.join(outdir, name + ".cmd")
                line = "%s (exit %d)\n" % (" ".join(cmd), status)
                try:
                    fresh = (open(stamp).read() == line
                             and os.path.getmtime(out) >= os.path.getmtime(cmd[0]))
                except OSError:
                    fresh = False
                if fresh:
                    continue
                sys.stderr.write("answer %s: %s\n" % (e["id"], " ".join(cmd)))
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                sys.stderr.write(r.stderr.decode("utf-8", "replace"))
                try:
                    data = json.loads(r.stdout.decode("utf-8"))
                except ValueError:
                    data = {"facts": {}, "text": ""} if status else None
                if isinstance(data, dict):
                    # a refusal is part of the answer: its status and its line
                    lines = r.stderr.decode("utf-8", "replace").splitlines()
                    data.setdefault("facts", {})["exit_status"] = str(r.returncode)
                    data["facts"]["stderr_last"] = lines[-1] if lines else ""
                if r.returncode != status or not isinstance(data, dict):
                    sys.stderr.write("exercises: answer run %s (%s) failed\n" % (name, " ".join(cmd)))
                    failed = 1
                    continue
                for fname, body in ((name + ".json", json.dumps(data, ensure_ascii=False) + "\n"),
                                    (name + ".txt", data.get("text", "")),
                                    (name + ".cmd", line)):
                    tmp = os.path.join(outdir, fname + ".tmp")
                    with open(tmp, "w", encoding="utf-8") as fh:
                        fh.write(body)
                    os.replace(tmp, os.path.join(outdir, fname))
    return failed


def main(argv):
    if len(argv) >= 3 and argv[0] == "receipts":
        receipts(argv[1], argv[2:])
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1:])
    if len(argv) >= 3 and argv[0] == "runs":
        return runs(argv[1], argv[2:])
    if len(argv) >= 2 and argv[0] == "code":
        return code(argv[1:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
