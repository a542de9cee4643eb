#!/usr/bin/env python3
"""exercises.py: the book's exercises, read from their headings.

    python3 chapters/tools/exercises.py receipts OUTDIR [--weeks N --hours H] chapters/*.nw
    python3 chapters/tools/exercises.py check [--weeks N --hours H] chapters/*.nw
    python3 chapters/tools/exercises.py points chapters/*.nw
    python3 chapters/tools/exercises.py code chapters/*.nw
    python3 chapters/tools/exercises.py runs OUTDIR chapters/*.nw

Every exercise is written in the book's one format,

    ### Exercise N.k · KIND · ①|②|③ · P points {#ex-N-k}

    *Practises:* what it practises. *Checked by:* how it is checked.

with KIND one of concept, predict-then-run, code, and P the exercise's
points (a code exercise's are shared evenly among its grader's checks; a
concept or predict-then-run exercise's are given by hand, by the rubric
in its answer: a paragraph opening *Rubric:* with what a full answer
holds and then *Common wrong answers:*).  N is the chapter's number
(chNN_ files) or A (the harness appendix).

  receipts  writes OUTDIR/exercises.json and exercises.txt in the shape of a
            chapter program's receipts: table "all" (one row per exercise)
            (exercise, kind, difficulty, time, points, practises), table
            "syllabus" (the course's weeks, see schedule()), table "chapters"
            (per chapter: counts by kind and by difficulty, time) and facts
            (counts per kind, totals, time_N per chapter N, the course and
            each project's weeks), for the instructors' page.
  check     prints "ok - ..." / "not ok - ..." per rule (make check-exercises):
            3-6 exercises per chapter numbered 1..k, at least one
            predict-then-run that runs the chapter's program and one code
            exercise, and for every code exercise a grader tests/grade_N_k.c,
            a file tests/ex_N_k.c, a starter, a solution and a wrong variant;
            and for every exercise an answer: a `::: {.solution}` div after
            its heading that starts a paragraph with **Answer N.k.** (or
            **Solution N.k.** for a code exercise); a predict-then-run
            answer splices at least one receipt ({{prog.key}}), the numbers
            a run printed, and every answer run it names is declared;
            every exercise declares its points and every hand-graded one
            has a rubric; the syllabus planned for the course (--weeks,
            --hours) sets every exercise and project inside the course's
            weeks and hours; and a self-test shows that these syllabus
            rules catch a plan broken five ways.
  code      prints "N.k FILE" for each code exercise (for prove-graders.sh).
  points    prints "N.k POINTS BY_PROGRAM" for each code exercise and project:
            its points, and the part of them its grader's checks give
            (for grade-all.sh).
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
HAND = ("concept", "predict-then-run")   # kinds read by hand, against a rubric
HEAD = re.compile(r"^### (?:Exercise|Project) (\w+)\.(\d+) · (\S+) · (\S)(?: · (\d+) points?)? "
                  r"\{#ex-(\w+)-(\d+)\}\s*$")
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
        chap, num, kind, mark, points, achap, anum = m.groups()
        para, k = [], n + 1
        while k < len(lines) and not lines[k].strip():
            k += 1
        while k < len(lines) and lines[k].strip():
            para.append(lines[k].strip())
            k += 1
        pm = PRACTISES.match(" ".join(para))
        ex = {"id": "%s.%s" % (chap, num), "chapter": chap, "number": int(num),
              "kind": kind, "mark": mark, "line": n + 1,
              "points": int(points) if points else 0,
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
        rule(e["points"] > 0, "%s: exercise %s declares its points (### ... · %s · N points {#...})"
             % (path, e["id"], e["mark"]))
        if e["kind"] in HAND:
            rule(has_rubric(e), "%s: hand-graded exercise %s has a rubric in its solution div "
                 "(*Rubric:* %d points. ... *Common wrong answers:* ...)" % (path, e["id"], e["points"]))
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


def has_rubric(e):
    """A hand-graded exercise's rubric: a paragraph of its answer (inside the
    solution div, so only the instructor's edition shows it) opening with
    "*Rubric:* P points." (P the heading's), what a full answer holds,
    point by point, then *Common wrong answers:*."""
    text = e["answer"] or ""
    at = text.find("\n*Rubric:* %d points." % e["points"])
    rest = " ".join(text[at:].split())
    return at >= 0 and "*Common wrong answers:*" in rest and len(rest.split()) >= 25


def program_points(e):
    """The points a program grades: a code exercise's all, a project's the
    share its rubric gives the grader's checks ("*Rubric:* 6 points for the
    grader's checks")."""
    if e["kind"] == "code":
        return e["points"]
    m = re.search(r"\*Rubric:\*\s+(\d+) points? for the grader's checks", e["section"])
    return int(m.group(1)) if m and e["kind"] == "project" else 0


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
        rule(0 < program_points(e) < e["points"],
             "%s: project %s's rubric gives the grader's checks part of its %d points"
             % (path, e["id"], e["points"]))
    out += check_answers(path, exs)
    out += check_graded(path, exs, text)
    return out


# ---------------------------------------------------------------- the syllabus
# A course of WEEKS weeks of HOURS hours of a student's time each.  A week
# holds, in the book's order, a chapter's reading (READ_MINUTES, the rule
# the instructors' page states) and its exercises at the time rule above,
# at most READ_PER_WEEK chapters a week (an appendix rides along);
# the harness appendix is read right after chapter APPENDIX_AFTER["A"], when
# the book first leans on it.  A project runs its milestones in consecutive
# weeks, one project at a time, its time shared evenly among them; it goes
# out in the first week after the chapters its *Practises* names are read.
COURSE_WEEKS, COURSE_HOURS = 14, 9   # the course declared (make COURSE_WEEKS=.. COURSE_HOURS=..)
READ_MINUTES = 90
READ_PER_WEEK = 2
APPENDIX_AFTER = {"A": 3}


def order_key(chap):
    if chap.isdigit():
        return (int(chap), 0)
    return (APPENDIX_AFTER.get(chap, 999), 1)


def project_needs(e):
    """The chapters a project builds on, from its *Practises* line."""
    m = re.search(r"chapters? (\d+(?:(?:, | and )\d+)*)", e["practises"])
    return [int(c) for c in re.findall(r"\d+", m.group(1))] if m else []


def project_parts(e):
    """A project's milestones, in order: (week's text, written part?)."""
    weeks = re.findall(r"\*Week (\d+):\*(.*?)(?=\*Week \d+:\*|\n\n)", e["section"], re.S)
    return [(" ".join(t.split()), "written part" in t) for _, t in weeks]


def syllabus_items(exercises):
    """(units, projects): units in reading order, each (chapter, [items]),
    an item (what, id, minutes) with what "read" or "set"; projects as
    (exercise, needs, parts)."""
    by_chap = {}
    for e in exercises:
        if e["kind"] != "project":
            by_chap.setdefault(e["chapter"], []).append(e)
    units = []
    for chap in sorted(by_chap, key=order_key):
        items = [("read", chap, READ_MINUTES)]
        items += [("set", e["id"], minutes(e)) for e in by_chap[chap]]
        units.append((chap, items))
    projects = [(e, project_needs(e), project_parts(e))
                for e in exercises if e["kind"] == "project"]
    return units, projects


def schedule(exercises, hours):
    """The weeks, a list of {"read": [chap], "set": [id], "project": [(id,
    part, of, written)], "minutes": m}, filled greedily: each week first
    takes the active project's milestone, then the next items in reading
    order while they fit in HOURS (an item that fits no week alone still
    takes a week of its own, over the budget, for the check to report)."""
    units, projects = syllabus_items(exercises)
    items = [(chap, it) for chap, its in units for it in its]
    cap = hours * 60
    weeks, read_in = {}, {}
    busy_until, queue, i, w = 0, list(projects), 0, 0

    def week(n):
        return weeks.setdefault(n, {"read": [], "set": [], "project": [], "minutes": 0})
    while i < len(items) or queue or w < busy_until:
        w += 1
        if w > 200:
            break
        this = week(w)
        if queue and w > busy_until:
            e, needs, parts = queue[0]
            if all(read_in.get(str(c), w) < w for c in needs):
                queue.pop(0)
                share = minutes(e) / max(1, len(parts))
                for k, (text, written) in enumerate(parts):
                    wk = week(w + k)
                    wk["project"].append((e["id"], k + 1, len(parts), written))
                    wk["minutes"] += share
                busy_until = w + len(parts) - 1
        placed = 0
        while i < len(items):
            chap, (what, ident, m) = items[i]
            if this["minutes"] + m > cap and (placed or this["minutes"]):
                break
            if what == "read" and chap.isdigit() and \
                    sum(c.isdigit() for c in this["read"]) >= READ_PER_WEEK:
                break
            this[what].append(ident)
            this["minutes"] += m
            if what == "read":
                read_in[chap] = w
            i, placed = i + 1, placed + 1
    return [weeks[n] for n in sorted(weeks)]


def verify_syllabus(exercises, weeks, n_weeks, hours):
    """The rules, each an (ok, what): every exercise set in exactly one
    week, after its chapter is read; every project's milestones, written
    part included, in consecutive weeks after the chapters it needs; the
    projects due in order; no week past the course's end or over its
    hours (summed again here from the rules, not from the schedule)."""
    out = []

    def rule(ok, what):
        out.append((bool(ok), what))
    by_id = {e["id"]: e for e in exercises}
    set_in, read_in, parts_in = {}, {}, {}
    for n, wk in enumerate(weeks, 1):
        for c in wk["read"]:
            read_in[c] = n
        for x in wk["set"]:
            set_in.setdefault(x, []).append(n)
        for pid, part, of, written in wk["project"]:
            parts_in.setdefault(pid, []).append((n, part, of, written))
    for e in exercises:
        if e["kind"] == "project":
            got = sorted(parts_in.get(e["id"], []), key=lambda t: t[1])
            want = len(project_parts(e))
            weeks_of = [t[0] for t in got]
            rule(want > 0 and [t[1] for t in got] == list(range(1, want + 1))
                 and weeks_of == list(range(weeks_of[0], weeks_of[0] + want))
                 and any(t[3] for t in got),
                 "syllabus: project %s's %d milestones (written part included) in %d "
                 "consecutive weeks" % (e["id"], want, want))
            start = weeks_of[0] if weeks_of else 0
            rule(all(read_in.get(str(c), 10 ** 6) < start for c in project_needs(e)),
                 "syllabus: project %s goes out after chapters %s are read"
                 % (e["id"], ", ".join(map(str, project_needs(e)))))
            continue
        rule(len(set_in.get(e["id"], [])) == 1, "syllabus: exercise %s is set in exactly one week"
             % e["id"])
        rule(read_in.get(e["chapter"], 10 ** 6) <= min(set_in.get(e["id"], [0])),
             "syllabus: exercise %s is set after its chapter is read" % e["id"])
    dues = [max(t[0] for t in parts_in[e["id"]]) for e in exercises
            if e["kind"] == "project" and e["id"] in parts_in]
    rule(dues == sorted(dues) and len(set(dues)) == len(dues),
         "syllabus: the projects are due in order (weeks %s)" % ", ".join(map(str, dues)))
    rule(len(weeks) <= n_weeks, "syllabus: %d weeks of work in a course of %d" % (len(weeks), n_weeks))
    for n, wk in enumerate(weeks, 1):
        m = READ_MINUTES * len(wk["read"]) + sum(minutes(by_id[x]) for x in wk["set"] if x in by_id)
        m += sum(minutes(by_id[p]) / of for p, part, of, written in wk["project"] if p in by_id)
        rule(m <= hours * 60 + 1e-6, "syllabus: week %d holds %s, within %d h" % (n, fmt_minutes(round(m)), hours))
    return out


def syllabus_self_test(exercises, n_weeks, hours):
    """The rules must catch a broken syllabus: an exercise left out, a
    project's written part left out, a week past the end, a week over its
    hours, projects due out of order.  Returns (ok, what) lines."""
    import copy
    weeks = schedule(exercises, hours)
    out = []
    breaks = []
    b = copy.deepcopy(weeks)
    victim = next(wk for wk in b if wk["set"])
    victim["set"].pop()
    breaks.append(("an exercise in no week", b, n_weeks))
    b = copy.deepcopy(weeks)
    for wk in b:
        wk["project"] = [p for p in wk["project"] if not p[3]]
    breaks.append(("a project's written part in no week", b, n_weeks))
    breaks.append(("a week past the course's end", copy.deepcopy(weeks), len(weeks) - 1))
    b = copy.deepcopy(weeks)
    b[0]["set"] += [x for wk in b[1:] for x in wk["set"]]
    for wk in b[1:]:
        wk["set"] = []
    breaks.append(("a week over its hours", b, n_weeks))
    b = copy.deepcopy(weeks)
    firsts = [i for i, wk in enumerate(b) if wk["project"]]
    if firsts:
        b.append({"read": [], "set": [], "project": [], "minutes": 0})
        pid = b[firsts[0]]["project"][0][0]
        for wk in b:
            wk["project"] = [p for p in wk["project"] if p[0] != pid]
        of = len([1 for wk in weeks for p in wk["project"] if p[0] == pid])
        b += [{"read": [], "set": [], "project": [(pid, k, of, k == of)], "minutes": 0}
              for k in range(1, of + 1)]
        breaks.append(("projects due out of order", b, len(b)))
    for what, broken, nw in breaks:
        caught = not all(ok for ok, _ in verify_syllabus(exercises, broken, nw, hours))
        out.append((caught, "syllabus self-test: %s is caught" % what))
    return out


# A range's dash is held to its ends by word joiners (U+2060), so that a
# narrow column (a phone's) breaks between ranges, never inside one.
RANGE_DASH = "\u2060\u2013\u2060"


def ranges(ids):
    """["4.3", "4.4", "5.1"] -> "4.3–4.4, 5.1" (the dash joined to its ends)."""
    out = []
    for x in ids:
        c, n = x.split(".")
        if out and out[-1][0] == c and out[-1][2] == int(n) - 1:
            out[-1][2] = int(n)
        else:
            out.append([c, int(n), int(n)])
    return ", ".join("%s.%d" % (c, a) if a == b else "%s.%d%s%s.%d" % (c, a, RANGE_DASH, c, b) for c, a, b in out)


def syllabus_table(weeks):
    rows = []
    for n, wk in enumerate(weeks, 1):
        read = ", ".join(wk["read"])
        proj = []
        for pid, part, of, written in wk["project"]:
            what = "out" if part == 1 else ("written part, due" if written and part == of
                                            else "due" if part == of else "week %d" % part)
            proj.append("%s %s" % (pid, what) + (" (written part)" if written and part < of else ""))
        rows.append([str(n), read, ranges(wk["set"]), "; ".join(proj), "%.1f" % (wk["minutes"] / 60)])
    return {"title": "The syllabus: the chapters to read, the exercises to set, the projects, "
                     "and the hours of a student's time, week by week",
            "columns": ["week", "read", "set", "project", "hours"], "rows": rows}


def collect(files):
    result = []
    for path in files:
        chap, stem = chapter_of(path)
        exs, problems, text = read(path)
        result.append((path, chap, stem, exs, problems, text))
    return result


def receipts(outdir, files, course=(COURSE_WEEKS, COURSE_HOURS)):
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
                         fmt_minutes(minutes(e)), str(e["points"]), e["practises"]])
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
    everything = [e for r in collect(files) if r[1] is not None for e in r[3]]
    for e in everything:
        facts["points_" + e["id"].replace(".", "_")] = str(e["points"])
    facts["points"] = str(sum(e["points"] for e in everything if e["kind"] != "project"))
    facts["points_projects"] = str(sum(e["points"] for e in everything if e["kind"] == "project"))
    facts["points_by_program"] = str(sum(program_points(e) for e in everything))
    facts["points_by_hand"] = str(sum(e["points"] - program_points(e) for e in everything))
    weeks = schedule(everything, course[1])
    facts["course_weeks"], facts["course_hours"] = str(course[0]), str(course[1])
    facts["syllabus_weeks"] = str(len(weeks))
    facts["read_minutes"], facts["read_per_week"] = str(READ_MINUTES), str(READ_PER_WEEK)
    for e in everything:
        if e["kind"] == "project":
            got = [n for n, wk in enumerate(weeks, 1) for p in wk["project"] if p[0] == e["id"]]
            u = e["id"].replace(".", "_")
            facts["out_" + u] = str(min(got)) if got else "?"
            facts["due_" + u] = str(max(got)) if got else "?"
            needs = [str(c) for c in project_needs(e)]
            facts["needs_" + u] = " and ".join(filter(None, [", ".join(needs[:-1])] + needs[-1:]))
    facts["syllabus_ok"] = "yes" if all(ok for ok, _ in verify_syllabus(
        everything, weeks, course[0], course[1])) else "no"
    table = {"title": "Every exercise of the book",
             "columns": ["exercise", "kind", "difficulty", "time", "points", "practises"],
             "rows": rows}
    by_chapter = {"title": "Exercises per chapter, by kind and difficulty",
                  "columns": ["chapter", "exercises", "concept", "predict-then-run", "code",
                              "project", "① easy", "② medium", "③ hard", "time"],
                  "rows": chapter_rows}
    text = ["Exercises: %s (%s concept, %s predict-then-run, %s code), about %s hours"
            % (facts["total"], facts["concept"], facts["predict_then_run"], facts["code"], facts["hours"])]
    for r in rows:
        text.append("  %-5s %-17s %-10s %-10s %-3s %s" % tuple(r[:6]))
    os.makedirs(outdir, exist_ok=True)
    text.append("")
    for r in chapter_rows:
        text.append("  chapter %-3s %s exercises: %s concept, %s predict-then-run, %s code, "
                    "%s project; %s easy, %s medium, %s hard; %s" % tuple(r))
    data = {"program": "exercises", "facts": facts,
            "tables": {"all": table, "chapters": by_chapter, "syllabus": syllabus_table(weeks)},
            "text": "\n".join(text) + "\n"}
    for name, body in (("exercises.json", json.dumps(data, ensure_ascii=False, indent=1) + "\n"),
                       ("exercises.txt", data["text"])):
        tmp = os.path.join(outdir, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, os.path.join(outdir, name))


