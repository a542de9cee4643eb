#!/usr/bin/env python3
"""noweb2md: weave noweb sources into one pandoc-Markdown document.

    python3 chapters/tools/noweb2md.py --receipts .build/receipts \
        -o .build/book.md chapters/front.nw chapters/ch01_x.nw ... chapters/back.nw

The files are given in book order.  The script runs noweb's own front end,
    /usr/lib/noweb/markup FILES | /usr/lib/noweb/finduses | /usr/lib/noweb/noidx
over all of them at once (so cross references span the book), reads the
resulting pipeline stream and writes pandoc Markdown:

* documentation chunks are passed through as pandoc Markdown; [[code]] quotes
  become inline code (a quoted identifier or chunk name links to its
  definition);
* every code chunk becomes one anchored fenced div (#chunk-2-7) holding a
  title "2.7 <name>=" or "2.9 <name>+=", the code as a fenced block with a
  highlighting class derived from the file its root is tangled to, and a
  small cross-reference block (continued in, continues, uses, used in / root,
  defines);
* an "Index of chunks" and an "Index of identifiers" close the document;
* identifiers link by language and scope (see Scopes below), not by name
  alone as noweb's finduses marks them: never inside a comment or a string
  literal, only to a definition in the same language family (C and CUDA
  together; shell; Python; gnuplot; make), a C `static` name, a `#define`,
  `typedef`, `enum` or `struct` of a .c file and every `main` only within
  their own file, a chapter program's functions only from that chapter's
  files, shell functions only within their script or from a script that
  sources it, Python and gnuplot names only within their file; the index
  of identifiers and the "uses"/"defines" lines list those links only;
* receipts are spliced into the prose: {{prog.key}}, {{prog.table.name}} and
  {{prog.text}} read .build/receipts/prog.json and prog.txt.  A missing
  receipt is an error (exit status 1), so a broken weave fails the build.

Chunk labels are "<prefix>.<n>": n counts the code chunks of one file from 1,
the prefix comes from the file name (chNN_ -> NN; the appendices: harness ->
A, app_*.nw -> B, C, ... in book order; front -> F; back -> Z, clear of the
appendix letters; anything else -> its stem).  Each file starts with an empty div
`::: {.nw-file prefix="2" kind="chapter"}` that the Lua filter book.lua uses
to number chapters (HTML) or to switch \\frontmatter, \\mainmatter, \\appendix
and \\backmatter (LaTeX).

The output is deterministic, and the output file is rewritten only when its
bytes change (like noweb's cpif), so make does not redo the pandoc steps.

Python 3 standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

NOWEB_LIB = os.environ.get("NOWEB_LIB", "/usr/lib/noweb")
PROG = "noweb2md"

# ---------------------------------------------------------------------------
# Errors


class WeaveError(Exception):
    pass


def die(msg):
    sys.stderr.write("%s: error: %s\n" % (PROG, msg))
    sys.exit(1)


# ---------------------------------------------------------------------------
# Running noweb's front end


def run_noweb(files):
    """Return the noweb pipeline stream for FILES (a list of lines)."""
    for f in files:
        if not os.path.isfile(f):
            die("%s: no such file" % f)
    stages = [
        [os.path.join(NOWEB_LIB, "markup")] + list(files),
        [os.path.join(NOWEB_LIB, "finduses")],
        [os.path.join(NOWEB_LIB, "noidx")],
    ]
    procs = []
    prev = None
    try:
        for argv in stages:
            p = subprocess.Popen(argv, stdin=prev.stdout if prev else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE)
            if prev is not None:
                prev.stdout.close()
            procs.append(p)
            prev = p
    except OSError as e:
        die("cannot run noweb (%s): %s" % (e.filename or "", e.strerror))
    out = procs[-1].stdout.read()
    procs[-1].stdout.close()
    codes = [p.wait() for p in procs]
    for argv, code in zip(stages, codes):
        if code != 0:
            die("noweb %s failed with status %d (see the message above)"
                % (os.path.basename(argv[0]), code))
    return out.decode("utf-8", errors="surrogateescape").split("\n")


# ---------------------------------------------------------------------------
# Parsing the stream


_appendix_letters = {}   # app_*.nw stem -> B, C, ... in the order first seen


def file_prefix(path):
    """Chapter label prefix derived from a file name."""
    stem = os.path.splitext(os.path.basename(path))[0]
    m = re.match(r"ch(\d+)(_|$)", stem)
    if m:
        return str(int(m.group(1))), "chapter"
    if stem.startswith("harness"):
        return "A", "appendix"
    if stem.startswith("app_"):   # further appendices follow the harness (A)
        letter = chr(ord("B") + len(_appendix_letters))
        return _appendix_letters.setdefault(stem, letter), "appendix"
    if stem.startswith("front"):
        return "P", "front"
    if stem.startswith("back"):
        return "Z", "back"
    return stem, "other"


class CodeChunk:
    def __init__(self, nwfile, index, line):
        self.file = nwfile
        self.index = index          # 1-based among the file's code chunks
        self.line = line            # source line of the <<name>>= line
        self.nwlabel = None         # noweb's label of this chunk
        self.name = None
        self.firstdef = None        # noweb label of the name's first definition
        self.nextdef = None
        self.prevdef = None
        self.otherdefs = []         # on a first definition: later definitions
        self.usedin = []            # on a first definition: chunks using the name
        self.notused = False
        self.lines = []             # list of lists of parts
        self.iddefs = []            # identifiers defined here (in order)
        self.iduses = {}            # identifier -> labels of chunks using it
        self.label = None           # "2.7"
        self.anchor = None          # "chunk-2-7"

    @property
    def is_first(self):
        return self.prevdef is None


class DocChunk:
    def __init__(self, nwfile):
        self.file = nwfile
        self.lines = []             # list of (line number, parts)


class NwFile:
    def __init__(self, name):
        self.name = name
        self.prefix, self.kind = file_prefix(name)
        self.chunks = []


class Stream:
    """The parsed pipeline stream."""

    def __init__(self):
        self.files = []
        self.by_label = {}          # noweb label -> CodeChunk
        self.chunk_index = []       # (name, label, [('defn'|'use', label)])
        self.ident_index = []       # (name, label, [('defn'|'use', label)])


def add_to_index(index, entry, event, arg):
    """Read one line of noidx's chunk index (@xref chunkbegin/chunkuse/chunkdefn)
    or identifier index (@index entrybegin/entryuse/entrydefn); EVENT is the
    part after the five-letter prefix.  'begin LABEL NAME' starts an entry of
    INDEX; 'use LABEL' and 'defn LABEL' add to ENTRY.  Returns the entry now
    being read."""
    if event == "begin":
        label, _, name = arg.partition(" ")
        entry = (name, label, [])
        index.append(entry)
    else:
        entry[2].append((event, arg))
    return entry


def parse_stream(lines):
    st = Stream()
    nwfile = None
    chunk = None           # current chunk (DocChunk or CodeChunk)
    cur = None             # current line's parts
    lineno = 1
    code_count = 0
    in_quote = None        # list of quote parts while inside @quote
    pending_ref = None     # last @xref ref label
    xref_mode = None       # 'defs' | 'uses' inside begindefs/beginuses
    index_mode = None      # 'defs' | 'uses'
    index_isused = []
    index_entry = None     # the entry of either index being read
    saw_defn_nl = False
    pending_ident = None

    def add_part(part):
        if in_quote is not None:
            in_quote.append(part)
        else:
            cur.append(part)

    for raw in lines:
        if not raw:
            continue
        if not raw.startswith("@"):
            raise WeaveError("unexpected noweb stream line: %r" % raw)
        key, _, rest = raw[1:].partition(" ")
        if key == "file":
            nwfile = NwFile(rest)
            st.files.append(nwfile)
            lineno = 1
            code_count = 0
        elif key == "begin":
            kind = rest.split(" ")[0]
            if kind == "docs":
                chunk = DocChunk(nwfile)
            else:
                code_count += 1
                chunk = CodeChunk(nwfile, code_count, lineno)
                saw_defn_nl = False
            cur = []
            xref_mode = None
            index_mode = None
        elif key == "end":
            if isinstance(chunk, DocChunk):
                if cur:
                    chunk.lines.append((lineno, cur))
            else:
                if cur and saw_defn_nl:
                    chunk.lines.append(cur)
            if chunk is not None and nwfile is not None:
                nwfile.chunks.append(chunk)
            chunk = None
            cur = None
        elif key == "text":
            if chunk is None:
                continue
            if pending_ident is not None and rest == pending_ident[0]:
                add_part(("ident", rest, pending_ident[1]))
            else:
                add_part(("text", rest))
            pending_ident = None
        elif key == "nl":
            if chunk is None:
                lineno += 1
                continue
            if isinstance(chunk, DocChunk):
                chunk.lines.append((lineno, cur))
            else:
                if saw_defn_nl:
                    chunk.lines.append(cur)
                saw_defn_nl = True
            cur = []
            lineno += 1
        elif key == "defn":
            chunk.name = rest
            if chunk.firstdef is None:
                chunk.firstdef = pending_ref
        elif key == "use":
            add_part(("use", rest, pending_ref))
            pending_ref = None
        elif key == "quote":
            in_quote = []
        elif key == "endquote":
            cur.append(("quote", in_quote))
            in_quote = None
        elif key == "xref":
            sub, _, arg = rest.partition(" ")
            if sub == "ref":
                pending_ref = arg
            elif sub == "label":
                if isinstance(chunk, CodeChunk) and chunk.nwlabel is None:
                    chunk.nwlabel = arg
                    st.by_label[arg] = chunk
            elif sub in ("begindefs", "beginuses"):
                xref_mode = sub[5:]
            elif sub in ("enddefs", "enduses"):
                xref_mode = None
            elif sub == "defitem" and xref_mode == "defs":
                chunk.otherdefs.append(arg)
            elif sub == "useitem" and xref_mode == "uses":
                chunk.usedin.append(arg)
            elif sub == "nextdef":
                chunk.nextdef = arg
            elif sub == "prevdef":
                chunk.prevdef = arg
            elif sub == "notused":
                chunk.notused = True
            elif sub in ("chunkbegin", "chunkuse", "chunkdefn"):
                index_entry = add_to_index(st.chunk_index, index_entry, sub[5:], arg)
        elif key == "index":
            sub, _, arg = rest.partition(" ")
            if sub == "nl":
                lineno += 1
            elif sub == "defn":
                if isinstance(chunk, CodeChunk):
                    chunk.iddefs.append(arg)
                pending_ref = None
            elif sub == "use":
                pending_ident = (arg, pending_ref)   # the next @text spells it
                pending_ref = None
            elif sub in ("begindefs", "beginuses"):
                index_mode = sub[5:]
                index_isused = []
            elif sub in ("enddefs", "enduses"):
                index_mode = None
            elif sub == "isused":
                index_isused.append(arg)
            elif sub == "defitem" and index_mode == "defs":
                chunk.iduses[arg] = index_isused
                index_isused = []
            elif sub in ("entrybegin", "entryuse", "entrydefn"):
                index_entry = add_to_index(st.ident_index, index_entry, sub[5:], arg)
        # other keys (header, trailer, fatal, literal, ...) are ignored
    return st


# ---------------------------------------------------------------------------
# Labels and languages


def assign_labels(st):
    for f in st.files:
        for c in f.chunks:
            if isinstance(c, CodeChunk):
                c.label = "%s.%d" % (f.prefix, c.index)
                c.anchor = "chunk-%s-%d" % (f.prefix, c.index)
                if c.nwlabel is None:         # stream without noidx labels
                    c.nwlabel = "%s:%d" % (f.name, c.index)
                    st.by_label[c.nwlabel] = c


LANG_BY_EXT = [
    (".cu", "cpp"), (".cuh", "cpp"), (".cpp", "cpp"), (".hpp", "cpp"), (".cc", "cpp"),
    (".c", "c"), (".h", "c"),
    (".sh", "bash"), (".bash", "bash"),
    (".py", "python"), (".mk", "makefile"), (".json", "json"), (".lua", "lua"),
    (".awk", "awk"), (".yml", "yaml"), (".yaml", "yaml"),
    (".gp", ""), (".gnuplot", ""), (".txt", ""), (".dat", ""), (".md", "markdown"),
]


def lang_of_root(name):
    base = os.path.basename(name)
    if base in ("Makefile", "makefile", "GNUmakefile"):
        return "makefile"
    for ext, lang in LANG_BY_EXT:
        if base.endswith(ext):
            return lang
    return None


def is_file_root(name):
    return "/" in name or re.search(r"\.[A-Za-z0-9]+$", name) is not None or \
        os.path.basename(name) in ("Makefile", "makefile")


def chunk_languages(st):
    """Highlighting class for every chunk name, from the root it ends up in."""
    parents = {}
    order = []
    for f in st.files:
        for c in f.chunks:
            if not isinstance(c, CodeChunk):
                continue
            if c.name not in parents:
                parents[c.name] = []
                order.append(c.name)
    for f in st.files:
        for c in f.chunks:
            if not isinstance(c, CodeChunk):
                continue
            for line in c.lines:
                for p in line:
                    if p[0] == "use":
                        lst = parents.setdefault(p[1], [])
                        if c.name not in lst:
                            lst.append(c.name)
    langs = {}
    for name in order:
        seen = {name}
        queue = [name]
        lang = None
        while queue and lang is None:
            n = queue.pop(0)
            ps = parents.get(n, [])
            if not ps:
                lang = lang_of_root(n)
            for p in ps:
                if p not in seen:
                    seen.add(p)
                    queue.append(p)
        langs[name] = "c" if lang is None else lang
    return langs



# ---------------------------------------------------------------------------
# Scopes: which definition an identifier in code refers to


FAMILY = {"c": "c", "cpp": "c", "bash": "sh", "python": "py", "": "gp", "makefile": "mk"}

# Lexical states of the code scanners: only CODE holds references.
CODE, COMMENT, LINE_COMMENT, STRING = "code", "comment", "line", "string"


class Lexer:
    """A small scanner for one language family: feed it the text of a chunk
    piece by piece; .state says whether the next character is code."""

    def __init__(self, family):
        self.family = family
        self.state = CODE
        self.quote = None        # the delimiter of the open string
        self.stack = []          # shell: "$(" inside double quotes
        self.prev = "\n"

    def feed(self, text):
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            nxt = text[i + 1] if i + 1 < n else ""
            st = self.state
            if ch == "\n":
                if st in (LINE_COMMENT,) or (st == STRING and self.family in ("c", "gp")):
                    self.state, self.quote = CODE, None
                self.prev = ch
                i += 1
                continue
            if st == CODE:
                i = self.code_char(text, i, ch, nxt)
                continue
            if st == LINE_COMMENT:
                pass
            elif st == COMMENT:
                if ch == "*" and nxt == "/":
                    self.state = CODE
                    i += 1
            elif st == STRING:
                q = self.quote
                if ch == "\\" and q != "'sh":
                    i += 1
                elif self.family == "sh" and q == '"' and ch == "$" and nxt == "(":
                    self.stack.append('"')
                    self.state, self.quote = CODE, None
                    i += 1
                elif q in ('"""', "\'\'\'") and text.startswith(q, i):
                    self.state, self.quote = CODE, None
                    i += 2
                elif q == "'sh" and ch == "'":
                    self.state, self.quote = CODE, None
                elif ch == q:
                    self.state, self.quote = CODE, None
            self.prev = text[i] if i < n else ch
            i += 1

    def code_char(self, text, i, ch, nxt):
        f = self.family
        if f == "c":
            if ch == "/" and nxt == "*":
                self.state = COMMENT
                return i + 2
            if ch == "/" and nxt == "/":
                self.state = LINE_COMMENT
                return i + 2
            if ch in "\"'":
                self.state, self.quote = STRING, ch
        elif f in ("sh", "py", "gp", "mk"):
            if ch == "#" and (f != "sh" or self.prev in " \t\n;(|&") and self.prev != "$":
                self.state = LINE_COMMENT
            elif f == "sh" and ch == ")" and self.stack:
                self.stack.pop()
                self.state, self.quote = STRING, '"'
            elif f == "py" and (text.startswith('"""', i) or text.startswith("\'\'\'", i)):
                self.state, self.quote = STRING, text[i:i + 3]
                self.prev = ch
                return i + 3
            elif f == "sh" and ch == "'" and self.prev != "\\":
                self.state, self.quote = STRING, "'sh"
            elif f in ("sh", "py", "gp") and ch in "\"'" and self.prev != "\\":
                self.state, self.quote = STRING, ch
        self.prev = ch
        return i + 1


