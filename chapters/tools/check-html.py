#!/usr/bin/env python3
"""check-html: open every page of the HTML book and check what a reader meets.

    python3 chapters/tools/check-html.py book [--rendered] [--aux .build/pdf-aux/book.aux]
    python3 chapters/tools/check-html.py --self-test

For every BOOK/*.html page it asserts, printing one `ok - ...` or
`not ok - ...` line per check (the format of tests/cli_*.sh, which
chapters/tools/summary.sh counts):

* links: every internal link resolves: href="#x" names an id of the same
  page, href="page.html#x" (or "page.html") names a page of the book and an
  id on it, any other relative href or src names a file that exists;
* images: every <img src> is a file that exists;
* maths: no raw TeX is left in the text a reader sees (outside code, pre,
  KaTeX's MathML and script/style): no $...$, no \\frac, \\ell, \\( ...;
  the same for alt and title attributes;
* ids: no id appears twice on a page;
* frame: every page but index.html carries the contents and previous / next
  links; index.html links to every page;
* identifiers: every link from a name in code (a.ident) lands on a chunk
  that defines that name (its "Defines" line), in the same language family
  (C with CUDA, shell, Python, gnuplot), and no such link stands inside a
  comment or a string literal (the highlighter's co, st, ... spans);
* numbers: with --aux (the PDF's LaTeX .aux), the figures and tables of the
  pages, in book order, carry the numbers the PDF gives them (figures and
  tables compared each in their own order: LaTeX may float a figure past a
  table).

* rendered (--rendered, where headless Chromium is installed; otherwise one
  skipped line): each page laid out 412 px wide, a phone, with its folds
  open, does not scroll sideways; nothing reaches past the screen's edges
  except inside a box that scrolls sideways (code, tables, maths, figures);
  every figure is drawn at 80% of its natural size or more.

--self-test runs the checks on a small sample book, sound and then broken
in six ways, and asserts that each break is caught.
Exit status 1 when any check fails.  Python 3 standard library only.
"""

import html.parser
import os
import re
import sys
from urllib.parse import unquote, urlsplit

SKIP_TEXT = {"code", "pre", "script", "style", "math", "annotation", "kbd", "samp"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "param", "source", "track", "wbr"}
FLOAT_NUMBER = re.compile(r'<span class="float-number">(Figure|Table) ([^:<]*):</span>')
AUX_FLOAT = re.compile(r"\\contentsline \{(figure|table)\}\{\\numberline \{([^}]*)\}")
RAW_TEX = re.compile(r"\$[^$\s][^$]*\$|\\[A-Za-z]{2,}|\\[()\[\]{}]")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = []
        self.links = []          # (tag, attribute value)
        self.images = []
        self.tex = []            # raw TeX found in visible text
        self.classes = set()
        self.stack = []          # open elements that hide their text
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        for c in (a.get("class") or "").split():
            self.classes.add(c)
        if tag in ("a", "link") and a.get("href") is not None:
            self.links.append((tag, a["href"]))
        if tag == "img":
            self.images.append(a.get("src") or "")
        for key in ("alt", "title"):
            v = a.get(key)
            if v and RAW_TEX.search(v):
                self.tex.append("%s=%r" % (key, v[:60]))
        if tag in VOID:
            return
        hides = tag in SKIP_TEXT or "katex-mathml" in (a.get("class") or "").split()
        self.stack.append((tag, hides))
        if hides:
            self.skip += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        # close up to the matching element (tolerates unclosed <p> etc.)
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                for _, hides in self.stack[k:]:
                    if hides:
                        self.skip -= 1
                del self.stack[k:]
                return

    def handle_data(self, data):
        if self.skip == 0:
            for m in RAW_TEX.finditer(data):
                self.tex.append(repr(data[max(0, m.start() - 20):m.end() + 20]))


# Highlighter classes of comments and string literals (pandoc's skylighting).
NOT_CODE = {"co", "cv", "do", "an", "in", "wa", "st", "vs", "ch"}
FAMILY = {"c": "c", "cpp": "c", "bash": "sh", "python": "py", "makefile": "mk"}


