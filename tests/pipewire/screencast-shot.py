#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pixel check through a compositor's screencast (issue 35, item 2, mutter).

  screencast-shot.py DUMP pending|shown FRAME 0xRRGGBB

syncbridge-wl-client's --hook (examples/wayland/client.c), for a compositor
without a screenshot interface of its own: mutter's screencast, read back by
`pw-screencast --dump DUMP` (tests/pipewire/pw_screencast.c: a line
"SBRGBA W H SEQ", then W*H RGBA pixels, replaced whole at each frame).

  pending  the frame's fence is still pending: wait 1.5 s (a compositor that
           applied the commit at once has sent the frame by then: mutter
           casts each repaint that has damage), then the newest frame must
           show fewer than 64 pixels of the colour;
  shown    the frame was presented: within 10 s a frame must show at least
           90% of the client's 64x64 window in that colour.

Exit: 0 pass, 1 fail, 2 usage or no frame at all.
"""
import os
import sys
import time

WINDOW = 64 * 64


def newest(path):
    try:
        with open(path, "rb") as f:
            head = f.readline().split()
            if len(head) != 4 or head[0] != b"SBRGBA":
                return None
            w, h, seq = int(head[1]), int(head[2]), int(head[3])
            data = f.read(w * h * 4)
    except (OSError, ValueError):
        return None
    return (w, h, seq, data) if len(data) == w * h * 4 else None


def count(data, rgb):
    pat = bytes(rgb)
    n, i = 0, data.find(pat)
    while i >= 0:
        if i % 4 == 0:  # whole pixels only
            n += 1
        i = data.find(pat, i + 1)
    return n


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("pending", "shown"):
        print(__doc__, file=sys.stderr)
        return 2
    path, phase, frame, colour = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 16)
    rgb = ((colour >> 16) & 0xff, (colour >> 8) & 0xff, colour & 0xff)
    if phase == "pending":
        time.sleep(1.5)
        shot = newest(path)
        if not shot:
            print(f"# screencast-shot: frame {frame}: no frame in {path}")
            return 2
        n = count(shot[3], rgb)
        ok = n < 64
        want = "< 64"
    else:
        end = time.monotonic() + 10
        while True:
            shot = newest(path)
            n = count(shot[3], rgb) if shot else 0
            ok = n >= WINDOW * 9 // 10
            if ok or time.monotonic() > end:
                break
            time.sleep(0.2)
        if not shot:
            print(f"# screencast-shot: frame {frame}: no frame in {path}")
            return 2
        want = f">= {WINDOW * 9 // 10}"
    w, h, seq = shot[0], shot[1], shot[2]
    print(f"# screencast-shot: frame {frame} {phase}: {n} pixels of 0x{colour:06x} in screencast "
          f"frame {seq} ({w}x{h}; want {want}): {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
