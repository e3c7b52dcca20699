#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every file, function and figure the docs name, checked to exist.

    check-docs.py [--root DIR] [--allow FILE] [--cache FILE] [DOC...]
    check-docs.py --root DIR --control PLANTED_DOC

Reads README.md, NEWS.md, CONTRIBUTING.md, docs/*.md and docs/man/*.scd (or
only the DOCs named, paths relative to --root). Prints one line per problem,
"DOC:LINE: names X, which does not exist (WHY)", and exits 1; with none, one
summary line with the counts, exit 0. Docs drift from the code one rename at
a time and nobody reads every page after every rename: this is the reader
who does.

What counts as a reference, and the rule each one has to meet:

Files. Inside backticks, every word that looks like a path (a `VAR=value`
word and a `a:b` list are split); in prose and in ``` blocks, only words
rooted at one of the repository's top-level folders (src/..., docs/...) and
bare names ending in .md/.c/.h/.py/.sh; every relative markdown link target.
  - Rooted at a top-level folder of the repository (what `git ls-files`
    lists: src/, tests/, .ci/, ...): must exist there, as a file, a folder,
    a NAME.in template that configure_file() turns into NAME, or a build
    output that the folder's meson.build names ('NAME' in it: the docs say
    tests/pipewire/pw-frames for the program built from there). A glob
    (*, ?, {a,b}; a <placeholder> counts as *) must match at least one path.
  - A bare name with a source or doc extension (.c .h .py .sh .md .in
    .build .scd .sym .supp): some tracked file must have that name (or
    NAME.in); a .h may also be a system header under /usr/include. The rule
    asks that the file exists, not which of several files of that name the
    doc meant: the surrounding text says that. A bare .json, .txt, .png or
    .svg is not checked: bare, those name what a program writes (`run.json`,
    `contact-sheet.png`) as often as a file of the tree; as paths they are.
  - ./ and ../ paths resolve against the doc's own folder, as a markdown
    link does (a link must resolve too); one that leaves the repository is
    not checked.
  - Any other path with a '/' (wayland/wlt.c, syncbridge/dmabuf.h): fine if
    it is the tail of a tracked path or of a header under /usr/include;
    otherwise it is taken to be another project's path (the kernel's
    drivers/..., a protocol's stable/...) and not checked.
  - Never checked: absolute and home paths (/dev, /sys, /proc, /usr, ~/...),
    $VAR/... and @abstract sockets, build trees (build/, build-*/), URLs,
    words with ... or … in them, bare globs, HTML comments.
  - <a/b.h>: include/a/b.h (or its .in) here, or a header under /usr/include.