class Idents(html.parser.HTMLParser):
    """The chunks of one page (language, names defined) and its links from
    names in code."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks = {}         # id -> {"lang": family, "defines": set()}
        self.links = []          # (chunk id, href, name, classes around it)
        self.chunk = None
        self.spans = []
        self.xref = 0            # depth inside a chunk-xref div
        self.divs = []
        self.xref_text = []
        self.in_code = False
        self.link = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "div":
            if "chunk" in cls:       # a chunk, or the preface's copy of one
                self.chunk = a.get("id") or "example-%d" % len(self.chunks)
                self.chunks[self.chunk] = {"lang": None, "defines": set()}
            self.divs.append("chunk-xref" in cls)
            if "chunk-xref" in cls:
                self.xref_text = []
        elif tag in ("code", "pre") and self.chunk and self.chunks[self.chunk]["lang"] is None:
            if "sourceCode" in cls and len(cls) > 1:
                self.chunks[self.chunk]["lang"] = FAMILY.get(cls[-1], cls[-1])
            elif tag == "pre" and "code" in cls:
                self.chunks[self.chunk]["lang"] = "gp"
        elif tag == "span":
            self.spans.append(set(cls))
        elif tag == "a" and "ident" in cls:
            self.link = [self.chunk, a.get("href") or "", "",
                         set().union(*self.spans) if self.spans else set()]
        if tag == "code" and any(self.divs):
            self.in_code = True
            self.xref_text.append("\x00")

    def handle_endtag(self, tag):
        if tag == "span" and self.spans:
            self.spans.pop()
        elif tag == "a" and self.link is not None:
            self.links.append(tuple(self.link))
            self.link = None
        elif tag == "code" and self.in_code:
            self.in_code = False
            self.xref_text.append("\x01")
        elif tag == "div" and self.divs:
            if self.divs.pop() and self.chunk:
                text = "".join(self.xref_text)
                at = text.find("Defines ")
                if at >= 0:
                    self.chunks[self.chunk]["defines"] |= set(
                        re.findall("\x00([^\x01]*)\x01", text[at:]))

    def handle_data(self, data):
        if self.link is not None:
            self.link[2] += data
        if any(self.divs):
            self.xref_text.append(data)


def check_idents(root, names, report):
    """Every link from a name in code lands on a definition of that name in
    the same language family, and none stands in a comment or a string."""
    pages = {}
    for name in names:
        p = Idents()
        with open(os.path.join(root, name), encoding="utf-8") as fh:
            p.feed(fh.read())
        p.close()
        pages[name] = p
    for name in names:
        p = pages[name]
        bad = []
        for chunk, href, ident, around in p.links:
            u = urlsplit(href)
            q = pages.get(unquote(u.path) or name)
            target = q.chunks.get(unquote(u.fragment)) if q else None
            lang = p.chunks.get(chunk, {}).get("lang")
            if target is None:
                bad.append("%s in %s -> %s: not a chunk" % (ident, chunk, href))
            elif ident not in target["defines"]:
                bad.append("%s in %s -> %s, which does not define it" % (ident, chunk, href))
            elif target["lang"] != lang:
                bad.append("%s in %s (%s) -> %s, a %s definition"
                           % (ident, chunk, lang, href, target["lang"]))
            elif around & NOT_CODE:
                bad.append("%s in %s -> %s: inside a comment or a string"
                           % (ident, chunk, href))
        if p.links or bad:
            report(not bad, "%s: %d links from names in code land on a definition of "
                   "that name in that language" % (name, len(p.links) - len(bad)), bad)


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as fh:
        p.feed(fh.read())
    p.close()
    return p


def book_order(root, index):
    """The pages in the order index.html's contents list them."""
    order = []
    for _, href in index.links:
        path = urlsplit(href).path
        if path.endswith(".html") and path != "index.html" and path not in order:
            order.append(path)
    return order


def float_numbers(root, order):
    out = []
    for name in order:
        with open(os.path.join(root, name), encoding="utf-8") as fh:
            out += [(k.lower(), n) for k, n in FLOAT_NUMBER.findall(fh.read())]
    return out


SELF_TEST_PAGES = {
    "index.html": '<p><a href="a.html">A</a> <a href="b.html">B</a></p>',
    "a.html": '<nav class="book-toc"></nav><nav class="page-nav"></nav>'
              '<h1 id="a">A</h1><p><a href="b.html#there">ok</a> <a href="#a">ok</a></p>'
              '<p><code>$kept$ \\frac</code> <code><span class="nobr">--flag</span>-name</code></p>',
    "b.html": '<nav class="book-toc"></nav><nav class="page-nav"></nav>'
              '<h1 id="b">B</h1><p id="there"><img src="fig/x.svg" alt="x"></p>',
}
SELF_TEST_BREAKS = [
    ("a link to a missing id", "a.html", 'b.html#there', 'b.html#nowhere'),
    ("a link to a missing page", "a.html", 'b.html#there', 'c.html#there'),
    ("a missing image", "b.html", 'fig/x.svg', 'fig/y.svg'),
    ("raw TeX in the text", "a.html", '<p><a', '<p>$x^2$ <a'),
    ("a TeX command in the text", "a.html", '<p><a', '<p>\\frac{a}{b} <a'),
    ("a duplicate id", "b.html", '<p id="there">', '<p id="there"><span id="there"></span>'),
    ("an option name that may break after its first dash", "a.html",
     '<code><span class="nobr">--flag</span>-name</code>', '<code>--flag-name</code>'),
]


