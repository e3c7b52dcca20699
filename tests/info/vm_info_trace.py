#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`syncbridge-info trace` around a command that makes vgem fences (VM tier).

    vm_info_trace.py SYNCBRIDGE_INFO [--keep DIR] -- CMD [ARGS...]

Traces CMD wrapped in a shell that writes a "syncbridge: begin/end" marker
pair through $SYNCBRIDGE_TRACE_MARKER, then checks with check_trace.py: the
JSON loads and is well-formed trace-event JSON, every vgem fence created
during the trace signalled (at least one per frame: --frames N of CMD, else
1), the markers arrived, the SVG is well-formed and renders to PNG (when
rsvg-convert is installed). --keep DIR leaves trace.json/.svg/.png/.txt there.
Exit: 0 pass, 1 fail, 77 skip (not root, no tracefs, no vgem).
"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    if "--" not in argv or len(argv) < 4:
        print(__doc__)
        return 2
    sep = argv.index("--")
    tool, opts, cmd = argv[1], argv[2:sep], argv[sep + 1:]
    keep = opts[opts.index("--keep") + 1] if "--keep" in opts else None
    if os.geteuid() != 0:
        print("SKIP: tracing needs root")
        return 77
    out = keep or tempfile.mkdtemp(prefix="sb-info-trace-")
    os.makedirs(out, exist_ok=True)
    js, svg, png, txt = (os.path.join(out, "trace." + e) for e in ("json", "svg", "png", "txt"))
    frames = int(cmd[cmd.index("--frames") + 1]) if "--frames" in cmd else 1

    wrapper = ('echo "syncbridge: begin run" > "$SYNCBRIDGE_TRACE_MARKER"; "$@"; rc=$?; '
               'echo "syncbridge: end run rc=$rc" > "$SYNCBRIDGE_TRACE_MARKER"; exit $rc')
    r = subprocess.run([tool, "trace", "-o", js, "--text", txt, "--",
                        "sh", "-c", wrapper, "sh"] + cmd, capture_output=True, text=True,
                       timeout=170)
    print(r.stdout, end="")
    print(r.stderr, end="")
    if r.returncode == 1 and ("tracefs" in r.stderr or "dma_fence tracepoints" in r.stderr):
        print("SKIP: no usable tracefs")
        return 77
    if r.returncode == 77:
        print("SKIP: the traced command skipped (no vgem?)")
        return 77
    ok = r.returncode == 0
    print(f"{'ok' if ok else 'not ok'} - trace exits with the command's status 0 (got {r.returncode})")
    c = subprocess.run([sys.executable, os.path.join(here, "check_trace.py"), js, "--svg", svg,
                        "--png", png, "--min-fences", f"vgem:{frames}", "--markers", "1",
                        "--exit-status", "0"], capture_output=True, text=True)
    print(c.stdout, end="")
    ok = ok and c.returncode == 0
    # the begin/end pair became one span
    if ok:
        import json
        with open(js) as f:
            s = json.load(f)["syncbridge"]
        spans = [m for m in s["markers"] if m["span"] and m["name"] == "run"]
        good = len(spans) == 1 and spans[0]["end_ns"] >= spans[0]["ts_ns"]
        print(f"{'ok' if good else 'not ok'} - the begin/end markers form one span")
        ok = ok and good
    print(f"# outputs in {out}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