def code_idents(chunk, family):
    """The positions (line index, part index) of the ident parts of CHUNK
    that stand in code, not in a comment or a string literal."""
    lex = Lexer(family)
    keep = set()
    for li, parts in enumerate(chunk.lines):
        for pi, p in enumerate(parts):
            if p[0] == "ident":
                if lex.state == CODE:
                    keep.add((li, pi))
                lex.feed(p[1])
            elif p[0] == "text":
                lex.feed(p[1])
            else:
                lex.feed("x")          # a chunk reference: code
        lex.feed("\n")
    return keep


def chunk_text(c):
    return "\n".join("".join(p[1] if p[0] in ("text", "ident") else "" for p in parts)
                     for parts in c.lines)


def file_private(c, name, family, roots):
    """True when NAME, as chunk C defines it, is visible only inside the
    files C is tangled into: a C `static` name, a macro, type or enum of a
    .c file (not a header), every `main`; Python, gnuplot and make names."""
    if family in ("py", "gp", "mk"):
        return True
    if family != "c":
        return False
    if name == "main":
        return True
    if roots and all(r.endswith((".h", ".cuh", ".hpp")) for r in roots):
        return False
    text = chunk_text(c)
    n = re.escape(name)
    pats = [r"\bstatic\b[^;{}\n]*\b%s\b" % n, r"^\s*#\s*define\s+%s\b" % n,
            r"\btypedef\b[^;]*\b%s\s*;" % n, r"\b(enum|struct|union)\s+%s\b" % n,
            r"\benum\b[^;]*\{[^}]*\b%s\b" % n, r"\}\s*%s\s*;" % n]
    return any(re.search(pt, text, re.M) for pt in pats)