def check(files, course=(COURSE_WEEKS, COURSE_HOURS)):
    failed = 0
    everything = [e for r in collect(files) if r[1] is not None for e in r[3]]
    weeks = schedule(everything, course[1])
    for ok, what in (verify_syllabus(everything, weeks, course[0], course[1])
                     + syllabus_self_test(everything, course[0], course[1])):
        print(("ok - " if ok else "not ok - ") + what)
        failed += not ok
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


def points(files):
    """Prints "N.k POINTS BY_PROGRAM" for every code exercise and project."""
    for path, chap, stem, exs, problems, text in collect(files):
        for e in exs:
            if e["kind"] in GRADED:
                print(e["id"], e["points"], program_points(e))
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
    course = [COURSE_WEEKS, COURSE_HOURS]
    for k, opt in enumerate(("--weeks", "--hours")):
        while opt in argv:
            at = argv.index(opt)
            try:
                course[k] = int(argv[at + 1])
            except (IndexError, ValueError):
                sys.stderr.write("exercises: %s takes a whole number\n" % opt)
                return 2
            if course[k] <= 0:
                sys.stderr.write("exercises: %s must be positive\n" % opt)
                return 2
            del argv[at:at + 2]
    if len(argv) >= 3 and argv[0] == "receipts":
        receipts(argv[1], argv[2:], tuple(course))
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1:], tuple(course))
    if len(argv) >= 3 and argv[0] == "runs":
        return runs(argv[1], argv[2:])
    if len(argv) >= 2 and argv[0] == "code":
        return code(argv[1:])
    if len(argv) >= 2 and argv[0] == "points":
        return points(argv[1:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
