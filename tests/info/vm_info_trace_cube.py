#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`syncbridge-info trace` around the cube demo: the library's own markers (VM tier).

    vm_info_trace_cube.py SYNCBRIDGE_INFO CUBE [--layer-dir DIR] [--frames N] [--keep DIR]

1. traces `CUBE --frames N` (the Vulkan producer through the layer, the
   EGL/GLES consumer through the EGL bridge) and checks with check_trace.py:
   the JSON is well-formed trace-event JSON, every vgem fence created in the
   trace signalled, the command exited 0, the SVG is well-formed and renders
   to PNG with rsvg-convert; then that the layer's markers (a layer.submit span
   per frame, release exports, release imports) and the EGL bridge's (a wait
   and an attach per frame) are there, and that the ones naming a fence
   (fence=CONTEXT:SEQNO) are tied to a fence of the trace;
2. the control: the same trace with SYNCBRIDGE_TRACE unset for the demo
   (`env -u SYNCBRIDGE_TRACE`): no marker at all, so the markers of 1 come
   from the libraries, and only when asked;
3. SYNCBRIDGE_TRACE=1 with a marker file that cannot be opened: the demo
   still passes (torn=0 stale=0, its fd check included), and with
   SYNCBRIDGE_DEBUG=info the libraries say that markers are off.
Exit: 0 pass, 1 fail, 77 skip (not root, no tracefs, the demo cannot run).
"""
import os
import subprocess
import sys

from common import check, check_cube_trace, cube_args, finish, skip, summary, trace_cube, trace_skip


def main(argv):
    a = cube_args(argv, __doc__, 6, "sb-info-trace-cube-")
    if isinstance(a, int):
        return a
    tool, cube, frames, out = a
    cmd = cube + ["--frames", str(frames)]

    # 1. the trace with markers
    r, js = trace_cube(tool, out, "cube-trace", cmd)
    why = trace_skip(r, "the cube demo cannot run here")
    if why:
        return skip(why)
    check_cube_trace(r, js, frames, "vgem:0")
    s = summary(js)
    markers = s["markers"]

    def named(n):
        return [m for m in markers if m["name"] == n]

    submits = [m for m in named("layer.submit") if m["span"]]
    check(len(submits) >= frames, f"a layer.submit span per frame ({len(submits)} >= {frames})")
    check(all(m["end_ns"] >= m["ts_ns"] and "result=0" in m["args"] for m in submits),
          "every layer.submit span ended with result=0 (the end's words kept)")
    exports = [m for m in named("layer.release_export") if m["span"]]
    check(len(exports) >= frames and all(m["depth"] == 1 for m in exports),
          f"a layer.release_export span inside each submit ({len(exports)}, depth 1)")
    imports = named("layer.release_import")
    check(len(imports) >= frames and all("access=write" in m["args"] and "ret=0" in m["args"]
                                         for m in imports),
          f"the frame's fence attached to its dma-buf as a writer ({len(imports)})")
    waits = [m for m in named("egl.dmabuf_wait") if m["span"]]
    attaches = named("egl.dmabuf_attach")
    check(len(waits) >= frames, f"an egl.dmabuf_wait span per frame ({len(waits)})")
    check(len(attaches) >= frames and all("access=read" in m["args"] for m in attaches),
          f"an egl.dmabuf_attach (READ) per frame ({len(attaches)})")
    # the producer's and the consumer's markers name the same dma-bufs
    ino = lambda ms: {w.split("=", 1)[1] for m in ms for w in m["args"].split()
                      if w.startswith("buf_ino=")}
    check(ino(imports) and ino(imports) == ino(waits),
          f"the layer and the EGL bridge name the same dma-bufs (buf_ino {sorted(ino(imports))} "
          f"vs {sorted(ino(waits))})")
    fenced = [m for m in markers if "fence=" in m["args"] and "fence=none" not in m["args"]
              and "fence=?" not in m["args"]]
    untied = [m for m in fenced if m["fence"] is None]
    check(fenced and not untied,
          f"every marker naming a fence is tied to a fence of the trace ({len(fenced)} named, "
          f"{len(untied)} untied: {[m['name'] for m in untied[:3]]})")
    for prefix in ("layer.", "egl."):
        tied = [m for m in fenced if m["name"].startswith(prefix) and m["fence"] is not None]
        check(tied, f"{prefix}* markers tied to fences ({len(tied)})")
    if fenced and not untied:
        f = s["fences"][fenced[0]["fence"]]
        print(f"# the fences they name: {f['driver']}/{f['timeline']} {f['context']}:{f['seqno']}"
              f"{' (known from markers: no dma_fence event in the trace)' if f['from_marker'] else ''}")

    # 2. control: the same with SYNCBRIDGE_TRACE unset for the demo
    r, js0 = trace_cube(tool, out, "cube-trace-off",
                   ["env", "-u", "SYNCBRIDGE_TRACE"] + cube + ["--frames", "1"])
    check(r.returncode == 0, f"control: trace exits 0 with SYNCBRIDGE_TRACE unset ({r.returncode})")
    s0 = summary(js0)
    check(len(s0["markers"]) == 0,
          f"control: no marker without SYNCBRIDGE_TRACE ({len(s0['markers'])})")

    # 3. a marker file that cannot be opened: markers off, the demo unaffected
    env = dict(os.environ, SYNCBRIDGE_TRACE="1", SYNCBRIDGE_DEBUG="info",
               SYNCBRIDGE_TRACE_MARKER="/nonexistent-sb-dir/trace_marker")
    r = subprocess.run(cube + ["--frames", "1"], capture_output=True, text=True, env=env,
                       timeout=120)
    check(r.returncode == 0 and "frames=1 torn=0 stale=0" in r.stdout,
          f"unopenable marker file: the demo passes, fd check included (rc {r.returncode})")
    said = r.stderr.count("trace: cannot open SYNCBRIDGE_TRACE_MARKER")
    check(said >= 2, f"unopenable marker file: the layer and the EGL bridge said 'markers off' "
          f"with SYNCBRIDGE_DEBUG=info ({said} times)")
    if r.returncode != 0:
        print(r.stdout + r.stderr)

    print(f"# outputs in {out}")
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
