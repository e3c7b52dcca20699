# SPDX-License-Identifier: MIT
"""What the syncbridge-info test scripts share (imported from their folder).

check() / finish(): TAP-like "ok - ..." / "not ok - ..." lines, then
"PASS: 0 failed" or "FAIL: N failed" and the exit status (0 pass, 1 fail).
run_trace(), check_trace(), trace_skip(): running `syncbridge-info trace`,
validating its outputs with check_trace.py, and the VM tier's skips (77).
cube_args(), trace_cube(), check_cube_trace(): what the cube demo's traces share.
"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
failures = 0
SKIP = 77


def check(cond, what):
    global failures
    print(f"{'ok' if cond else 'not ok'} - {what}")
    failures += not cond
    return cond


def finish():
    print(f"{'FAIL' if failures else 'PASS'}: {failures} failed")
    return 1 if failures else 0


def opt(opts, name, default=None):
    """The value after `name` in a list of arguments, else default."""
    return opts[opts.index(name) + 1] if name in opts else default


def out_dir(keep, prefix):
    """--keep DIR, else a new temporary folder (kept: the outputs are for looking at)."""
    out = keep or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(out, exist_ok=True)
    return out


def summary(path):
    """The "syncbridge" member of a trace JSON."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)["syncbridge"]


def run_trace(tool, args, timeout):
    """`tool trace ARGS`, its output echoed; returns the CompletedProcess."""
    r = subprocess.run([tool, "trace"] + args, capture_output=True, text=True, timeout=timeout)
    print(r.stdout, end="")
    print(r.stderr, end="")
    return r


def trace_skip(r, what):
    """A reason to skip after a trace run (no tracefs, or the command said 77), else None."""
    if r.returncode == 1 and ("tracefs" in r.stderr or "dma_fence tracepoints" in r.stderr):
        return "no usable tracefs"
    if r.returncode == SKIP:
        return what
    return None


def skip(why):
    print(f"SKIP: {why}")
    return SKIP


def check_trace(js, *args):
    """check_trace.py on a trace JSON (its lines echoed); True when it passes."""
    r = subprocess.run([sys.executable, os.path.join(here, "check_trace.py"), js] + list(args),
                       capture_output=True, text=True)
    print(r.stdout, end="")
    return r.returncode == 0


def cube_args(argv, usage, frames, prefix):
    """TOOL CUBE [--layer-dir DIR] [--frames N] [--keep DIR]: (tool, cube, frames, out),
    cube being the demo's command to start with (with --layer-dir DIR: the build
    tree's layer, which an installed demo does not look for), or the exit status
    to return: 2 after the usage, 77 when not root."""
    if len(argv) < 3:
        print(usage)
        return 2
    tool, cube, opts = argv[1], [argv[2]], argv[3:]
    layer_dir = opt(opts, "--layer-dir")
    if layer_dir:
        cube += ["--layer-dir", layer_dir]
    frames = int(opt(opts, "--frames", frames))
    if os.geteuid() != 0:
        return skip("tracing needs root")
    return tool, cube, frames, out_dir(opt(opts, "--keep"), prefix)


def trace_cube(tool, out, name, cmd):
    """`tool trace` of the cube demo's CMD into OUT/NAME.json (SVG window: the
    markers) and NAME.txt; returns the CompletedProcess and the JSON's path."""
    js, txt = os.path.join(out, name + ".json"), os.path.join(out, name + ".txt")
    r = run_trace(tool, ["-o", js, "--text", txt, "--svg-window", "markers", "--"] + cmd, 150)
    return r, js


def check_cube_trace(r, js, frames, min_fences):
    """The checks of every cube trace: the demo's status 0, every frame complete,
    check_trace.py on the JSON (--min-fences MIN_FENCES), the SVG and the PNG."""
    check(r.returncode == 0, f"trace exits with the demo's status 0 (got {r.returncode})")
    check(f"frames={frames} torn=0 stale=0" in r.stdout, "the demo saw every frame complete")
    check(check_trace(js, "--svg", js[:-5] + ".svg", "--png", js[:-5] + ".png",
                      "--min-fences", min_fences, "--markers", "1", "--exit-status", "0"),
          "check_trace.py: JSON structure, fences, SVG, PNG")