def self_test():
    """The checks can fail: a small book passes, and each break of it fails."""
    import contextlib
    import io
    import tempfile

    def run(pages):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "fig"))
            open(os.path.join(d, "fig", "x.svg"), "w").close()
            for name, text in pages.items():
                with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
                    fh.write(text)
            with contextlib.redirect_stdout(io.StringIO()):
                return main(["check-html.py", d])
    failed = 0
    good = run(SELF_TEST_PAGES) == 0
    print("%s - self-test: a sound sample book passes" % ("ok" if good else "not ok"))
    failed += not good
    for what, page, old, new in SELF_TEST_BREAKS:
        broken = dict(SELF_TEST_PAGES)
        broken[page] = broken[page].replace(old, new)
        caught = broken[page] != SELF_TEST_PAGES[page] and run(broken) == 1
        print("%s - self-test: %s is caught" % ("ok" if caught else "not ok", what))
        failed += not caught
    return 1 if failed else 0


# Headless Chromium's window is at least 500 px wide: the page is laid out
# in 412 px by fixing the root's width (the narrow-screen styles apply below
# 640 px either way), and the body's scroll width is what would overflow.
PROBE = """<style>html { width: %dpx; }</style><script>
window.addEventListener('load', function () {
  var W = %d, out = [], small = [];
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  function boxed(e) {   /* inside a box that scrolls (or clips) sideways */
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  }
  document.querySelectorAll('body *').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > W + 1 || r.left < -1) && !boxed(e))
      out.push(e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' '
               + Math.round(r.left) + '..' + Math.round(r.right) + ' px: '
               + (e.textContent || '').replace(/\\s+/g, ' ').slice(0, 50));
  });
  /* a display equation wider than the screen scrolls in its own box, with
     a shadow at the edge where more is hidden (book.css) */
  var eqs = [], scrolled = 0;
  document.querySelectorAll('.katex-display').forEach(function (e) {
    if (e.scrollWidth <= e.clientWidth + 1) return;
    var st = getComputedStyle(e), o = st.overflowX;
    scrolled++;
    if ((o !== 'auto' && o !== 'scroll') || st.backgroundImage.indexOf('gradient') < 0)
      eqs.push('overflow-x ' + o + (st.backgroundImage.indexOf('gradient') < 0 ? ', no shadow' : '')
               + ': ' + (e.textContent || '').replace(/\\s+/g, ' ').slice(0, 50));
  });
  document.querySelectorAll('figure img').forEach(function (img) {
    var r = img.getBoundingClientRect();
    /* the figures are drawn 720 px wide (chapters/README.md): 80%% of it */
    if (r.width < 576)
      small.push(img.getAttribute('src') + ' drawn ' + Math.round(r.width) + ' px wide');
  });
  document.body.setAttribute('data-probe', JSON.stringify(
    {client: document.body.clientWidth, scroll: document.body.scrollWidth,
     wide: out.slice(0, 40), nwide: out.length, small: small,
     eqs: eqs, scrolled: scrolled}));
});
</script>"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if os.path.isfile(os.path.join(d, name)):
                return os.path.join(d, name)
    return None


def probe_page(browser, root, name, width):
    """Lay NAME out in headless Chromium WIDTH px wide: a copy of the page
    with a base URL and a measuring script (the book itself has none)."""
    import json
    import subprocess
    import tempfile
    with open(os.path.join(root, name), encoding="utf-8") as fh:
        text = fh.read()
    base = '<base href="file://%s/">' % os.path.abspath(root)
    text = text.replace("<head>", "<head>\n" + base, 1).replace("</body>", PROBE % (width, width) + "</body>", 1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                                "--disable-background-networking", "--hide-scrollbars",
                                "--user-data-dir=" + os.path.join(d, "profile"),
                                "--window-size=%d,900" % width, "--virtual-time-budget=3000",
                                "--dump-dom", "file://" + path],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, str(e)
    m = re.search(r'data-probe="([^"]*)"', p.stdout.decode("utf-8", "replace"))
    if not m:
        return None, "no measurement (chromium exit status %d)" % p.returncode
    import html as html_
    return json.loads(html_.unescape(m.group(1))), None


def check_rendered(root, names, report):
    """Where headless Chromium is installed, every page laid out at a
    phone's width (412 px), its folds open: the page does not scroll
    sideways, no element reaches past the screen's edges unless it sits in
    a box that scrolls sideways (code, tables, display maths, figures), and
    every figure is drawn at 80% of its size or more, so that its text stays
    legible.  Without Chromium, one skipped line."""
    browser = chromium()
    if browser is None:
        print("ok - rendered pages not checked: no headless Chromium here # SKIP")
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as pool:   # two browsers at a time
        results = list(pool.map(lambda n: probe_page(browser, root, n, 412), names))
    for name, (got, err) in zip(names, results):
        if got is None:
            report(False, "%s at 412 px: laid out by Chromium" % name, [err])
            continue
        report(got["scroll"] <= got["client"],
               "%s at 412 px: the page is %d px wide, no sideways scroll"
               % (name, got["scroll"]), ["page %d px in a %d px window"
                                        % (got["scroll"], got["client"])])
        report(not got["nwide"], "%s at 412 px: nothing reaches past the screen but "
               "inside a box that scrolls" % name,
               ["%d elements, among them:" % got["nwide"]] + got["wide"])
        report(not got["small"], "%s at 412 px: every figure drawn at 80%% of its size "
               "or more" % name, got["small"])
        report(not got["eqs"], "%s at 412 px: every display equation fits, or scrolls in "
               "its own box with a shadow at the hidden edge (%d scroll)"
               % (name, got["scrolled"]), got["eqs"])


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    aux = None
    rendered = "--rendered" in argv
    argv = [a for a in argv if a != "--rendered"]
    if len(argv) == 4 and argv[2] == "--aux":
        aux = argv[3]
        argv = argv[:2]
    if len(argv) != 2:
        sys.stderr.write("usage: check-html.py BOOKDIR [--aux BOOK.aux]\n")
        return 2
    root = argv[1]
    names = sorted(n for n in os.listdir(root) if n.endswith(".html"))
    if "index.html" not in names:
        print("not ok - %s/index.html exists" % root)
        return 1
    pages = {n: parse(os.path.join(root, n)) for n in names}
    failed = 0

    def report(good, what, problems):
        nonlocal failed
        if good:
            print("ok - %s" % what)
        else:
            failed += 1
            print("not ok - %s" % what)
            for x in problems[:20]:
                print("#   %s" % x)
            if len(problems) > 20:
                print("#   ... and %d more" % (len(problems) - 20))

    for name in names:
        p = pages[name]
        ids = set(p.ids)
        bad, count = [], 0
        for tag, href in p.links:
            u = urlsplit(href)
            if u.scheme or u.netloc:
                continue                    # external: not checked
            count += 1
            path, frag = unquote(u.path), unquote(u.fragment)
            if not path:
                if frag not in ids:
                    bad.append("%s -> no id %r on this page" % (href, frag))
                continue
            target = os.path.normpath(os.path.join(root, path))
            if not os.path.isfile(target):
                bad.append("%s -> no file %s" % (href, target))
            elif frag:
                q = pages.get(os.path.relpath(target, root))
                if q is None or frag not in q.ids:
                    bad.append("%s -> no id %r on %s" % (href, frag, path))
        report(not bad, "%s: %d internal links resolve" % (name, count - len(bad)), bad)

        missing = [s for s in p.images
                   if not os.path.isfile(os.path.join(root, unquote(urlsplit(s).path)))]
        report(not missing, "%s: %d images load" % (name, len(p.images) - len(missing)),
               missing)

        report(not p.tex, "%s: no raw TeX outside code" % name, p.tex)

        with open(os.path.join(root, name), encoding="utf-8") as fh:
            breakable = re.findall(r"<code>--?[A-Za-z0-9_][^<]{0,40}", fh.read())
        report(not breakable, "%s: option names in the text kept whole (no break after a "
               "leading dash)" % name, breakable)

        dups = sorted({i for i in p.ids if p.ids.count(i) > 1}) if len(ids) != len(p.ids) else []
        report(not dups, "%s: %d ids, none twice" % (name, len(p.ids)), dups)

        if name == "index.html":
            linked = {urlsplit(h).path for _, h in p.links}
            unlinked = [n for n in names if n != "index.html" and n not in linked]
            report(not unlinked, "index.html: the contents link to all %d pages"
                   % (len(names) - 1), unlinked)
        else:
            lacks = [c for c in ("book-toc", "page-nav") if c not in p.classes]
            report(not lacks, "%s: has the contents and previous / next links" % name, lacks)
    check_idents(root, names, report)
    if rendered:
        check_rendered(root, names, report)
    if aux is not None:
        with open(aux, encoding="utf-8", errors="replace") as fh:
            pdf = AUX_FLOAT.findall(fh.read())
        web = float_numbers(root, book_order(root, pages["index.html"]))
        # LaTeX floats a figure past a table (or back), never past another
        # figure: compare the figures in order, then the tables in order.
        pdf = [f for f in pdf if f[0] == "figure"] + [f for f in pdf if f[0] == "table"]
        web = [f for f in web if f[0] == "figure"] + [f for f in web if f[0] == "table"]
        diff = ["HTML %s, PDF %s" % (" ".join(w) if w else "-", " ".join(p) if p else "-")
                for w, p in zip(web + [None] * len(pdf), pdf + [None] * len(web))
                if w != p]
        report(not diff and web, "%d figures and tables numbered as in the PDF" % len(web),
               diff)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
