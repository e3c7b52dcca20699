#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""syncbridge-info's command line on any Linux machine (host tier).

    test_info_cli.py SYNCBRIDGE_INFO DATA_DIR CASE [FILES...]

CASE:
  wrong-fd-kinds  fence/dmabuf on fds that are not sync_files/dma-bufs (a file,
                  a pipe, an eventfd, a memfd, a socket, a directory, a closed
                  fd, a bad /proc path): exit 1, say what the fd is, print
                  nothing on stdout (also with --json)
  usage           bad command lines exit 2 with stdout empty, runtime errors 1;
                  every stderr line has the one prefix; the 3<PATH hint; every
                  command's --help / -h / `help COMMAND` on stdout, exit 0
  programs PROG...  every installed program (meson's list): --version and
                  --help exit 0 on stdout; an unknown option exits 2, stdout empty
  man PAGE...     each built man page renders (man -l, else groff) with NAME and
                  SYNOPSIS; syncbridge-info(1) has an entry per command
  ps-json         `--json ps PID` and `--json ps` produce JSON that loads
  trace-input     `trace --input` on canned tracefs text: valid trace JSON + SVG
  trace-no-tracefs  a missing tracefs is reported, exit 1
  trace-markers   `trace --input` on an excerpt of a real cube-demo trace (the
                  layer's and the EGL bridge's markers): markers tied to the
                  fence they name, also when that fence has no event in the
                  trace (from_marker); nesting depth; end words kept; the SVG's
                  ties, thread labels and --svg-window markers
Exit: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile

from common import check, check_trace, finish


def run(tool, args, fd=None, env=None):
    """Run tool with `fd` (if any) as its fd 3; return (rc, stdout, stderr)."""
    preexec = None
    if fd is not None:
        def preexec():
            if fd == 3:
                os.set_inheritable(3, True)
            else:
                os.dup2(fd, 3)  # inheritable by default
    # close_fds=False: the child must keep fd 3 (Python's own fds are close-on-exec anyway)
    r = subprocess.run([tool] + args, capture_output=True, text=True, close_fds=False,
                       preexec_fn=preexec, env=env, timeout=60)
    return r.returncode, r.stdout, r.stderr


def case_wrong_fd_kinds(tool, data):
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "plain")
    with open(path, "w") as f:
        f.write("x")
    r, w = os.pipe()
    a, b = socket.socketpair()
    kinds = [
        ("a regular file", os.open(path, os.O_RDONLY), "the file " + path),
        ("a pipe", r, "a pipe"),
        ("an eventfd", os.eventfd(0), "eventfd"),
        ("a memfd", os.memfd_create("sb-test"), "memfd"),
        ("a socket", a.fileno(), "a socket"),
        ("a directory", os.open(tmp, os.O_RDONLY | os.O_DIRECTORY), "the file " + tmp),
    ]
    for cmd, noun in (("fence", "not a sync_file"), ("dmabuf", "not a dma-buf")):
        for what, fd, expect in kinds:
            for extra in ([], ["--json"]):
                rc, out, err = run(tool, extra + [cmd, "3"], fd=fd)
                check(rc == 1, f"{cmd} {' '.join(extra)} on {what}: exit 1 (got {rc})")
                check(noun in err and expect in err,
                      f"{cmd} on {what}: says '{expect}' and '{noun}' ({err.strip()})")
                check(out == "", f"{cmd} {' '.join(extra)} on {what}: nothing on stdout")
            # the same fd named through /proc/PID/fd/N of this process (pidfd_getfd)
            rc, out, err = run(tool, [cmd, f"/proc/{os.getpid()}/fd/{fd}"])
            if "pidfd_getfd() needs ptrace access" in err:
                print(f"# /proc/PID/fd form not checked: no ptrace access here")
            else:
                check(rc == 1 and noun in err, f"{cmd} /proc/{os.getpid()}/fd/{fd} ({what}): "
                      f"exit 1, '{noun}' ({err.strip()})")
        rc, out, err = run(tool, [cmd, "47"])
        check(rc == 1 and "fd 47 is not open" in err, f"{cmd} on a closed fd ({err.strip()})")
        rc, out, err = run(tool, [cmd, "/proc/2147483647/fd/0"])
        check(rc == 1 and "no process" in err, f"{cmd} on a missing process ({err.strip()})")
        rc, out, err = run(tool, [cmd, f"/proc/{os.getpid()}/fd/4711"])
        check(rc == 1 and "has no fd 4711" in err, f"{cmd} on a missing fd ({err.strip()})")
        rc, out, err = run(tool, [cmd, "three"])
        check(rc == 2 and "neither an fd number nor /proc/PID/fd/N" in err,
              f"{cmd} on a bad argument: usage, exit 2 ({err.strip()})")


