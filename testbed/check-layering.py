#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering the headers and meson.build comments claim, checked.

    check-layering.py SOURCE_ROOT [BUILD_ROOT]
    check-layering.py --control PLANTED_ROOT

1. Includes, per folder (RULES below). A quoted #include "x.h" is resolved
   to the folder that holds x.h (the including file's own folder first, then
   a relative path, then any folder of the tree holding that name); an
   #include <a/x.h> to the tree's files whose path ends in a/x.h
   (<syncbridge/x.h> is include/syncbridge/x.h, <core/private.h>
   src/core/private.h), an #include <x.h> to the tree's x.h outside
   include/syncbridge (the public headers are reached as <syncbridge/x.h>:
   <wayland-client.h> is libwayland's); a name the tree does not hold is a
   system or generated header. The folder must be one the including folder
   may use. In short: src/core includes no other library, layer, common/ or
   testbed; a side library (src/egl, src/wayland, src/pipewire) only the
   core; the layer only the core; common/ nothing above it but the public
   headers and src/core/private.h; shipped code (src/, layer/, common/,
   compositor/, examples/, tools/, proxy/) never testbed/.
2. Calls inside src/wayland's compositor helper: server_internal.h's file map
   lists the files top down, "a file calls only files below it". Every file
   that includes server_internal.h must be in the map, and a call from one of
   them to an sb_wl_* function defined in another must go down the map.
   The example compositor the same way: compositor/wlc_internal.h's map
   holds every compositor/wlc_*.c, and a call from one of them to a
   function another defines (not static) must go down it.
3. Calls between the files of a library folder (CALL_FOLDERS) go one way:
   no file calls (through any chain) a function of a file that calls it; an
   object below tells the one above through a callback it was given.
4. With BUILD_ROOT, the link lines of its build.ninja (every target's
   inputs, the static libraries it links included): nothing built in src/
   or layer/ links anything built in common/ or testbed/; no shipped
   program (built in common/, compositor/, examples/, tools/, proxy/) and
   no installed target (meson introspect) links anything built in testbed/.

--control PLANTED_ROOT runs the check on a planted tree
(tests/layering-planted/: its files and its ninja/build.ninja) and passes only when
that run fails naming every line of its expect.txt, and nothing else.

Prints "ok"/"not ok" lines; exits 1 on any violation.
"""
import os
import re
import subprocess
import sys

# Folder (relative to the source root; the longest prefix wins) -> folders its
# files may include from. "include" is the public headers; system and
# generated headers (not in the tree) are not checked.
# An entry may also name one file: common/ takes src/core/private.h (the
# SB_PRIVATE marker), nothing else of src/.
SHIPPED_BASE = ["include"]
LIB_BASE = ["include"]
RULES = {
    "src/core": ["src/core"] + LIB_BASE,
    "src/egl": ["src/egl", "src/core"] + LIB_BASE,
    "src/wayland": ["src/wayland", "src/core"] + LIB_BASE,
    "src/pipewire": ["src/pipewire", "src/core"] + LIB_BASE,
    "layer": ["layer", "src/core"] + LIB_BASE,
    "common": ["common", "src/core/private.h"] + SHIPPED_BASE,
    "compositor": ["compositor", "common"] + SHIPPED_BASE,
    "examples": ["examples", "common"] + SHIPPED_BASE,
    "tools": ["tools", "common"] + SHIPPED_BASE,
    "proxy": ["proxy", "common"] + SHIPPED_BASE,
    "include": SHIPPED_BASE,
}
SHIPPED = ["src", "layer", "common", "compositor", "examples", "tools", "proxy", "include"]
SOURCE_EXT = (".c", ".h")
PLANTED = "tests/layering-planted"

failures = 0


def bad(msg):
    global failures
    failures += 1
    print(f"not ok - {msg}")


def ok(msg):
    print(f"ok - {msg}")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True, check=True).stdout
        files = [f for f in out.splitlines() if f.endswith(SOURCE_EXT)]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, _, names in os.walk(root):
            if "/build" in d or "/." in d:
                continue
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(SOURCE_EXT)]
    # The control's planted tree is checked only by --control, on its own.
    return sorted(f for f in files if os.path.exists(os.path.join(root, f))
                  and not in_folder(f, PLANTED))


def folder_of(path):
    """The RULES key that governs path (longest prefix), or None."""
    best = None
    for key in RULES:
        if path == key or path.startswith(key + "/"):
            if best is None or len(key) > len(best):
                best = key
    return best


def in_folder(path, folder):
    return path == folder or path.startswith(folder + "/")


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def resolve_include(f, name, quoted, files, by_name):
    """The tree files an include of name from file f can mean ([]: none)."""
    base = os.path.basename(name)
    if quoted:
        rel = os.path.normpath(os.path.join(os.path.dirname(f), name))
        if rel in by_name.get(base, []):
            return [rel]
        return [t for t in by_name.get(base, []) if t.endswith(name)]
    if "/" in name:
        return [t for t in by_name.get(base, []) if t == name or t.endswith("/" + name)]
    return [t for t in by_name.get(base, []) if not in_folder(t, "include/syncbridge")]


def check_includes(root, files):
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    include_re = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<([^>]+)>)', re.M)
    checked = {True: 0, False: 0}
    for f in files:
        rule = folder_of(f)
        shipped = any(in_folder(f, s) for s in SHIPPED)
        if rule is None and not shipped:
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for qname, aname in include_re.findall(text):
            quoted = bool(qname)
            name = qname or aname
            shown = f'"{name}"' if quoted else f"<{name}>"
            targets = resolve_include(f, name, quoted, files, by_name)
            if not targets:
                continue  # system or generated (wayland-scanner, glslang)
            checked[quoted] += 1
            if shipped and all(in_folder(t, "testbed") for t in targets):
                bad(f"{f} includes {shown} from testbed/: shipped code never uses test support")
                continue
            if rule is None:
                continue
            allowed = RULES[rule]
            if not any(in_folder(t, a) for t in targets for a in allowed):
                bad(f'{f} includes {shown} ({", ".join(targets)}): {rule}/ may include only '
                    f'from {", ".join(allowed)}')
    ok(f"includes: {checked[True]} quoted and {checked[False]} <> includes of tree headers "
       "checked against the folder rules")


def file_map(root, header):
    """The files a header's comment map lists, top down (one per line, first in it)."""
    with open(os.path.join(root, header), encoding="utf-8") as fh:
        text = fh.read()
    head = text[: text.index("#ifndef")]  # the comment above the include guard
    return re.findall(r"^ \*   ([A-Za-z0-9_\-]+\.c)\s", head, re.M)


def exported_defs(body):
    """Functions a file defines that are not static: a name at the start of a
    line, opening its parameters, after a line that does not say static."""
    lines = body.split("\n")
    names = []
    for prev, line in zip([""] + lines, lines):
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\(", line)
        if m and not re.search(r"\bstatic\b", prev) and prev.strip() and not prev.rstrip().endswith(";"):
            names.append(m.group(1))
    return names


def calls_go_down(root, folder, order, members, defined):
    """Every call from one of members to a function another of them defines
    (defined(body): the names a file defines) goes down order. Returns the
    number of cross-file calls."""
    rank = {name: i for i, name in enumerate(order)}
    defs, bodies = {}, {}
    for f in members:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            body = strip_comments_and_strings(fh.read())
        bodies[os.path.basename(f)] = body
        for name in defined(body):
            defs[name] = os.path.basename(f)
    calls = 0
    for caller, body in bodies.items():
        for name in sorted(set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", body))):
            callee = defs.get(name)
            if not callee or callee == caller or caller not in rank or callee not in rank:
                continue
            calls += 1
            if rank[callee] <= rank[caller]:
                bad(f"{folder}/{caller} calls {name}() of {callee}, which the file map puts above it")
    return calls


def check_wayland_order(root, files):
    if not os.path.exists(os.path.join(root, "src/wayland/server_internal.h")):
        print("# no src/wayland/server_internal.h: no file map to check")
        return
    order = file_map(root, "src/wayland/server_internal.h")
    if not order:
        bad("src/wayland/server_internal.h: no file map found")
        return
    members = []
    for f in files:
        if f.startswith("src/wayland/") and f.endswith(".c"):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                if '#include "server_internal.h"' in fh.read():
                    members.append(f)
    for f in members:
        if os.path.basename(f) not in order:
            bad(f"{f} includes server_internal.h but is not in its file map")
    calls = calls_go_down(root, "src/wayland", order, members,
                          lambda body: re.findall(r"^(sb_wl_[A-Za-z0-9_]+)\(", body, re.M))
    ok(f"src/wayland: {len(members)} files in the order {' > '.join(order)}; {calls} cross-file calls go down")


def check_compositor_order(root, files):
    if not os.path.exists(os.path.join(root, "compositor/wlc_internal.h")):
        return  # a tree without the example compositor (the planted one)
    order = file_map(root, "compositor/wlc_internal.h")
    if not order:
        bad("compositor/wlc_internal.h: no file map found")
        return
    members = [f for f in files if f.startswith("compositor/wlc_") and f.endswith(".c")]
    for f in members:
        if os.path.basename(f) not in order:
            bad(f"{f} is not in compositor/wlc_internal.h's file map")
    for name in order:
        if f"compositor/{name}" not in members:
            bad(f"compositor/wlc_internal.h's file map names {name}, which does not exist")
    calls = calls_go_down(root, "compositor", order, members, exported_defs)
    ok(f"compositor: {len(members)} files in the order {' > '.join(order)}; {calls} cross-file calls go down")


# The library folders whose files must call each other one way only: a file
# that calls into another is above it, and no chain of calls comes back (an
# object below tells the one above through a callback it was given).
CALL_FOLDERS = ["src/core", "src/egl", "src/wayland", "src/pipewire", "layer"]


def file_call_graph(root, folder, files):
    """{caller file: {callee file: [names]}} for the .c files of folder, by the
    non-static functions each defines (the name at the start of a line, the
    house style's definition) and calls."""
    bodies = {}
    for f in files:
        if os.path.dirname(f) == folder and f.endswith(".c"):
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                bodies[os.path.basename(f)] = strip_comments_and_strings(fh.read())
    defs = {}
    for name, body in bodies.items():
        for m in re.finditer(r"^([A-Za-z_]\w*)\(", body, re.M):
            before = body[: m.start()].rstrip().rsplit("\n", 1)[-1]
            if "static" not in before.split():
                defs.setdefault(m.group(1), name)
    graph = {name: {} for name in bodies}
    for name, body in bodies.items():
        for fn in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body)):
            callee = defs.get(fn)
            if callee and callee != name:
                graph[name].setdefault(callee, []).append(fn)
    return graph


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_call_circles(root, files):
    edges, found = 0, 0
    for folder in CALL_FOLDERS:
        graph = file_call_graph(root, folder, files)
        edges += sum(len(callees) for callees in graph.values())
        for comp in circles(graph):
            calls = [f"{a} -> {b} ({', '.join(sorted(set(graph[a][b])))})"
                     for a in comp for b in comp if b in graph[a]]
            bad(f"{folder}: files call each other in a circle: {'; '.join(calls)}")
            found += 1
    if not found:
        ok(f"calls: {edges} file-to-file call edges in {', '.join(CALL_FOLDERS)}, no circles")


# Where a target is built (its output's folder in the build tree) -> the
# folders of the build tree it may not link anything from.
LINK_RULES = {
    "src": ["common", "testbed"],
    "layer": ["common", "testbed"],
    "common": ["testbed"],
    "compositor": ["testbed"],
    "examples": ["testbed"],
    "tools": ["testbed"],
    "proxy": ["testbed"],
}


def link_lines(build):
    """{output: [inputs]} of build.ninja's link and archive rules."""
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as fh:
        ninja = fh.read().replace("$\n", " ")
    lines = {}
    for m in re.finditer(r"^build ([^:\n]+): (\w*LINKER)\b([^\n]*)", ninja, re.M):
        lines[m.group(1).strip()] = [i for i in m.group(3).split() if i not in ("|", "||")]
    return lines


def installed_outputs(build):
    try:
        out = subprocess.run(["meson", "introspect", build, "--targets"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"# meson introspect failed ({e}): installed targets not known")
        return []
    import json
    return [os.path.relpath(path, build) for t in json.loads(out) if t.get("installed")
            for path in t["filename"]]


def check_links(build):
    lines = link_lines(build)
    count = 0
    for out, inputs in sorted(lines.items()):
        top = out.split("/", 1)[0]
        for banned in LINK_RULES.get(top, []):
            count += 1
            found = [i for i in inputs if in_folder(i, banned)]
            if found:
                bad(f"{out} links from {banned}/: {found}")
    ok(f"links: {len(lines)} link lines read, {count} folder rules checked")
    count = 0
    for out in installed_outputs(build):
        if out not in lines:
            continue
        count += 1
        found = [i for i in lines[out] if in_folder(i, "testbed")]
        if found:
            bad(f"installed {out} links from testbed/: {found}")
    ok(f"{count} installed targets link nothing from testbed/")


def control(planted):
    """The planted violations (expect.txt, one message part a line) must all be
    found, and nothing else."""
    with open(os.path.join(planted, "expect.txt"), encoding="utf-8") as fh:
        expect = [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
    r = subprocess.run([sys.executable, os.path.abspath(__file__), planted,
                        os.path.join(planted, "ninja")], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("not ok")]
    failures = 0
    if r.returncode != 1:
        print(f"not ok - control: exit status {r.returncode}, expected 1 (violations found)")
        failures += 1
    for e in expect:
        if any(e in ln for ln in lines):
            print(f"ok - control: found {e}")
        else:
            print(f"not ok - control: did not find {e}")
            failures += 1
    for ln in lines:
        if not any(e in ln for e in expect):
            print(f"not ok - control: also reported (the planted tree's valid parts must pass): {ln}")
            failures += 1
    print("FAIL: the check missed planted violations" if failures else "PASS")
    return 1 if failures else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    if sys.argv[1] == "--control":
        return control(sys.argv[2])
    root = sys.argv[1]
    files = tracked_files(root)
    check_includes(root, files)
    check_wayland_order(root, files)
    check_compositor_order(root, files)
    check_call_circles(root, files)
    if len(sys.argv) > 2:
        check_links(sys.argv[2])
    print("FAIL: layering violated" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