def program_of(root):
    """The chapter a root file belongs to ("04" for tangled/ch04_tiled.c,
    tests/test_ch04_tiled.c and tests/grade_4_2.c), or None for the
    library (kernels/) and anything else."""
    m = re.match(r"(tangled|tests)/(test_)?ch(\d+)_", root)
    if m:
        return "%02d" % int(m.group(3))
    m = re.match(r"tests/(ex|grade)_(\d+)_\d+\.", root)
    if m:
        return "%02d" % int(m.group(2))
    return None


class Scopes:
    """Which chunk an identifier used in a code chunk refers to."""

    def __init__(self, st, langs):
        self.st = st
        self.langs = langs
        self.roots = chunk_roots(st)
        self.defs = {}                 # name -> defining chunks, in book order
        for f in st.files:
            for c in f.chunks:
                if isinstance(c, CodeChunk):
                    for name in c.iddefs:
                        self.defs.setdefault(name, []).append(c)
        self.sourced = {}
        self.sourced = self.sourced_scripts()
        self.includes = self.included_headers()
        self.private = {}

    def family(self, c):
        return FAMILY.get(self.langs.get(c.name, "c"), "other")

    def sourced_scripts(self):
        """Every shell root -> the shell roots it reads with `.` or `source`."""
        names = {r for rs in self.roots.values() for r in rs if r.endswith(".sh")}
        out = {}
        for f in self.st.files:
            for c in f.chunks:
                if isinstance(c, CodeChunk) and self.family(c) == "sh":
                    text = chunk_text(c)
                    for r in names:
                        b = re.escape(os.path.basename(r))
                        if re.search(r"(^|[;&|\s])(\.|source)\s+[^\n]*\b%s\b" % b, text, re.M):
                            for u in self.roots.get(c.name, set()):
                                out.setdefault(u, set()).add(r)
        return out

    def included_headers(self):
        """Every C root -> the base names of the headers it includes."""
        out = {}
        for f in self.st.files:
            for c in f.chunks:
                if isinstance(c, CodeChunk) and self.family(c) == "c":
                    names = set(re.findall(r'^\s*#\s*include\s+"([^"]+)"', chunk_text(c), re.M))
                    if names:
                        for r in self.roots.get(c.name, set()):
                            out.setdefault(r, set()).update(os.path.basename(n) for n in names)
        return out

    def is_private(self, d, name):
        key = (d.nwlabel, name)
        if key not in self.private:
            self.private[key] = file_private(d, name, self.family(d), self.roots.get(d.name, set()))
        return self.private[key]

    def visible(self, d, name, u):
        """Is NAME as chunk D defines it visible in chunk U?"""
        fam = self.family(d)
        if fam != self.family(u):
            return False
        droots = self.roots.get(d.name, set())
        uroots = self.roots.get(u.name, set())
        if droots & uroots:
            return True
        if self.is_private(d, name):
            # a file's own name is seen by the headers that file includes
            # after defining it (a macro the header's code expands)
            inc = set()
            for r in droots:
                inc |= self.includes.get(r, set())
            return any(os.path.basename(r) in inc for r in uroots)
        if fam == "sh":
            return any(droots & self.sourced.get(r, set()) for r in uroots)
        if fam == "c":
            progs = {program_of(r) for r in droots}
            if None in progs or not droots:
                return True            # the library, or a chunk of no file
            return bool(progs & {program_of(r) for r in uroots})
        return True

    def target(self, u, name):
        """The chunk defining NAME that a use in chunk U refers to: one
        sharing a file with U first, else the first visible one; None when
        U defines NAME itself or no definition is visible."""
        if name in u.iddefs:
            return None
        cands = [d for d in self.defs.get(name, []) if d is not u and self.visible(d, name, u)]
        if not cands:
            return None
        uroots = self.roots.get(u.name, set())
        for d in cands:
            if self.roots.get(d.name, set()) & uroots:
                return d
        return cands[0]