PREFIX = "syncbridge-info: "


def one_prefix(err):
    """Every line on stderr is a message with the tool's one prefix."""
    lines = err.splitlines()
    return bool(lines) and all(line.startswith(PREFIX) for line in lines)


def commands(tool):
    """The command names of the overview (`help`): the first word of each two-space line."""
    rc, out, err = run(tool, ["help"])
    return [line.split()[0] for line in out.splitlines()
            if line.startswith("  ") and not line.startswith("   ") and line.split()[0][0] != "-"]


def case_usage(tool, data):
    """Usage errors exit 2 with stdout empty and one prefix; help is on stdout with exit 0."""
    tmp = tempfile.mkdtemp()
    text = os.path.join(tmp, "notes.txt")
    with open(text, "w") as f:
        f.write("not a trace\nat all\n")
    for args in ([], ["bogus"], ["--bogus"], ["fence"], ["fence", "1", "2"], ["fence", "-1"],
                 ["fence", "abc"], ["fence", "--bogus"], ["fence", "/dev/null"], ["dmabuf"],
                 ["dmabuf", "abc"], ["dma-buf", "x"], ["ps", "x"], ["ps", "-5"], ["ps", "1", "2"],
                 ["--json", "ps", "0"], ["trace"], ["trace", "--"], ["trace", "--bogus"],
                 ["trace", "-o"], ["trace", "--buffer-kb", "1", "--", "true"],
                 ["trace", "--input", text, "--", "true"], ["help", "bogus"], ["help", "a", "b"]):
        rc, out, err = run(tool, args)
        what = " ".join(args) or "(nothing)"
        check(rc == 2, f"{what}: exit 2 (got {rc}) {err.strip()[:100]}")
        check(out == "", f"{what}: nothing on stdout ({out[:60]!r})")
        check(one_prefix(err), f"{what}: every stderr line starts with '{PREFIX}' ({err!r})")
    # runtime errors: exit 1, stdout empty, the same prefix
    for args in (["ps", "2147483647"], ["fence", "47"], ["dmabuf", "/proc/2147483647/fd/0"],
                 ["trace", "--input", text, "-o", os.path.join(tmp, "t.json")],
                 ["trace", "--input", os.path.join(tmp, "missing.txt"), "-o",
                  os.path.join(tmp, "t.json")]):
        rc, out, err = run(tool, args)
        what = " ".join(args)
        check(rc == 1 and out == "" and one_prefix(err),
              f"{what}: exit 1, stdout empty, one prefix (rc {rc}, out {out[:40]!r}, err {err!r})")
    rc, out, err = run(tool, ["ps", "2147483647"])
    check("no process 2147483647" in err, f"ps on a missing pid says so ({err.strip()})")
    rc, out, err = run(tool, ["trace", "--input", text, "-o", os.path.join(tmp, "t.json")])
    check("is not tracefs text" in err and not os.path.exists(os.path.join(tmp, "t.json")),
          f"trace --input on a text file: says so, writes nothing ({err.strip()})")
    # the hint for a path: the redirection that works, for both fd commands
    for cmd in ("fence", "dmabuf"):
        rc, out, err = run(tool, [cmd, "/dev/null"])
        check(f"syncbridge-info {cmd} 3 3</dev/null" in err,
              f"{cmd} /dev/null shows the 3</dev/null form ({err.strip()})")
    rc, out, err = run(tool, ["fence", "3"], fd=os.open("/dev/null", os.O_RDONLY))
    check(rc == 1 and "is the file /dev/null, not a sync_file" in err,
          f"the hinted form runs and says what the fd is ({err.strip()})")
    # control: an fd number is not taken for a path
    rc, out, err = run(tool, ["fence", "47"])
    check("is a path" not in err, f"fence 47 gets no path hint ({err.strip()})")

    # help: the overview, every command's --help / -h / help COMMAND, on stdout, exit 0
    cmds = commands(tool)
    check({"fence", "dmabuf", "ps", "trace", "help"} <= set(cmds), f"the overview lists {cmds}")
    for args in (["--help"], ["-h"], ["help"], ["--version"]):
        rc, out, err = run(tool, args)
        check(rc == 0 and out and err == "", f"{' '.join(args)}: exit 0, stdout only (rc {rc})")
    for c in cmds:
        texts = []
        for args in ([c, "--help"], [c, "-h"], ["help", c], ["--json", c, "--help"]):
            rc, out, err = run(tool, args)
            check(rc == 0 and err == "" and f"usage: syncbridge-info" in out and f" {c}" in out,
                  f"{' '.join(args)}: exit 0, its usage on stdout (rc {rc}, {err.strip()[:80]})")
            check("Exit status" in out, f"{' '.join(args)}: says the exit statuses")
            texts.append(out)
        check(len(set(texts)) == 1, f"{c}: --help, -h and help {c} print the same")
    rc, out, err = run(tool, ["dma-buf", "--help"])
    check(rc == 0 and "dmabuf" in out, "the alias dma-buf has the same help")
    # --help after trace's "--" belongs to the command (control: the tool does not answer it)
    rc, out, err = run(tool, ["trace", "--input", text, "--", "--help"])
    check(rc == 2 and out == "", f"trace --input F -- --help: the operand is trace's error ({rc})")
    rc, out, err = run(tool, ["--version"])
    check(out.startswith("syncbridge-info "), f"--version prints the version ({out.strip()})")


