#!/usr/bin/env python3
"""html-pages: cut pandoc's HTML of the whole book into one page per part.

    python3 chapters/tools/html-pages.py --out book --version 3eb8187 \
        --date "1 December 2026" .build/html/body.html

BODY is pandoc's HTML fragment (no template) of the woven book, made with
--katex (formulas left as TeX inside <span class="math ...">) and
--reference-location=section (each chapter's footnotes at its end).

* Maths is rendered here, at build time: every formula of the book goes to
  ONE node process (katex-render.js with Debian's KaTeX), so a page shows its
  maths without JavaScript.  A formula KaTeX cannot parse fails the build.
* The book is cut before every level-1 heading (`# Title {#id}` in a .nw
  file): the page is ID.html.  index.html is the title page with the whole
  table of contents.
* Every href="#x" is pointed at the page that holds id x.
* A chapter's closing parts, "The program" and "The tests", start folded:
  each becomes a <details> whose <summary> is its heading and a line
  saying what it holds and how many chunks.  Every id stays on the page,
  so links into a fold resolve; a few lines of inline script open the fold
  that holds a link's target (browsers without it: the reader opens the
  fold; Chromium also opens it on its own).
* Each page gets the same frame: a bar with the book's name and a Contents
  button (a checkbox and CSS, no script), the table of contents (a sidebar on
  wide screens, a menu on narrow ones; the current part lists its sections),
  and previous / next links above and below the text.

Old *.html files in OUT are removed first, so a part that left the book
leaves no page behind.  Python 3 standard library only.
"""

import argparse
import html
import json
import os
import re
import subprocess
import sys

PROG = "html-pages"

MATH = re.compile(r'<span\s+class="math (inline|display)">(.*?)</span>', re.S)
H1 = re.compile(r'<h1\b[^>]*?\bid="([^"]+)"[^>]*>(.*?)</h1>', re.S)
H2 = re.compile(r'<h2\b[^>]*?\bid="([^"]+)"[^>]*>(.*?)</h2>', re.S)
ID = re.compile(r'\bid="([^"]+)"')
HREF = re.compile(r'\bhref="#([^"]*)"')


def die(msg):
    sys.stderr.write("%s: error: %s\n" % (PROG, msg))
    sys.exit(1)


# ---------------------------------------------------------------- maths

def render_maths(body, katex_js, tools):
    """Replace every math span of BODY with KaTeX's rendering."""
    found = MATH.findall(body)
    unique = sorted({(html.unescape(tex), kind == "display") for kind, tex in found})
    if not unique:
        return body, 0
    script = os.path.join(tools, "katex-render.js")
    try:
        p = subprocess.run(["node", script, katex_js],
                           input=json.dumps(unique).encode("utf-8"),
                           stdout=subprocess.PIPE)
    except OSError as e:
        die("cannot run node (%s): install nodejs" % e.strerror)
    if p.returncode != 0:
        die("KaTeX could not render the formulas above")
    rendered = dict(zip(unique, json.loads(p.stdout.decode("utf-8"))))

    def repl(m):
        html_ = rendered[(html.unescape(m.group(2)), m.group(1) == "display")]
        return '<span class="math %s">%s</span>' % (m.group(1), html_)
    return MATH.sub(repl, body), len(found)


# ---------------------------------------------------------------- code

def drop_line_anchors(body):
    """pandoc gives every line of highlighted code an id and an empty link
    to itself; nothing links to them, and they are a sixth of a page's
    bytes.  The line spans stay (book.css styles them)."""
    body = re.sub(r'<a href="#[^"]*" aria-hidden="true" tabindex="-1"></a>', "", body)
    body = re.sub(r'<span id="(?:cb\d+-\d+|chunk-[A-Za-z0-9]+-\d+-L\d+)">', "<span>", body)
    return re.sub(r'(<div class="sourceCode") id="(?:cb\d+|chunk-[A-Za-z0-9]+-\d+-code)"',
                  r"\1", body)


def keep_option_names_whole(body):
    """A browser may break inline code after any hyphen, which leaves a
    lone "-" at the end of a line and "-cuda-info" on the next.  The
    leading dashes of an option and the word after them are kept on one
    line; the text, and so what a reader copies, is unchanged."""
    return re.sub(r'<code>(--?[A-Za-z0-9_]+)', r'<code><span class="nobr">\1</span>', body)


def scroll_tables(body):
    """Every table that is not a receipt's (those have their own box) goes
    in a box that scrolls sideways, caption and all, so that a wide table
    never widens the page on a phone."""
    out, pos = [], 0
    for m in re.finditer(r'<table\b.*?</table>', body, re.S):
        before = body[max(0, m.start() - 40):m.start()]
        out.append(body[pos:m.start()])
        if 'receipt-table' in before:
            out.append(m.group(0))
        else:
            out.append('<div class="table-scroll">' + m.group(0) + '</div>')
        pos = m.end()
    out.append(body[pos:])
    return "".join(out)


# ---------------------------------------------------------------- folds