Functions. `name()` or `name(args)` as a whole backticked token, a bare
name() in prose, an sb_*( call in prose or in a ``` block.
  - name is defined or declared in the repository's C (a line starting with
    name( -- the house style puts the return type on the line above --, a
    prototype after a type, a #define, a function-pointer member), Python
    (def) or shell (name() {) files, comments and strings left out;
  - or, for third-party APIs, the repository's code calls it (it compiles
    against it) or it is declared in a header under /usr/include (one grep
    for all such names per run, cached by --cache until dpkg installs
    something). Names with our prefixes (sb_, SB_, sbfault_) must be
    defined here: a call is not enough for our own API.
  - _suffix() (after sb_sync_file_get_status(): `_get_info()`) must be the
    end of a name defined here.
  - meson's own functions (MESON_BUILTINS) are declared in no file.
  - syncbridge-*(N) names a man page: docs/man/NAME.N.scd must exist.

Other names of ours. A backticked identifier with one of our prefixes (sb_,
SB_, sbl_, sbfault_, wlc_, wlt_, wlgpu_: a type, an enum value, a macro) or
one of our environment variables (SYNCBRIDGE_*, also as NAME=value), and
an SB_* or SYNCBRIDGE_* word in prose or a ``` block, must occur in some
file of the repository other than the docs.

Figures. "figure N", "figures N, M and K", "figure-N" (N a number and an
optional letter: 6b) must be a section of docs/performance.md: its figures
are its "## N." and "### Nb." headings, and its tables list them by number.

Sections. docs/x.md, "Name" (or [x.md](x.md), "Name"): the doc has a
heading or a bold paragraph lead (**Name.**) with that text in it.

The allow-list (scripts/check-docs.allow) takes what the rules cannot tell:
another project's names and paths that look like ours, and NEWS.md's
history. Each entry says why; one that matches nothing is reported, so the
list cannot outlive its use.

--control PLANTED_DOC: runs this check (as a separate process, the way the
host test runs it) on the planted doc and passes only if it exits 1 and
names each X of the doc's "<!-- expect: X ... -->" lines, and nothing else:
the planted doc also names existing things, which must pass.
"""
import argparse
import bisect
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys

# Checked file extensions of bare names: files people write. A bare .json,
# .txt, .png or .svg names what a program writes (`run.json`,
# `contact-sheet.png`, meson's testlog*.json) as often as a file of the tree,
# so those are checked only as paths (tests/crosses/expected-virgl.txt).
SOURCE_EXT = (".c", ".h", ".py", ".sh", ".md", ".in", ".build", ".scd", ".sym", ".supp")
# Bare names in prose: only these, so that "e.g." or "v1.2" are never names.
PROSE_EXT = (".md", ".c", ".h", ".py", ".sh")
# Our exported prefixes: a name with one of them must be defined here.
OUR_PREFIXES = ("sb_", "SB_", "sbfault_")
# meson.build's functions: the docs name them when they say how a test is
# registered, and no file declares them.
MESON_BUILTINS = {
    "add_test_setup", "configure_file", "custom_target", "declare_dependency", "dependency",
    "environment", "executable", "files", "find_program", "get_option", "import",
    "library", "run_command", "shared_library", "static_library", "subdir", "summary", "test",
}
C_KEYWORDS = {
    "if", "while", "for", "switch", "return", "sizeof", "else", "case", "do", "goto",
    "defined", "_Static_assert", "static_assert", "_Alignof", "alignof", "typeof",
    "__typeof__", "_Generic", "__attribute__",
}
SYSTEM_INCLUDE_DIRS = ["/usr/include"] + sorted(glob.glob("/usr/lib/gcc/*/*/include"))

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# Our other names: a backticked type, enum value, macro or variable with one
# of our prefixes (`SB_WL_SERVER_NO_WAIT`, `sb_wl_sync_protocol`), or one of
# our environment variables (`SYNCBRIDGE_DISABLE`, also as `NAME=value`),
# must occur in some file of the repository other than the docs.
SYMBOL = re.compile(r"(?:sb|SB|sbl|sbfault|wlc|wlt|wlgpu|SYNCBRIDGE)_[A-Za-z0-9_]*[A-Za-z0-9]")


class Doc:
    def __init__(self, rel, text):
        self.rel = rel
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line_of(self, offset):
        return bisect.bisect_right(self.line_starts, offset)


# ---------------------------------------------------------------- the repository

def tracked_files(root):
    """Tracked and new (not ignored) files: what a clean clone would have,
    plus what is about to be committed."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True,
                             check=True).stdout
        files = out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (a release tarball): every file but build trees.
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if os.path.exists(os.path.join(root, f)))


def strip_c(text):
    """C text with comments and string/char literals blanked (newlines kept),
    so that a name in a comment does not count as defined."""
    out = []
    i, n = 0, len(text)
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    for m in pat.finditer(text):
        out.append(text[i:m.start()])
        out.append(re.sub(r"[^\n]", " ", m.group(0)))
        i = m.end()
    out.append(text[i:n])
    return "".join(out)