def chunk_roots(st):
    """Every chunk name -> the set of root names it is tangled into."""
    parents = {}
    for f in st.files:
        for c in f.chunks:
            if isinstance(c, CodeChunk):
                parents.setdefault(c.name, [])
                for line in c.lines:
                    for p in line:
                        if p[0] == "use":
                            lst = parents.setdefault(p[1], [])
                            if c.name not in lst:
                                lst.append(c.name)
    roots = {}
    for name in parents:
        seen, queue, found = {name}, [name], set()
        while queue:
            n = queue.pop()
            ps = parents.get(n, [])
            if not ps:
                found.add(n)
            for q in ps:
                if q not in seen:
                    seen.add(q)
                    queue.append(q)
        roots[name] = found
    return roots


# ---------------------------------------------------------------------------
# Markdown helpers

# Identifiers in code, marked for book.lua (see Weaver.code_text).
IDENT_OPEN, IDENT_MID, IDENT_CLOSE = "\ue000", "\ue001", "\ue002"

MD_SPECIAL = set("\\`*_[]<>$|#~^@{}")


def md_escape(s):
    out = []
    for ch in s:
        if ch in MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def md_code(s):
    """Inline code span for S."""
    if s == "":
        return ""
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return "%s%s%s%s%s" % (fence, pad, s, pad, fence)


