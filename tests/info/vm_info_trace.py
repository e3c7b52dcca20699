#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`syncbridge-info trace` around a command that makes vgem fences (VM tier).

    vm_info_trace.py SYNCBRIDGE_INFO [--keep DIR] -- CMD [ARGS...]

Traces CMD wrapped in a shell that writes a "syncbridge: begin/end" marker
pair through $SYNCBRIDGE_TRACE_MARKER, then checks with check_trace.py: the
JSON loads and is well-formed trace-event JSON, every vgem fence created
during the trace signalled (at least one per frame: --frames N of CMD, else
1), the markers arrived, the SVG is well-formed and renders to PNG (when
rsvg-convert is installed), and the blocking syscalls listed are the
command's: an outsider polling all along is left out. --keep DIR leaves trace.json/.svg/.png/.txt there.
Exit: 0 pass, 1 fail, 77 skip (not root, no tracefs, no vgem).
"""
import os
import subprocess
import sys

from common import check, check_trace, finish, opt, out_dir, run_trace, skip, summary, trace_skip


def main(argv):
    if "--" not in argv or len(argv) < 4:
        print(__doc__)
        return 2
    sep = argv.index("--")
    tool, opts, cmd = argv[1], argv[2:sep], argv[sep + 1:]
    if os.geteuid() != 0:
        return skip("tracing needs root")
    out = out_dir(opt(opts, "--keep"), "sb-info-trace-")
    js, svg, png, txt = (os.path.join(out, "trace." + e) for e in ("json", "svg", "png", "txt"))
    frames = int(opt(cmd, "--frames", 1))

    wrapper = ('echo "syncbridge: begin run" > "$SYNCBRIDGE_TRACE_MARKER"; "$@"; rc=$?; '
               'echo "syncbridge: end run rc=$rc" > "$SYNCBRIDGE_TRACE_MARKER"; exit $rc')
    # not the command's: it polls every 5 ms for the whole trace
    outsider = subprocess.Popen([sys.executable, "-c",
                                 "import select\nwhile True: select.poll().poll(5)"])
    try:
        r = run_trace(tool, ["-o", js, "--text", txt, "--", "sh", "-c", wrapper, "sh"] + cmd, 170)
    finally:
        outsider.kill()
        outsider.wait()
    why = trace_skip(r, "the traced command skipped (no vgem?)")
    if why:
        return skip(why)
    ok = check(r.returncode == 0, f"trace exits with the command's status 0 (got {r.returncode})")
    ok = check(check_trace(js, "--svg", svg, "--png", png, "--min-fences", f"vgem:{frames}",
                           "--markers", "1", "--exit-status", "0"),
               "check_trace.py: JSON structure, fences, SVG, PNG") and ok
    if ok:
        # the begin/end pair became one span
        spans = [m for m in summary(js)["markers"] if m["span"] and m["name"] == "run"]
        check(len(spans) == 1 and spans[0]["end_ns"] >= spans[0]["ts_ns"],
              "the begin/end markers form one span")
        blocks = summary(js)["blocking_syscalls"]
        pids = sorted({b["pid"] for b in blocks})
        check(blocks and outsider.pid not in pids,
              f"{len(blocks)} blocking syscalls, from pids {pids}: "
              f"none from the outsider (pid {outsider.pid})")
        with open(txt, encoding="utf-8") as f:
            check("# syncbridge-info: command pid " in f.read(),
                  "the saved text names the command's pid (for --input)")
    print(f"# outputs in {out}")
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