def strip_hash_comments(text):
    """Python/shell text without # comments and triple-quoted strings (rough:
    enough that a name in a comment or a docstring does not count as called)."""
    text = re.sub(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'', lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return "\n".join(re.sub(r'(^|\s)#.*$', "", line) for line in text.split("\n"))


# A definition: the house style puts the return type on the line above, so
# the name starts its line. A prototype: the name after its type (the word
# before it is not a keyword: "return f(" is a call).
C_DEF_LINE = re.compile(r"^(" + IDENT + r")\s*\(", re.M)
C_PROTO = re.compile(r"(\b" + IDENT + r"|\*)\s+\**\s*(" + IDENT + r")\s*\(")
C_DEFINE = re.compile(r"^\s*#\s*define\s+(" + IDENT + r")", re.M)
C_FNPTR = re.compile(r"\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(")
CALL = re.compile(r"(?<![\w.])(" + IDENT + r")\s*\(")
METHOD_CALL = re.compile(r"\.(" + IDENT + r")\s*\(")
PY_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(" + IDENT + r")", re.M)
SH_DEF = re.compile(r"^\s*(?:function\s+)?(" + IDENT + r")\s*\(\)\s*\{?", re.M)


def index_code(root, files):
    """(defined, called): names defined or declared in the repository, and
    names its code calls."""
    defined, called = set(), set()
    for f in files:
        ext = os.path.splitext(f)[1]
        if ext not in (".c", ".h", ".py", ".sh", ".cpp", ".in"):
            continue
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if ext in (".c", ".h", ".cpp") or f.endswith((".c.in", ".h.in")):
            code = strip_c(text)
            defined.update(C_DEF_LINE.findall(code))
            defined.update(n for t, n in C_PROTO.findall(code) if t not in C_KEYWORDS and n not in C_KEYWORDS)
            defined.update(C_DEFINE.findall(code))
            defined.update(C_FNPTR.findall(code))
            called.update(n for n in CALL.findall(code) if n not in C_KEYWORDS)
        elif ext == ".py":
            code = strip_hash_comments(text)
            defined.update(PY_DEF.findall(code))
            called.update(CALL.findall(code))
            called.update(METHOD_CALL.findall(code))
        elif ext == ".sh" or (ext == ".in" and text.startswith("#!")):
            code = strip_hash_comments(text)
            defined.update(SH_DEF.findall(code))
    return defined, called


def index_words(root, files):
    """Every identifier in the repository's files other than its docs,
    strings and comments included: an environment variable is a string in
    the code (getenv("SYNCBRIDGE_...")), an enum value may be named only in
    a header."""
    words = set()
    for f in files:
        # Not the docs, nor the allow-list (which names what it excuses).
        if f.endswith((".md", ".scd", ".png", ".svg", ".gz", ".allow")) or f.startswith("docs/"):
            continue
        try:
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                words.update(re.findall(IDENT, fh.read()))
        except OSError:
            continue
    return words


def system_declared(names, cache_file):
    """The names of `names` that a header under /usr/include declares (or
    calls in a macro): one grep for all of them. With cache_file, answers are
    kept until dpkg's status file changes (a package installed or removed)."""
    names = sorted(set(names))
    try:
        stamp = os.stat("/var/lib/dpkg/status").st_mtime_ns
    except OSError:
        stamp = None
    cache = {}
    if cache_file and stamp is not None:
        try:
            with open(cache_file, encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("stamp") == stamp:
                cache = data.get("names", {})
        except (OSError, ValueError):
            cache = {}
    todo = [n for n in names if n not in cache]
    if todo:
        found = set()
        dirs = [d for d in SYSTEM_INCLUDE_DIRS if os.path.isdir(d)]
        # In chunks: one alternation of thousands of names is slow in grep.
        for i in range(0, len(todo), 200):
            chunk = todo[i:i + 200]
            # name( or (*name)( : a function or a struct's callback member.
            pat = r"\b(" + "|".join(re.escape(n) for n in chunk) + r")\s*\)?\s*\("
            r = subprocess.run(["grep", "-rhoE", "--include=*.h", pat] + dirs,
                               capture_output=True, text=True)
            found.update(m.group(1) for m in re.finditer(r"(" + IDENT + r")\s*\)?\s*\(", r.stdout))
        for n in todo:
            cache[n] = n in found
        if cache_file and stamp is not None:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(cache_file)), exist_ok=True)
                with open(cache_file + ".tmp", "w", encoding="utf-8") as fh:
                    json.dump({"stamp": stamp, "names": cache}, fh)
                os.replace(cache_file + ".tmp", cache_file)
            except OSError:
                pass
    return {n for n in names if cache.get(n)}


