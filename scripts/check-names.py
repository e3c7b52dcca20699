#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every public function's name keeps the rule of docs/core.md, "Names".

    check-names.py SOURCE_ROOT             the version scripts src/*/*.sym
    check-names.py --control PLANTED_SYM   must fail on each planted name

The names are the ones a version script exports in a public node (every
node but *_PRIVATE, whose internals are not API): the *-exported-symbols
tests already hold the .sym files to `nm -D` and to the headers. A name is

    sb_ [LIBRARY_] OBJECT _ VERB [_ COMPLEMENT]

- LIBRARY: the library's word, from the node (SYNCBRIDGE_EGL_0: egl,
  SYNCBRIDGE_PIPEWIRE_0: pw, SYNCBRIDGE_WAYLAND_*: wl; the core's none);
- OBJECT: one of the library's objects (OBJECTS below: the nouns the docs
  name; a new object is added here and in docs/core.md);
- VERB: one of VERBS, right after the object;
- COMPLEMENT (optional): what the verb reads, sets or hands out, not the
  object again (`sb_dmabuf_is_dmabuf`); after `export` it names the kind of
  fd the caller gets: it ends in `fence`, `sync_file` or `fd`.

Prints "ok"/"not ok" lines; exits 1 on any name that breaks the rule.
"""
import glob
import os
import re
import sys

LIBRARY_WORDS = {"core": "", "egl": "egl_", "pipewire": "pw_", "wayland": "wl_"}

OBJECTS = {
    "core": ["library", "env", "sync_file", "sync_file_info", "dmabuf", "syncobj",
             "syncobj_waiter", "buffer_queue"],
    "egl": ["display", "sync_file", "dmabuf"],
    "pipewire": ["sync", "buffer", "producer", "consumer"],
    "wayland": ["server", "server_surface", "commit", "client", "surface_sync", "release"],
}

VERBS = ["create", "destroy", "get", "set", "is", "uses", "export", "import", "wait",
         "watch", "signal", "query", "merge", "accumulate", "close", "dequeue", "queue",
         "acquire", "release", "add", "remove", "build", "attach", "commit"]

# What an export hands out: a new fd, so its complement names the fd's kind.
EXPORT_KINDS = ("fence", "sync_file", "fd")


def library_of(node):
    """The library a version node belongs to, or None for a private node."""
    if node.endswith("_PRIVATE"):
        return None
    for word, lib in (("_EGL_", "egl"), ("_PIPEWIRE_", "pipewire"), ("_WAYLAND_", "wayland")):
        if word in node + "_":
            return lib
    return "core"


def exported(path):
    """[(node, name)] of a version script's global names."""
    with open(path, encoding="utf-8") as fh:
        text = re.sub(r"/\*.*?\*/", " ", fh.read(), flags=re.S)
    names = []
    for m in re.finditer(r"(\w+)\s*\{(.*?)\}", text, re.S):
        body = m.group(2)
        glob_part = body.split("local:")[0].replace("global:", "")
        for name in re.findall(r"([A-Za-z_]\w*)\s*;", glob_part):
            names.append((m.group(1), name))
    return names


def why_bad(lib, name):
    """None when name keeps the rule, else why not."""
    prefix = "sb_" + LIBRARY_WORDS[lib]
    if not name.startswith(prefix):
        return f"does not start with {prefix}"
    rest = name[len(prefix):]
    objects = [o for o in OBJECTS[lib] if rest == o or rest.startswith(o + "_")]
    if not objects:
        return f"no object of {lib} ({', '.join(OBJECTS[lib])}) after {prefix}"
    obj = max(objects, key=len)
    words = rest[len(obj) + 1:].split("_") if rest != obj else []
    if not words or words[0] not in VERBS:
        return f"no verb ({', '.join(VERBS)}) right after the object {obj}"
    verb, complement = words[0], "_".join(words[1:])
    if complement == obj:
        return f"the complement repeats the object {obj}"
    if verb == "export" and complement and not complement.endswith(EXPORT_KINDS):
        return (f"export's complement ({complement}) names no kind of fd "
                f"({', '.join(EXPORT_KINDS)})")
    return None


def check(paths):
    failures = checked = 0
    for path in paths:
        for node, name in exported(path):
            lib = library_of(node)
            if lib is None:
                continue
            checked += 1
            why = why_bad(lib, name)
            if why:
                failures += 1
                print(f"not ok - {os.path.basename(path)}: {name}: {why}")
    print(f"ok - {checked} public names read" if not failures else
          f"# {failures} of {checked} public names break the rule (docs/core.md, \"Names\")")
    return 1 if failures else 0


def control(planted):
    """Each name of the planted file's ` * expect:` list must be reported, no other."""
    with open(planted, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"^ \* expect:(.*?)\*/", text, re.S | re.M)
    expect = re.findall(r"\bsb_\w+", m.group(1)) if m else []
    if not expect:
        print(f"not ok - control: {planted} has no ' * expect:' list")
        return 1
    import io
    import contextlib
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = check([planted])
    sys.stdout.write(out.getvalue())
    bad = [ln for ln in out.getvalue().splitlines() if ln.startswith("not ok")]
    failures = 0
    if status != 1:
        print("not ok - control: the check passed the planted names")
        failures += 1
    for name in expect:
        if any(f": {name}: " in ln for ln in bad):
            print(f"ok - control: reported {name}")
        else:
            print(f"not ok - control: did not report {name}")
            failures += 1
    for ln in bad:
        if not any(f": {name}: " in ln for name in expect):
            print(f"not ok - control: also reported (a valid planted name): {ln}")
            failures += 1
    return 1 if failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--control":
        return control(sys.argv[2])
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    paths = sorted(glob.glob(os.path.join(sys.argv[1], "src", "*", "*.sym")))
    if not paths:
        print(f"not ok - no src/*/*.sym under {sys.argv[1]}")
        return 1
    return check(paths)


if __name__ == "__main__":
    sys.exit(main())
