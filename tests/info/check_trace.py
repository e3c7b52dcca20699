#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validate the outputs of `syncbridge-info trace`.

    check_trace.py TRACE.json [--svg TRACE.svg] [--png OUT.png]
                   [--min-fences DRIVER:N] [--markers N] [--exit-status N]

Checks the Chrome trace-event structure (every event has the fields its phase
needs, complete events have a non-negative duration, metadata names every
track), the "syncbridge" summary (every fence created during the trace by
DRIVER has signalled, at least N of them), that the SVG is well-formed XML
with one labelled row per timeline, and, with --png, renders it with
rsvg-convert (skipped with a note if that is not installed).
Exit: 0 ok, 1 a check failed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

from common import check, finish


def check_events(doc):
    evs = doc.get("traceEvents")
    if not check(isinstance(evs, list) and evs, "traceEvents is a non-empty list"):
        return
    named_threads = set()
    bad = []
    for e in evs:
        ph = e.get("ph")
        if ph == "M":
            if e.get("name") == "thread_name":
                named_threads.add((e["pid"], e["tid"]))
            if "name" not in e.get("args", {}) and "sort_index" not in e.get("args", {}):
                bad.append(("metadata without args", e))
            continue
        for k in ("name", "ph", "ts", "pid", "tid"):
            if k not in e:
                bad.append((f"no {k}", e))
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            bad.append(("X without a non-negative dur", e))
        if ph == "i" and e.get("s") not in ("t", "p", "g"):
            bad.append(("instant without scope", e))
        if ph in ("s", "f") and "id" not in e:
            bad.append(("flow without id", e))
        if ph not in ("X", "i", "s", "f"):
            bad.append(("unexpected phase", e))
    check(not bad, f"every event is well-formed {bad[:3] if bad else ''}")
    spans = [e for e in evs if e.get("ph") == "X"]
    unnamed = {(e["pid"], e["tid"]) for e in spans} - named_threads
    check(not unnamed, f"every track with spans is named {sorted(unnamed)[:5]}")


def check_summary(doc, min_fences, markers, exit_status):
    s = doc.get("syncbridge")
    if not check(isinstance(s, dict), "the syncbridge summary is present"):
        return
    for k in ("fences", "tracks", "waits", "markers", "begin_ns", "end_ns", "lost_events"):
        check(k in s, f"summary has {k}")
    check(s.get("lost_events") == 0, f"no events lost ({s.get('lost_events')})")
    check(s.get("malformed_lines") == 0, f"every line parsed ({s.get('malformed_lines')})")
    check(s["end_ns"] >= s["begin_ns"], "the window is not negative")
    if exit_status is not None:
        check(s.get("exit_status") == exit_status,
              f"exit status {s.get('exit_status')} == {exit_status}")
    for spec in min_fences:
        driver, n = spec.rsplit(":", 1)
        born = [f for f in s["fences"] if f["driver"] == driver and f["born_in_trace"]]
        check(len(born) >= int(n), f"at least {n} {driver} fences created in the trace ({len(born)})")
        pending = [f for f in born if not f["signaled"]]
        check(not pending, f"every {driver} fence created in the trace signalled "
              f"({len(pending)} did not: {pending[:2]})")
        for f in born:
            if f["signaled"] and f["init_ns"] is not None:
                check(f["signaled_ns"] >= f["init_ns"],
                      f"{driver} {f['context']}:{f['seqno']} signalled after it was created")
    if markers is not None:
        check(len(s["markers"]) >= markers, f"at least {markers} markers ({len(s['markers'])})")
    return s


def check_svg(path, summary):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, f"{path} is well-formed XML: {e}")
        return
    check(root.tag.endswith("svg"), "the SVG's root element is <svg>")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    for tr in (summary or {}).get("tracks", []):
        label = f"{tr['driver']} / {tr['timeline']}"
        check(label in texts, f"the SVG has a row for {label}")
    check("time (ms)" in texts, "the SVG has a time axis")


def render_png(svg, png):
    tool = shutil.which("rsvg-convert")
    if not tool:
        print(f"# rsvg-convert not installed: {png} not rendered (apt-get install librsvg2-bin)")
        return
    r = subprocess.run([tool, "-o", png, svg], capture_output=True, text=True)
    check(r.returncode == 0, f"rsvg-convert renders the SVG {r.stderr.strip()}")
    if r.returncode == 0:
        with open(png, "rb") as f:
            head = f.read(8)
        check(head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 1000,
              f"{png} is a PNG image ({os.path.getsize(png)} bytes)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--svg")
    ap.add_argument("--png")
    ap.add_argument("--min-fences", action="append", default=[])
    ap.add_argument("--markers", type=int)
    ap.add_argument("--exit-status", type=int)
    a = ap.parse_args()
    try:
        with open(a.json, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{a.json} loads as JSON: {e}")
        return finish()
    check(True, f"{a.json} loads as JSON")
    check_events(doc)
    summary = check_summary(doc, a.min_fences, a.markers, a.exit_status)
    if a.svg:
        if check(os.path.exists(a.svg), f"{a.svg} exists"):
            check_svg(a.svg, summary)
            if a.png:
                render_png(a.svg, a.png)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
