#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""syncbridge-info's command line on any Linux machine (host tier).

    test_info_cli.py SYNCBRIDGE_INFO DATA_DIR CASE

CASE:
  wrong-fd-kinds  fence/dmabuf on fds that are not sync_files/dma-bufs (a file,
                  a pipe, an eventfd, a memfd, a socket, a directory, a closed
                  fd, a bad /proc path): exit 1, say what the fd is, print
                  nothing on stdout (also with --json)
  usage           bad command lines exit 2; --help/--version exit 0
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
        check(rc == 1 and "neither an fd number nor /proc/PID/fd/N" in err,
              f"{cmd} on a bad argument ({err.strip()})")


def case_usage(tool, data):
    for args, want in (([], 2), (["bogus"], 2), (["--bogus"], 2), (["fence"], 2),
                       (["fence", "1", "2"], 2), (["dmabuf"], 2), (["ps", "x"], 2),
                       (["ps", "1", "2"], 2), (["trace"], 2), (["trace", "--"], 2),
                       (["trace", "--buffer-kb", "1", "--", "true"], 2),
                       (["--help"], 0), (["--version"], 0), (["trace", "--help"], 0)):
        rc, out, err = run(tool, args)
        check(rc == want, f"{' '.join(args) or '(nothing)'}: exit {want} (got {rc}) {err.strip()[:80]}")
    rc, out, err = run(tool, ["--version"])
    check(out.startswith("syncbridge-info "), f"--version prints the version ({out.strip()})")


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
    if len(argv) != 4:
        print(__doc__)
        return 2
    tool, data, case = argv[1:]
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
