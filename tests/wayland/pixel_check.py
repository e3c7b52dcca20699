# SPDX-License-Identifier: MIT
"""The verdict of syncbridge-wl-client's --hook pixel checks, one rule for
every way of looking at the screen (kwin-shot.py: KWin's screenshots;
grim-shot.py: grim's, on wlroots compositors; tests/pipewire/screencast-shot.py:
a compositor's screencast).

The client's buffers are 64x64 XRGB8888, one colour per frame (4096 pixels):
`pending` (the frame's fence not yet signalled) passes with fewer than 64
pixels of its colour on screen, `shown` (the frame presented) with at least
90% of the window.
"""
WINDOW = 64 * 64
PENDING_BELOW = 64
SHOWN_AT_LEAST = WINDOW * 9 // 10


def count(data, width, height, stride, offsets, rgb, bpp=4):
    """Pixels of exactly `rgb` (R, G, B) in rows of `bpp`-byte pixels (4, or 3
    for packed RGB: grim-shot.py's PPM); offsets: where R, G and B sit in a
    pixel, among its first three bytes (RGBA and BGRA alike: a 4th byte, alpha
    or padding, is ignored)."""
    pix = bytearray(3)
    for off, v in zip(offsets, rgb):
        pix[off] = v
    pat = bytes(pix)
    n = 0
    for y in range(height):
        row = data[y * stride:y * stride + width * bpp]
        # find() matches at any offset: count whole pixels only.
        i = row.find(pat)
        while i >= 0:
            if i % bpp == 0:
                n += 1
            i = row.find(pat, i + 1)
    return n


def verdict(phase, n):
    """(passed, what was wanted) for `n` pixels of the frame's colour in phase pending|shown."""
    if phase == "shown":
        return n >= SHOWN_AT_LEAST, f">= {SHOWN_AT_LEAST}"
    return n < PENDING_BELOW, f"< {PENDING_BELOW}"
