#!/usr/bin/env python3
"""The docs check ("make verify-pages", a series check of "make check").

Reads README.md, README.mptcp, DEVELOPERS.md, CHANGELOG.md, guide/*.md and
bench/results/**/*.md, and fails, naming file and line, when:
  - a relative link (Markdown [text](target), or a repository path named
    in the text such as guide/paths.md or bench/results/x.csv) points to no
    file, or its #anchor to no heading of the target;
  - a section reference (FILE, "Title"; FILE, section N; FILE N.N;
    section N.N; recipe N.N; Title (N)) names no heading of that page;
  - a page says apt-mark hold or unhold (our apt pin replaces holds);
  - a primary_conninfo example names one host without saying why ("one
    host", "one address" or "resolves" on that line or the two around it);
  - an operator page (README.md, guide/) carries a test tag ([test ...],
    [lab], [demo], ...) or project history (dates, "this machine", "these
    machines", CI timings);
  - a DBA's path, per suite (SUITE_PATHS: the pages of the quick start,
    plus every page they tell the DBA to "read"), is over MAX_PATH_WORDS
    words, counted as wc -w counts;
  - a figure given as a range ("0.30-0.45 s", with an en dash) appears
    twice on the operator pages: a figure lives in one place, the others
    link to it;
  - an operator page says "about N s" in a paragraph that names no
    kernel (Linux N.N, 6.1, ...), and neither does its section before it:
    how long the kernel takes depends on the kernel;
  - README.md's package table lacks a suite's kernel or the failover
    bound measured on it;
  - one of the QUANTITIES below is given with two different figures on the
    operator pages (each quantity has one answer, in one place; the check
    proves on every run, on pages of its own, that it catches that);
  - bench/results (less what its .gitignore says the bench regenerates) is
    over 2 MB, or has a file over 2,000 lines.
No network, no build: a second at most.  Usage: test_pages.py [TOP]
"""
import os
import re
import sys

TOP = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
PATH_PAGES = ["README.md", "guide/install.md"]
# Each suite's path: PATH_PAGES, plus what they send that suite's DBA to
# "read" (must_read).  A sentence that names one suite only counts for it.
SUITE_PATHS = {"Debian 12 with 15": "Debian 12", "Debian 13 with 17 or 18": "Debian 13"}
MAX_PATH_WORDS = 2500
RANGE_FIGURE = re.compile(r"\b\d+(?:\.\d+)?\u2013\d+(?:\.\d+)? m?s\b")
ABOUT_SECONDS = re.compile(r"\babout \d+(?:\.\d+)? m?s\b")
KERNEL_NAMED = re.compile(r"\b(?:Linux \d|[5-7]\.\d\d?\b(?! ?m?s\b)|kernels? \d)")
OPERATOR = re.compile(r"^(README\.md|guide/.*\.md)$")

errors = []


def err(page, line, msg):
    errors.append(f"{page}:{line}: {msg}")


def pages():
    out = ["README.md", "README.mptcp", "DEVELOPERS.md", "CHANGELOG.md"]
    out += sorted("guide/" + f for f in os.listdir(os.path.join(TOP, "guide"))
                  if f.endswith(".md"))
    for d, _, files in os.walk(os.path.join(TOP, "bench/results")):
        out += sorted(os.path.relpath(os.path.join(d, f), TOP) for f in files if f.endswith(".md"))
    return [p for p in out if os.path.exists(os.path.join(TOP, p))]


def read(page):
    with open(os.path.join(TOP, page), encoding="utf-8") as f:
        return f.read().split("\n")


