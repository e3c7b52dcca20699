#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Pixel check through KWin's own screenshot interface (issue 35, item 2).

  kwin-shot.py pending|shown FRAME 0xRRGGBB

syncbridge-wl-client's --hook (examples/wayland/client.c): it calls this
while a frame's fence is pending (`pending`: the frame's colour must not be
on screen yet) and after the frame was presented (`shown`: it must be). One
screenshot of KWin's whole workspace through org.kde.KWin.ScreenShot2
(CaptureWorkspace, raw pixels written into a pipe we pass; the reply says
width, height, stride and the QImage format) on the session bus of
DBUS_SESSION_BUS_ADDRESS. KWin must run with
KWIN_SCREENSHOT_NO_PERMISSION_CHECKS=1: its ScreenShot2 interface otherwise
serves only programs whose desktop file lists it (X-KDE-DBUS-Restricted-
Interfaces), which a test has none of.

Counts the pixels of exactly that colour and judges them by pixel_check.py
(the client's 64x64 window: `shown` passes with at least 90% of it,
`pending` with fewer than 64 pixels). Prints one comment line per call, with the
most common colours of the screen when a check fails.
Exit: 0 pass, 1 fail, 2 usage or no screenshot.
"""
import collections
import os
import sys

from gi.repository import Gio, GLib

import pixel_check  # the pass rule, shared with tests/pipewire/screencast-shot.py
# QImage::Format values whose pixels are 4 bytes of 8 bits, and the byte
# offsets of R, G, B in memory (little-endian host: a 0xAARRGGBB word is
# B, G, R, A in memory).
FORMATS = {4: (2, 1, 0), 5: (2, 1, 0), 6: (2, 1, 0),  # RGB32, ARGB32(_Premultiplied)
           17: (0, 1, 2), 18: (0, 1, 2), 19: (0, 1, 2)}  # RGBX8888, RGBA8888(_Premultiplied)


def capture(conn):
    r, w = os.pipe2(os.O_CLOEXEC)
    fdl = Gio.UnixFDList.new()
    idx = fdl.append(w)
    os.close(w)
    opts = {"native-resolution": GLib.Variant("b", True)}
    res, _ = conn.call_with_unix_fd_list_sync(
        "org.kde.KWin.ScreenShot2", "/org/kde/KWin/ScreenShot2", "org.kde.KWin.ScreenShot2",
        "CaptureWorkspace", GLib.Variant("(a{sv}h)", (opts, idx)), GLib.VariantType("(a{sv})"),
        Gio.DBusCallFlags.NONE, 60000, fdl, None)
    del fdl  # our copy of the write end: the pipe ends when KWin's does
    meta = res.unpack()[0]
    size = meta["stride"] * meta["height"]
    chunks, got = [], 0
    with os.fdopen(r, "rb") as f:
        while got < size:
            b = f.read(size - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
    return meta, b"".join(chunks)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("pending", "shown"):
        print(__doc__, file=sys.stderr)
        return 2
    phase, frame, colour = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
    rgb = ((colour >> 16) & 0xff, (colour >> 8) & 0xff, colour & 0xff)
    try:
        conn = Gio.DBusConnection.new_for_address_sync(
            os.environ["DBUS_SESSION_BUS_ADDRESS"],
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
        meta, data = capture(conn)
    except (GLib.Error, KeyError) as e:
        print(f"# kwin-shot: frame {frame}: no screenshot: {e}")
        return 2
    w, h, stride, fmt = meta["width"], meta["height"], meta["stride"], meta["format"]
    if fmt not in FORMATS or len(data) < stride * h:
        print(f"# kwin-shot: frame {frame}: QImage format {fmt}, {len(data)} of {stride * h} bytes: "
              "not read")
        return 2
    n = pixel_check.count(data, w, h, stride, FORMATS[fmt], rgb)
    ok, want = pixel_check.verdict(phase, n)
    print(f"# kwin-shot: frame {frame} {phase}: {n} pixels of 0x{colour:06x} on the {w}x{h} screen "
          f"(QImage format {fmt}; want {want}): {'ok' if ok else 'FAIL'}")
    if not ok:
        ro, go, bo = FORMATS[fmt]
        common = collections.Counter()
        for y in range(0, h, 8):
            for x in range(0, w, 8):
                o = y * stride + x * 4
                common[(data[o + ro] << 16) | (data[o + go] << 8) | data[o + bo]] += 1
        top = ", ".join(f"0x{c:06x} x{k}" for c, k in common.most_common(5))
        print(f"# kwin-shot:   the screen's commonest colours (every 8th pixel): {top}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
