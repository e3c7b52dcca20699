#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pixel check through grim on a wlroots compositor (sway, labwc; issue 46).

  grim-shot.py --socket NAME pending|shown FRAME 0xRRGGBB

syncbridge-wl-client's --hook (examples/wayland/client.c), as kwin-shot.py is
on KWin: called while a frame's point is pending (`pending`: the frame's
colour must not be on screen yet) and after the frame was presented
(`shown`: it must be). One screenshot of the whole output by Debian 13's grim
1.4 (wlr-screencopy), run in the Debian 13 root through
scripts/vm/in-trixie.sh against the compositor's own socket NAME (in
XDG_RUNTIME_DIR): not through the proxy, which does not offer
wlr-screencopy. The client's WAYLAND_DISPLAY is the proxy's, hence --socket.

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

import pixel_check  # the pass rule, shared with kwin-shot.py

HERE = os.path.dirname(os.path.abspath(__file__))
IN_TRIXIE = os.path.join(HERE, "..", "..", "scripts", "vm", "in-trixie.sh")


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
    env = dict(os.environ, WAYLAND_DISPLAY=sock)
    try:
        # A bound on the whole call: a hung screenshot must not outlast the
        # vgem fence's own ~10 s expiry unnoticed.
        res = subprocess.run([IN_TRIXIE, "/usr/bin/grim", "-t", "ppm", "-"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
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
    n = pixel_check.count(data, w, h, w * 3, (0, 1, 2), rgb, bpp=3)
    ok, want = pixel_check.verdict(phase, n)
    print(f"# grim-shot: frame {frame} {phase}: {n} pixels of 0x{colour:06x} on the {w}x{h} screen "
          f"(want {want}): {'ok' if ok else 'FAIL'}")
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