def md_name(name):
    """A chunk name as Markdown: [[x]] inside it becomes code, the rest is literal."""
    out = []
    pos = 0
    for m in re.finditer(r"\[\[(.*?)\]\]", name):
        out.append(md_escape(name[pos:m.start()]))
        out.append(md_code(m.group(1)))
        pos = m.end()
    out.append(md_escape(name[pos:]))
    return "".join(out)


def plain_name(name):
    return re.sub(r"\[\[(.*?)\]\]", r"\1", name)


# ---------------------------------------------------------------------------
# Receipts

# {{chunk-defining:IDENT}} on a line of its own: a copy of the chunk that
# defines IDENT (see Weaver.example_chunk).
EXAMPLE = re.compile(r"\{\{chunk-defining:([A-Za-z_][A-Za-z0-9_]*)\}\}")
# {{tour: what the chapter does}} on a line of its own in a chapter: its
# phrase in the preface's tour, {{chapter-tour}} (Weaver.chapter_tour).
TOUR = re.compile(r"\{\{tour:\s*(.+?)\s*\}\}")
CHAPTER_TOUR = "{{chapter-tour}}"
PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_\-]*)\.([A-Za-z0-9_][A-Za-z0-9_.\-]*)\}\}")
NUMERIC = re.compile(
    r"^[-+\u2212]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?"
    r"\s*(%|x|\u00d7|[KMGTP]i?B|B|[KMGT]|ms|s|us|\u00b5s|ns|GB/s|GiB/s|TB/s|G?FLOP/s|ulps?)?$")


def looks_numeric(cell):
    c = cell.strip()
    if c in ("", "-", "\u2014", "\u2013", "n/a", "inf", "-inf", "nan", "NaN"):
        return None          # neutral
    return bool(re.search(r"\d", c)) and NUMERIC.match(c) is not None


class Receipts:
    def __init__(self, directory):
        self.dir = directory
        self.json = {}
        self.text = {}

    def _load_json(self, prog):
        if prog not in self.json:
            path = os.path.join(self.dir, prog + ".json")
            data = None
            if os.path.isfile(path):
                try:
                    with open(path, encoding="utf-8") as fh:
                        data = json.load(fh)
                except (OSError, ValueError) as e:
                    raise WeaveError("%s: cannot read receipts: %s" % (path, e))
                if not isinstance(data, dict):
                    raise WeaveError("%s: receipts are not a JSON object" % path)
            self.json[prog] = data
        return self.json[prog]

    def fact(self, prog, key):
        data = self._load_json(prog)
        if data is None:
            return None
        facts = data.get("facts") or {}
        if key not in facts:
            return None
        v = facts[key]
        if isinstance(v, str):
            return v
        if isinstance(v, bool) or v is None:
            return json.dumps(v)
        return str(v)

    def table(self, prog, name):
        data = self._load_json(prog)
        if data is None:
            return None
        return (data.get("tables") or {}).get(name)

    def whole_text(self, prog):
        if prog not in self.text:
            path = os.path.join(self.dir, prog + ".txt")
            t = None
            if os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    t = fh.read()
            self.text[prog] = t
        return self.text[prog]


def render_table(prog, name, tab, where):
    if not isinstance(tab, dict) or not isinstance(tab.get("columns"), list) \
            or not isinstance(tab.get("rows"), list):
        raise WeaveError("%s: receipt '%s.table.%s' is not a table with columns and rows"
                         % (where, prog, name))
    cols = [str(c) for c in tab["columns"]]
    rows = []
    for r in tab["rows"]:
        if not isinstance(r, list):
            raise WeaveError("%s: receipt '%s.table.%s' has a row that is not a list"
                             % (where, prog, name))
        cells = ["" if c is None else str(c) for c in r]
        if len(cells) != len(cols):
            raise WeaveError("%s: receipt '%s.table.%s' has a row of %d cells for %d columns"
                             % (where, prog, name, len(cells), len(cols)))
        rows.append(cells)
    if not cols:
        raise WeaveError("%s: receipt '%s.table.%s' has no columns" % (where, prog, name))
    right = []
    for j in range(len(cols)):
        verdicts = [looks_numeric(r[j]) for r in rows]
        verdicts = [v for v in verdicts if v is not None]
        right.append(bool(verdicts) and all(verdicts))

    def cell(s):
        return md_escape(s).replace("\n", " ") if s else " "
    head = [cell(c) for c in cols]
    body = [[cell(c) for c in r] for r in rows]
    widths = [max([len(head[j])] + [len(r[j]) for r in body] + [3]) for j in range(len(cols))]
    out = []
    out.append("| " + " | ".join(h.ljust(widths[j]) if not right[j] else h.rjust(widths[j])
                                 for j, h in enumerate(head)) + " |")
    seps = []
    for j in range(len(cols)):
        w = widths[j]
        seps.append("-" * (w + 1) + ":" if right[j] else "-" * (w + 2))
    out.append("|" + "|".join(seps) + "|")
    for r in body:
        out.append("| " + " | ".join(c.ljust(widths[j]) if not right[j] else c.rjust(widths[j])
                                     for j, c in enumerate(r)) + " |")
    title = tab.get("title")
    if title:
        out.append("")
        out.append("Table: " + md_escape(str(title)))
    return "\n".join(out)


def fenced(text, attrs):
    longest = max((len(m) for m in re.findall(r"^\s*(`{3,})", text, re.M)), default=0)
    fence = "`" * max(3, longest + 1)
    if not text.endswith("\n"):
        text += "\n"
    return "%s %s\n%s%s" % (fence, attrs, text, fence)