def system_header(path):
    """path (a/b.h) under a system include folder, directly or one folder
    down (/usr/include/libdrm/drm.h, /usr/include/spa-0.2/spa/...)."""
    for d in SYSTEM_INCLUDE_DIRS:
        if os.path.exists(os.path.join(d, path)) or glob.glob(os.path.join(d, "*", path)) \
                or glob.glob(os.path.join(d, "*", "*", path)):
            return True
    return False


def performance_figures(root):
    """The figures docs/performance.md numbers: its '## N.' / '### Nb.'
    headings."""
    try:
        with open(os.path.join(root, "docs", "performance.md"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return set()
    return set(re.findall(r"^#{2,4}\s+(\d+[a-z]?)\.\s", text, re.M))


# ---------------------------------------------------------------- the docs

def doc_files(root):
    docs = ["README.md", "NEWS.md", "NEWS", "CONTRIBUTING.md"]
    docs = [d for d in docs if os.path.isfile(os.path.join(root, d))]
    docs += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    docs += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "man", "*.scd")))
    return docs


def split_doc(doc):
    """(code_spans, fenced, prose): backtick spans [(offset, text)], fenced
    block lines [(offset, text)], and the prose text with both blanked out
    (offsets kept)."""
    text = doc.text
    prose = list(text)
    fenced = []
    spans = []
    if doc.rel.endswith(".md"):
        # HTML comments are not shown: what they name is nobody's reference.
        for m in re.finditer(r"<!--.*?-->", text, re.S):
            prose[m.start():m.end()] = re.sub(r"[^\n]", " ", m.group(0))
        text = "".join(prose)
        for m in re.finditer(r"^(```|~~~)[^\n]*\n(.*?)^\1[^\n]*$", text, re.M | re.S):
            body_start = m.start(2)
            for lm in re.finditer(r"[^\n]+", m.group(2)):
                fenced.append((body_start + lm.start(), lm.group(0)))
            prose[m.start():m.end()] = re.sub(r"[^\n]", " ", m.group(0))
        blanked = "".join(prose)
        # A span does not cross a blank line (CommonMark: a paragraph ends there).
        for m in re.finditer(r"(`+)((?:(?!\n\s*\n).)+?)\1", blanked, re.S):
            spans.append((m.start(2), m.group(2).replace("\n", " ").strip()))
            prose[m.start():m.end()] = re.sub(r"[^\n]", " ", m.group(0))
    return spans, fenced, "".join(prose)


def path_words(span):
    """The words of a backtick span that may be paths."""
    for word in span.split():
        word = word.strip("\"'(),;")
        if word.endswith((":", ".")) and len(word) > 1:
            word = word.rstrip(":.")
        # VAR=value, a=b:c=d lists: the values.
        for part in re.split(r"[=:]", word):
            if part:
                yield part


