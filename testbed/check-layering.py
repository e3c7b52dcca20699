#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering the headers and meson.build comments claim, checked.

    check-layering.py SOURCE_ROOT [BUILD_ROOT]

1. Includes, per folder (RULES below): a quoted #include "x.h" is resolved
   to the folder that holds x.h (the including file's own folder first, then
   a relative path, then any folder of the tree holding that name) and must
   be one the including folder may use. In short: src/core includes no other
   library, layer or testbed; a side library (src/egl, src/wayland,
   src/pipewire) only the core; a library of common/ only the header-only
   clock.h; common/ nothing above it; shipped code (src/, layer/, common/,
   compositor/, examples/, tools/, proxy/) never testbed/.
2. Calls inside src/wayland's compositor helper: server_internal.h's file map
   lists the files top down, "a file calls only files below it". Every file
   that includes server_internal.h must be in the map, and a call from one of
   them to an sb_wl_* function defined in another must go down the map.
   The example compositor the same way: compositor/wlc_internal.h's map
   holds every compositor/wlc_*.c, and a call from one of them to a
   function another defines (not static) must go down it.
3. With BUILD_ROOT: no installed program or library links anything built in
   testbed/ (its link line in build.ninja).

Prints "ok"/"not ok" lines; exits 1 on any violation.
"""
import os
import re
import subprocess
import sys

# Folder (relative to the source root; the longest prefix wins) -> folders its
# files may include from. "include" is the public headers; system and
# generated headers (not in the tree) are not checked.
# An entry may also name one file: the libraries take only common/'s
# header-only clock.h (now_ns()), nothing they would have to link.
SHIPPED_BASE = ["include"]
LIB_BASE = ["include", "common/clock.h"]
RULES = {
    "src/core": ["src/core"] + LIB_BASE,
    "src/egl": ["src/egl", "src/core"] + LIB_BASE,
    "src/wayland": ["src/wayland", "src/core"] + LIB_BASE,
    "src/pipewire": ["src/pipewire", "src/core"] + LIB_BASE,
    "layer": ["layer", "src/core"] + LIB_BASE,
    "common": ["common"] + SHIPPED_BASE,
    "compositor": ["compositor", "common"] + SHIPPED_BASE,
    "examples": ["examples", "common"] + SHIPPED_BASE,
    "tools": ["tools", "common"] + SHIPPED_BASE,
    "proxy": ["proxy", "common"] + SHIPPED_BASE,
    "include": SHIPPED_BASE,
}
SHIPPED = ["src", "layer", "common", "compositor", "examples", "tools", "proxy", "include"]
SOURCE_EXT = (".c", ".h")

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
    return sorted(f for f in files if os.path.exists(os.path.join(root, f)))


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


def check_includes(root, files):
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    checked = 0
    for f in files:
        rule = folder_of(f)
        shipped = any(in_folder(f, s) for s in SHIPPED)
        if rule is None and not shipped:
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in include_re.findall(text):
            rel = os.path.normpath(os.path.join(os.path.dirname(f), name))
            if rel in by_name.get(os.path.basename(name), []):
                targets = [rel]
            else:
                targets = [t for t in by_name.get(os.path.basename(name), []) if t.endswith(name)]
            if not targets:
                continue  # system or generated (wayland-scanner, glslang)
            checked += 1
            if shipped and all(in_folder(t, "testbed") for t in targets):
                bad(f'{f} includes "{name}" from testbed/: shipped code never uses test support')
                continue
            if rule is None:
                continue
            allowed = RULES[rule]
            if not any(in_folder(t, a) for t in targets for a in allowed):
                bad(f'{f} includes "{name}" ({", ".join(targets)}): {rule}/ may include only from {", ".join(allowed)}')
    ok(f"includes: {checked} quoted includes of tree headers checked against the folder rules")


def check_wayland_order(root, files):
    header = os.path.join(root, "src/wayland/server_internal.h")
    with open(header, encoding="utf-8") as fh:
        text = fh.read()
    head = text[: text.index("#ifndef")]  # the comment above the include guard
    order = re.findall(r"^ \*   ([A-Za-z0-9_\-]+\.c)\s", head, re.M)
    if not order:
        bad("src/wayland/server_internal.h: no file map found")
        return
    rank = {name: i for i, name in enumerate(order)}
    members = []
    for f in files:
        if f.startswith("src/wayland/") and f.endswith(".c"):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                if '#include "server_internal.h"' in fh.read():
                    members.append(f)
    for f in members:
        if os.path.basename(f) not in rank:
            bad(f"{f} includes server_internal.h but is not in its file map")
    defs, bodies = {}, {}
    for f in members:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            body = strip_comments_and_strings(fh.read())
        bodies[os.path.basename(f)] = body
        for name in re.findall(r"^(sb_wl_[A-Za-z0-9_]+)\(", body, re.M):
            defs[name] = os.path.basename(f)
    calls = 0
    for caller, body in bodies.items():
        for name in sorted(set(re.findall(r"\b(sb_wl_[A-Za-z0-9_]+)\s*\(", body))):
            callee = defs.get(name)
            if not callee or callee == caller or caller not in rank or callee not in rank:
                continue
            calls += 1
            if rank[callee] <= rank[caller]:
                bad(f"src/wayland/{caller} calls {name}() of {callee}, which the file map puts above it")
    ok(f"src/wayland: {len(members)} files in the order {' > '.join(order)}; {calls} cross-file calls go down")


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


def check_compositor_order(root, files):
    order = file_map(root, "compositor/wlc_internal.h")
    if not order:
        bad("compositor/wlc_internal.h: no file map found")
        return
    rank = {name: i for i, name in enumerate(order)}
    members = [f for f in files if f.startswith("compositor/wlc_") and f.endswith(".c")]
    for f in members:
        if os.path.basename(f) not in rank:
            bad(f"{f} is not in compositor/wlc_internal.h's file map")
    for name in order:
        if f"compositor/{name}" not in members:
            bad(f"compositor/wlc_internal.h's file map names {name}, which does not exist")
    defs, bodies = {}, {}
    for f in members:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            body = strip_comments_and_strings(fh.read())
        bodies[os.path.basename(f)] = body
        for name in exported_defs(body):
            defs[name] = os.path.basename(f)
    calls = 0
    for caller, body in bodies.items():
        for name in sorted(set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", body))):
            callee = defs.get(name)
            if not callee or callee == caller or caller not in rank or callee not in rank:
                continue
            calls += 1
            if rank[callee] <= rank[caller]:
                bad(f"compositor/{caller} calls {name}() of {callee}, which the file map puts above it")
    ok(f"compositor: {len(members)} files in the order {' > '.join(order)}; {calls} cross-file calls go down")


def check_installed_links(build):
    try:
        out = subprocess.run(["meson", "introspect", build, "--targets"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"# meson introspect failed ({e}): installed links not checked")
        return
    import json
    targets = [t for t in json.loads(out) if t.get("installed")]
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as fh:
        ninja = fh.read().replace("$\n", " ")
    count = 0
    for t in targets:
        for path in t["filename"]:
            out_rel = os.path.relpath(path, build)
            m = re.search(r"^build " + re.escape(out_rel) + r":([^\n]*)", ninja, re.M)
            if not m:
                continue
            count += 1
            inputs = m.group(1).split()
            if any(i.startswith("testbed/") for i in inputs):
                bad(f"installed {out_rel} links from testbed/: {[i for i in inputs if i.startswith('testbed/')]}")
    ok(f"{count} installed targets link nothing from testbed/")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = sys.argv[1]
    files = tracked_files(root)
    check_includes(root, files)
    check_wayland_order(root, files)
    check_compositor_order(root, files)
    if len(sys.argv) > 2:
        check_installed_links(sys.argv[2])
    print("FAIL: layering violated" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
