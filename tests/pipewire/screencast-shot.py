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
           casts each repaint that has damage), then judge the newest frame;
  shown    the frame was presented: within 10 s a frame must pass.

The rule is pixel_check.py's (tests/wayland): pending, fewer than 64 pixels
of the colour; shown, at least 90% of the client's 64x64 window.

Exit: 0 pass, 1 fail, 2 usage or no frame at all.
"""
import os
import sys
import time

# The pass rule, shared with KWin's screenshot check (tests/wayland/kwin-shot.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "wayland"))
import pixel_check  # noqa: E402


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


def count(shot, rgb):
    w, h, _, data = shot
    return pixel_check.count(data, w, h, w * 4, (0, 1, 2), rgb)  # RGBA rows, unpadded


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
        n = count(shot, rgb)
        ok, want = pixel_check.verdict(phase, n)
    else:
        end = time.monotonic() + 10
        while True:
            shot = newest(path)
            n = count(shot, rgb) if shot else 0
            ok, want = pixel_check.verdict(phase, n)
            if ok or time.monotonic() > end:
                break
            time.sleep(0.2)
        if not shot:
            print(f"# screencast-shot: frame {frame}: no frame in {path}")
            return 2
    w, h, seq = shot[0], shot[1], shot[2]
    print(f"# screencast-shot: frame {frame} {phase}: {n} pixels of 0x{colour:06x} in screencast "
          f"frame {seq} ({w}x{h}; want {want}): {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