class Checker:
    def __init__(self, root, allow_file, cache_file):
        self.root = root
        self.files = tracked_files(root)
        self.file_set = set(self.files)
        self.dirs = set()
        for f in self.files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.top = {f.split("/")[0] for f in self.files if "/" in f}
        self.top.discard("build")
        self.basenames = {}
        for f in self.files:
            self.basenames.setdefault(os.path.basename(f), []).append(f)
        self.defined, self.called = index_code(root, self.files)
        self.words = index_words(root, self.files)
        self.figures = performance_figures(root)
        self.cache_file = cache_file
        self.problems = []
        self.allow = self.read_allow(allow_file)
        self.allow_used = set()
        self.pending_functions = []  # (doc, line, token, name): to /usr/include
        self.counts = {"files": 0, "functions": 0, "symbols": 0, "figures": 0, "sections": 0,
                       "links": 0, "man pages": 0}
        self.verbose = False
        self.meson_names = {}
        self.section_cache = {}

    def read_allow(self, allow_file):
        allow = {}
        if not allow_file or not os.path.exists(allow_file):
            return allow
        with open(allow_file, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parts = line.split(None, 2)
                if len(parts) < 3:
                    self.problems.append((("~", n), f"{allow_file}:{n}: an entry is DOC TOKEN[,TOKEN...] REASON"))
                    continue
                # Several tokens of one reason: comma-separated, no spaces.
                for token in parts[1].split(","):
                    allow[(parts[0], token)] = (n, parts[2])
        return allow

    def allowed(self, doc, token):
        keys = [token]
        m = re.match(r"(" + IDENT + r")\(", token)
        if m:
            # A function's entry is its name with (), whatever the doc's args.
            keys.append(m.group(1) + "()")
        for key in [(d, k) for k in keys for d in (doc.rel, "*")]:
            if key in self.allow:
                self.allow_used.add(key)
                return True
        return False

    def count(self, kind, doc, offset, token):
        self.counts[kind] += 1
        self.note(kind, doc, offset, token)

    def note(self, kind, doc, offset, token):
        if self.verbose:
            print(f"{doc.rel}:{doc.line_of(offset)}: {kind} {token}")

    def bad(self, doc, offset, token, why):
        if self.allowed(doc, token):
            return
        line = doc.line_of(offset)
        self.problems.append(((doc.rel, line), f"{doc.rel}:{line}: names {token}, which does not exist ({why})"))

    # -- files

    def in_meson(self, folder, name):
        """name is a target or output that folder's meson.build names."""
        if folder not in self.meson_names:
            try:
                with open(os.path.join(self.root, folder, "meson.build"), encoding="utf-8") as fh:
                    self.meson_names[folder] = set(re.findall(r"'([^'\n]+)'", fh.read()))
            except OSError:
                self.meson_names[folder] = set()
        return name in self.meson_names[folder]

    def glob_tracked(self, pattern):
        pats = [pattern]
        # {a,b} alternatives: fnmatch has none.
        while any("{" in p for p in pats):
            out = []
            for p in pats:
                m = re.search(r"\{([^{}]*)\}", p)
                if not m:
                    out.append(p.replace("{", "["))
                    continue
                out += [p[:m.start()] + alt + p[m.end():] for alt in m.group(1).split(",")]
            pats = out
        pats = [p.rstrip("/") for p in pats]
        everything = self.files + sorted(self.dirs)
        return all(any(fnmatch.fnmatchcase(f, p) for f in everything) for p in pats)

    def exists_rooted(self, path):
        p = path.rstrip("/")
        if any(c in p for c in "*?{["):
            return self.glob_tracked(p)
        if p in self.file_set or p in self.dirs or p + ".in" in self.file_set:
            return True
        folder, name = os.path.split(p)
        return bool(folder) and self.in_meson(folder, name)

    def check_path_word(self, doc, offset, word, rooted_only=False):
        if not word or "://" in word or "..." in word or "…" in word:
            return
        if word.startswith("<") and word.endswith(">") and "/" in word[1:-1]:
            self.count("files", doc, offset, word)
            inner = word[1:-1]
            ours = os.path.join("include", inner)
            if ours not in self.file_set and ours + ".in" not in self.file_set and not system_header(inner):
                self.bad(doc, offset, word, "no include/" + inner + " and no system header")
            return
        if word[0] in "/~@<-" or word[0].isdigit() or "$" in word:
            return
        word = re.sub(r"<[^<>/]*>", "*", word)
        if "<" in word or ">" in word or "|" in word:
            return
        if word.startswith(("./", "../")):
            # Relative to the doc's folder, as a link is (docs/'s commands run
            # in build/ name ../scripts/...: the same place).
            path = os.path.normpath(os.path.join(os.path.dirname(doc.rel), word))
            if path.startswith(".."):
                return  # outside the repository
            self.count("files", doc, offset, word)
            if not self.exists_rooted(path):
                self.bad(doc, offset, word, path + " is not in the repository")
            return
        if "/" in word:
            first = word.split("/")[0]
            if first == "build" or first.startswith("build-"):
                return
            if first in self.top:
                self.count("files", doc, offset, word)
                if not self.exists_rooted(word):
                    self.bad(doc, offset, word, "no such path in the repository")
                return
            if rooted_only or any(c in word for c in "*?{["):
                return
            # A tail: wayland/wlt.c, syncbridge/dmabuf.h.
            tail = "/" + word.rstrip("/")
            if any(f.endswith(tail) for f in self.files) or any(d.endswith(tail) for d in self.dirs):
                self.count("files", doc, offset, word)
            elif word.endswith(".h") and system_header(word):
                self.count("files", doc, offset, word)
            # Otherwise another project's path: not ours to check.
            return
        if rooted_only:
            if not word.endswith(PROSE_EXT):
                return
        elif not word.endswith(SOURCE_EXT):
            return
        if any(c in word for c in "*?{["):
            return
        if not re.fullmatch(r"[\w.+-]+", word) or word.startswith("."):
            return
        self.count("files", doc, offset, word)
        if word in self.basenames or word + ".in" in self.basenames:
            return
        if word.endswith(".h") and system_header(word):
            return
        self.bad(doc, offset, word, "no file of that name in the repository")

    def check_link(self, doc, offset, target):
        target = target.split("#")[0].strip()
        if not target or re.match(r"[a-z]+:", target) or target.startswith("/"):
            return
        self.count("links", doc, offset, target)
        path = os.path.normpath(os.path.join(os.path.dirname(doc.rel), target))
        if path in self.file_set or path in self.dirs:
            return
        self.bad(doc, offset, target, "a link to " + path + ", which is not in the repository")

    # -- functions

    def check_function(self, doc, offset, token, name):
        self.count("functions", doc, offset, token)
        if name in MESON_BUILTINS:
            return
        if name.startswith("_") and not name.startswith("__"):
            if not any(d.endswith(name) for d in self.defined if d.startswith(OUR_PREFIXES)):
                self.bad(doc, offset, token, "no function of ours ends in " + name)
            return
        if name in self.defined:
            return
        if name.startswith(OUR_PREFIXES):
            self.bad(doc, offset, token, "not defined or declared in the repository")
            return
        if name in self.called:
            return
        self.pending_functions.append((doc, offset, token, name))

    def check_symbol(self, doc, offset, token):
        self.count("symbols", doc, offset, token)
        if token not in self.words:
            self.bad(doc, offset, token, "no file of the repository but the docs has that name")

    def check_man(self, doc, offset, token, name, section):
        self.count("man pages", doc, offset, token)
        page = f"docs/man/{name}.{section}.scd"
        if page not in self.file_set:
            self.bad(doc, offset, token, "no " + page)

    # -- figures

    def check_figures(self, doc, prose_and_spans):
        text = prose_and_spans
        for m in re.finditer(r"\b[Ff]igures?[ -](\d+[a-z]?(?:(?:,\s*|,?\s+and\s+|,?\s+or\s+)\d+[a-z]?)*)\b", text):
            for fm in re.finditer(r"\d+[a-z]?", m.group(1)):
                self.figure_ref(doc, m.start(1) + fm.start(), fm.group(0))
        if doc.rel == "docs/performance.md":
            # Its tables' first column: the figures they list.
            for m in re.finditer(r"^\|\s*(\d+[a-z]?)\s*\|", text, re.M):
                self.figure_ref(doc, m.start(1), m.group(1))

    def sections_of(self, rel):
        """The places a reader can be sent to in a doc: its headings and its
        bold paragraph leads (**One core per process.**), lower case."""
        if rel not in self.section_cache:
            try:
                with open(os.path.join(self.root, rel), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                text = ""
            heads = [h.strip() for h in re.findall(r"^#+\s+(.*)$", text, re.M)]
            heads += re.findall(r"\*\*([^*\n]+?)\*\*", text)
            self.section_cache[rel] = [h.lower() for h in heads]
        return self.section_cache[rel]

    def check_sections(self, doc, text):
        """docs/x.md, "Section": the doc has a heading or a bold lead with
        that text in it."""
        pat = r"\[?((?:[\w./-]*/)?[\w-]+\.md)\]?(?:\([^)\s]*\))?[,:]?\s+\(?\"([^\"\n]+)\""
        for m in re.finditer(pat, text):
            name = m.group(1)
            cands = [os.path.normpath(os.path.join(os.path.dirname(doc.rel), name)), name,
                     "docs/" + name]
            rel = next((c for c in cands if c in self.file_set), None)
            if rel is None:
                continue  # the file check reports a missing doc
            section = m.group(2).rstrip(".,;:").lower()
            self.count("sections", doc, m.start(2), f'{name}, "{m.group(2)}"')
            if not any(section in h for h in self.sections_of(rel)):
                self.bad(doc, m.start(2), f'{name}, "{m.group(2)}"',
                         rel + " has no heading or bold lead with that text")

    def figure_ref(self, doc, offset, number):
        self.count("figures", doc, offset, "figure " + number)
        if number not in self.figures:
            self.bad(doc, offset, "figure " + number,
                     "docs/performance.md has no section " + number + ".")

    # -- one doc

    def check_doc(self, rel):
        with open(os.path.join(self.root, rel), encoding="utf-8") as fh:
            doc = Doc(rel, fh.read())
        spans, fenced, prose = split_doc(doc)
        for off, span in spans:
            m = re.fullmatch(r"(" + IDENT + r")\((.*)\)", span)
            if m:
                self.check_function(doc, off, span, m.group(1))
                continue
            m = re.fullmatch(r"(syncbridge[\w-]*)\((\d)\)", span)
            if m:
                self.check_man(doc, off, span, m.group(1), m.group(2))
                continue
            m = SYMBOL.fullmatch(span.split("=")[0]) if " " not in span else None
            if m:
                self.check_symbol(doc, off, m.group(0))
                continue
            for word in path_words(span):
                self.check_path_word(doc, off, word)
        for off, line in fenced:
            for wm in re.finditer(r"\S+", line):
                for word in path_words(wm.group(0)):
                    self.check_path_word(doc, off + wm.start(), word, rooted_only=True)
            for fm in re.finditer(r"(?<![\w.])(sb_\w+)\s*\(", line):
                self.check_function(doc, off + fm.start(), fm.group(1) + "()", fm.group(1))
            for fm in re.finditer(r"(?<![\w.$])(?:SB|SYNCBRIDGE)_[A-Z0-9_]*[A-Z0-9](?![\w(])", line):
                self.check_symbol(doc, off + fm.start(), fm.group(0))
        # Prose: links first, then blank them so that their targets are not
        # read again as words.
        def link(m):
            self.check_link(doc, m.start(1), m.group(1))
            return re.sub(r"[^\n]", " ", m.group(0))
        prose_words = re.sub(r"\]\(([^()\s]+)\)", link, prose)
        prose_words = re.sub(r"<https?://[^>]*>|https?://\S+", lambda m: " " * len(m.group(0)), prose_words)
        # **bold** and *emphasis* around a path are not part of it.
        prose_words = re.sub(r"\*\*|(?<=[\s(])\*|\*(?=[\s),;:]|\.(?!\w))", " ", prose_words)
        if rel.endswith(".scd"):
            # scdoc: *bold* and _underline_ around words.
            prose_words = re.sub(r"(?<![\w])[*_]|[*_](?![\w])", " ", prose_words)
        for m in re.finditer(r"(?<![\w/.$~-])((?:\.?[\w-]+/)+[\w.*{},-]*[\w*}]/?|[\w-]+\.[a-z]+)(?![\w/])", prose_words):
            self.check_path_word(doc, m.start(), m.group(1).rstrip("."), rooted_only=True)
        for m in re.finditer(r"(?<![\w.-])(" + IDENT + r")\(\)", prose_words):
            self.check_function(doc, m.start(), m.group(0), m.group(1))
        # Our names in prose: sb_x(fd) is a call of ours whatever its args;
        # SYNCBRIDGE_DEBUG or SB_WL_SERVER_NO_WAIT without backticks is still
        # a name a reader will grep for.
        for m in re.finditer(r"(?<![\w.-])((?:sb|sbfault)_\w+)\((?!\))", prose_words):
            self.check_function(doc, m.start(), m.group(1) + "()", m.group(1))
        for m in re.finditer(r"(?<![\w./$-])(?:SB|SYNCBRIDGE)_[A-Z0-9_]*[A-Z0-9](?![\w(/])", prose_words):
            self.check_symbol(doc, m.start(), m.group(0))
        for m in re.finditer(r"(?<![\w-])(syncbridge[\w-]*)\((\d)\)", prose_words):
            self.check_man(doc, m.start(), m.group(0), m.group(1), m.group(2))
        # Figures: in prose and in spans alike, not in shell blocks.
        fig_text = list(prose)
        for off, span in spans:
            fig_text[off:off + len(span)] = span
        self.check_figures(doc, "".join(fig_text))
        self.check_sections(doc, "".join(fig_text))

    def finish(self, whole):
        if self.pending_functions:
            found = system_declared([p[3] for p in self.pending_functions], self.cache_file)
            for doc, off, token, name in self.pending_functions:
                if name not in found:
                    self.bad(doc, off, token, "not in the repository's code nor in a header under /usr/include")
        if not whole:
            return  # a few docs cannot tell whether an entry is still needed
        for key, (n, reason) in sorted(self.allow.items(), key=lambda kv: kv[1][0]):
            if key not in self.allow_used:
                self.problems.append((("~", n), f"check-docs.allow:{n}: {key[0]} {key[1]}: matches nothing any more; remove it"))


def run(args):
    root = os.path.abspath(args.root)
    checker = Checker(root, args.allow, args.cache)
    checker.verbose = args.verbose
    docs = args.docs or doc_files(root)
    for rel in docs:
        checker.check_doc(os.path.relpath(os.path.join(root, rel), root) if not os.path.isabs(rel)
                          else os.path.relpath(rel, root))
    checker.finish(whole=not args.docs)
    # In the docs' order, line by line (the /usr/include answers come last).
    order = {rel: i for i, rel in enumerate(docs)}
    for _, p in sorted(checker.problems, key=lambda kp: (order.get(kp[0][0], len(order)), kp[0][1])):
        print(p)
    c = checker.counts
    summary = (f"{len(docs)} docs, {sum(c.values())} references: {c['files']} files, "
               f"{c['functions']} functions, {c['symbols']} other names, {c['figures']} figures, "
               f"{c['sections']} sections, "
               f"{c['links']} links, {c['man pages']} man pages; "
               f"{len(checker.problems)} problem(s); {len(checker.allow_used)} allowed by the list")
    if checker.problems:
        print("check-docs: " + summary, file=sys.stderr)
        return 1
    print("ok - " + summary)
    return 0


def control(args):
    """The planted violations must be found, each by name, and nothing else."""
    root = os.path.abspath(args.root)
    planted = args.control
    with open(os.path.join(root, planted), encoding="utf-8") as fh:
        text = fh.read()
    expect = []
    for m in re.finditer(r"<!--\s*expect:(.*?)-->", text, re.S):
        expect += m.group(1).split("|")
    expect = [e.strip() for e in expect if e.strip()]
    if not expect:
        print(f"not ok - {planted} has no <!-- expect: ... --> line")
        return 1
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", root,
                        "--allow", "", planted], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    failures = 0
    if r.returncode != 1:
        print(f"not ok - exit status {r.returncode}, expected 1 (problems found)")
        failures += 1
    lines = r.stdout.splitlines()
    for e in expect:
        hits = [ln for ln in lines if f": names {e}, which does not exist" in ln]
        if hits:
            print(f"ok - names {e}")
        else:
            print(f"not ok - does not name {e}")
            failures += 1
    extra = [ln for ln in lines if not any(f": names {e}, which" in ln for e in expect)]
    for ln in extra:
        print(f"not ok - also reported (the planted doc's valid references must pass): {ln}")
        failures += 1
    return 1 if failures else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="the source tree")
    ap.add_argument("--allow", default=os.path.join(here, "check-docs.allow"),
                    help="the allow-list ('' for none)")
    ap.add_argument("--cache", default=None, help="where to keep the /usr/include answers")
    ap.add_argument("--control", metavar="PLANTED_DOC")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every reference checked")
    ap.add_argument("docs", nargs="*")
    args = ap.parse_args()
    if args.control:
        return control(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