# The closing parts of a chapter (chapters/README.md) and what each holds.
FOLDED = {
    "The program": "options, main, report code, figure data and scripts",
    "The tests": "the Criterion tests and the command-line tests",
}
H2_AT = re.compile(r'<h2\b[^>]*?\bid="([^"]+)"[^>]*>(.*?)</h2>', re.S)
CHUNK_DIV = re.compile(r'<div id="chunk-[^"]*" class="chunk"')
FOOTNOTES = re.compile(r'<section\b[^>]*class="footnotes')

# Opens the fold that holds the target of a link, on arrival and on a click
# within the page.  Progressive enhancement: without it the folds still open
# by hand.
OPEN_FOLD_SCRIPT = """<script>
(function () {
  function open(id) {
    for (var e = document.getElementById(id); e; e = e.parentElement)
      if (e.tagName === 'DETAILS') e.open = true;
  }
  function fromHash() { if (location.hash) open(decodeURIComponent(location.hash.slice(1))); }
  document.addEventListener('click', function (ev) {
    var a = ev.target.closest && ev.target.closest('a[href*="#"]');
    if (a && a.pathname === location.pathname) open(decodeURIComponent(a.hash.slice(1)));
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
</script>"""


def fold_closing_parts(body):
    """Wrap each "The program" / "The tests" part of a page (its heading up
    to the next level-2 heading, or the footnotes, or the end) in a
    <details> that starts closed.  Returns the body and the number of folds."""
    heads = list(H2_AT.finditer(body))
    out, at, folds = [], 0, 0
    for k, m in enumerate(heads):
        title = plain_heading(m.group(2))
        if title not in FOLDED:
            continue
        end = heads[k + 1].start() if k + 1 < len(heads) else len(body)
        foot = FOOTNOTES.search(body, m.end(), end)
        if foot:
            end = foot.start()
        inner = body[m.end():end]
        n = len(CHUNK_DIV.findall(inner))
        summary = ('<summary>%s<span class="fold-note">%s \u2014 %d chunk%s</span>'
                   '</summary>' % (m.group(0), FOLDED[title], n, "" if n == 1 else "s"))
        out.append(body[at:m.start()])
        out.append('<details class="closing-part">\n%s\n%s</details>\n'
                   % (summary, inner))
        at = end
        folds += 1
    out.append(body[at:])
    return "".join(out), folds


# ---------------------------------------------------------------- pages

class Page:
    def __init__(self, ident, title_html, body):
        self.id = ident
        self.file = ("%s.html" % ident) if ident != "index" else "index-part.html"
        self.title_html = title_html
        self.body = body
        self.ids = set(ID.findall(body))
        self.sections = [(i, t) for i, t in H2.findall(body)]


def split_pages(body):
    heads = list(H1.finditer(body))
    if not heads:
        die("no level-1 heading with an id: nothing to cut into pages")
    pages = []
    for k, m in enumerate(heads):
        start = 0 if k == 0 else m.start()
        end = heads[k + 1].start() if k + 1 < len(heads) else len(body)
        ident = m.group(1)
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", ident):
            die("heading id %r cannot name a page" % ident)
        pages.append(Page(ident, m.group(2), body[start:end]))
    seen = {}
    for p in pages:
        if p.id in seen:
            die("two parts share the heading id %r" % p.id)
        seen[p.id] = p
    return pages


def plain_heading(h):
    """A heading's HTML for the contents: links and ids dropped."""
    h = re.sub(r"</?a\b[^>]*>", "", h)
    return re.sub(r'\s+id="[^"]*"', "", h).strip()


def link_pages(pages):
    """Point every href="#x" at the page holding id x.  A link to a chapter
    this edition does not have yet (#chNN, as in "see chapter 9") loses its
    link and keeps its text; any other unknown target is left as it is (and
    check-html.py reports it).  Returns the targets not found."""
    where = {}
    for p in pages:
        for i in p.ids:
            where.setdefault(i, p)
    unresolved = []
    for p in pages:
        p.body = re.sub(r'<a\s+href="#(ch\d+)">(.*?)</a>',
                        lambda m: m.group(0) if m.group(1) in where else
                        (unresolved.append((p.file, m.group(1), "chapter not in this edition"))
                         or '<span class="missing-part">%s</span>' % m.group(2)),
                        p.body, flags=re.S)

        def repl(m, p=p):
            target = m.group(1)
            if target in p.ids:
                return m.group(0)
            q = where.get(target)
            if q is None:
                unresolved.append((p.file, target, "no such id in the book"))
                return m.group(0)
            if target == q.id:
                return 'href="%s"' % q.file
            return 'href="%s#%s"' % (q.file, target)
        p.body = HREF.sub(repl, p.body)
    return unresolved


# ---------------------------------------------------------------- frame

def toc(pages, current, full):
    """The contents as nested lists: every part; sections of the current
    part (of every part when FULL)."""
    out = ['<ol class="toc-parts">']
    for p in pages:
        cls = ' class="current"' if p is current else ""
        out.append('<li%s><a href="%s">%s</a>' % (cls, p.file, plain_heading(p.title_html)))
        if p.sections and (full or p is current):
            out.append('<ol class="toc-sections">')
            for ident, title in p.sections:
                href = ("#%s" % ident) if p is current else ("%s#%s" % (p.file, ident))
                out.append('<li><a href="%s">%s</a></li>' % (href, plain_heading(title)))
            out.append("</ol>")
        out.append("</li>")
    out.append("</ol>")
    return "\n".join(out)