# ---------------------------------------------------------------------------
# Rendering


class Weaver:
    def __init__(self, st, receipts, mark_missing=False):
        self.st = st
        self.receipts = receipts
        self.mark_missing = mark_missing
        self.langs = chunk_languages(st)
        self.errors = []
        self.first_by_name = {}
        for f in st.files:
            for c in f.chunks:
                if isinstance(c, CodeChunk) and c.is_first and c.name not in self.first_by_name:
                    self.first_by_name[c.name] = c
        self.resolve_identifiers()

    def resolve_identifiers(self):
        """For every ident part of every code chunk, the chunk it links to
        (or None), by language and scope (Scopes); and for every definition,
        the chunks that really use it."""
        self.scopes = Scopes(self.st, self.langs)
        self.targets = {}           # (chunk label, line, part) -> defining chunk
        self.used_by = {}           # (defining chunk label, name) -> using chunks
        for f in self.st.files:
            for c in f.chunks:
                if not isinstance(c, CodeChunk):
                    continue
                incode = code_idents(c, self.scopes.family(c))
                for li, parts in enumerate(c.lines):
                    for pi, p in enumerate(parts):
                        if p[0] != "ident" or (li, pi) not in incode:
                            continue
                        d = self.scopes.target(c, p[1])
                        if d is None:
                            continue
                        self.targets[(c.nwlabel, li, pi)] = d
                        users = self.used_by.setdefault((d.nwlabel, p[1]), [])
                        if c not in users:
                            users.append(c)

    # -- links -------------------------------------------------------------

    def chunk(self, nwlabel):
        return self.st.by_label.get(nwlabel) if nwlabel else None

    def link(self, nwlabel):
        c = self.chunk(nwlabel)
        if c is None:
            return "?"
        return self.refs([c])

    def links(self, nwlabels, exclude=None):
        seen = []
        for lab in nwlabels:
            c = self.chunk(lab)
            if c is None or c is exclude or c in seen:
                continue
            seen.append(c)
        return self.refs(seen)

    @staticmethod
    def refs(chunks):
        """Links to CHUNKS by label, in a span of class nw-refs: the PDF
        (book.lua) prints them as page numbers."""
        if not chunks:
            return ""
        return "[%s]{.nw-refs}" % ", ".join("[%s](#%s)" % (c.label, c.anchor) for c in chunks)

    def ref_text(self, name, nwlabel):
        c = self.chunk(nwlabel) or self.first_by_name.get(name)
        return "\u27e8%s %s\u27e9" % (plain_name(name), c.label if c else "?")

    def ref_link(self, name, nwlabel):
        c = self.chunk(nwlabel) or self.first_by_name.get(name)
        if c is None:
            return "\u27e8%s\u27e9 (undefined)" % md_name(name)
        return "[\u27e8%s %s\u27e9](#%s)" % (md_name(name), c.label, c.anchor)

    # -- documentation -------------------------------------------------------

    def splice(self, text, where, whole_line):
        """Replace receipt placeholders in TEXT (one source line)."""
        def repl(m):
            prog, key = m.group(1), m.group(2)
            full = "%s.%s" % (prog, key)
            if self.mark_missing and not self.has_receipt(prog, key):
                if key == "text" or key.startswith("table."):
                    return "\n*[receipt %s missing]*\n" % md_escape(full)
                return "??"
            if key == "text":
                t = self.receipts.whole_text(prog)
                if t is None:
                    self.errors.append("%s: no receipt '%s'" % (where, full))
                    return m.group(0)
                if not whole_line:
                    self.errors.append("%s: receipt '%s' must stand on a line of its own"
                                       % (where, full))
                    return m.group(0)
                return "\n" + fenced(t, "{.receipt}") + "\n"
            if key.startswith("table."):
                name = key[len("table."):]
                tab = self.receipts.table(prog, name)
                if tab is None:
                    self.errors.append("%s: no receipt '%s'" % (where, full))
                    return m.group(0)
                if not whole_line:
                    self.errors.append("%s: receipt '%s' must stand on a line of its own"
                                       % (where, full))
                    return m.group(0)
                try:
                    return ("\n::: {.receipt-table}\n" + render_table(prog, name, tab, where)
                            + "\n:::\n")
                except WeaveError as e:
                    self.errors.append(str(e))
                    return m.group(0)
            v = self.receipts.fact(prog, key)
            if v is None:
                self.errors.append("%s: no receipt '%s'" % (where, full))
                return m.group(0)
            return v
        try:
            return PLACEHOLDER.sub(repl, text)
        except WeaveError as e:
            self.errors.append(str(e))
            return text

    def has_receipt(self, prog, key):
        if key == "text":
            return self.receipts.whole_text(prog) is not None
        if key.startswith("table."):
            return self.receipts.table(prog, key[len("table."):]) is not None
        return self.receipts.fact(prog, key) is not None

    def quote(self, parts, nwfile=None):
        texts = [p for p in parts if not (p[0] == "text" and p[1].strip() == "")]
        if len(texts) == 1 and texts[0][0] == "use":
            return self.ref_link(texts[0][1], texts[0][2])
        s = "".join(p[1] if p[0] in ("text", "ident") else self.ref_text(p[1], p[2])
                    for p in parts)
        if len(texts) == 1 and texts[0][0] == "ident":
            # a name in the prose: its definition in this file if there is one
            here = [d for d in self.scopes.defs.get(texts[0][1], []) if d.file is nwfile]
            c = here[0] if here else self.chunk(texts[0][2])
            if c is not None:
                return "[%s](#%s)" % (md_code(s.strip()), c.anchor)
        return md_code(s.strip() if s.strip() else s)

    def chapter_tour(self):
        """The preface's tour of the chapters, one clause per chapter in book
        order: "chapter N" (linked) and the phrase of the chapter's own
        {{tour: ...}} line, or its title where it has none; so a new
        chapter joins the tour by itself."""
        clauses = []
        for f in self.st.files:
            if f.kind != "chapter":
                continue
            title, anchor, phrase = None, None, None
            for ch in f.chunks:
                if not isinstance(ch, DocChunk):
                    continue
                for _, parts in ch.lines:
                    text = "".join(p[1] for p in parts if p[0] == "text").strip()
                    h = re.fullmatch(r"#\s+(.*?)\s*\{#([A-Za-z0-9_-]+)[^}]*\}", text)
                    if h and title is None:
                        title, anchor = h.group(1), h.group(2)
                    t = TOUR.fullmatch(text)
                    if t and phrase is None:
                        phrase = t.group(1)
            name = "[chapter %s](#%s)" % (f.prefix, anchor) if anchor else "chapter %s" % f.prefix
            clauses.append("%s %s" % (name, phrase) if phrase else
                           "%s, *%s*" % (name, title or f.name))
        if not clauses:
            return ""
        clauses[0] = clauses[0].replace("chapter", "Chapter", 1)
        if len(clauses) == 1:
            return clauses[0] + "."
        return "; ".join(clauses[:-1]) + "; and " + clauses[-1] + "."

    def example_chunk(self, ident, where):
        """A copy of the chunk that defines IDENT, shown as an example (the
        preface's "Reading a chunk"): the same title, code and cross
        references as the real one, without its anchor."""
        for f in self.st.files:
            for c in f.chunks:
                if isinstance(c, CodeChunk) and ident in c.iddefs:
                    return "\n" + self.code_chunk(c, example=True) + "\n"
        self.errors.append("%s: {{chunk-defining:%s}}: no chunk defines %s"
                           % (where, ident, ident))
        return ""

    def doc_chunk(self, ch):
        out = []
        for lineno, parts in ch.lines:
            where = "%s:%d" % (ch.file.name, lineno)
            texts = [p[1] for p in parts if p[0] == "text"]
            whole = len(texts) == len(parts) and "".join(texts).strip()
            m = whole and EXAMPLE.fullmatch(whole)
            if m:
                out.append(self.example_chunk(m.group(1), where))
                continue
            if whole and TOUR.fullmatch(whole):
                continue
            if whole == CHAPTER_TOUR:
                out.append(self.chapter_tour())
                continue
            line = []
            for p in parts:
                if p[0] == "text":
                    line.append(self.splice(p[1], where,
                                            whole_line=bool(whole) and
                                            PLACEHOLDER.fullmatch(whole) is not None))
                elif p[0] == "quote":
                    line.append(self.quote(p[1], ch.file))
                elif p[0] == "use":        # a chunk name outside [[...]] (noweb allows it)
                    line.append(self.ref_link(p[1], p[2]))
                elif p[0] == "ident":
                    line.append(p[1])
            out.append("".join(line))
        return "\n".join(out)

    # -- code ----------------------------------------------------------------

    def ident_target(self, c, li, pi):
        """The chunk that the identifier at part PI of line LI of chunk C
        refers to, or None (C defines it, it stands in a comment or a
        string, or no definition in its language and scope exists)."""
        return self.targets.get((c.nwlabel, li, pi))

    def code_text(self, c):
        """C's code; a chunk reference is written "<name 2.3>" and an
        identifier defined elsewhere IDENT_OPEN name IDENT_MID anchor
        IDENT_CLOSE (private-use characters that book.lua turns into links)."""
        lines = []
        for li, parts in enumerate(c.lines):
            s = []
            for pi, p in enumerate(parts):
                if p[0] == "text":
                    s.append(p[1])
                elif p[0] == "ident":
                    d = self.ident_target(c, li, pi)
                    s.append(p[1] if d is None else
                             IDENT_OPEN + p[1] + IDENT_MID + d.anchor + IDENT_CLOSE)
                elif p[0] == "use":
                    s.append(self.ref_text(p[1], p[2]))
            lines.append("".join(s))
        while lines and lines[-1].strip() == "":
            lines.pop()
        return "\n".join(lines)

    def code_chunk(self, c, example=False):
        first = self.first_by_name.get(c.name)
        is_first = c.is_first
        sym = "\u2261" if is_first else "+\u2261"
        title = "[%s]{.chunk-label} [\u27e8%s\u27e9%s]{.chunk-name}" % (
            c.label, md_name(c.name), sym)
        lang = self.langs.get(c.name, "c")
        code = self.code_text(c)
        cls = "{.%s}" % lang if lang else "{.code}"

        xref = []
        if is_first:
            if c.otherdefs:
                xref.append("Continued in %s." % self.links(c.otherdefs, exclude=c))
        else:
            prev = self.link(c.firstdef) if c.firstdef else "?"
            line = "Continues %s" % prev
            if c.nextdef:
                line += "; continued in %s" % self.link(c.nextdef)
            xref.append(line + ".")
        uses = []
        for parts in c.lines:
            for p in parts:
                if p[0] == "use":
                    r = self.ref_link(p[1], p[2])
                    if r not in uses:
                        uses.append(r)
        if uses:
            xref.append("Uses %s." % ", ".join(uses))
        idents = []
        for li, parts in enumerate(c.lines):
            for pi, p in enumerate(parts):
                if p[0] == "ident":
                    d = self.ident_target(c, li, pi)
                    if d is not None and (p[1], d) not in idents:
                        idents.append((p[1], d))
        if idents:
            # each item a span: the reader's PDF drops those whose definition
            # it leaves out (book.lua)
            xref.append("[Uses identifiers %s.]{.xr-idents}" % ", ".join(
                "[%s %s]{.xr-item}" % (md_code(name), self.refs([d])) for name, d in idents))
        if is_first:
            if c.usedin:
                xref.append("Used in %s." % self.links(c.usedin))
            else:
                if is_file_root(c.name):
                    xref.append("Root: written to %s." % md_code(c.name))
                else:
                    xref.append("Root (not used in any chunk).")
        if c.iddefs:
            ds = []
            for ident in c.iddefs:
                used = self.refs([u for u in self.used_by.get((c.nwlabel, ident), [])
                                  if u is not c])
                ds.append("[%s%s]{.xr-item}" % (
                    md_code(ident), " [(used in %s)]{.xr-usedin}" % used if used else ""))
            # the reader's PDF prints the names only (book.lua)
            xref.append("[Defines %s.]{.xr-defines}" % ", ".join(ds))

        out = []
        if example:
            out.append(":::: {.chunk .chunk-example label=\"%s\"}" % c.label)
        else:
            out.append(":::: {#%s .chunk label=\"%s\"}" % (c.anchor, c.label))
        out.append("::: chunk-title")
        out.append(title)
        out.append(":::")
        out.append("")
        out.append(fenced(code + "\n" if code else "", cls))
        if xref:
            out.append("")
            out.append("::: chunk-xref")
            out.append("\\\n".join(xref))
            out.append(":::")
        out.append("::::")
        return "\n".join(out)

    # -- indexes -------------------------------------------------------------

    def defined_and_used_in(self, items):
        """'defined in 2.1, 2.3' and 'used in 4.2' for an index entry's items
        (those that have labels)."""
        parts = []
        for kind, verb in (("defn", "defined in"), ("use", "used in")):
            labels = [l for k, l in items if k == kind]
            if labels:
                parts.append("%s %s" % (verb, self.links(labels)))
        return parts

    def chunk_index(self):
        entries = []
        for name, lab, items in self.st.chunk_index:
            first = self.chunk(lab) or self.first_by_name.get(name)
            text = "\u27e8%s\u27e9" % md_name(name)
            if first is not None:
                text = "[%s](#%s)" % (text, first.anchor)
            parts = self.defined_and_used_in(items)
            if is_file_root(name) and all(k != "use" for k, _ in items):
                parts.append("written to %s" % md_code(name))
            entries.append(((plain_name(name).lower(), name),
                            "- %s: %s." % (text, "; ".join(parts) if parts else "undefined")))
        entries.sort()
        return [e for _, e in entries]

    def ident_index(self):
        """One entry per identifier: the chunks defining it and the chunks
        whose code really uses one of those definitions (Scopes)."""
        entries = []
        order = {c.nwlabel: i for i, c in enumerate(self.code_chunks())}
        for name, defs in self.scopes.defs.items():
            users = []
            for d in defs:
                for u in self.used_by.get((d.nwlabel, name), []):
                    if u not in users and u not in defs:
                        users.append(u)
            users.sort(key=lambda u: order.get(u.nwlabel, 0))
            parts = ["defined in %s" % self.refs(defs)]
            if users:
                parts.append("used in %s" % self.refs(users))
            entries.append(((name.lower(), name), "- %s: %s." % (
                md_code(name), "; ".join(parts) if users else parts[0] + "; never used")))
        entries.sort()
        return [e for _, e in entries]

    def code_chunks(self):
        if not hasattr(self, "_code_chunks"):
            self._code_chunks = [c for f in self.st.files for c in f.chunks
                                 if isinstance(c, CodeChunk)]
        return self._code_chunks

    # -- document ------------------------------------------------------------

    def document(self):
        out = []
        for f in self.st.files:
            out.append("::: {.nw-file file=\"%s\" prefix=\"%s\" kind=\"%s\"}\n:::"
                       % (f.name.replace("\\", "/").replace('"', ""), f.prefix, f.kind))
            for ch in f.chunks:
                if isinstance(ch, DocChunk):
                    out.append(self.doc_chunk(ch))
                else:
                    out.append(self.code_chunk(ch))
        out.append("::: {.nw-file file=\"\" prefix=\"\" kind=\"index\"}\n:::")
        out.append("# Index of chunks {#index-of-chunks .unnumbered .complete}")
        ci = self.chunk_index()
        out.append("::: {.nw-index .chunk-index}\n" + ("\n".join(ci) if ci else "No chunks.") + "\n:::")
        out.append("# Index of identifiers {#index-of-identifiers .unnumbered .complete}")
        ii = self.ident_index()
        out.append("::: {.nw-index .ident-index}\n" + ("\n".join(ii) if ii else "No identifiers.") + "\n:::")
        text = "\n\n".join(out)
        text = re.sub(r"\n{3,}", "\n\n", text)
        return text.strip("\n") + "\n"


