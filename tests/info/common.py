# SPDX-License-Identifier: MIT
"""What the syncbridge-info test scripts share (imported from their folder).

check() / finish(): TAP-like "ok - ..." / "not ok - ..." lines, then
"PASS: 0 failed" or "FAIL: N failed" and the exit status (0 pass, 1 fail).
run_trace(), check_trace(), trace_skip(): running `syncbridge-info trace`,
validating its outputs with check_trace.py, and the VM tier's skips (77).
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