def case_programs(tool, data, programs):
    """Every installed program: --version and --help on stdout with exit 0; an
    unknown option exits 2 with stdout empty."""
    check(len(programs) >= 2, f"meson passed the installed programs ({len(programs)})")
    version = None
    for prog in programs:
        name = os.path.basename(prog)
        rc, out, err = run(prog, ["--version"])
        words = out.split()
        check(rc == 0 and len(words) == 2 and words[0] == name and err == "",
              f"{name} --version: exit 0, '{name} VERSION' on stdout (rc {rc}, {out.strip()!r})")
        version = version or (words[1] if len(words) == 2 else None)
        check(len(words) == 2 and words[1] == version,
              f"{name} --version: the same version as the others ({out.strip()!r})")
        for h in ("--help", "-h"):
            rc, out, err = run(prog, [h])
            check(rc == 0 and "usage" in out.lower() and err == "",
                  f"{name} {h}: exit 0, usage on stdout (rc {rc}, {len(out)} bytes, {err[:60]!r})")
        rc, out, err = run(prog, ["--no-such-option"])
        check(rc == 2 and out == "" and "--no-such-option" in err,
              f"{name} --no-such-option: exit 2, stdout empty, named on stderr "
              f"(rc {rc}, {out[:40]!r}, {err.splitlines()[:1]})")
        check(err.startswith(name + ": "), f"{name}: the error starts with '{name}: ' ({err[:60]!r})")