# ---------------------------------------------------------------------------


def write_if_changed(path, text):
    data = text.encode("utf-8", errors="surrogateescape")
    if path == "-":
        sys.stdout.buffer.write(data)
        return
    try:
        with open(path, "rb") as fh:
            if fh.read() == data:
                return
    except OSError:
        pass
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Weave noweb sources into one pandoc Markdown document.")
    ap.add_argument("--receipts", default=".build/receipts",
                    help="directory holding PROG.json and PROG.txt receipts")
    ap.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    ap.add_argument("--mark-missing", action="store_true",
                    help="preview only: show a missing receipt as ?? instead of failing")
    ap.add_argument("files", nargs="+", help="noweb sources in book order")
    args = ap.parse_args(argv)

    lines = run_noweb(args.files)
    try:
        st = parse_stream(lines)
        assign_labels(st)
        w = Weaver(st, Receipts(args.receipts), mark_missing=args.mark_missing)
        text = w.document()
    except WeaveError as e:
        die(str(e))
    if w.errors:
        for e in w.errors:
            sys.stderr.write("%s: error: %s\n" % (PROG, e))
        if len(w.errors) > 1:
            sys.stderr.write("%s: %d errors; %s not written\n" % (PROG, len(w.errors), args.output))
        sys.exit(1)
    write_if_changed(args.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