def page_nav(pages, k):
    prev_ = pages[k - 1] if k > 0 else None
    next_ = pages[k + 1] if k + 1 < len(pages) else None
    left = ('<a class="prev" rel="prev" href="%s">\u2190 %s</a>'
            % (prev_.file, plain_heading(prev_.title_html))) if prev_ else \
        '<a class="prev" rel="prev" href="index.html">\u2190 Contents</a>'
    right = ('<a class="next" rel="next" href="%s">%s \u2192</a>'
             % (next_.file, plain_heading(next_.title_html))) if next_ else ""
    return ('<nav class="page-nav">%s<a class="up" href="index.html">Contents</a>%s</nav>'
            % (left, right))


def text_of(h):
    """Plain text of a heading for <title>; KaTeX's MathML copy dropped."""
    h = re.sub(r'<span class="katex-mathml">.*?</math></span>', "", h, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", h)).strip()


def frame(args, title, toc_html, main_html):
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="noweb, pandoc, KaTeX (rendered at build time)">',
        "<title>%s</title>" % html.escape(title),
        '<link rel="stylesheet" href="katex/katex.min.css">',
        '<link rel="stylesheet" href="book.css">',
        "</head>",
        "<body>",
        '<input type="checkbox" id="toc-toggle" class="toc-toggle">',
        '<header class="book-bar"><label for="toc-toggle" class="toc-button">'
        '\u2630 Contents</label> <a class="book-name" href="index.html">%s</a></header>'
        % html.escape(args.title),
        '<nav class="book-toc" aria-label="Contents">',
        '<p class="toc-head"><a href="index.html">%s</a></p>' % html.escape(args.title),
        toc_html,
        "</nav>",
        '<main class="book-main">',
        main_html,
        "</main>",
        "</body>",
        "</html>",
        ""])


def title_page(args, pages):
    version = html.escape(args.version or "unknown")
    parts = [
        '<header class="title-page">',
        '<h1 class="title">%s</h1>' % html.escape(args.title),
        '<p class="subtitle">%s</p>' % html.escape(args.subtitle),
        '<p class="edition">Version <code>%s</code> \u00b7 built %s</p>'
        % (version, html.escape(args.date)),
        "</header>",
        '<nav class="contents" aria-label="Table of contents">',
        "<h2>Contents</h2>",
        toc(pages, None, full=True),
        "</nav>",
        '<p class="pdf-note">The same book as a PDF, with page numbers: '
        "<code>book/flash-attention.pdf</code> (<code>make pdf</code>).</p>",
    ]
    first = ('<nav class="page-nav"><span></span><span></span>'
             '<a class="next" rel="next" href="%s">%s \u2192</a></nav>'
             % (pages[0].file, plain_heading(pages[0].title_html)))
    return frame(args, args.title, toc(pages, None, full=False), "\n".join(parts + [first]))


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder of the pages (book)")
    ap.add_argument("--title", default="Flash Attention, Exactly")
    ap.add_argument("--subtitle", default="A literate program in C and CUDA, for CPU cores, their AMX matrix units and GPUs")
    ap.add_argument("--version", default="unknown", help="the git commit the book was built from")
    ap.add_argument("--date", default="", help="the build date, as printed")
    ap.add_argument("--katex", default="/usr/share/javascript/katex/katex.min.js")
    ap.add_argument("body", help="pandoc's HTML fragment of the whole book")
    args = ap.parse_args(argv)

    with open(args.body, encoding="utf-8") as fh:
        body = fh.read()
    tools = os.path.dirname(os.path.abspath(__file__))
    body = drop_line_anchors(body)
    body = keep_option_names_whole(body)
    body = scroll_tables(body)
    body, nmath = render_maths(body, args.katex, tools)
    pages = split_pages(body)
    unresolved = link_pages(pages)
    for f, target, why in unresolved:
        sys.stderr.write("%s: warning: %s: link to #%s: %s\n" % (PROG, f, target, why))

    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if name.endswith(".html"):
            os.remove(os.path.join(args.out, name))
    for k, p in enumerate(pages):
        nav = page_nav(pages, k)
        body, folds = fold_closing_parts(p.body.strip())
        main_html = "\n".join([nav, body, nav] + ([OPEN_FOLD_SCRIPT] if folds else []))
        write(os.path.join(args.out, p.file),
              frame(args, "%s \u00b7 %s" % (text_of(p.title_html), args.title),
                    toc(pages, p, full=False), main_html))
    write(os.path.join(args.out, "index.html"), title_page(args, pages))
    sys.stderr.write("%s: %d pages and index.html, %d formulas rendered\n"
                     % (PROG, len(pages), nmath))
    return 0


if __name__ == "__main__":
    sys.exit(main())
