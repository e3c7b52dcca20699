#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pixel check through grim on a wlroots compositor (sway, labwc; issue 46).

  grim-shot.py --socket NAME pending|shown FRAME 0xRRGGBB

syncbridge-wl-client's --hook (examples/wayland/client.c), as kwin-shot.py is
on KWin: called while a frame's point is pending (`pending`: the frame's
colour must not be on screen yet) and after the frame was presented
(`shown`: it must be). One screenshot of the whole output by Debian 13's grim
1.4 (wlr-screencopy) against the compositor's own socket NAME (in
XDG_RUNTIME_DIR): not through the proxy, which does not offer
wlr-screencopy. The client's WAYLAND_DISPLAY is the proxy's, hence --socket.

grim is the Debian 13 root's (SYNCBRIDGE_TRIXIE_ROOT, which proxy-wlroots.sh
exports), started by the root's own dynamic loader with the root's library
folder, not through scripts/vm/in-trixie.sh: that one's mount namespace and
binds cost ~1.6 s per call in the GPU guest (2026-12-07, idle machine), and a
`pending` check must end well within the ~10 s after which vgem signals the
frame's fence itself. Every library grim needs (libwayland-client, pixman,
libpng, zlib, libffi, libc, libm) is in that folder, so nothing of Debian 12
is mixed in.

grim writes binary PPM to stdout (`-t ppm -`): packed 8-bit RGB, read here
with no image library — Debian 12's python3 in the guest has no PIL, and
png-stats counts colours within 24 of one another where the rule wants the
exact colour. The pixels are counted and judged by pixel_check.py.
Prints one comment line per call, with the screen's commonest colours when a
check fails. Exit: 0 pass, 1 fail, 2 usage or no screenshot.
"""
import collections
import os
import subprocess
import sys
import time

import pixel_check  # the pass rule, shared with kwin-shot.py

LIBDIR = "usr/lib/x86_64-linux-gnu"


def trixie_root():
    """The Debian 13 root, found as scripts/vm/in-trixie.sh finds it."""
    if os.environ.get("SYNCBRIDGE_TRIXIE_ROOT"):
        return os.environ["SYNCBRIDGE_TRIXIE_ROOT"]
    cache = os.environ.get("SYNCBRIDGE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "syncbridge")
    return os.path.join(cache, "venus-root")


def seconds_since_start():
    """How long this process has run, python's own start included (/proc: the
    start time in clock ticks since boot, against the uptime)."""
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return up - start / os.sysconf("SC_CLK_TCK")


def parse_ppm(blob):
    """(width, height, pixels) of a binary PPM (P6, maxval 255); ValueError otherwise."""
    # The header: magic, width, height, maxval, separated by whitespace (grim
    # writes no comments), then exactly one whitespace byte before the data.
    fields, pos = [], 0
    while len(fields) < 4:
        while pos < len(blob) and blob[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while end < len(blob) and not blob[end:end + 1].isspace():
            end += 1
        if end == pos:
            raise ValueError("short header")
        fields.append(blob[pos:end])
        pos = end
    if fields[0] != b"P6" or fields[3] != b"255":
        raise ValueError(f"not an 8-bit P6 PPM: {fields[0]!r} maxval {fields[3]!r}")
    w, h = int(fields[1]), int(fields[2])
    data = blob[pos + 1:]
    if len(data) < w * h * 3:
        raise ValueError(f"{len(data)} of {w * h * 3} bytes of pixels")
    return w, h, data


def main():
    args = sys.argv[1:]
    if len(args) != 5 or args[0] != "--socket" or args[2] not in ("pending", "shown"):
        print(__doc__, file=sys.stderr)
        return 2
    sock, phase, frame, colour = args[1], args[2], args[3], int(args[4], 16)
    rgb = ((colour >> 16) & 0xff, (colour >> 8) & 0xff, colour & 0xff)
    root = trixie_root()
    lib = os.path.join(root, LIBDIR)
    grim = [os.path.join(lib, "ld-linux-x86-64.so.2"), "--library-path", lib,
            os.path.join(root, "usr/bin/grim"), "-t", "ppm", "-"]
    env = dict(os.environ, WAYLAND_DISPLAY=sock)
    env.pop("LD_LIBRARY_PATH", None)
    t0 = time.monotonic()
    try:
        # A bound on the whole call: a hung screenshot must not outlast the
        # vgem fence's own ~10 s expiry unnoticed.
        res = subprocess.run(grim, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=30)
    except subprocess.TimeoutExpired:
        print(f"# grim-shot: frame {frame}: grim took more than 30 s")
        return 2
    if res.returncode != 0:
        err = res.stderr.decode(errors="replace").strip().replace("\n", " | ")
        print(f"# grim-shot: frame {frame}: grim exit {res.returncode}: {err}")
        return 2
    try:
        w, h, data = parse_ppm(res.stdout)
    except ValueError as e:
        print(f"# grim-shot: frame {frame}: {len(res.stdout)} bytes from grim: {e}")
        return 2
    t_grim = time.monotonic() - t0
    n = pixel_check.count(data, w, h, w * 3, (0, 1, 2), rgb, bpp=3)
    ok, want = pixel_check.verdict(phase, n)
    # The times matter: the frame's vgem fence signals itself ~10 s after it
    # was attached, and a `pending` check must end well before that.
    print(f"# grim-shot: frame {frame} {phase}: {n} pixels of 0x{colour:06x} on the {w}x{h} screen "
          f"(want {want}): {'ok' if ok else 'FAIL'} (grim {t_grim:.1f} s, "
          f"this hook {seconds_since_start():.1f} s)")
    if not ok:
        common = collections.Counter()
        for y in range(0, h, 8):
            for x in range(0, w, 8):
                o = (y * w + x) * 3
                common[(data[o] << 16) | (data[o + 1] << 8) | data[o + 2]] += 1
        top = ", ".join(f"0x{c:06x} x{k}" for c, k in common.most_common(5))
        print(f"# grim-shot:   the screen's commonest colours (every 8th pixel): {top}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