def man_text(page):
    """The page rendered as text: man -l where man-db is, else groff; None if neither runs."""
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8")
    for cmd in (["man", "-l", page], ["groff", "-man", "-Tutf8", page]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        except FileNotFoundError:
            continue
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout, " ".join(cmd[:2])
        print(f"# {' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[:200]}")
    return None, None


def case_man(tool, data, pages):
    """The built man pages render and have NAME and SYNOPSIS; syncbridge-info(1) has a
    section for every command the tool's overview lists."""
    if not pages:
        print("SKIP: no man pages built (scdoc not found or -Dman_pages=disabled)")
        return 77
    for page in pages:
        text, how = man_text(page)
        name = os.path.basename(page)
        if text is None:
            check(False, f"{name} renders")
            continue
        # section headings are the lines at column 0 (bold overstrikes removed)
        heads = [re.sub(".\b", "", line).strip() for line in text.splitlines()
                 if line[:1].strip() and not line.startswith(" ")]
        check("NAME" in heads and "SYNOPSIS" in heads,
              f"{name} ({how}): NAME and SYNOPSIS sections ({heads[:8]})")
        check("EXIT STATUS" in heads or not name.endswith(".1"),
              f"{name}: a section 1 page says its exit statuses")
        if name.startswith("syncbridge-info."):
            plain = re.sub(".\b", "", text)
            for c in commands(tool):
                check(re.search(rf"^\s+{re.escape(c)}( |$)", plain, re.M) is not None,
                      f"{name}: has an entry for the command {c}")
    return None


def case_ps_json(tool, data):
    rc, out, err = run(tool, ["--json", "ps", str(os.getpid())])
    check(rc == 0, f"--json ps PID exits 0 ({err.strip()})")
    try:
        d = json.loads(out)
        check(isinstance(d["processes"], list) and "dmabufs" in d and "sync_files" in d,
              "ps PID JSON has processes, dmabufs, sync_files")
    except (ValueError, KeyError) as e:
        check(False, f"ps PID output is JSON: {e}: {out[:200]}")
    rc, out, err = run(tool, ["--json", "ps"])
    check(rc == 0, f"--json ps exits 0 ({err.strip()})")
    try:
        d = json.loads(out)
        check(all("pid" in p and "fds" in p for p in d["processes"]), "every process has pid and fds")
    except (ValueError, KeyError) as e:
        check(False, f"ps output is JSON: {e}: {out[:200]}")
    rc, out, err = run(tool, ["ps", str(os.getpid())])
    check(rc == 0 and out.startswith("PID"), "human ps prints a header")


def case_trace_input(tool, data):
    tmp = tempfile.mkdtemp()
    out_json = os.path.join(tmp, "canned.json")
    rc, out, err = run(tool, ["trace", "--input", os.path.join(data, "handoff-trace.txt"),
                              "-o", out_json])
    check(rc == 0, f"trace --input exits 0 ({err.strip()})")
    check("7 fences on 3 timelines (6 signalled, 1 not)" in err, f"summary line ({err.strip()})")
    svg = os.path.join(tmp, "canned.svg")
    check(check_trace(out_json, "--svg", svg, "--png", os.path.join(tmp, "canned.png"),
                      "--min-fences", "virtio_gpu:1", "--min-fences", "dma_fence_array:2",
                      "--markers", "5"), "check_trace.py accepts the outputs")
    rc, out, err = run(tool, ["--json", "trace", "--input", os.path.join(data, "handoff-trace.txt"),
                              "-o", out_json, "--svg", svg])
    try:
        d = json.loads(out)
        check(d["fences"] == 7 and d["unsignalled"] == 1 and d["waits"] == 1,
              f"--json trace summary: {d}")
    except (ValueError, KeyError) as e:
        check(False, f"--json trace prints a JSON summary: {e}: {out[:200]}")
    rc, out, err = run(tool, ["trace", "--input", os.path.join(tmp, "missing.txt"), "-o", out_json])
    check(rc == 1 and "missing.txt" in err, f"a missing input file is an error ({err.strip()})")


def case_trace_markers(tool, data):
    tmp = tempfile.mkdtemp()
    src = os.path.join(data, "cube-markers-trace.txt")
    nostub = os.path.join(tmp, "nostub.txt")
    with open(src) as f, open(nostub, "w") as g:
        g.writelines(line for line in f if "dma_fence_" not in line)
    for name, path, from_marker in (("with-stub", src, False), ("no-stub", nostub, True)):
        js, svg = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".svg")
        rc, out, err = run(tool, ["trace", "--input", path, "-o", js, "--svg-window", "markers"])
        check(rc == 0, f"{name}: trace --input exits 0 ({err.strip()})")
        check(check_trace(js, "--svg", svg, "--markers", "20"),
              f"{name}: check_trace.py accepts the outputs")
        with open(js) as f:
            doc = json.load(f)
        s = doc["syncbridge"]
        named = [m for m in s["markers"] if "fence=0:0" in m["args"]]
        tied = {m["fence"] for m in named}
        check(named and len(tied) == 1 and None not in tied,
              f"{name}: the {len(named)} markers naming fence 0:0 are tied to one fence ({tied})")
        if named and None not in tied:
            f = s["fences"][named[0]["fence"]]
            check((f["driver"], f["timeline"], f["context"], f["seqno"]) == ("stub", "stub", 0, 0)
                  and f["from_marker"] == from_marker,
                  f"{name}: it is the stub fence, from_marker {from_marker} ({f})")
        check(all(m["fence"] is None for m in s["markers"] if "fence=" not in m["args"]),
              f"{name}: markers naming no fence are tied to none")
        subs = [m for m in s["markers"] if m["name"] == "layer.submit"]
        exps = [m for m in s["markers"] if m["name"] == "layer.release_export"]
        check(subs and all(m["depth"] == 0 for m in subs) and exps
              and all(m["depth"] == 1 for m in exps), f"{name}: release_export nests in submit")
        check(any("result=0" in m["args"] for m in subs), f"{name}: the end's words are kept")
        flows = [e for e in doc["traceEvents"] if e.get("cat") == "syncbridge_flow"]
        check((len(flows) == 0) if from_marker else (len(flows) == 2 * len(named)),
              f"{name}: a flow arrow per tied marker, none to a fence without a bar ({len(flows)})")
        with open(svg) as f:
            text = f.read()
        check(text.count('class="tie"') >= len(named),
              f"{name}: the SVG ties every such marker to the fence's row")
        check("syncbridge-demo[211]: layer" in text and "syncbridge-demo[210]: egl" in text,
              f"{name}: marker rows say which library wrote them")
        check("shown: " in text, f"{name}: --svg-window markers is said in the SVG")
        if from_marker:
            check("stub / stub: from markers" in text, f"{name}: the row of a fence from markers")


def case_trace_no_tracefs(tool, data):
    env = dict(os.environ, SYNCBRIDGE_TRACEFS="/nonexistent/tracing")
    rc, out, err = run(tool, ["trace", "-o", "/nonexistent/x.json", "--", "true"], env=env)
    check(rc == 1 and "not a tracefs mount" in err, f"missing tracefs: exit 1 ({err.strip()})")


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    tool, data, case, extra = argv[1], argv[2], argv[3], argv[4:]
    if case == "programs":
        case_programs(tool, data, extra)
        return finish()
    if case == "man":
        return case_man(tool, data, extra) or finish()
    cases = {
        "wrong-fd-kinds": case_wrong_fd_kinds,
        "usage": case_usage,
        "ps-json": case_ps_json,
        "trace-input": case_trace_input,
        "trace-no-tracefs": case_trace_no_tracefs,
        "trace-markers": case_trace_markers,
    }
    if case not in cases:
        print(f"unknown case {case}")
        return 2
    cases[case](tool, data)
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