def slug(title):
    """GitHub's anchor for a heading."""
    s = title.strip().lower()
    s = re.sub(r"[`*_]", "", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


_headings = {}


def headings(page):
    """Titles of a page's headings: Markdown ATX and setext, and numbered
    plain-text headings ("2.1 Two NICs ...") after a blank line."""
    if page in _headings:
        return _headings[page]
    lines = read(page)
    titles = []
    fence = False
    for i, l in enumerate(lines):
        if l.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*$", l)
        if m:
            titles.append(m.group(1))
            continue
        if i + 1 < len(lines) and re.match(r"^(=+|-+)\s*$", lines[i + 1]) and l.strip() \
                and not l.startswith("    ") and len(lines[i + 1].strip()) >= 3:
            titles.append(l.strip())
            continue
        if (i == 0 or not lines[i - 1].strip()) and re.match(r"^\d+(\.\d+)*\.? [A-Z]", l):
            titles.append(l.strip())
    _headings[page] = titles
    return titles


def has_section(page, ref):
    """ref: a number ("2", "2.5") or a title (its start is enough)."""
    for t in headings(page):
        if re.fullmatch(r"\d+(\.\d+)*", ref):
            if re.match(re.escape(ref) + r"\.?( |$)", t):
                return True
        elif t.lower().startswith(ref.lower()) or \
                re.sub(r"^\d+(\.\d+)*\.? ", "", t).lower().startswith(ref.lower()):
            return True
    return False


def has_anchor(page, anchor):
    if not page.endswith(".md"):
        return True
    return anchor in {slug(t) for t in headings(page)}


def resolve(page, target):
    """Repository path of a link target written in page."""
    path = os.path.normpath(os.path.join(os.path.dirname(page), target))
    return path


PAGE_NAMES = r"(README\.md|README\.mptcp|DEVELOPERS\.md|CHANGELOG\.md|[a-z-]+\.md)"
# repository paths named in prose
REPO_PATH = re.compile(r"(?<![\w./~-])((?:\.\./)?(?:guide|bench|tools|contrib|src|doc|patches)/"
                       r"[\w.+/-]*[\w/])")
TEST_TAG = re.compile(r"\[(test|lab|demo|bench|managers|clients|not test\w*|not in a test|run by hand|deb-test)([ :][^\]]*)?\](?!\()")
HISTORY = [
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\b(this|these|our) (project's )?machines?\b", re.I), "this machine"),
    (re.compile(r"\ban earlier build\b|\bslow day\b", re.I), "project history"),
    (re.compile(r"\bthis project's\b|\b(un)?test(ed|able) here\b|\(here\)", re.I), "this project's own test set-up"),
    (re.compile(r"\bin CI\b.*\b\d+ (s|min|minutes)\b|\b\d+ (s|min|minutes)\b.*\bin CI\b"), "a CI timing"),
]


def check_page(page):
    lines = read(page)
    operator = bool(OPERATOR.match(page))
    fence = False
    for n, l in enumerate(lines, 1):
        if l.startswith("```"):
            fence = not fence
        # Markdown links
        for m in re.finditer(r"\]\(([^)\s]+)\)", l):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = resolve(page, path) if path else page
            if not os.path.exists(os.path.join(TOP, dest)):
                err(page, n, f"dead link: {target}")
            elif anchor and not has_anchor(dest, anchor):
                err(page, n, f"no heading for #{anchor} in {dest}")
        # repository paths in the text (not in links: checked above)
        text = re.sub(r"\]\([^)]*\)", "]", l)
        for m in REPO_PATH.finditer(text):
            p = m.group(1)
            if any(c in p for c in "*{}$<>") or re.search(r"[A-Z]{3,}", p):
                continue  # a pattern or a placeholder
            for cand in (os.path.normpath(os.path.join(os.path.dirname(page), p)), os.path.normpath(p)):
                if os.path.exists(os.path.join(TOP, cand)):
                    break
            else:
                err(page, n, f"no such file in the repository: {p}")
        # section references
        for m in re.finditer(PAGE_NAMES + r",? (?:section |§)?\"([^\"]+)\"", l):
            dest = resolve_name(page, m.group(1))
            if dest and not has_section(dest, m.group(2).rstrip(".,")):
                err(page, n, f"no section \"{m.group(2)}\" in {dest}")
        for m in re.finditer(PAGE_NAMES + r",? (?:section |§)(\d+(?:\.\d+)*)", l):
            dest = resolve_name(page, m.group(1))
            if dest and not has_section(dest, m.group(2)):
                err(page, n, f"no section {m.group(2)} in {dest}")
        for m in re.finditer(PAGE_NAMES + r",? (\d+\.\d+)\b", l):
            dest = resolve_name(page, m.group(1))
            if dest and not has_section(dest, m.group(2)):
                err(page, n, f"no section {m.group(2)} in {dest}")
        for m in re.finditer(r"\b([A-Z][a-z]+) \((\d)\)", l):
            if not any(t.lstrip("0123456789. ").startswith(m.group(1)) and t.startswith(m.group(2))
                       for t in headings(page)):
                err(page, n, f"no section {m.group(2)}, \"{m.group(1)}\", in this page")
        for m in re.finditer(r"(?<![\w.])(?:[Ss]ection|§|[Rr]ecipe) (\d+(?:\.\d+)*)(?![\w.]*\.md)", l):
            before = l[:m.start()]
            if re.search(PAGE_NAMES + r",? $", before):
                continue  # FILE, section N: above
            if not has_section(page, m.group(1)):
                err(page, n, f"no section {m.group(1)} in this page")
        if re.search(r"apt-mark\s+(un)?hold", l):
            err(page, n, "apt-mark hold: the pin replaces holds (guide/install.md)")
        if "primary_conninfo" in l:
            m = re.search(r"host\s*=\s*'*([^\s']+)", l)
            if m and "," not in m.group(1):
                around = " ".join(lines[max(0, n - 3):n + 2]).lower()
                if not re.search(r"one host|one address|resolv", around):
                    err(page, n, "primary_conninfo with one host: list the primary's address on every path, or say why not")
        if operator:
            m = TEST_TAG.search(l)
            if m:
                err(page, n, f"test tag on an operator page: {m.group(0)}")
            for rx, what in HISTORY:
                m = rx.search(l)
                if m:
                    err(page, n, f"project history on an operator page ({what}): {m.group(0)}")


def must_read(suite):
    """The pages PATH_PAGES tell the DBA of a suite to read: a link right
    after the word "read", in a sentence that names no other suite."""
    out = []
    for page in PATH_PAGES:
        # sentences, whatever their line breaks
        for l in re.split(r"(?<=[.!?])\s+|\n\s*\n", " ".join(read(page))):
            for m in re.finditer(r"\bread:?\s+\[[^\]]*\]\(([^)#\s]+)", l):
                others = [s for s in SUITE_PATHS.values() if s != suite and s in l]
                if others and suite not in l:
                    continue
                dest = resolve(page, m.group(1))
                if dest not in PATH_PAGES + out:
                    out.append(dest)
    return out


def check_figures():
    """A range figure lives in one place; "about N s" names its kernel."""
    seen = {}
    for page in pages():
        if not OPERATOR.match(page):
            continue
        lines = read(page)
        section = 0
        for n, l in enumerate(lines, 1):
            if l.startswith("#"):
                section = n - 1
            for m in RANGE_FIGURE.finditer(l):
                if m.group(0) in seen:
                    err(page, n, f"{m.group(0)} again (first at {seen[m.group(0)]}): give a figure once, and link to it")
                else:
                    seen[m.group(0)] = f"{page}:{n}"
            if ABOUT_SECONDS.search(l):
                a = n - 1
                while a > 0 and lines[a - 1].strip():
                    a -= 1
                b = n
                while b < len(lines) and lines[b].strip():
                    b += 1
                paragraph = " ".join(lines[a:b])
                if not KERNEL_NAMED.search(paragraph) and not KERNEL_NAMED.search(" ".join(lines[section:n])):
                    err(page, n, f"\"{ABOUT_SECONDS.search(l).group(0)}\" in a paragraph that names no kernel")


def check_package_table():
    """README.md's package table: a row per suite with its kernel and the
    longest commit after a cut measured on it."""
    rows = [l for l in read("README.md") if l.startswith("| ") and "make deb" in l]
    for suite, kernel in (("Debian 12", "6.1"), ("Debian 13", "6.12")):
        mine = [r for r in rows if suite in r]
        if not mine:
            err("README.md", 0, f"the package table has no row for {suite}")
        for r in mine:
            if not re.search(r"\b" + re.escape(kernel) + r"\b", r) or not RANGE_FIGURE.search(r):
                err("README.md", 0, f"the package table's row for {suite} lacks its kernel ({kernel}) or its failover bound")


# The quantities the operator pages state, and the phrasings that state
# them (the figure in group v).  A quantity given twice must be given with
# the same figure; better, once, and linked to.
QUANTITIES = [
    ("how soon host-setup's program closes a dead path's subflow", [
        r"(?P<v>about \d+(?:\.\d+)? s) after its data went unanswered",
        r"shows a dead path for (?P<v>about (?:half )?a second|about \d+(?:\.\d+)? s|a few seconds)",
        r"lasts until the subflow is closed, (?P<v>a few seconds at most|about (?:half )?a second|about \d+(?:\.\d+)? s)",
        r"dead subflow (?:lingers|stays|is closed) (?:for |after |within )?(?P<v>about (?:half )?a second"
        r"|about \d+(?:\.\d+)? s|\d+(?:\.\d+)? to \d+(?:\.\d+)? s|a few seconds(?: at most)?)",
    ]),
    ("how long the kernel's default SYN retries try a dead address", [
        r"\(default (?P<v>about (?:2|two) minutes|about \d+ s|\d+ s)\)",
        r"(?:kernel's default SYN retries|default SYN give-up|default of 6 SYN retries)[^.;()]{0,30}?"
        r"(?P<v>about (?:2|two) minutes|about \d+ s|\d+ s)",
        r"attempt on a dead first address lasted (?P<v>\d+ s)",
        r"against (?P<v>about \d+ s) without the patch",
    ]),
]


def quantity_errors(texts):
    """texts: {page: [lines]}.  Errors for quantities given with two
    different figures."""
    out = []
    for name, patterns in QUANTITIES:
        seen = {}
        for page, lines in texts.items():
            fence, para, start = False, [], 0
            for n, l in enumerate(lines + [""], 1):
                if l.startswith("```"):
                    fence = not fence
                if fence or not l.strip():
                    text = " ".join(para)
                    for rx in patterns:
                        for m in re.finditer(rx, text):
                            v = m.group("v").replace("two minutes", "2 minutes")
                            seen.setdefault(v, f"{page}:{start}")
                    para = []
                    continue
                if not para:
                    start = n
                para.append(l.strip())
        if len(seen) > 1:
            out.append((name, seen))
    return out


def check_quantities():
    texts = {p: read(p) for p in pages() if OPERATOR.match(p)}
    for name, seen in quantity_errors(texts):
        where = ", ".join(f"\"{v}\" at {at}" for v, at in sorted(seen.items(), key=lambda x: x[1]))
        first = sorted(seen.values())[0]
        err(first.split(":")[0], first.split(":")[1], f"{name}: {where}: give one figure, in one place, and link to it")
    # (the check can fail: two figures for one quantity, on pages of its own)
    clash = {"a.md": ["With host-setup, query 2 shows a dead path for about a second."],
             "b.md": ["Two timeouts in a row: about 0.6 s after its data went unanswered."]}
    agree = {"a.md": ["A new connection gives up after about 7 s (default about 2 minutes)."],
             "b.md": ["", "It tries a dead address for the kernel's default SYN retries: about two minutes."]}
    if len(quantity_errors(clash)) != 1 or quantity_errors(agree):
        err("tools/tests/test_pages.py", 0, "the quantities check does not tell two figures from one")


def resolve_name(page, name):
    for cand in (os.path.join(os.path.dirname(page), name), name, "guide/" + name):
        cand = os.path.normpath(cand)
        if os.path.isfile(os.path.join(TOP, cand)):
            return cand
    return None


RESULTS_MAX_BYTES = 2 * 1024 * 1024
RESULTS_MAX_LINES = 2000


def check_results():
    """bench/results stays small: under 2 MB, no file over 2,000 lines, and
    none of what bench/results/.gitignore says the bench regenerates."""
    import fnmatch
    root = os.path.join(TOP, "bench/results")
    ignored = []
    if os.path.exists(os.path.join(root, ".gitignore")):
        with open(os.path.join(root, ".gitignore")) as f:
            ignored = [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]
    total = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not any(fnmatch.fnmatch(x, g) for g in ignored)]
        for f in files:
            if any(fnmatch.fnmatch(f, g) for g in ignored):
                continue
            path = os.path.join(d, f)
            total += os.path.getsize(path)
            with open(path, "rb") as fh:
                n = fh.read().count(b"\n")
            if n > RESULTS_MAX_LINES:
                err(os.path.relpath(path, TOP), 0, f"{n} lines, more than {RESULTS_MAX_LINES}")
    if total > RESULTS_MAX_BYTES:
        err("bench/results", 0, f"{total} bytes, more than {RESULTS_MAX_BYTES}")
    return total


def main():
    for p in pages():
        check_page(p)
    results = check_results()
    check_figures()
    check_quantities()
    check_package_table()
    counted = []
    for name, suite in SUITE_PATHS.items():
        path = PATH_PAGES + must_read(suite)
        words = 0
        for p in path:
            with open(os.path.join(TOP, p), encoding="utf-8") as f:
                words += len(f.read().split())
        if words > MAX_PATH_WORDS:
            err(" + ".join(path), 0, f"the path of {name} is {words} words, more than {MAX_PATH_WORDS}")
        counted.append(f"{name} ({' + '.join(path)}): {words} words")
    for e in errors:
        print(e)
    print(f"pages: {len(pages())} checked; the paths, at most {MAX_PATH_WORDS} words each: "
          f"{'; '.join(counted)}; bench/results: {results} bytes; {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
