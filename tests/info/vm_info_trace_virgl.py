#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`syncbridge-info trace` of the cube demo on virgl: fences really pending (GPU group).

    vm_info_trace_virgl.py SYNCBRIDGE_INFO CUBE [--layer-dir DIR] [--frames N] [--keep DIR]

Traces `CUBE --producer gles --frames N` (the GLES producer and the EGL
consumer on Mesa virgl, docs/inspect.md "The cube demo on virgl") and checks:
the demo saw every frame complete; check_trace.py accepts the JSON and the
SVG; the trace holds virtio_gpu fences that were pending (signalled after
their emit), each one fence with its init and its emit (virtio_gpu numbers a
fence at emit: no init "CONTEXT:0" left unsignalled beside them); the EGL
bridge's markers name pending fences (an attach with status=active) and are
tied to fences of the trace. What waited on them is logged.
Exit: 0 pass, 1 fail, 77 skip (not root, no tracefs, not virgl).
"""
import statistics
import sys

from common import check, check_cube_trace, cube_args, finish, skip, summary, trace_cube, trace_skip


def main(argv):
    a = cube_args(argv, __doc__, 12, "sb-info-trace-virgl-")
    if isinstance(a, int):
        return a
    tool, cube, frames, out = a
    r, js = trace_cube(tool, out, "virgl-trace",
                       cube + ["--producer", "gles", "--frames", str(frames)])
    why = trace_skip(r, "the cube demo cannot run here")
    if why:
        return skip(why)
    if "on virgl" not in r.stdout:
        return skip("the GLES producer is not on Mesa virgl: run in the GPU group's guest "
                    "(SYNCBRIDGE_VM_GPU=virgl)")
    check_cube_trace(r, js, frames, "virtio_gpu:1")
    s = summary(js)
    fences = s["fences"]
    gpu = [f for f in fences if f["driver"] == "virtio_gpu"]
    pending = [(f["signaled_ns"] - f["emit_ns"]) / 1e6 for f in gpu
               if f["signaled_ns"] and f["emit_ns"] and f["signaled_ns"] > f["emit_ns"]]
    check(len(pending) >= frames,
          f"virtio_gpu fences pending after their emit: {len(pending)} of {len(gpu)} (>= {frames})")
    if pending:
        print(f"# pending time: median {statistics.median(pending):.1f} ms, "
              f"max {max(pending):.1f} ms")
    phantoms = [f for f in gpu if f["seqno"] == 0]
    check(not phantoms, f"every virtio_gpu fence numbered at its emit ({len(phantoms)} left at 0)")
    whole = [f for f in gpu if f["init_ns"] and f["emit_ns"]]
    check(len(whole) >= len(gpu) - 2,
          f"virtio_gpu fences with their init and their emit: {len(whole)} of {len(gpu)}")
    active = [m for m in s["markers"] if m["name"] == "egl.dmabuf_attach"
              and "status=active" in m["args"]]
    check(active, f"EGL bridge attaches that handed over a pending fence: {len(active)}")
    tied = [m for m in active if m["fence"] is not None
            and fences[m["fence"]]["driver"] == "virtio_gpu"]
    check(len(tied) == len(active), f"each tied to its virtio_gpu fence ({len(tied)})")
    waiters = {}
    for w in s["waits"]:
        if fences[w["fence"]]["driver"] == "virtio_gpu":
            waiters[w["pid"]] = waiters.get(w["pid"], 0) + 1
    print(f"# dma_fence_waits on virtio_gpu fences, per process: {waiters}")
    print(f"# outputs in {out}")
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
